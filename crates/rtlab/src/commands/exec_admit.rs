//! `rtlab exec admit`: whether a task set meets every deadline (the
//! analysis is `rtlab_admit`; the tasks, their WCETs and the executive's
//! overheads on this machine come from `rtlab_exec::admission`), and the
//! same admission in front of `exec periodic --taskset` (the gate, and
//! `--force`).

use crate::cli::{AdmitPolicy, ExecAdmitArgs, OverheadsFrom};
use crate::input::InputError;
use crate::session;
use crate::terminal::out;
use rtlab_admit::{
    admit as admit_one, analyse, Analysis, Overheads, Policy, Refusal, Test, Verdict,
};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::result::{terminal_text, RunResult, SeriesStats};
use rtlab_core::units::human_duration;
use rtlab_exec::admission::{
    measure, plain, tasks_of, Measured, ReleaseSettings, SourcedTask, WcetSource,
};
use rtlab_exec::periodic::{Mode, PeriodicConfig};
use rtlab_probe::{Probe, ProbeOutcome, ProbeRun, Start};
use rtlab_report::evt::{for_series, EvtOptions, Verdict as EvtVerdict};
use serde_json::json;
use std::process::ExitCode;

/// The JSON document of `exec admit --json`.
const ADMIT_SCHEMA: &str = "rtlab.admit/1";
/// The exceedance probability per activation a stored run's pWCET is
/// taken at (`--budget-from`).
pub const PWCET_EXCEEDANCE: f64 = 1e-9;
/// Exit code of a task set that is not admitted.
const NOT_ADMITTED: u8 = 1;

/// The task set analysed: its tasks, the overheads, the analysis and,
/// when not admitted, the first task refused.
struct Admission {
    tasks: Vec<SourcedTask>,
    measured: Option<Measured>,
    analysis: Analysis,
    refusal: Option<Refusal>,
}

/// Analyses `tasks` under `policy` with `overheads`; when not
/// schedulable, the refusal of the first task (in the file's order) that
/// does not fit beside those before it, with what would fit on any
/// online CPU.
fn analysed(
    tasks: Vec<SourcedTask>,
    policy: Policy,
    overheads: &Overheads,
    measured: Option<Measured>,
) -> Admission {
    let plain_tasks = plain(&tasks);
    let analysis = analyse(&plain_tasks, policy, overheads);
    let refusal = if analysis.schedulable {
        None
    } else {
        let cpus: Vec<usize> = CpuSet::online().iter().collect();
        let mut admitted = Vec::with_capacity(plain_tasks.len());
        plain_tasks.iter().find_map(|task| {
            match admit_one(&admitted, task, policy, overheads, &cpus) {
                Ok(_) => {
                    admitted.push(task.clone());
                    None
                }
                Err(refusal) => Some(refusal),
            }
        })
    };
    Admission {
        tasks,
        measured,
        analysis,
        refusal,
    }
}

/// The CPUs `tasks` run on, each once, in order.
fn cpus_of(tasks: &[SourcedTask]) -> Vec<usize> {
    let set = CpuSet::from_cpus(tasks.iter().map(|t| t.task.cpu).collect::<Vec<_>>());
    set.iter().collect()
}

/// The overheads `--overheads` asks for, measured with the executive's
/// `settings` on the CPUs of `tasks`; each line of the measurement is
/// printed on stderr (or why nothing was measured).
fn overheads_for(
    from: OverheadsFrom,
    tasks: &[SourcedTask],
    settings: &ReleaseSettings,
) -> (Overheads, Option<Measured>) {
    match from {
        OverheadsFrom::None => (Overheads::none(), None),
        OverheadsFrom::Measure => {
            let measured = measure(&cpus_of(tasks), settings);
            for line in measured.lines() {
                eprintln!("{}", terminal_text(&format!("overheads: {line}")));
            }
            (measured.overheads.clone(), Some(measured))
        }
    }
}

/// `--jitter` and `--release-cost` over the overheads, said in its source.
fn overridden(mut overheads: Overheads, jitter: Option<u64>, cost: Option<u64>) -> Overheads {
    if let Some(ns) = jitter {
        overheads.release_jitter_ns = ns;
        overheads.source += &format!("; jitter {} from --jitter", human_duration(ns));
    }
    if let Some(ns) = cost {
        overheads.release_cost_ns = ns;
        overheads.source += &format!("; release cost {} from --release-cost", human_duration(ns));
    }
    overheads
}

