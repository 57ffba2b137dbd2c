//! What an analysis is asked ([`EvtOptions`]) and what it returns
//! ([`EvtReport`]: the fit, the checks, the verdict and the estimates).

use serde::{Deserialize, Serialize};

/// How an analysis runs. Every field has a default ([`EvtOptions::default`]);
/// [`EvtOptions::validate`] says which field is out of range and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EvtOptions {
    /// Per-sample exceedance probabilities to estimate the pWCET at.
    pub probabilities: Vec<f64>,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// Significance level of every check: a check fails when its p-value is
    /// below this.
    pub significance: f64,
    /// Fewest block maxima a GEV fit is made from.
    pub min_blocks: usize,
    /// How many times block maxima may be merged in pairs (block size ×2
    /// each time) to reach independent maxima or a good fit.
    pub max_block_merges: u32,
    /// Fewest threshold exceedances (clusters after declustering) a GPD fit
    /// is made from.
    pub min_exceedances: usize,
    /// Most exceedances a threshold may have (the lowest threshold tried):
    /// below, the GPD stops being a tail model.
    pub max_exceedances: usize,
    /// Smallest extremal index accepted: below it exceedances come in
    /// clusters of more than 1/θ samples on average.
    pub min_extremal_index: f64,
    /// Estimate even where an assumption cannot be checked from the data
    /// given: independence and stationarity from a histogram (no time
    /// order), clustering within blocks from block maxima without the
    /// series' histogram. The report then says what was assumed.
    pub accept_unchecked: bool,
}

impl Default for EvtOptions {
    fn default() -> Self {
        EvtOptions {
            probabilities: vec![1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9],
            confidence: 0.95,
            significance: 0.01,
            min_blocks: 50,
            max_block_merges: 3,
            min_exceedances: 100,
            max_exceedances: 5000,
            min_extremal_index: 0.5,
            accept_unchecked: false,
        }
    }
}

impl EvtOptions {
    /// Checks every field; the error names the field, its value and what
    /// was expected.
    pub fn validate(&self) -> Result<(), String> {
        if self.probabilities.is_empty() {
            return Err("evt option `probabilities`: empty; expected at least one \
                        probability in (0, 0.1]"
                .into());
        }
        if let Some(p) = self
            .probabilities
            .iter()
            .find(|p| !(p.is_finite() && **p > 0.0 && **p <= 0.1))
        {
            return Err(format!(
                "evt option `probabilities`: {p} is not a per-sample exceedance \
                 probability in (0, 0.1]"
            ));
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(format!(
                "evt option `confidence`: {}; expected a level in (0, 1), e.g. 0.95",
                self.confidence
            ));
        }
        if !(self.significance > 0.0 && self.significance < 0.5) {
            return Err(format!(
                "evt option `significance`: {}; expected a level in (0, 0.5), e.g. 0.01",
                self.significance
            ));
        }
        if self.min_blocks < 10 {
            return Err(format!(
                "evt option `min_blocks`: {}; expected at least 10",
                self.min_blocks
            ));
        }
        if self.max_block_merges > 16 {
            return Err(format!(
                "evt option `max_block_merges`: {}; expected at most 16",
                self.max_block_merges
            ));
        }
        if self.min_exceedances < 10 {
            return Err(format!(
                "evt option `min_exceedances`: {}; expected at least 10",
                self.min_exceedances
            ));
        }
        if self.max_exceedances < self.min_exceedances {
            return Err(format!(
                "evt option `max_exceedances`: {}; expected at least `min_exceedances` ({})",
                self.max_exceedances, self.min_exceedances
            ));
        }
        if !(0.0..=1.0).contains(&self.min_extremal_index) {
            return Err(format!(
                "evt option `min_extremal_index`: {}; expected a value in [0, 1]",
                self.min_extremal_index
            ));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Block maxima with a GEV fit.
    BlockMaxima,
    /// Peaks over threshold with a GPD fit.
    PeaksOverThreshold,
}

/// The fitted distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FitParams {
    /// ξ: < 0 a bounded tail, 0 exponential-like (Gumbel), > 0 heavy
    /// (Pareto-like).
    pub shape: f64,
    /// Standard error of ξ from the observed information; null when the
    /// information matrix is not positive definite.
    pub shape_se: Option<f64>,
    /// σ, ns.
    pub scale_ns: f64,
    /// μ of the GEV, or the threshold u of the GPD, ns.
    pub location_ns: f64,
}

/// The pWCET at one exceedance probability.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PwcetEstimate {
    /// Probability that one sample exceeds `value_ns`.
    pub exceedance_per_sample: f64,
    pub value_ns: f64,
    pub ci_low_ns: f64,
    /// `+∞` when the data do not bound the value from above at the
    /// confidence level (heavy tails, few data); JSON `null` then.
    #[serde(with = "upper_bound")]
    pub ci_high_ns: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Passed,
    Failed,
    /// The data cannot show it (a histogram has no time order).
    Unknown,
}

