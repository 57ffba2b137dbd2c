//! The generalized extreme value (GEV) distribution of block maxima,
//! fitted by maximum likelihood, with profile-likelihood intervals for
//! return levels (Coles 2001, ch. 3).
//!
//! `G(x) = exp(−(1 + ξ(x−μ)/σ)^(−1/ξ))` where `1 + ξ(x−μ)/σ > 0`, and the
//! Gumbel limit `exp(−exp(−(x−μ)/σ))` at ξ = 0. Every formula below is
//! written with `ln_1p`/`expm1` so that it is exact through ξ = 0 instead of
//! switching formulas at an arbitrary small ξ.

use super::optim::{interval_end, nelder_mead, nelder_mead_restarts, End};
use statrs::function::gamma::gamma;

/// `(e^(ξ·l) − 1)/ξ`, and its limit `l` at ξ = 0: the Box–Cox form that
/// turns up in every GEV and GPD quantile.
pub fn expm1_div(xi: f64, l: f64) -> f64 {
    if xi == 0.0 {
        l
    } else {
        (xi * l).exp_m1() / xi
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gev {
    pub mu: f64,
    pub sigma: f64,
    pub xi: f64,
}

impl Gev {
    /// `y = −ln G(x)` (the "reduced" exceedance), `None` outside the
    /// support: below it for ξ > 0 (G = 0), above it for ξ < 0 (G = 1).
    fn reduced(&self, x: f64) -> Result<f64, bool> {
        let z = (x - self.mu) / self.sigma;
        let a = self.xi * z;
        if 1.0 + a <= 0.0 {
            // Past the lower end point (ξ > 0) or the upper one (ξ < 0).
            return Err(self.xi < 0.0);
        }
        let big_a = if self.xi == 0.0 {
            z
        } else {
            a.ln_1p() / self.xi
        };
        Ok((-big_a).exp())
    }

    /// `(ln G(x), ln(1 − G(x)))`, both accurate in the far tails (for the
    /// Anderson–Darling statistic).
    pub fn ln_cdf_sf(&self, x: f64) -> (f64, f64) {
        match self.reduced(x) {
            Ok(y) => (-y, (-(-y).exp_m1()).ln()),
            Err(true) => (0.0, f64::NEG_INFINITY),
            Err(false) => (f64::NEG_INFINITY, 0.0),
        }
    }

    /// The level whose block-maximum exceedance is `-expm1(-w)`, i.e.
    /// `G(x) = e^(−w)`: `μ + σ (w^(−ξ) − 1)/ξ`.
    pub fn level_at_w(&self, w: f64) -> f64 {
        self.mu + self.sigma * expm1_div(self.xi, -w.ln())
    }
}

/// The negative log-likelihood of a GEV for `data`; `+∞` when a point lies
/// outside the support or σ ≤ 0.
pub fn nll(data: &[f64], mu: f64, sigma: f64, xi: f64) -> f64 {
    if sigma <= 0.0 || !sigma.is_finite() || !mu.is_finite() || !xi.is_finite() {
        return f64::INFINITY;
    }
    let inv = 1.0 / sigma;
    let mut sum = 0.0;
    for &x in data {
        let z = (x - mu) * inv;
        let a = xi * z;
        if 1.0 + a <= 0.0 {
            return f64::INFINITY;
        }
        let lt = a.ln_1p();
        let big_a = if xi == 0.0 { z } else { lt / xi };
        sum += lt + big_a + (-big_a).exp();
    }
    sum + data.len() as f64 * sigma.ln()
}

/// Probability-weighted-moment (L-moment) estimates (Hosking, Wallis &
/// Wood 1985), the usual starting point for the likelihood search.
/// `sorted` is ascending.
pub fn pwm(sorted: &[f64]) -> Gev {
    let n = sorted.len() as f64;
    let (mut b0, mut b1, mut b2) = (0.0, 0.0, 0.0);
    for (i, &x) in sorted.iter().enumerate() {
        let i = i as f64;
        b0 += x;
        b1 += x * i / (n - 1.0);
        b2 += x * i * (i - 1.0) / ((n - 1.0) * (n - 2.0));
    }
    let (b0, b1, b2) = (b0 / n, b1 / n, b2 / n);
    let l1 = b0;
    let l2 = 2.0 * b1 - b0;
    let l3 = 6.0 * b2 - 6.0 * b1 + b0;
    let t3 = if l2 > 0.0 { l3 / l2 } else { 0.0 };
    let c = 2.0 / (3.0 + t3) - 2f64.ln() / 3f64.ln();
    // Hosking's k is −ξ; keep the start where Γ(1+k) is defined and the
    // likelihood regular.
    let k = (7.8590 * c + 2.9554 * c * c).clamp(-0.9, 0.45);
    let l2 = if l2 > 0.0 { l2 } else { 1.0 };
    let (sigma, mu) = if k.abs() < 1e-6 {
        let sigma = l2 / 2f64.ln();
        (sigma, l1 - 0.577_215_664_901_532_9 * sigma)
    } else {
        let g = gamma(1.0 + k);
        let sigma = l2 * k / ((1.0 - 2f64.powf(-k)) * g);
        (sigma, l1 - sigma * (1.0 - g) / k)
    };
    Gev { mu, sigma, xi: -k }
}

/// A maximum-likelihood GEV fit, with what the interval search needs.
#[derive(Debug, Clone)]
pub struct GevFit {
    pub gev: Gev,
    /// Negative log-likelihood at the optimum (in standardized units).
    pub nll: f64,
    pub converged: bool,
    /// Data standardized as `(x − m0)/s0`, the scale the search runs in.
    data: Vec<f64>,
    m0: f64,
    s0: f64,
    /// Internal optimum `(μ', ln σ', ξ)` and the inverse observed
    /// information there (None when the Hessian is not positive definite).
    theta: [f64; 3],
    cov: Option<[[f64; 3]; 3]>,
}

/// The shape is kept in [−1, 3]: below −1 the likelihood is unbounded
/// (Smith 1985), above 3 no latency distribution is plausible and the
/// search only wanders.
pub const XI_MIN: f64 = -1.0;
pub const XI_MAX: f64 = 3.0;

fn nll_internal(data: &[f64], t: &[f64]) -> f64 {
    if t[2] <= XI_MIN || t[2] >= XI_MAX {
        return f64::INFINITY;
    }
    nll(data, t[0], t[1].exp(), t[2])
}

/// Fits a GEV to `data` (any order) by maximum likelihood: Nelder–Mead on
/// `(μ, ln σ, ξ)` in standardized units, started from the PWM estimates and
/// from the Gumbel moment fit, keeping the better optimum.
pub fn fit(data: &[f64]) -> Option<GevFit> {
    if data.len() < 3 || data.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut sorted = data.to_vec();
    sorted.sort_by(f64::total_cmp);
    let start = pwm(&sorted);
    let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
    let sd = (sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / sorted.len() as f64).sqrt();
    let s0 = if start.sigma.is_finite() && start.sigma > 0.0 {
        start.sigma
    } else if sd > 0.0 {
        sd
    } else {
        return None; // all values equal: nothing to fit
    };
    let m0 = if start.mu.is_finite() { start.mu } else { mean };
    let std: Vec<f64> = data.iter().map(|x| (x - m0) / s0).collect();
    let gumbel_sigma = sd * 6f64.sqrt() / std::f64::consts::PI / s0;
    let starts = [
        [0.0, 0.0, start.xi],
        [
            (mean - m0) / s0 - 0.5772 * gumbel_sigma,
            gumbel_sigma.ln(),
            0.0,
        ],
    ];
    let mut best: Option<(Vec<f64>, f64, bool)> = None;
    for s in starts {
        if !s.iter().all(|v| v.is_finite()) {
            continue;
        }
        let m = nelder_mead(
            |t| nll_internal(&std, t),
            &s,
            &[0.2, 0.2, 0.1],
            1e-10,
            1e-8,
            4000,
        );
        if m.f.is_finite() && best.as_ref().is_none_or(|b| m.f < b.1) {
            best = Some((m.x, m.f, m.converged));
        }
    }
    let (theta, f, converged) = best?;
    let theta = [theta[0], theta[1], theta[2]];
    let cov = hessian(|t| nll_internal(&std, t), &theta).and_then(invert3);
    Some(GevFit {
        gev: Gev {
            mu: m0 + s0 * theta[0],
            sigma: s0 * theta[1].exp(),
            xi: theta[2],
        },
        nll: f,
        converged,
        data: std,
        m0,
        s0,
        theta,
        cov,
    })
}

/// Central-difference Hessian; None if a point around `t` is infeasible.
pub(crate) fn hessian<const N: usize>(
    f: impl Fn(&[f64]) -> f64,
    t: &[f64; N],
) -> Option<[[f64; N]; N]> {
    let h = 1e-4;
    let f0 = f(t);
    let mut hess = [[0.0; N]; N];
    for i in 0..N {
        for j in i..N {
            let at = |di: f64, dj: f64| {
                let mut p = *t;
                p[i] += di;
                p[j] += dj;
                f(&p)
            };
            let v = if i == j {
                (at(h, 0.0) - 2.0 * f0 + at(-h, 0.0)) / (h * h)
            } else {
                (at(h, h) - at(h, -h) - at(-h, h) + at(-h, -h)) / (4.0 * h * h)
            };
            if !v.is_finite() {
                return None;
            }
            hess[i][j] = v;
            hess[j][i] = v;
        }
    }
    Some(hess)
}

/// Inverse of a symmetric positive definite 3×3 matrix (None otherwise).
fn invert3(m: [[f64; 3]; 3]) -> Option<[[f64; 3]; 3]> {
    let det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
        - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    let minor2 = m[0][0] * m[1][1] - m[0][1] * m[1][0];
    if !(m[0][0] > 0.0 && minor2 > 0.0 && det > 0.0) {
        return None;
    }
    let mut inv = [[0.0; 3]; 3];
    for (i, row) in inv.iter_mut().enumerate() {
        for (j, cell) in row.iter_mut().enumerate() {
            let (r0, r1) = ((j + 1) % 3, (j + 2) % 3);
            let (c0, c1) = ((i + 1) % 3, (i + 2) % 3);
            *cell = (m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0]) / det;
        }
    }
    Some(inv)
}

impl GevFit {
    /// The return level at block exceedance `w` (`G = e^(−w)`), in ns.
    pub fn level(&self, w: f64) -> f64 {
        self.gev.level_at_w(w)
    }

    /// Standard error of the shape ξ from the observed information.
    pub fn xi_se(&self) -> Option<f64> {
        self.cov.map(|c| c[2][2].sqrt())
    }

    /// Profile-likelihood interval for the return level at `w`: the levels
    /// `z` whose profile deviance `2(ℓ̂ − max ℓ | z)` is at most `2·cut`
    /// (Coles 2001, §3.3.3, with `cut = χ²₁(conf)/2`). The search runs
    /// between `floor_ns` and `ceiling_ns`; an end still open there is
    /// reported as [`End::Open`].
    pub fn level_interval(&self, w: f64, cut: f64, floor_ns: f64, ceiling_ns: f64) -> (End, End) {
        let lw = -w.ln();
        let t = self.theta;
        let z_hat = t[0] + t[1].exp() * expm1_div(t[2], lw);
        // Delta-method standard error: only the first step of the search.
        let grad = [
            1.0,
            t[1].exp() * expm1_div(t[2], lw),
            t[1].exp() * (expm1_div(t[2] + 1e-6, lw) - expm1_div(t[2] - 1e-6, lw)) / 2e-6,
        ];
        let se = self
            .cov
            .map(|c| {
                let mut v = 0.0;
                for i in 0..3 {
                    for j in 0..3 {
                        v += grad[i] * c[i][j] * grad[j];
                    }
                }
                v.sqrt()
            })
            .filter(|v| v.is_finite() && *v > 0.0)
            .unwrap_or(0.1 * (1.0 + z_hat.abs()));
        let steps = self
            .cov
            .map(|c| {
                [
                    c[1][1].sqrt().clamp(1e-3, 0.3),
                    c[2][2].sqrt().clamp(1e-3, 0.2),
                ]
            })
            .unwrap_or([0.05, 0.05]);
        let lo_lim = (floor_ns - self.m0) / self.s0;
        let hi_lim = (ceiling_ns - self.m0) / self.s0;
        let mut ends = [End::Open(floor_ns), End::Open(ceiling_ns)];
        for (k, dir) in [-1.0f64, 1.0].into_iter().enumerate() {
            let mut warm = [t[1], t[2]];
            let data = &self.data;
            let nll_hat = self.nll;
            let mut deviance = |z: f64| -> f64 {
                // Warm-started from the previous point of the profile, one
                // simplex search is enough; 1e-6 on the log-likelihood is far
                // below what moves an interval end (the cut-off is ~1.9).
                let objective = |p: &[f64]| {
                    if p[1] <= XI_MIN || p[1] >= XI_MAX {
                        return f64::INFINITY;
                    }
                    let s = p[0].exp();
                    nll(data, z - s * expm1_div(p[1], lw), s, p[1])
                };
                // Where the last optimum puts data outside the support at
                // this level, start from the fit's own shape, then from the
                // Gumbel one, with a wider scale.
                let starts = [
                    warm,
                    [t[1], t[2]],
                    [t[1] + 0.5, 0.0],
                    [t[1] + 1.0, t[2] / 2.0],
                ];
                let Some(start) = starts.into_iter().find(|s| objective(s).is_finite()) else {
                    return f64::INFINITY;
                };
                let m = nelder_mead_restarts(objective, &start, &steps, 1e-6, 1e-5, 1500, 0);
                if !m.f.is_finite() {
                    return f64::INFINITY;
                }
                warm = [m.x[0], m.x[1]];
                (m.f - nll_hat).max(0.0) - cut
            };
            let limit = if dir < 0.0 { lo_lim } else { hi_lim };
            if let Some(root) = interval_end(&mut deviance, z_hat, cut, se, limit, dir) {
                ends[k] = End::Found(self.m0 + self.s0 * root);
            }
        }
        (ends[0], ends[1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gumbel_limit_is_continuous() {
        let data = [0.1, 0.5, 1.3, 2.0, -0.4];
        let at0 = nll(&data, 0.2, 1.1, 0.0);
        let near = nll(&data, 0.2, 1.1, 1e-9);
        assert!((at0 - near).abs() < 1e-6, "{at0} {near}");
        let g = Gev {
            mu: 1.0,
            sigma: 2.0,
            xi: 0.0,
        };
        let g2 = Gev { xi: 1e-10, ..g };
        assert!((g.level_at_w(1e-6) - g2.level_at_w(1e-6)).abs() < 1e-6);
    }

    #[test]
    fn level_inverts_the_cdf() {
        for xi in [-0.3, 0.0, 0.2] {
            let g = Gev {
                mu: 10.0,
                sigma: 3.0,
                xi,
            };
            let x = g.level_at_w(0.01);
            let (ln_f, _) = g.ln_cdf_sf(x);
            assert!((ln_f + 0.01).abs() < 1e-12, "xi {xi}: {ln_f}");
        }
    }
}
