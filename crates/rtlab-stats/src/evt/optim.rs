//! Small derivative-free optimizers for the likelihood fits: Nelder–Mead
//! for two and three parameters, Brent's method in one dimension, and an
//! Illinois root finder for the ends of profile-likelihood intervals.
//!
//! Derivative-free on purpose: the GEV and GPD log-likelihoods have a
//! moving support (the data must lie where `1 + ξ(x−μ)/σ > 0`), so they are
//! `+∞` outside a region that changes with the parameters, and analytic
//! derivatives near ξ = 0 need their own limits. Both methods cope with an
//! objective that returns `+∞` for infeasible points.

/// The result of a minimization.
#[derive(Debug, Clone)]
pub struct Minimum {
    pub x: Vec<f64>,
    pub f: f64,
    /// False when the evaluation budget ran out before the tolerances were
    /// met.
    pub converged: bool,
}

/// Nelder–Mead simplex minimization (Nelder & Mead 1965, with the standard
/// coefficients as in Lagarias et al. 1998), restarted once from its own
/// optimum because a simplex can collapse before it reaches the minimum.
///
/// `step` sets the size of the first simplex along each axis; the search
/// stops when every vertex is within `ftol` of the best value and within
/// `xtol` of the best point in every coordinate.
pub fn nelder_mead(
    f: impl FnMut(&[f64]) -> f64,
    x0: &[f64],
    step: &[f64],
    ftol: f64,
    xtol: f64,
    max_evals: usize,
) -> Minimum {
    nelder_mead_restarts(f, x0, step, ftol, xtol, max_evals, 1)
}

/// [`nelder_mead`] with a chosen number of restarts: 0 where the start is
/// already close (a warm start along a profile).
pub fn nelder_mead_restarts(
    mut f: impl FnMut(&[f64]) -> f64,
    x0: &[f64],
    step: &[f64],
    ftol: f64,
    xtol: f64,
    max_evals: usize,
    restarts: usize,
) -> Minimum {
    let mut best = simplex_search(&mut f, x0, step, ftol, xtol, max_evals);
    let small: Vec<f64> = step.iter().map(|s| s * 0.1).collect();
    for _ in 0..restarts {
        if !best.f.is_finite() {
            break;
        }
        let next = simplex_search(&mut f, &best.x, &small, ftol, xtol, max_evals);
        if next.f <= best.f {
            best = Minimum {
                converged: best.converged && next.converged,
                ..next
            };
        }
    }
    best
}

