//! The kernel's osnoise tracer as a second opinion: run after rtlab's own
//! measurement (both would compete for the CPUs) on the same CPUs with the
//! same runtime, period and threshold, its per-period trace lines summed
//! per CPU the way `rtla osnoise top` does.
//!
//! Every tracefs setting changed is read first and written back when the
//! [`Session`] ends (also on error, early stop or panic unwind). tracefs is
//! never mounted here: where it is not, the note says so.

use rtlab_core::journal::Journal;
use rtlab_core::result::OsnoiseSummary;
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where tracefs is mounted, in order of preference.
pub const TRACEFS_ROOTS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The tracefs root holding an osnoise tracer, or why there is none.
pub fn find_tracer() -> Result<PathBuf, String> {
    let roots: Vec<&Path> = TRACEFS_ROOTS.iter().map(Path::new).collect();
    find_tracer_in(&roots)
}

/// [`find_tracer`] over the given candidate roots.
pub fn find_tracer_in(roots: &[&Path]) -> Result<PathBuf, String> {
    let Some(root) = roots
        .iter()
        .find(|root| root.join("available_tracers").is_file())
    else {
        return Err("tracefs is not mounted (rtlab does not mount it; \
`mount -t tracefs nodev /sys/kernel/tracing` to allow the osnoise comparison)"
            .into());
    };
    let tracers = fs::read_to_string(root.join("available_tracers")).map_err(|e| {
        format!(
            "cannot read {}: {e}",
            root.join("available_tracers").display()
        )
    })?;
    if !tracers.split_whitespace().any(|t| t == "osnoise") {
        return Err(
            "the kernel has no osnoise tracer (not in available_tracers; CONFIG_OSNOISE_TRACER)"
                .into(),
        );
    }
    let current = read_setting(&root.join("current_tracer"))
        .map_err(|e| format!("cannot read current_tracer: {e}"))?;
    if current != "nop" {
        return Err(format!(
            "another tracer ({current}) is in use; osnoise was not started over it"
        ));
    }
    Ok(root.to_path_buf())
}

/// What the tracer is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OsnoiseSettings {
    pub cpus: Vec<usize>,
    pub runtime_us: u64,
    pub period_us: u64,
    /// `tracing_thresh`: the smallest gap that is noise, µs (0 means the
    /// tracer's default, 5 µs, so at least 1 is written).
    pub threshold_us: u64,
}

impl OsnoiseSettings {
    /// The tracer's settings for rtlab's (µs, rounded so that the tracer's
    /// threshold is never below rtlab's).
    pub fn from_ns(cpus: &[usize], runtime_ns: u64, period_ns: u64, threshold_ns: u64) -> Self {
        OsnoiseSettings {
            cpus: cpus.to_vec(),
            runtime_us: (runtime_ns / 1000).max(1),
            period_us: (period_ns / 1000).max(1),
            threshold_us: threshold_ns.div_ceil(1000).max(1),
        }
    }
}

/// A tracefs value without its trailing newline.
fn read_setting(path: &Path) -> io::Result<String> {
    Ok(fs::read_to_string(path)?.trim_end().to_string())
}

/// A journal to write settings through, so that `rtlab restore` puts them
/// back even after a SIGKILL; None writes them directly (tests on a fake
/// tracefs).
type JournalRef<'a> = Option<&'a Mutex<Journal>>;

/// `echo value > path`, journaled first when a journal is given.
fn write_setting(journal: JournalRef<'_>, path: &Path, value: &str) -> io::Result<()> {
    if let Some(journal) = journal {
        return journal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .set_file(path, value)
            .map_err(io::Error::other);
    }
    let mut file = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?;
    file.write_all(format!("{value}\n").as_bytes())
}

/// The tracer refuses a runtime above the period and a period below the
/// runtime; this order is valid from any valid pair to any valid pair.
fn set_runtime_period(
    journal: JournalRef<'_>,
    root: &Path,
    runtime_us: u64,
    period_us: u64,
) -> io::Result<()> {
    let runtime_path = root.join("osnoise/runtime_us");
    let period_path = root.join("osnoise/period_us");
    let current: u64 = read_setting(&runtime_path)?
        .parse()
        .map_err(|_| io::Error::other("osnoise/runtime_us is not a number"))?;
    write_setting(journal, &runtime_path, &current.min(runtime_us).to_string())?;
    write_setting(journal, &period_path, &period_us.to_string())?;
    write_setting(journal, &runtime_path, &runtime_us.to_string())
}

fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The osnoise tracer configured and running; dropping it (or
/// [`Session::restore`]) writes every changed setting back.
pub struct Session {
    root: PathBuf,
    /// (file, old value), in the order they were changed.
    saved: Vec<(String, String)>,
    /// The old (runtime, period), restored together.
    saved_runtime_period: Option<(u64, u64)>,
    restored: bool,
    journal: Option<Arc<Mutex<Journal>>>,
}

const SAVED_FILES: &[&str] = &[
    "tracing_on",
    "current_tracer",
    "tracing_thresh",
    "osnoise/cpus",
];

impl Session {
    /// Saves the old values, then configures and starts the tracer.
    pub fn start(root: &Path, settings: &OsnoiseSettings) -> Result<Session, String> {
        Session::start_journaled(root, settings, None)
    }

    /// As [`Session::start`], every write journaled first (every system
    /// change rtlab makes goes through the journal, rtlab-core's journal/,
    /// so that `rtlab restore` can undo what a killed run left).
    pub fn start_journaled(
        root: &Path,
        settings: &OsnoiseSettings,
        journal: Option<Arc<Mutex<Journal>>>,
    ) -> Result<Session, String> {
        let mut session = Session {
            root: root.to_path_buf(),
            saved: Vec::new(),
            saved_runtime_period: None,
            restored: false,
            journal,
        };
        let mut old = BTreeMap::new();
        for name in SAVED_FILES {
            let value = read_setting(&root.join(name))
                .map_err(|e| format!("cannot read {}: {e}", root.join(name).display()))?;
            old.insert(*name, value);
        }
        let number = |name: &str| -> Result<u64, String> {
            read_setting(&root.join(name))
                .map_err(|e| format!("cannot read {name}: {e}"))?
                .parse()
                .map_err(|_| format!("{name} is not a number"))
        };
        let old_runtime_period = (number("osnoise/runtime_us")?, number("osnoise/period_us")?);

        let set = |session: &mut Session, name: &'static str, value: &str| {
            session.saved.push((name.to_string(), old[name].clone()));
            write_setting(session.journal.as_deref(), &root.join(name), value)
                .map_err(|e| format!("cannot write {value:?} to {name}: {e}"))
        };
        set(&mut session, "tracing_on", "0")?;
        set(
            &mut session,
            "tracing_thresh",
            &settings.threshold_us.to_string(),
        )?;
        set(&mut session, "osnoise/cpus", &cpu_list(&settings.cpus))?;
        session.saved_runtime_period = Some(old_runtime_period);
        set_runtime_period(
            session.journal.as_deref(),
            root,
            settings.runtime_us,
            settings.period_us,
        )
        .map_err(|e| format!("cannot set the osnoise runtime/period: {e}"))?;
        set(&mut session, "current_tracer", "osnoise")?;
        write_setting(session.journal.as_deref(), &root.join("tracing_on"), "1")
            .map_err(|e| format!("cannot write 1 to tracing_on: {e}"))?;
        Ok(session)
    }

    /// The tracer's trace so far.
    pub fn read_trace(&self) -> Result<String, String> {
        fs::read_to_string(self.root.join("trace"))
            .map_err(|e| format!("cannot read {}: {e}", self.root.join("trace").display()))
    }

    /// Writes every changed setting back, latest change first; returns
    /// what could not be restored.
    pub fn restore(&mut self) -> Vec<String> {
        if self.restored {
            return Vec::new();
        }
        self.restored = true;
        let mut failures = Vec::new();
        // Stop the tracer before anything else.
        let journal = self.journal.clone();
        let journal = journal.as_deref();
        let _ = write_setting(journal, &self.root.join("tracing_on"), "0");
        let mut pending: Vec<(String, String)> = std::mem::take(&mut self.saved);
        while let Some((name, old)) = pending.pop() {
            if name == "osnoise/cpus" {
                if let Some((runtime, period)) = self.saved_runtime_period.take() {
                    if let Err(e) = set_runtime_period(journal, &self.root, runtime, period) {
                        failures.push(format!(
                            "osnoise/runtime_us and period_us not restored to {runtime}/{period}: {e}"
                        ));
                    }
                }
            }
            if let Err(e) = write_setting(journal, &self.root.join(&name), &old) {
                failures.push(format!("{name} not restored to {old:?}: {e}"));
            }
        }
        if let Some((runtime, period)) = self.saved_runtime_period.take() {
            if let Err(e) = set_runtime_period(journal, &self.root, runtime, period) {
                failures.push(format!(
                    "osnoise/runtime_us and period_us not restored to {runtime}/{period}: {e}"
                ));
            }
        }
        failures
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// What running the tracer gave.
#[derive(Debug, Default)]
pub struct OsnoiseRun {
    pub summaries: BTreeMap<usize, OsnoiseSummary>,
    /// Why there is nothing (or less than asked), when so.
    pub note: Option<String>,
    /// Settings that could not be put back.
    pub restore_failures: Vec<String>,
    /// Cut short by the stop flag: the run is stopped early.
    pub stopped: bool,
}

/// Runs the tracer for `duration` (less when `stop` is set), then reads
/// its trace and restores every setting.
pub fn run(
    root: &Path,
    settings: &OsnoiseSettings,
    duration: Duration,
    stop: &AtomicBool,
    journal: Option<Arc<Mutex<Journal>>>,
) -> OsnoiseRun {
    let mut session = match Session::start_journaled(root, settings, journal) {
        Ok(session) => session,
        Err(e) => {
            // Whatever was changed before the failure is put back by drop.
            return OsnoiseRun {
                note: Some(format!("the osnoise tracer could not be started: {e}")),
                ..OsnoiseRun::default()
            };
        }
    };
    let end = std::time::Instant::now() + duration;
    let mut stopped = false;
    while let Some(left) = end.checked_duration_since(std::time::Instant::now()) {
        if left.is_zero() {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            stopped = true;
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
    let trace = session.read_trace();
    let restore_failures = session.restore();
    let mut run = OsnoiseRun {
        restore_failures,
        stopped,
        ..OsnoiseRun::default()
    };
    match trace {
        Ok(text) => {
            run.summaries = parse_summary(&text);
            let missing: Vec<String> = settings
                .cpus
                .iter()
                .filter(|cpu| !run.summaries.contains_key(cpu))
                .map(usize::to_string)
                .collect();
            if !missing.is_empty() {
                run.note = Some(format!(
                    "the osnoise tracer reported no complete period for CPU {}",
                    missing.join(", ")
                ));
            }
        }
        Err(e) => run.note = Some(e),
    }
    if stopped {
        let why = "the osnoise tracer was stopped early with the run";
        run.note = Some(match run.note.take() {
            Some(note) => format!("{why}; {note}"),
            None => why.to_string(),
        });
    }
    run
}

/// One per-period line of the osnoise tracer: CPU and its nine figures.
fn parse_line(line: &str) -> Option<(usize, [f64; 9])> {
    if line.trim_start().starts_with('#') {
        return None;
    }
    // `TASK-PID [CPU] flags TIMESTAMP: RUNTIME NOISE %AVAIL MAXSINGLE HW NMI IRQ SIRQ THREAD`;
    // the task name may hold spaces and brackets, so take the last `[NNN]`
    // before the timestamp.
    let stamp_end = line.find(": ")?;
    let head = &line[..stamp_end];
    let open = head.rfind('[')?;
    let close = open + head[open..].find(']')?;
    let cpu: usize = head[open + 1..close].trim().parse().ok()?;
    let stamp = head[close + 1..].split_whitespace().last()?;
    stamp.parse::<f64>().ok()?;
    let mut figures = [0f64; 9];
    let mut fields = line[stamp_end + 1..].split_whitespace();
    for figure in figures.iter_mut() {
        *figure = fields.next()?.parse().ok()?;
    }
    if fields.next().is_some() {
        return None;
    }
    Some((cpu, figures))
}

/// Sums the tracer's per-period lines per CPU, as `rtla osnoise top` does:
/// runtime, noise and the interference counters summed; `% CPU available`
/// from the sums; max noise = the largest per-period noise; max single =
/// the largest per-period max single noise. Lines of other formats (the
/// osnoise tracepoints, comments) are skipped.
pub fn parse_summary(trace: &str) -> BTreeMap<usize, OsnoiseSummary> {
    let mut summaries: BTreeMap<usize, OsnoiseSummary> = BTreeMap::new();
    for (cpu, f) in trace.lines().filter_map(parse_line) {
        let s = summaries.entry(cpu).or_default();
        let [runtime, noise, _available, max_single, hw, nmi, irq, softirq, thread] =
            f.map(|v| v as u64);
        s.runtime_us += runtime;
        s.noise_us += noise;
        s.max_noise_us = s.max_noise_us.max(noise);
        s.max_single_noise_us = s.max_single_noise_us.max(max_single);
        s.hw += hw;
        s.nmi += nmi;
        s.irq += irq;
        s.softirq += softirq;
        s.thread += thread;
    }
    for s in summaries.values_mut() {
        s.cpu_available_percent = if s.runtime_us == 0 {
            0.0
        } else {
            100.0 * s.runtime_us.saturating_sub(s.noise_us) as f64 / s.runtime_us as f64
        };
    }
    summaries
}
