//! What the readers of every probe kind's `[[probe]]` table share (each
//! kind's own keys are read in its module under `probes/`): CPU settings,
//! the stand-in run a probe's settings are checked with, and a probe's
//! refusal reported at the setting it names.

use super::reader::{Reader, Section};
use crate::error::CampaignError;
use rtlab_core::cpuset::CpuSelection;
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_core::settings::FieldError;

/// `cpus`: `all` or a CPU list, if given.
pub(crate) fn cpus(r: &Reader, s: &Section) -> Result<Option<CpuSelection>, CampaignError> {
    let Some(v) = s.get("cpus") else {
        return Ok(None);
    };
    let (text, span) = r.string(v, &s.field("cpus"))?;
    CpuSelection::parse(&text)
        .map(Some)
        .map_err(|e| r.error(span, &s.field("cpus"), e.to_string()))
}

/// A CPU number under `key`, if given.
pub(crate) fn cpu_number(
    r: &Reader,
    s: &Section,
    key: &str,
) -> Result<Option<usize>, CampaignError> {
    let Some(v) = s.get(key) else {
        return Ok(None);
    };
    let n = r.integer(v, &s.field(key))?;
    usize::try_from(n)
        .map(Some)
        .map_err(|_| r.error(v.span(), &s.field(key), format!("{n} is not a CPU number")))
}

/// What a probe is checked with when its file is read, standing in for a
/// run's: one second, SCHED_FIFO at the default priority (what a
/// configuration asks of the probe is checked per pair, in `matrix`).
pub(crate) const STAND_IN_NS: u64 = 1_000_000_000;
pub(crate) const STAND_IN_SCHED: SchedParams = SchedParams {
    policy: Policy::Fifo,
    priority: rtlab_probe::DEFAULT_PRIORITY,
    deadline: None,
};

/// A probe's config refused a setting: the error is at the setting, or
/// when it was left to its default at the first other setting the message
/// names, else at the `[[probe]]` table.
pub(crate) fn at_setting(r: &Reader, s: &Section, e: &FieldError) -> CampaignError {
    let at = e
        .settings()
        .into_iter()
        .find_map(|key| s.get(key))
        .map_or(s.span.clone(), |v| v.span());
    r.error(at, &s.field(e.field), e.message_with(str::to_string))
}