/// The series of a stored run that bounds task `name`'s execution: its
/// `<name>.execution` (an `exec periodic --taskset` run with a budget),
/// else its `<name>.response` (an `exec serve` run records none: the
/// response, from the activation to the end of the work, covers it).
fn execution_series<'a>(run: &'a RunResult, name: &str) -> Option<&'a rtlab_core::result::Series> {
    let named = |suffix: &str| {
        let wanted = format!("{name}.{suffix}");
        run.series.iter().find(|s| s.name == wanted)
    };
    named("execution").or_else(|| named("response"))
}

/// The WCET series `name` of stored run `run` gives (`stats`): the upper
/// end of the pWCET's confidence interval at [`PWCET_EXCEEDANCE`]
/// (docs/pwcet.md: the point estimate is exceeded with probability ~1/2
/// by the truth), and that confidence; else why not.
fn pwcet_of(run: &str, name: &str, stats: &SeriesStats) -> Result<(u64, f64), String> {
    let options = EvtOptions::default();
    let report = for_series(stats, &options);
    let longer = "record a longer run (docs/pwcet.md: a fit needs at least 50 blocks of 16 \
                  activations, independent and stationary)";
    if let EvtVerdict::Refused { reasons } = &report.verdict {
        return Err(format!(
            "--budget-from {run}: series {name}: no pWCET ({}); {longer}, or leave --budget-from out",
            reasons.join("; ")
        ));
    }
    let estimate = report
        .pwcet
        .iter()
        .find(|e| e.exceedance_per_sample == PWCET_EXCEEDANCE)
        .ok_or_else(|| {
            format!(
                "--budget-from {run}: series {name}: no pWCET at {PWCET_EXCEEDANCE:e} per activation; {longer}"
            )
        })?;
    if !estimate.ci_high_ns.is_finite() {
        return Err(format!(
            "--budget-from {run}: series {name}: the pWCET at {PWCET_EXCEEDANCE:e} is not bounded from above \
             at {} confidence (a heavy tail); {longer}",
            report.confidence
        ));
    }
    Ok((estimate.ci_high_ns.ceil() as u64, report.confidence))
}

/// Each task with an execution series in stored run `id` gets its pWCET
/// as WCET; a refused estimate is bad input naming why.
fn with_budgets_from(
    tasks: &mut [SourcedTask],
    id: &str,
    db: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let store = session::open_store_read_only(db)?;
    let run = store
        .get(id)
        .map_err(|e| InputError(format!("--budget-from {id}: {e}")))?;
    let mut found = 0;
    for t in tasks.iter_mut() {
        let Some(series) = execution_series(&run, &t.task.name) else {
            continue;
        };
        let (wcet, confidence) =
            pwcet_of(&run.id, &series.name, &series.stats).map_err(InputError)?;
        t.task.wcet_ns = Some(wcet);
        t.wcet_from = WcetSource::Pwcet {
            run: run.id.clone(),
            series: series.name.clone(),
            exceedance_per_activation: PWCET_EXCEEDANCE,
            confidence,
        };
        found += 1;
    }
    if found == 0 {
        return Err(InputError(format!(
            "--budget-from {}: no series NAME.execution or NAME.response for any task of the set",
            run.id
        ))
        .into());
    }
    Ok(())
}

fn policy_of(policy: AdmitPolicy) -> Policy {
    match policy {
        AdmitPolicy::Fp => Policy::FixedPriority,
        AdmitPolicy::Edf => Policy::Edf,
    }
}

fn policy_text(policy: Policy) -> &'static str {
    match policy {
        Policy::FixedPriority => "fixed priorities (SCHED_FIFO)",
        Policy::Edf => "EDF (SCHED_DEADLINE)",
    }
}

fn test_text(test: Test) -> &'static str {
    match test {
        Test::Utilization => "utilization",
        Test::LiuLayland => "Liu-Layland",
        Test::Hyperbolic => "hyperbolic",
        Test::ResponseTime => "response time",
        Test::ProcessorDemand => "processor demand",
    }
}

fn wcet_from_text(from: &WcetSource) -> String {
    match from {
        WcetSource::Budget => "budget".into(),
        WcetSource::Work => "longest work".into(),
        WcetSource::Pwcet { run, series, .. } => format!("pWCET of {series} in run {run}"),
    }
}

fn time_text(ns: Option<u64>) -> String {
    ns.map_or_else(|| "unknown".into(), human_duration)
}

