//! The generalized Pareto distribution (GPD) of threshold excesses, fitted
//! by maximum likelihood, with profile-likelihood intervals for return
//! levels (Coles 2001, ch. 4).
//!
//! Excesses `y = x − u > 0` have survival `(1 + ξy/σ)^(−1/ξ)`, the
//! exponential `e^(−y/σ)` at ξ = 0. The fit maximizes the likelihood
//! profiled over `τ = ξ/σ`, for which ξ has a closed form (Grimshaw 1993):
//! a one-dimensional search, robust where a two-parameter search is not.

use super::gev::{expm1_div, hessian};
use super::optim::{brent_min, grid_then_brent, interval_end, End};

/// Shape limits, as for the GEV: the likelihood is unbounded below ξ = −1.
pub const XI_MIN: f64 = -1.0;
pub const XI_MAX: f64 = 3.0;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gpd {
    pub sigma: f64,
    pub xi: f64,
}

impl Gpd {
    /// `ln` of the survival function at excess `y` (`−∞` past an upper end
    /// point).
    pub fn ln_sf(&self, y: f64) -> f64 {
        if y <= 0.0 {
            return 0.0;
        }
        let a = self.xi * y / self.sigma;
        if 1.0 + a <= 0.0 {
            return f64::NEG_INFINITY;
        }
        if self.xi == 0.0 {
            -y / self.sigma
        } else {
            -a.ln_1p() / self.xi
        }
    }

    /// `(ln F(y), ln S(y))`, accurate in both tails.
    pub fn ln_cdf_sf(&self, y: f64) -> (f64, f64) {
        let ln_s = self.ln_sf(y);
        ((-ln_s.exp()).ln_1p(), ln_s)
    }

    /// The excess whose survival is `e^(−l)`: `σ (e^(ξl) − 1)/ξ`.
    pub fn excess_at(&self, l: f64) -> f64 {
        self.sigma * expm1_div(self.xi, l)
    }
}

/// Negative log-likelihood of a GPD for excesses `y`; `+∞` when a point lies
/// past the end point or σ ≤ 0.
pub fn nll(y: &[f64], sigma: f64, xi: f64) -> f64 {
    if sigma <= 0.0 || !sigma.is_finite() || !xi.is_finite() {
        return f64::INFINITY;
    }
    let inv = 1.0 / sigma;
    let mut sum = 0.0;
    for &v in y {
        let a = xi * v * inv;
        if 1.0 + a <= 0.0 {
            return f64::INFINITY;
        }
        let lt = a.ln_1p();
        sum += lt + if xi == 0.0 { v * inv } else { lt / xi };
    }
    sum + y.len() as f64 * sigma.ln()
}

/// A maximum-likelihood GPD fit of threshold excesses.
#[derive(Debug, Clone)]
pub struct GpdFit {
    pub gpd: Gpd,
    pub nll: f64,
    /// Excesses divided by their mean `s0`: the scale the search runs in.
    data: Vec<f64>,
    s0: f64,
    /// Standard error of ξ̂ from the observed information (None when the
    /// Hessian is not positive definite, e.g. ξ̂ at a bound).
    xi_se: Option<f64>,
    /// Covariance of (ln σ', ξ) for the first step of interval searches.
    cov: Option<[[f64; 2]; 2]>,
}

/// Profile negative log-likelihood in `τ` (Grimshaw 1993): for fixed
/// `τ = ξ/σ` the likelihood is maximized by `ξ = mean ln(1 + τy)`, so
/// `−ℓ*(τ) = n ln(ξ/τ) + n + nξ`. Returns `(−ℓ*, ξ, σ)`.
fn tau_profile(y: &[f64], tau: f64) -> (f64, f64, f64) {
    let n = y.len() as f64;
    if tau == 0.0 {
        let mean = y.iter().sum::<f64>() / n;
        return (n * mean.ln() + n, 0.0, mean);
    }
    let mut k = 0.0;
    for &v in y {
        let a = tau * v;
        if 1.0 + a <= 0.0 {
            return (f64::INFINITY, f64::NAN, f64::NAN);
        }
        k += a.ln_1p();
    }
    let xi = k / n;
    let sigma = xi / tau;
    if !(XI_MIN..=XI_MAX).contains(&xi) || sigma <= 0.0 {
        return (f64::INFINITY, xi, sigma);
    }
    (n * sigma.ln() + n + n * xi, xi, sigma)
}

