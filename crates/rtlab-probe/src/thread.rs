//! Setting up a measuring thread: pinned, promoted, timer slack 1 ns and
//! stack prefaulted, before its first sample.

use rtlab_core::result::ThreadSettings;
use rtlab_core::sched::{self, SchedParams};

/// Pins, promotes and prepares the calling thread; what is refused is
/// a warning, and the thread measures with what it got.
pub fn set_up_measuring_thread(
    pin_to: Option<usize>,
    sched: &SchedParams,
) -> (ThreadSettings, Vec<String>) {
    let mut warnings = Vec::new();
    let mut pinned_cpu = None;
    if let Some(cpu) = pin_to {
        match sched::pin_current_thread(cpu) {
            Ok(()) => pinned_cpu = Some(cpu),
            Err(e) => warnings.push(format!("could not pin a thread to CPU {cpu}: {e}")),
        }
    }
    if let Err(e) = sched::set_current_thread(sched) {
        let hint = if e.raw_os_error() == Some(libc::EPERM) {
            format!("; to allow it, {}", sched::RT_PRIVILEGE_HINT)
        } else if e.raw_os_error() == Some(libc::EBUSY) {
            "; SCHED_DEADLINE admission control refused the bandwidth".into()
        } else {
            String::new()
        };
        warnings.push(format!(
            "could not set {} ({e}): measuring with the policy the thread already had{hint}",
            *sched
        ));
    }
    if let Err(e) = sched::set_timer_slack(1) {
        warnings.push(format!("could not set the timer slack to 1 ns: {e}"));
    }
    sched::prefault_stack();
    let settings = ThreadSettings {
        tid: sched::gettid(),
        pinned_cpu,
        requested: *sched,
        actual: sched::current_thread().ok(),
        timer_slack_ns: Some(sched::timer_slack()),
    };
    (settings, warnings)
}