/// The analysis for a person: per CPU its tests and tasks, then the verdict.
fn print_text(file: &std::path::Path, admission: &Admission) -> anyhow::Result<()> {
    let a = &admission.analysis;
    out!(
        "{}: {}; overheads: jitter {}, release cost {} ({})",
        file.display(),
        policy_text(a.policy),
        human_duration(a.overheads.release_jitter_ns),
        human_duration(a.overheads.release_cost_ns),
        a.overheads.source
    );
    for cpu in &a.cpus {
        out!("CPU {}: utilization {:.3}", cpu.cpu, cpu.utilization);
        for t in &cpu.tests {
            let verdict = match &t.verdict {
                Verdict::Pass => "pass".to_string(),
                Verdict::Fail => "FAIL".to_string(),
                // The detail says why.
                Verdict::NotApplicable(_) => "n/a".to_string(),
            };
            out!("  {:<17} {:<5} {}", test_text(t.test), verdict, t.detail);
        }
        out!(
            "  {:<20} {:>10} {:>10} {:>10} {:>5}  wcet from",
            "task",
            "wcet",
            "deadline",
            "response",
            "meets"
        );
        for t in &cpu.tasks {
            let from = admission
                .tasks
                .iter()
                .find(|s| s.task.name == t.name)
                .map_or_else(String::new, |s| wcet_from_text(&s.wcet_from));
            let meets = match t.meets {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "?",
            };
            out!(
                "  {:<20} {:>10} {:>10} {:>10} {:>5}  {from}",
                t.name,
                time_text(t.wcet_ns),
                human_duration(t.deadline_ns),
                time_text(t.response_ns),
                meets
            );
        }
    }
    match &admission.refusal {
        None if a.schedulable => out!("admitted: every task meets its deadline"),
        None => out!("not admitted"),
        Some(refusal) => out!("not admitted: {}", refusal.message),
    }
    Ok(())
}

fn document(file: &std::path::Path, admission: &Admission) -> serde_json::Value {
    json!({
        "schema": ADMIT_SCHEMA,
        "file": file,
        "admitted": admission.analysis.schedulable,
        "analysis": admission.analysis,
        "tasks": admission.tasks.iter().map(|t| json!({
            "name": t.task.name,
            "cpu": t.task.cpu,
            "wcet_ns": t.task.wcet_ns,
            "wcet_from": t.wcet_from,
        })).collect::<Vec<_>>(),
        "measured": admission.measured,
        "refusal": admission.refusal,
    })
}

/// `rtlab exec admit`.
pub fn admit(args: ExecAdmitArgs) -> anyhow::Result<ExitCode> {
    let set = super::exec_taskset::load(&args.file)?;
    // The run `exec periodic --taskset` would make: the same CPUs.
    let config = PeriodicConfig::from_task_set(set, 1_000_000_000);
    let mut tasks = tasks_of(&config);
    if let Some(id) = &args.budget_from {
        with_budgets_from(&mut tasks, id, args.store.db.as_deref())?;
    }
    let (overheads, measured) = overheads_for(args.overheads, &tasks, &ReleaseSettings::default());
    let overheads = overridden(overheads, args.jitter, args.release_cost);
    let admission = analysed(tasks, policy_of(args.policy), &overheads, measured);
    if args.json {
        out!(
            "{}",
            serde_json::to_string_pretty(&document(&args.file, &admission))?
        );
    } else {
        print_text(&args.file, &admission)?;
    }
    Ok(if admission.analysis.schedulable {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(NOT_ADMITTED)
    })
}

/// What admission says of a task set before `exec periodic` runs it.
pub enum Gate {
    /// Admitted (or not a task set): run.
    Run,
    /// Refused, run anyway with `--force`: the warning the run records.
    Forced(String),
    /// Refused: nothing runs; the exit code.
    Refused(ExitCode),
}

impl Gate {
    /// The probe to run: `probe`, recording the refusal when forced.
    pub fn probe(&self, probe: Box<dyn Probe>) -> Box<dyn Probe> {
        match self {
            Gate::Forced(warning) => Box::new(Forced {
                probe,
                warning: warning.clone(),
            }),
            _ => probe,
        }
    }
}