/// One checked assumption.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// One of the names in [`check`].
    pub name: String,
    pub status: CheckStatus,
    /// The test statistic (its meaning is in `detail`); JSON `null` when
    /// there is none.
    #[serde(with = "number_or_null")]
    pub statistic: f64,
    pub p_value: Option<f64>,
    /// What was tested, with the numbers, in a sentence.
    pub detail: String,
}

impl Check {
    pub fn passed(&self) -> bool {
        self.status == CheckStatus::Passed
    }

    /// A failed check as a refusal names it in one line: `not enough data
    /// (n=40 < 500)`, `goodness of fit failed`. The names are what a check
    /// asserts, so a bare name ("refused: enough data") read as the
    /// opposite of what it meant.
    pub fn failure_summary(&self) -> String {
        if self.name == check::ENOUGH_DATA {
            // Every detail of this check ends with "at least N ...".
            let minimum = self
                .detail
                .rsplit("at least ")
                .next()
                .filter(|_| self.detail.contains("at least "))
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse::<u64>().ok());
            let n = self.statistic as u64;
            return match minimum {
                Some(min) => format!("not enough data (n={n} < {min})"),
                None => format!("not enough data (n={n})"),
            };
        }
        match self.status {
            CheckStatus::Unknown => format!("{} cannot be checked", self.name),
            _ => format!("{} failed", self.name),
        }
    }
}

/// The names of the checks.
pub mod check {
    pub const ENOUGH_DATA: &str = "enough data";
    pub const INDEPENDENCE: &str = "independence";
    pub const CLUSTERING: &str = "no clustering within blocks";
    pub const TREND: &str = "stationarity: no trend";
    pub const EVEN_RATE: &str = "stationarity: even rate";
    pub const REGULAR_FIT: &str = "regular fit";
    pub const GOODNESS_OF_FIT: &str = "goodness of fit";
    pub const THRESHOLD_STABILITY: &str = "threshold stability";
    pub const MAXIMUM: &str = "observed maximum plausible";
    /// Declustered block maxima: the histogram gives the fraction of all
    /// samples above the threshold, which turns a cluster rate into a
    /// per-sample probability.
    pub const SAMPLE_RATE: &str = "per-sample exceedance rate";
}

/// What the fitted distribution was fitted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fitted {
    /// The maxima of blocks of `block_samples` samples (GEV).
    BlockMaxima,
    /// The largest value of each cluster of exceedances (GPD).
    ClusterMaxima,
    /// Every exceedance, no time order to decluster by (GPD on a
    /// histogram).
    Exceedances,
}

/// How exceedances of a threshold were grouped into clusters before the
/// fit (intervals declustering, Ferro & Segers 2003 §5.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Declustering {
    /// Samples per element of the sequence declustered: 1 for the samples
    /// themselves, the block size for the series' block maxima in time
    /// order.
    pub sequence_block_samples: u64,
    pub threshold_ns: f64,
    /// Elements of the sequence above the threshold.
    pub exceedances: usize,
    /// Samples above the threshold (from the histogram for block maxima);
    /// None when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_exceedances: Option<f64>,
    pub clusters: usize,
    /// Exceedances further apart than this many elements start a new
    /// cluster.
    pub run_length: u64,
    /// θ̂ of the sequence's exceedances by the intervals estimator (Ferro &
    /// Segers 2003): 1/θ̂ elements per cluster.
    pub sequence_extremal_index: f64,
}