fn simplex_search(
    f: &mut impl FnMut(&[f64]) -> f64,
    x0: &[f64],
    step: &[f64],
    ftol: f64,
    xtol: f64,
    max_evals: usize,
) -> Minimum {
    let n = x0.len();
    let mut evals = 0usize;
    let mut eval = |x: &[f64], evals: &mut usize| {
        *evals += 1;
        let v = f(x);
        if v.is_nan() {
            f64::INFINITY
        } else {
            v
        }
    };
    let f0 = eval(x0, &mut evals);
    let mut pts: Vec<(Vec<f64>, f64)> = vec![(x0.to_vec(), f0)];
    for i in 0..n {
        // A vertex outside the feasible region would stall the simplex:
        // pull it back towards x0 until the objective is finite.
        let mut h = step[i];
        let mut v = x0.to_vec();
        let mut fv = f64::INFINITY;
        for _ in 0..40 {
            v[i] = x0[i] + h;
            fv = eval(&v, &mut evals);
            if fv.is_finite() || !f0.is_finite() {
                break;
            }
            h *= -0.5;
        }
        pts.push((v, fv));
    }
    let (alpha, gamma, rho, shrink) = (1.0, 2.0, 0.5, 0.5);
    let mut converged = false;
    while evals < max_evals {
        pts.sort_by(|a, b| a.1.total_cmp(&b.1));
        let best = pts[0].1;
        let worst = pts[n].1;
        let fspread = worst - best;
        let xspread = pts[1..]
            .iter()
            .flat_map(|(p, _)| p.iter().zip(&pts[0].0).map(|(a, b)| (a - b).abs()))
            .fold(0.0, f64::max);
        if best.is_finite() && fspread <= ftol && xspread <= xtol {
            converged = true;
            break;
        }
        let mut centroid = vec![0.0; n];
        for (p, _) in &pts[..n] {
            for (c, v) in centroid.iter_mut().zip(p) {
                *c += v / n as f64;
            }
        }
        let along = |t: f64| -> Vec<f64> {
            centroid
                .iter()
                .zip(&pts[n].0)
                .map(|(c, w)| c + t * (c - w))
                .collect()
        };
        let xr = along(alpha);
        let fr = eval(&xr, &mut evals);
        if fr < pts[0].1 {
            let xe = along(alpha * gamma);
            let fe = eval(&xe, &mut evals);
            pts[n] = if fe < fr { (xe, fe) } else { (xr, fr) };
            continue;
        }
        if fr < pts[n - 1].1 {
            pts[n] = (xr, fr);
            continue;
        }
        let (xc, fc) = if fr < pts[n].1 {
            let xc = along(alpha * rho);
            let fc = eval(&xc, &mut evals);
            (xc, fc.min(f64::INFINITY))
        } else {
            let xc = along(-rho);
            let fc = eval(&xc, &mut evals);
            (xc, fc)
        };
        if fc < pts[n].1.min(fr) {
            pts[n] = (xc, fc);
            continue;
        }
        let x_best = pts[0].0.clone();
        for (p, fp) in pts.iter_mut().skip(1) {
            for (v, b) in p.iter_mut().zip(&x_best) {
                *v = b + shrink * (*v - b);
            }
            *fp = eval(p, &mut evals);
        }
    }
    pts.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (x, f) = pts.swap_remove(0);
    Minimum { x, f, converged }
}

/// Brent's method for the minimum of `f` on `[a, b]` (Brent 1973, ch. 5):
/// golden-section steps with parabolic interpolation; returns `(x, f(x))`.
pub fn brent_min(mut f: impl FnMut(f64) -> f64, a: f64, b: f64, tol: f64) -> (f64, f64) {
    const GOLD: f64 = 0.381_966_011_250_105_1;
    let (mut a, mut b) = (a.min(b), a.max(b));
    let mut x = a + GOLD * (b - a);
    let (mut w, mut v) = (x, x);
    let mut fx = nan_is_inf(f(x));
    let (mut fw, mut fv) = (fx, fx);
    let (mut d, mut e) = (0.0f64, 0.0f64);
    for _ in 0..200 {
        let m = 0.5 * (a + b);
        let tol1 = tol * x.abs() + 1e-12;
        let tol2 = 2.0 * tol1;
        if (x - m).abs() <= tol2 - 0.5 * (b - a) {
            break;
        }
        let mut golden = true;
        if e.abs() > tol1 && fx.is_finite() && fw.is_finite() && fv.is_finite() {
            let r = (x - w) * (fx - fv);
            let mut q = (x - v) * (fx - fw);
            let mut p = (x - v) * q - (x - w) * r;
            q = 2.0 * (q - r);
            if q > 0.0 {
                p = -p;
            }
            q = q.abs();
            if p.abs() < (0.5 * q * e).abs() && p > q * (a - x) && p < q * (b - x) {
                e = d;
                d = p / q;
                let u = x + d;
                if u - a < tol2 || b - u < tol2 {
                    d = if x < m { tol1 } else { -tol1 };
                }
                golden = false;
            }
        }
        if golden {
            e = if x < m { b - x } else { a - x };
            d = GOLD * e;
        }
        let u = if d.abs() >= tol1 {
            x + d
        } else if d > 0.0 {
            x + tol1
        } else {
            x - tol1
        };
        let fu = nan_is_inf(f(u));
        if fu <= fx {
            if u < x {
                b = x;
            } else {
                a = x;
            }
            (v, fv, w, fw, x, fx) = (w, fw, x, fx, u, fu);
        } else {
            if u < x {
                a = u;
            } else {
                b = u;
            }
            if fu <= fw || w == x {
                (v, fv, w, fw) = (w, fw, u, fu);
            } else if fu <= fv || v == x || v == w {
                (v, fv) = (u, fu);
            }
        }
    }
    (x, fx)
}

