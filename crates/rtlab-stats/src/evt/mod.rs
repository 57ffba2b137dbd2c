//! Worst-case estimate: measurement-based probabilistic timing analysis
//! (pWCET) by extreme value theory.
//!
//! Two methods, both with every assumption checked and reported:
//!
//! * **block maxima** ([`block_maxima`]): the largest sample of each block
//!   of `b` samples follows a generalized extreme value (GEV) distribution
//!   `G`; a sample exceeds `x` with probability `1 − G(x)^(1/(bθ))`, θ the
//!   extremal index (1 when exceedances do not cluster within a block);
//! * **peaks over threshold** ([`peaks_over_threshold`]): the excesses over
//!   a high threshold `u` follow a generalized Pareto distribution (GPD); a
//!   sample exceeds `x > u` with probability `ζᵤ·(1 + ξ(x−u)/σ)^(−1/ξ)`,
//!   `ζᵤ` the fraction of samples above `u`;
//! * **declustered block maxima** ([`declustered_block_maxima`]): peaks over
//!   threshold on a stored series' block maxima in time order, grouped into
//!   clusters by the extremal index, the GPD fitted to the cluster maxima,
//!   for series whose large values come in bursts.
//!
//! Beside the estimate, [`distribution_free_bound`] states what the largest
//! block maxima bound without any model, and whether the fit agrees.
//!
//! Each returns an [`EvtReport`]: the fit, the checks (enough data,
//! independence, stationarity, goodness of fit, regularity, plausibility of
//! the observed maximum), and either pWCET values at per-sample exceedance
//! probabilities with profile-likelihood confidence intervals, or a refusal
//! that names the failed checks and their numbers. A refused report never
//! carries a pWCET value. `docs/pwcet.md` explains the method for users.
//!
//! References: Coles (2001) *An Introduction to Statistical Modeling of
//! Extreme Values*; Hosking, Wallis & Wood (1985) for the PWM start;
//! Grimshaw (1993) for the GPD likelihood; Ferro & Segers (2003) for the
//! extremal index and declustering; Choulakian & Stephens (2001) and
//! Stephens (1976) for goodness of fit with estimated parameters; Ljung &
//! Box (1978); Mann (1945); Cucu-Grosjean et al. (2012) for MBPTA.

mod block_maxima;
mod bound;
mod checks;
mod declustered;
mod gev;
mod gof;
mod gpd;
mod optim;
mod pipeline;
mod pot;
mod report;
mod series;

pub use block_maxima::block_maxima;
pub use bound::distribution_free_bound;
pub use declustered::declustered_block_maxima;
pub use pot::{peaks_over_threshold, peaks_over_threshold_from_histogram};
pub use report::{
    check, BoundComparison, Check, CheckStatus, Declustering, DistributionFreeBound, EvtOptions,
    EvtReport, FitParams, Fitted, Method, PwcetEstimate, Verdict,
};
pub use series::for_series;