/// Fits a GPD to excesses `y` (all > 0) by maximum likelihood.
pub fn fit(y: &[f64]) -> Option<GpdFit> {
    if y.len() < 3 || y.iter().any(|v| !v.is_finite() || *v < 0.0) {
        return None;
    }
    let s0 = y.iter().sum::<f64>() / y.len() as f64;
    if s0 <= 0.0 {
        return None;
    }
    let data: Vec<f64> = y.iter().map(|v| v / s0).collect();
    let ymax = data.iter().copied().fold(0.0, f64::max);
    // τ ranges over (−1/y_max, ∞); the grid crowds towards −1/y_max, where
    // bounded tails put their optimum, and spreads geometrically above 0.
    let tau_min = -1.0 / ymax;
    let mut grid: Vec<f64> = (1..=40)
        .map(|j| tau_min * (1.0 - 10f64.powf(-j as f64 / 4.0)))
        .chain([0.3, 0.2, 0.1, 0.05, 0.02, 0.01, 0.001].map(|f| tau_min * f))
        .chain(std::iter::once(0.0))
        .chain((0..=36).map(|j| 10f64.powf(j as f64 / 6.0 - 3.0)))
        .collect();
    grid.sort_by(f64::total_cmp);
    let (tau, f) = grid_then_brent(|t| tau_profile(&data, t).0, &grid, 1e-10);
    if !f.is_finite() {
        return None;
    }
    let (_, xi, sigma) = tau_profile(&data, tau);
    let internal = [sigma.ln(), xi];
    let cov = hessian(
        |t| {
            if t[1] <= XI_MIN || t[1] >= XI_MAX {
                f64::INFINITY
            } else {
                nll(&data, t[0].exp(), t[1])
            }
        },
        &internal,
    )
    .and_then(|h| {
        let det = h[0][0] * h[1][1] - h[0][1] * h[1][0];
        (h[0][0] > 0.0 && det > 0.0).then(|| {
            [
                [h[1][1] / det, -h[0][1] / det],
                [-h[1][0] / det, h[0][0] / det],
            ]
        })
    });
    Some(GpdFit {
        gpd: Gpd {
            sigma: sigma * s0,
            xi,
        },
        nll: f,
        xi_se: cov.map(|c| c[1][1].sqrt()),
        cov,
        data,
        s0,
    })
}

impl GpdFit {
    pub fn xi_se(&self) -> Option<f64> {
        self.xi_se
    }

    /// Profile negative log-likelihood for an excess level `e` (standardized)
    /// reached at survival `e^(−l)`: σ follows from ξ as `e/((e^(ξl)−1)/ξ)`,
    /// leaving a one-dimensional search over ξ. `warm` is the ξ of the last
    /// call, searched around first.
    fn profile(&self, e: f64, l: f64, warm: &mut f64) -> f64 {
        let f = |xi: f64| {
            if xi <= XI_MIN || xi >= XI_MAX {
                return f64::INFINITY;
            }
            nll(&self.data, e / expm1_div(xi, l), xi)
        };
        let (lo, hi) = (*warm - 0.25, *warm + 0.25);
        let (x, fx) = brent_min(f, lo, hi, 1e-9);
        let (x, fx) = if fx.is_finite() && (x - lo) > 1e-3 && (hi - x) > 1e-3 {
            (x, fx)
        } else {
            // The optimum is not inside the local bracket: search everywhere.
            let grid: Vec<f64> = (0..=40).map(|j| -0.99 + j as f64 * 0.1).collect();
            grid_then_brent(f, &grid, 1e-9)
        };
        if fx.is_finite() {
            *warm = x;
        }
        fx
    }

    /// Profile-likelihood interval for the excess reached with survival
    /// `e^(−l)` (an excess over the threshold, in ns): the excesses whose
    /// profile deviance is at most `2·cut` (Coles 2001, §4.3.3). The search
    /// runs between `floor` and `ceiling` (excesses, ns).
    pub fn excess_interval(&self, l: f64, cut: f64, floor: f64, ceiling: f64) -> (End, End) {
        let e_hat = self.gpd.excess_at(l) / self.s0;
        let sigma = self.gpd.sigma / self.s0;
        let xi = self.gpd.xi;
        // Delta-method standard error, as the first step of the search.
        let grad = [
            sigma * expm1_div(xi, l),
            sigma * (expm1_div(xi + 1e-6, l) - expm1_div(xi - 1e-6, l)) / 2e-6,
        ];
        let se = self
            .cov
            .map(|c| {
                (grad[0] * grad[0] * c[0][0]
                    + 2.0 * grad[0] * grad[1] * c[0][1]
                    + grad[1] * grad[1] * c[1][1])
                    .sqrt()
            })
            .filter(|v| v.is_finite() && *v > 0.0)
            .unwrap_or(0.1 * e_hat.max(1e-6));
        let mut ends = [End::Open(floor), End::Open(ceiling)];
        for (k, dir) in [-1.0f64, 1.0].into_iter().enumerate() {
            let mut warm = xi;
            let excess = |e: f64| {
                if e <= 0.0 {
                    return f64::INFINITY;
                }
                (self.profile(e, l, &mut warm) - self.nll).max(0.0) - cut
            };
            let limit = if dir < 0.0 { floor } else { ceiling } / self.s0;
            if let Some(root) = interval_end(excess, e_hat, cut, se, limit, dir) {
                ends[k] = End::Found(root * self.s0);
            }
        }
        (ends[0], ends[1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_limit_is_continuous() {
        let y = [0.1, 0.5, 1.3, 2.0, 0.4];
        assert!((nll(&y, 1.1, 0.0) - nll(&y, 1.1, 1e-10)).abs() < 1e-6);
        let g = Gpd {
            sigma: 2.0,
            xi: 0.0,
        };
        assert!((g.ln_sf(3.0) + 1.5).abs() < 1e-15);
        assert!((g.excess_at(1.5) - 3.0).abs() < 1e-12);
    }

    #[test]
    fn tau_profile_matches_the_full_likelihood() {
        let y = [0.1, 0.5, 1.3, 2.0, 0.4, 3.3, 0.05];
        let (f, xi, sigma) = tau_profile(&y, 0.3);
        assert!((f - nll(&y, sigma, xi)).abs() < 1e-9);
    }
}