/// The minimum of `f` over a grid of candidate points, refined by Brent's
/// method between the best point's neighbours. A grid first because the
/// profile likelihoods here can be flat or have a boundary maximum, where a
/// bracketing search started at one point would wander.
pub fn grid_then_brent(mut f: impl FnMut(f64) -> f64, grid: &[f64], tol: f64) -> (f64, f64) {
    let values: Vec<f64> = grid.iter().map(|&x| nan_is_inf(f(x))).collect();
    let best = values
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| i)
        .unwrap_or(0);
    if grid.len() < 3 {
        return (grid[best], values[best]);
    }
    let lo = grid[best.saturating_sub(1)];
    let hi = grid[(best + 1).min(grid.len() - 1)];
    let (x, fx) = brent_min(&mut f, lo, hi, tol);
    if fx <= values[best] {
        (x, fx)
    } else {
        (grid[best], values[best])
    }
}

/// A root of `g` between `a` and `b`, where `g(a)` and `g(b)` have opposite
/// signs (either may be infinite), by regula falsi with the Illinois modification (Dowell & Jarratt
/// 1971): as safe as bisection, and superlinear on smooth functions such as
/// a profile deviance. Stops when the bracket is narrower than `xtol`.
pub fn illinois_root(
    mut g: impl FnMut(f64) -> f64,
    mut a: f64,
    mut ga: f64,
    mut b: f64,
    mut gb: f64,
    xtol: f64,
) -> f64 {
    let mut side = 0i8;
    for _ in 0..100 {
        if (b - a).abs() <= xtol {
            break;
        }
        let mut c = (a * gb - b * ga) / (gb - ga);
        if !c.is_finite() || c <= a.min(b) || c >= a.max(b) {
            c = 0.5 * (a + b);
        }
        // An infinite value (a point the caller could not evaluate, taken
        // as past the root) makes the secant step NaN: bisect then.
        let gc = g(c);
        if (gc > 0.0) == (gb > 0.0) {
            b = c;
            gb = gc;
            if side == -1 {
                ga *= 0.5;
            }
            side = -1;
        } else {
            a = c;
            ga = gc;
            if side == 1 {
                gb *= 0.5;
            }
            side = 1;
        }
        if gc == 0.0 {
            return c;
        }
    }
    if ga.abs() < gb.abs() {
        a
    } else {
        b
    }
}

/// One end of a profile-likelihood interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum End {
    Found(f64),
    /// The profile deviance stayed under the cut-off up to this limit: the
    /// data do not close the interval on this side.
    Open(f64),
}

/// Where the profile deviance crosses its cut-off on one side of the
/// estimate `z_hat`. `excess(z)` is the deviance at `z` minus the cut-off
/// `cut` (so `−cut` at `z_hat`, negative inside the interval, `+∞` where the profile cannot be
/// evaluated). Steps out from `z_hat` by `step`, doubling, until the excess
/// turns positive or `limit` is reached (then `None`), and then closes in
/// on the crossing with [`illinois_root`].
pub fn interval_end(
    mut excess: impl FnMut(f64) -> f64,
    z_hat: f64,
    cut: f64,
    step: f64,
    limit: f64,
    dir: f64,
) -> Option<f64> {
    let (mut inner, mut g_inner) = (z_hat, -cut);
    let mut delta = step;
    let mut shrinks = 0;
    for _ in 0..80 {
        let mut z = z_hat + dir * delta;
        let past = (z - limit) * dir >= 0.0;
        if past {
            z = limit;
        }
        let g = excess(z);
        if inner == z_hat && (g == f64::INFINITY || g > 0.0) {
            if shrinks == 30 {
                // Unevaluable, or above the cut-off, however close to the
                // estimate: the profile is not continuous there (the
                // search lost its footing), so nothing says where this
                // end is and it stays open. A crossing found here would
                // put the end on the estimate itself.
                return None;
            }
            // Step in closer first: an end nearer than the first step, or
            // a search that lost its footing, not a real edge.
            delta *= 0.5;
            shrinks += 1;
            continue;
        }
        if g == f64::INFINITY {
            // The profile cannot be evaluated here, beyond points where it
            // could: that is no crossing of the cut-off (taking it for one
            // put heavy-tailed upper ends on the estimate itself), and
            // nothing says where the end is.
            return None;
        }
        if g > 0.0 {
            return Some(illinois_root(
                &mut excess,
                inner,
                g_inner,
                z,
                g,
                1e-3 * step,
            ));
        }
        (inner, g_inner) = (z, g);
        if past {
            return None;
        }
        delta *= 2.0;
    }
    None
}