/// A bound that assumes no distribution, beside the EVT estimate: the
/// largest maxima of near-independent blocks and what their exceedance
/// probability is known to be (for any continuous distribution, the true
/// probability that a new block exceeds the k-th largest of m blocks
/// follows Beta(k, m − k + 1)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DistributionFreeBound {
    pub block_samples: u64,
    pub blocks: usize,
    /// Ljung–Box on the ranks of these block maxima (lags 1–10): the bound
    /// needs independent blocks.
    pub independence_p: Option<f64>,
    pub independent: bool,
    /// Confidence of `exceedance_per_block`.
    pub confidence: f64,
    /// The largest block maximum, ns.
    pub value_ns: f64,
    /// With `confidence`, a block — and so any one sample — exceeds
    /// `value_ns` with at most this probability: `1 − (1−confidence)^(1/m)`.
    pub exceedance_per_block: f64,
    /// The cross-check at a few order statistics.
    pub comparisons: Vec<BoundComparison>,
    /// The level of each comparison's range (1 − the checks' significance).
    pub range_confidence: f64,
    /// Some EVT probability lies outside its distribution-free range.
    pub disagrees: bool,
}

/// The EVT estimate against the order statistics at one rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundComparison {
    /// k: the k-th largest block maximum.
    pub rank: usize,
    pub value_ns: f64,
    /// The range that holds the true per-block exceedance probability of
    /// `value_ns` with probability `range_confidence`, for any distribution.
    pub low: f64,
    pub high: f64,
    /// What the EVT fit says it is; None when no fit was made.
    pub evt: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verdict {
    Estimated,
    /// No estimate: each reason names a check (or the input) and the
    /// numbers that failed it.
    Refused {
        reasons: Vec<String>,
    },
}

/// The outcome of one analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvtReport {
    pub method: Method,
    /// Samples the analysis covers.
    pub samples: u64,
    /// Block maxima or cluster maxima the fit used.
    pub used: usize,
    /// Block size used (block maxima).
    pub block_samples: Option<u64>,
    /// Threshold u (peaks over threshold), ns.
    pub threshold_ns: Option<f64>,
    /// ζᵤ: fraction of samples above the threshold.
    pub exceedance_rate: Option<f64>,
    /// θ: extremal index of the exceedances (1 = no clustering).
    pub extremal_index: Option<f64>,
    /// The fit, also when refused (for diagnosis); None when no fit was
    /// made.
    pub params: Option<FitParams>,
    pub confidence: f64,
    pub checks: Vec<Check>,
    pub verdict: Verdict,
    /// Empty when refused.
    pub pwcet: Vec<PwcetEstimate>,
    /// The fitted tail for the exceedance plot as `[ns, probability per
    /// sample]`, from the threshold (or the blocks' typical maximum) down to
    /// a tenth of the smallest requested probability; empty when refused.
    pub curve: Vec<(f64, f64)>,
    pub observed_max_ns: f64,
    /// What the distribution was fitted to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fitted: Option<Fitted>,
    /// How exceedances were grouped into clusters (peaks over threshold in
    /// time order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declustering: Option<Declustering>,
    /// The distribution-free cross-check (block maxima in time order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<DistributionFreeBound>,
    /// What else a reader must know (skipped probabilities, the candidates
    /// tried, caveats).
    pub notes: Vec<String>,
}

impl EvtReport {
    pub fn is_estimated(&self) -> bool {
        self.verdict == Verdict::Estimated
    }

    /// The check named `name` (see [`check`]).
    pub fn check(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }
}

/// `f64` fields that may be NaN: JSON has no NaN, so it is written as
/// `null` and read back as NaN.
mod number_or_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

/// An upper confidence bound that may be `+∞`: JSON has no infinity, so it
/// is written as `null` ("unbounded") and read back as `+∞`.
mod upper_bound {
    use serde::{Deserialize, Deserializer};

    /// Written as any number that may not be finite.
    pub use super::number_or_null::serialize;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

#[cfg(test)]
mod failure_wording {
    use super::*;

    fn failed(name: &str, statistic: f64, detail: &str) -> Check {
        Check {
            name: name.into(),
            status: CheckStatus::Failed,
            statistic,
            p_value: None,
            detail: detail.into(),
        }
    }

    /// "refused: enough data" read as the opposite of what it meant.
    #[test]
    fn a_failed_check_reads_as_a_failure() {
        let few = failed(
            check::ENOUGH_DATA,
            40.0,
            "40 block maxima of 16 samples; a fit needs at least 500",
        );
        assert_eq!(few.failure_summary(), "not enough data (n=40 < 500)");
        let clusters = failed(
            check::ENOUGH_DATA,
            12.0,
            "30 exceedances of 50.000 µs in 12 clusters; a fit needs at least 100 clusters",
        );
        assert_eq!(clusters.failure_summary(), "not enough data (n=12 < 100)");
        let fit = failed(check::GOODNESS_OF_FIT, 0.9, "AD statistic 0.9");
        assert_eq!(fit.failure_summary(), "goodness of fit failed");
    }
}
