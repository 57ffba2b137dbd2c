//! The executive's guards and spin as text: `rtlab show` of a periodic or
//! plan run, and the lines of `rtlab exec kurt-table`.

use rtlab_core::result::{ExecutiveThread, GuardBucket, RunResult};
use rtlab_core::units::human_duration;

/// The thread's name: `the executive of CPU 1`, `the dispatcher`.
fn thread_name(t: &ExecutiveThread) -> String {
    match t.cpu {
        Some(cpu) => format!("{} of CPU {cpu}", t.role),
        None => t.role.clone(),
    }
}

/// `3ms-10ms`, `10ms+`.
fn idle_range(b: &GuardBucket) -> String {
    match b.idle_below_ns {
        Some(below) => format!(
            "{}-{}",
            human_duration(b.idle_from_ns),
            human_duration(below)
        ),
        None => format!("{}+", human_duration(b.idle_from_ns)),
    }
}

/// One bucket: its observations, its quantile and the guard it got.
fn bucket_line(b: &GuardBucket, quantile: f64, what: &str) -> String {
    let learned = b.quantile_ns.map_or_else(
        || "too few to learn".to_string(),
        |q| format!("p{} {}", quantile * 100.0, human_duration(q)),
    );
    format!(
        "{} {what}, {learned}, max {}: {}{}",
        b.observations,
        human_duration(b.max_ns),
        human_duration(b.guard_ns),
        if b.capped > 0 {
            format!(" (capped by the spin budget {} times)", b.capped)
        } else {
            String::new()
        }
    )
}

/// `rtlab show`'s lines about the executive, empty for a run without one.
pub fn show_text(result: &RunResult) -> String {
    let Some(report) = &result.executive else {
        return String::new();
    };
    let mut out = String::new();
    for t in &report.threads {
        out += &format!(
            "{}: guard {}, release early {}, spin {} ({:.2} % of its CPU, budget {} %)\n",
            thread_name(t),
            t.guard_mode,
            t.release_early_mode,
            human_duration(t.spin_ns),
            t.spin_percent,
            t.spin_budget_percent
        );
        for b in &t.guards {
            out += &format!(
                "  idle {}: {}\n",
                idle_range(b),
                bucket_line(b, t.quantile, "wake-ups late by")
            );
        }
        if let Some(r) = &t.release_early {
            out += &format!(
                "  release early: {}\n",
                bucket_line(r, t.quantile, "task wake-ups after release, delayed")
            );
        }
    }
    out
}

/// kurt-table's short form: `guards 45us-310us (auto), spin 2.1 %`.
pub fn short_text(result: &RunResult) -> Option<String> {
    let report = result.executive.as_ref()?;
    let guards = report.threads.iter().flat_map(|t| t.guards.iter());
    let low = guards.clone().map(|b| b.guard_ns).min()?;
    let high = guards.map(|b| b.guard_ns).max()?;
    let spin: f64 = report.threads.iter().map(|t| t.spin_percent).sum();
    let mode = report
        .threads
        .first()
        .map_or("?", |t| t.guard_mode.as_str());
    let range = if low == high {
        human_duration(low)
    } else {
        format!("{}-{}", human_duration(low), human_duration(high))
    };
    Some(format!("guard {range} ({mode}), spin {spin:.2} %"))
}