fn nan_is_inf(v: f64) -> f64 {
    if v.is_nan() {
        f64::INFINITY
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nelder_mead_finds_the_rosenbrock_minimum() {
        let rosen = |x: &[f64]| (1.0 - x[0]).powi(2) + 100.0 * (x[1] - x[0] * x[0]).powi(2);
        let m = nelder_mead(rosen, &[-1.2, 1.0], &[0.5, 0.5], 1e-14, 1e-9, 5000);
        assert!(m.converged);
        assert!(
            (m.x[0] - 1.0).abs() < 1e-4 && (m.x[1] - 1.0).abs() < 1e-4,
            "{m:?}"
        );
    }

    #[test]
    fn nelder_mead_stays_out_of_an_infeasible_region() {
        // Minimum at the edge of the feasible half-plane x > 1.
        let f = |x: &[f64]| {
            if x[0] <= 1.0 {
                f64::INFINITY
            } else {
                (x[0] - 0.5).powi(2) + x[1] * x[1]
            }
        };
        let m = nelder_mead(f, &[3.0, 1.0], &[0.5, 0.5], 1e-12, 1e-8, 5000);
        assert!(m.f.is_finite() && m.x[0] > 1.0 && m.x[0] < 1.01, "{m:?}");
    }

    #[test]
    fn brent_finds_a_parabola_minimum() {
        let (x, fx) = brent_min(|x| (x - 0.3).powi(2) + 2.0, -5.0, 5.0, 1e-10);
        assert!((x - 0.3).abs() < 1e-7 && (fx - 2.0).abs() < 1e-12);
    }

    #[test]
    fn an_end_that_cannot_be_evaluated_near_the_estimate_is_open() {
        // The profile is fine below the estimate and unevaluable above it.
        let excess = |z: f64| {
            if z > 10.0 {
                f64::INFINITY
            } else {
                (z - 10.0).powi(2) - 1.0
            }
        };
        assert_eq!(interval_end(excess, 10.0, 1.0, 0.5, 1e6, 1.0), None);
        // A deviance that jumps over the cut-off right at the estimate is
        // a broken profile, not an end there.
        let jump = |z: f64| {
            if z > 10.0 {
                5.0
            } else {
                (z - 10.0).powi(2) - 1.0
            }
        };
        assert_eq!(interval_end(jump, 10.0, 1.0, 0.5, 1e6, 1.0), None);
        // Unevaluable beyond points that were fine: open, not an end.
        let gap = |z: f64| {
            if (z - 10.0).abs() > 0.2 {
                f64::INFINITY
            } else {
                (z - 10.0).powi(2) - 1.0
            }
        };
        assert_eq!(interval_end(gap, 10.0, 1.0, 0.1, 1e6, 1.0), None);
        // An end nearer than the first step is still found.
        let narrow = |z: f64| (z - 10.0).powi(2) * 1e4 - 1.0;
        let high = interval_end(narrow, 10.0, 1.0, 0.5, 1e6, 1.0).unwrap();
        assert!((high - 10.01).abs() < 1e-4, "{high}");
        let low = interval_end(excess, 10.0, 1.0, 0.5, -1e6, -1.0).unwrap();
        assert!((low - 9.0).abs() < 1e-3, "{low}");
    }

    #[test]
    fn illinois_finds_a_root() {
        let g = |x: f64| x.powi(3) - 2.0;
        let r = illinois_root(g, 0.0, g(0.0), 3.0, g(3.0), 1e-12);
        assert!((r - 2f64.cbrt()).abs() < 1e-9);
    }
}