/// Admission of `config`'s task set (fixed priorities, the overheads
/// measured with its executive's settings; a `--mode fifo` run has no
/// executive: none), before anything runs. The verdict and the refusal
/// go to stderr.
pub fn gate(config: &PeriodicConfig, force: bool) -> Gate {
    let tasks = tasks_of(config);
    let from = match config.mode {
        Mode::Executive => OverheadsFrom::Measure,
        Mode::Fifo => OverheadsFrom::None,
    };
    let settings = ReleaseSettings {
        priority: config.executive_priority,
        task_priority: config.task_priority,
        guard_ns: config.guard_ns,
        release_early_ns: config.release_early_ns,
    };
    let (overheads, measured) = overheads_for(from, &tasks, &settings);
    let admission = analysed(tasks, Policy::FixedPriority, &overheads, measured);
    if admission.analysis.schedulable {
        eprintln!("admission: admitted (overheads: {})", overheads.source);
        return Gate::Run;
    }
    let why = admission
        .refusal
        .as_ref()
        .map_or_else(|| "not schedulable".into(), |r| r.message.clone());
    let why = format!("admission refused the task set: {why}");
    eprintln!("{}", terminal_text(&why));
    if force {
        eprintln!("--force: running it anyway");
        Gate::Forced(format!("{why}; run with --force"))
    } else {
        eprintln!("nothing was run: see `rtlab exec admit FILE`, or run it anyway with --force");
        Gate::Refused(ExitCode::from(NOT_ADMITTED))
    }
}

/// A probe run although admission refused it: its result says so.
struct Forced {
    probe: Box<dyn Probe>,
    warning: String,
}

impl Probe for Forced {
    fn kind(&self) -> &'static str {
        self.probe.kind()
    }
    fn planned_ns(&self) -> u64 {
        self.probe.planned_ns()
    }
    fn config_json(&self) -> serde_json::Value {
        self.probe.config_json()
    }
    fn start(&self, with: Start) -> anyhow::Result<Box<dyn ProbeRun>> {
        Ok(Box::new(ForcedRun {
            run: self.probe.start(with)?,
            warning: self.warning.clone(),
        }))
    }
}

struct ForcedRun {
    run: Box<dyn ProbeRun>,
    warning: String,
}

impl ProbeRun for ForcedRun {
    fn series_names(&self) -> Vec<String> {
        self.run.series_names()
    }
    fn live(&self) -> Vec<rtlab_core::record::LiveStats> {
        self.run.live()
    }
    fn is_finished(&self) -> bool {
        self.run.is_finished()
    }
    fn elapsed_ns(&self) -> u64 {
        self.run.elapsed_ns()
    }
    fn warnings(&self) -> Vec<String> {
        let mut warnings = vec![self.warning.clone()];
        warnings.extend(self.run.warnings());
        warnings
    }
    fn snapshot(&self) -> Vec<rtlab_core::result::Series> {
        self.run.snapshot()
    }
    fn finish(self: Box<Self>) -> anyhow::Result<ProbeOutcome> {
        let mut outcome = self.run.finish()?;
        outcome.warnings.insert(0, self.warning);
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::record::SeriesRecorder;

    /// The statistics of `n` executions of 50 µs plus an exponential
    /// tail (mean 10 µs), independent and stationary, from a fixed seed.
    fn executions(n: u64) -> SeriesStats {
        let mut recorder = SeriesRecorder::new(None);
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..n {
            // SplitMix64.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let u = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
            let tail = -(1.0 - u).ln() * 10_000.0;
            recorder.record(50_000 + tail as u64, i * 1_000_000, 0);
        }
        recorder.stats()
    }

    #[test]
    fn a_pwcet_is_the_upper_end_at_one_in_a_billion_and_a_refusal_says_what_to_do() {
        let stats = executions(40_000);
        let (wcet, confidence) = pwcet_of("r1", "t.execution", &stats).expect("an estimate");
        assert_eq!(confidence, EvtOptions::default().confidence);
        // Beyond everything observed: the tail is extrapolated.
        assert!(wcet > stats.max_ns, "{wcet} vs {}", stats.max_ns);
        let why = pwcet_of("r1", "t.execution", &executions(200)).unwrap_err();
        assert!(
            why.contains("r1") && why.contains("t.execution") && why.contains("longer run"),
            "{why}"
        );
    }

    #[test]
    fn overrides_replace_the_figures_and_say_so() {
        let o = overridden(Overheads::none(), Some(5_000), None);
        assert_eq!((o.release_jitter_ns, o.release_cost_ns), (5_000, 0));
        assert!(o.source.contains("--jitter"), "{}", o.source);
        let o = overridden(Overheads::none(), None, Some(7_000));
        assert_eq!(o.release_cost_ns, 7_000);
        assert!(o.source.contains("--release-cost"), "{}", o.source);
    }
}
