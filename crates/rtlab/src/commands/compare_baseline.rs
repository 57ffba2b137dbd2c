//! `rtlab compare --baseline REF RUN…`: each candidate judged against a
//! baseline, the exit code a CI farm gates on (0 nothing regressed, 1 a
//! regression, said on stderr as a broken budget is, 2 bad input).

use crate::cli::{CompareArgs, CompareFormat};
use crate::input::InputError;
use crate::session;
use crate::terminal::{out, put};
use rtlab_report::compare::{
    against_baseline, baseline_markdown, baseline_table, parse_metrics, BaselineComparison,
    BaselineOptions, CompareOptions, Matching, Subject,
};
use rtlab_store::{RunFilter, Store};
use std::path::Path;
use std::process::ExitCode;

fn input_error(message: String) -> anyhow::Error {
    anyhow::Error::new(InputError(message))
}

/// The store, opened on the first reference that is not a file: judging
/// files alone needs no store at all.
struct LazyStore<'a> {
    db: Option<&'a Path>,
    store: Option<Store>,
}

impl LazyStore<'_> {
    fn get(&mut self) -> anyhow::Result<&Store> {
        if self.store.is_none() {
            self.store = Some(session::open_store_read_only(self.db)?);
        }
        Ok(self.store.as_ref().expect("opened above"))
    }
}

/// What `reference` stands for, first match wins: a file `rtlab import`
/// reads; a campaign execution id; a campaign name (its newest
/// execution, when one host ran it); a stored run (id, unique prefix,
/// `last`).
fn subject(store: &mut LazyStore, flag: &str, reference: &str) -> anyhow::Result<Subject> {
    let path = Path::new(reference);
    if path.is_file() {
        let run = rtlab_report::import::import_file(path)
            .map_err(|e| input_error(format!("{flag} {e}")))?;
        return Ok(Subject::run(reference, run));
    }
    let store = store.get()?;
    let runs = store.campaign_runs(reference)?;
    if !runs.is_empty() {
        return Ok(Subject::execution(reference, reference, runs));
    }
    // Newest first. In a store a fleet shares, a name several hosts ran
    // has no one newest execution worth gating on: which host finished
    // last is chance, so the name is refused, naming each host's newest.
    let listed = store.list(&RunFilter {
        campaign: Some(reference.to_string()),
        ..RunFilter::default()
    })?;
    let mut newest_per_host: Vec<(&str, &str)> = Vec::new();
    for run in &listed {
        let host = run.host.as_deref().unwrap_or("unknown");
        if let Some(execution) = &run.execution {
            if !newest_per_host.iter().any(|(h, _)| *h == host) {
                newest_per_host.push((host, execution));
            }
        }
    }
    if newest_per_host.len() > 1 {
        let named: Vec<String> = newest_per_host
            .iter()
            .map(|(host, execution)| format!("{execution} on {host}"))
            .collect();
        return Err(input_error(format!(
            "{flag} {reference}: campaign {reference} was run on {} hosts; give the execution \
             id of the one meant (the newest of each: {})",
            newest_per_host.len(),
            named.join(", ")
        )));
    }
    if let Some((_, execution)) = newest_per_host.first() {
        let execution = execution.to_string();
        let runs = store.campaign_runs(&execution)?;
        return Ok(Subject::execution(reference, &execution, runs));
    }
    let run = store.get(reference).map_err(|e| {
        input_error(format!(
            "{flag} {reference}: {e}, and no campaign execution or campaign has that name \
             (see `rtlab runs`)"
        ))
    })?;
    Ok(Subject::run(reference, run))
}

fn options(args: &CompareArgs) -> anyhow::Result<BaselineOptions> {
    let options = BaselineOptions {
        metrics: parse_metrics(&args.metric).map_err(|e| input_error(format!("--metric: {e}")))?,
        threshold_percent: args.threshold,
        compare: CompareOptions {
            resamples: args.resamples as usize,
            confidence: args.confidence,
            seed: args.seed,
        },
        matching: args
            .matching
            .parse::<Matching>()
            .map_err(|e| input_error(format!("--match: {e}")))?,
    };
    options.validate().map_err(input_error)?;
    Ok(options)
}

/// The line on stderr when a candidate regressed: how many pairs, and the
/// first one's verdict.
fn regression_message(c: &BaselineComparison) -> String {
    let first = c.pairs.iter().find(|p| p.regressed).and_then(|p| {
        let check = p.checks.iter().find(|check| check.regressed)?;
        Some(format!(
            ", first {} of {}: {}",
            p.name, p.candidate, check.verdict
        ))
    });
    format!(
        "error: regression against the baseline {} ({}): {}{}",
        c.baseline.tag,
        c.baseline.reference,
        c.verdict,
        first.unwrap_or_default()
    )
}

pub fn run(args: &CompareArgs, baseline: &str) -> anyhow::Result<ExitCode> {
    let options = options(args)?;
    let mut store = LazyStore {
        db: args.store.db.as_deref(),
        store: None,
    };
    let base = subject(&mut store, "--baseline", baseline)?;
    let candidates = args
        .runs
        .iter()
        .map(|reference| subject(&mut store, "RUN", reference))
        .collect::<anyhow::Result<Vec<Subject>>>()?;
    drop(store);
    let comparison =
        against_baseline(&base, &candidates, &options).map_err(|e| input_error(e.to_string()))?;
    if args.json {
        out!("{}", serde_json::to_string_pretty(&comparison)?);
    } else {
        match args.format {
            CompareFormat::Table => put!("{}", baseline_table(&comparison)),
            CompareFormat::Md => put!("{}", baseline_markdown(&comparison)),
        }
    }
    if comparison.regressed == 0 {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "{}",
        rtlab_core::result::terminal_text(&regression_message(&comparison))
    );
    Ok(ExitCode::from(1))
}
