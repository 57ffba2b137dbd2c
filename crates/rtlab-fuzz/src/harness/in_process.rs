//! One target's run in this process: its pending seeds, its regression
//! and corpus seeds, the seeds derived from them, then mutated inputs.

use super::catch::{minimize, run_one, Fault};
use super::child::{LETHAL_ENV, SKIP_ENV};
use super::files::{files, out_dir, save};
use super::target::{Derive, Failure, Oracle, Summary, Verdict};
use crate::mutate::Mutator;
use crate::rng::Rng;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Inputs are cut to 256 KiB: room for 64 Ki-character strings of
/// multi-byte characters, small enough for thousands of runs a second.
pub const MAX_INPUT: usize = 256 << 10;

/// Distinct failures after which a run stops: enough for a report.
const MAX_FAILURES: usize = 20;

/// Regression seeds longer than this are not mutated (see `run_seeds`).
const BIG_REGRESSION: usize = 16 << 10;

/// Accepted mutants kept to mutate further.
const POOL: usize = 256;

pub(super) fn run_here(
    name: &'static str,
    root: &Path,
    oracle: Oracle,
    derive: Option<Derive>,
    fixup: Option<fn(&mut Vec<u8>)>,
    seed: u64,
    iterations: u64,
) -> Summary {
    let mut run = TargetRun::start(name, oracle, seed, iterations);
    // Known bugs first: what they fail with is not news below. Those that
    // kill the process were run alone by the parent (see `supervise`).
    run.run_pending(root);
    let known = run.seen.clone();
    let mut seeds = run.run_seeds(root);
    if let Some(derive) = derive {
        run.run_derived(derive, &mut seeds);
    }
    assert!(
        !seeds.is_empty(),
        "fuzz target {name}: no seeds in {}",
        root.join("corpus").join(name).display()
    );
    let slowest = run.run_mutants(&seeds, fixup, &known);
    run.finish(&slowest)
}

/// What a run of one target has found so far, and where it writes.
struct TargetRun {
    name: &'static str,
    oracle: Oracle,
    /// `target/fuzz/NAME/`.
    out: PathBuf,
    /// The input being run, rewritten before each: if the process dies,
    /// it holds the input that did it.
    in_flight: PathBuf,
    summary: Summary,
    /// Keys of the failures met so far: each bug is reported once.
    seen: HashSet<String>,
}

impl TargetRun {
    fn start(name: &'static str, oracle: Oracle, seed: u64, iterations: u64) -> TargetRun {
        let out = out_dir(name);
        std::fs::create_dir_all(&out).unwrap_or_else(|e| panic!("creating {}: {e}", out.display()));
        let in_flight = out.join("in-flight");
        // A previous run's, if it died: only this run's may be read.
        let _ = std::fs::remove_file(out.join("in-flight.iteration"));
        // Printed first: if the process dies (a refused allocation aborts, a
        // stack overflow kills), this file holds the input that did it.
        println!(
            "fuzz {name}: seed {seed:#x}, {iterations} iterations; the input in flight is kept in {}",
            in_flight.display()
        );
        TargetRun {
            name,
            oracle,
            out,
            in_flight,
            summary: Summary {
                target: name,
                seed,
                iterations,
                accepted: 0,
                rejected: 0,
                failures: Vec::new(),
                pending: Vec::new(),
                known_hits: 0,
                seeds: 0,
                seeds_accepted: 0,
                slowest: Duration::ZERO,
            },
            seen: HashSet::new(),
        }
    }

    /// Runs one input, kept in the in-flight file while it runs.
    fn run_saved(&self, input: &[u8]) -> Result<Verdict, Fault> {
        let _ = std::fs::write(&self.in_flight, input);
        run_one(self.oracle, input)
    }

    /// The pending seeds (known bugs), but those the parent found to kill
    /// the process: what each still does.
    fn run_pending(&mut self, root: &Path) {
        let lethal = std::env::var(LETHAL_ENV).unwrap_or_default();
        let lethal: Vec<&str> = lethal.split('\n').collect();
        for path in files(&root.join("pending").join(self.name)) {
            if lethal.contains(&path.display().to_string().as_str()) {
                continue;
            }
            let fault = self.run_saved(&read(&path)).err();
            if let Some(fault) = &fault {
                self.seen.insert(fault.key());
            }
            let failure = fault.map(|f| Failure {
                kind: f.kind,
                message: f.message,
                location: f.location,
                origin: format!("pending {}", path.display()),
                file: path.clone(),
            });
            self.summary.pending.push((path, failure));
        }
    }

    /// Regression seeds and corpus seeds, which must pass as they are.
    /// Returns those to mutate.
    fn run_seeds(&mut self, root: &Path) -> Vec<Vec<u8>> {
        let mut seeds = Vec::new();
        for (kind, dir) in [("regression", "regressions"), ("corpus", "corpus")] {
            for path in files(&root.join(dir).join(self.name)) {
                let input = read(&path);
                let result = self.run_saved(&input);
                self.count_seed(&result);
                if let Err(fault) = result {
                    let origin = format!("{kind} {}", path.display());
                    self.add_failure(fault, origin, path.clone());
                }
                // A 64 Ki-char regression seed is replayed, not mutated: every
                // mutant of it would cost what it does (the mutator makes
                // such runs from small seeds anyway).
                if kind == "corpus" || input.len() <= BIG_REGRESSION {
                    seeds.push(input);
                }
            }
        }
        seeds
    }

    /// The seeds `derive` computes from the others, run and added to them.
    fn run_derived(&mut self, derive: Derive, seeds: &mut Vec<Vec<u8>>) {
        for input in derive(seeds) {
            let result = self.run_saved(&input);
            self.count_seed(&result);
            if let Err(fault) = result {
                let file = save(&self.out, "derived", &input);
                self.add_failure(fault, "a seed derived from the corpus".into(), file);
            }
            seeds.push(input);
        }
    }

    fn count_seed(&mut self, result: &Result<Verdict, Fault>) {
        self.summary.seeds += 1;
        self.summary.seeds_accepted += usize::from(matches!(result, Ok(Verdict::Accepted)));
    }

    fn add_failure(&mut self, fault: Fault, origin: String, file: PathBuf) {
        self.seen.insert(fault.key());
        self.summary.failures.push(Failure {
            kind: fault.kind,
            message: fault.message,
            location: fault.location,
            origin,
            file,
        });
    }

    /// The mutated inputs, up to [`MAX_FAILURES`] new failures: accepted
    /// mutants join a pool to mutate further, a new failure is minimized
    /// and saved, one that a pending seed has is only counted. Returns the
    /// slowest input.
    fn run_mutants(
        &mut self,
        seeds: &[Vec<u8>],
        fixup: Option<fn(&mut Vec<u8>)>,
        known: &HashSet<String>,
    ) -> Vec<u8> {
        let mutator = Mutator::from_seeds(seeds, MAX_INPUT);
        let mut rng = Rng::new(self.summary.seed);
        let mut pool: Vec<Vec<u8>> = Vec::new();
        let mut slowest = Vec::new();
        let iteration_file = self.out.join("in-flight.iteration");
        let skip: Vec<u64> = std::env::var(SKIP_ENV)
            .unwrap_or_default()
            .split(',')
            .filter_map(|i| i.parse().ok())
            .collect();
        for iteration in 0..self.summary.iterations {
            if self.summary.failures.len() >= MAX_FAILURES {
                break;
            }
            let base = if !pool.is_empty() && rng.one_in(3) {
                rng.pick(&pool)
            } else {
                rng.pick(seeds)
            };
            let mut input = mutator.mutate(&mut rng, base, seeds);
            if let Some(fixup) = fixup {
                if rng.one_in(2) {
                    fixup(&mut input);
                }
            }
            if skip.contains(&iteration) {
                self.summary.known_hits += 1;
                continue;
            }
            let _ = std::fs::write(&iteration_file, iteration.to_string());
            let started = Instant::now();
            let result = self.run_saved(&input);
            if started.elapsed() > self.summary.slowest {
                self.summary.slowest = started.elapsed();
                slowest = input.clone();
            }
            match result {
                Ok(Verdict::Accepted) => {
                    self.summary.accepted += 1;
                    if pool.len() < POOL {
                        pool.push(input);
                    } else {
                        let i = rng.below(POOL);
                        pool[i] = input;
                    }
                }
                Ok(Verdict::Rejected) => self.summary.rejected += 1,
                Err(fault) => self.mutant_failed(fault, &input, iteration, known),
            }
        }
        slowest
    }

    /// A mutant failed: counted if a pending seed fails the same way,
    /// ignored if met before, else minimized, saved and reported.
    fn mutant_failed(
        &mut self,
        fault: Fault,
        input: &[u8],
        iteration: u64,
        known: &HashSet<String>,
    ) {
        let key = fault.key();
        if known.contains(&key) {
            self.summary.known_hits += 1;
            return;
        }
        if !self.seen.insert(key.clone()) {
            return;
        }
        let small = minimize(self.oracle, input, &key);
        let file = save(&self.out, fault.kind, &small);
        self.summary.failures.push(Failure {
            kind: fault.kind,
            message: fault.message,
            location: fault.location,
            origin: format!(
                "iteration {iteration}, {} bytes minimized to {}",
                input.len(),
                small.len()
            ),
            file,
        });
    }

    /// Removes the in-flight files and keeps the slowest input.
    fn finish(self, slowest: &[u8]) -> Summary {
        let _ = std::fs::remove_file(&self.in_flight);
        let _ = std::fs::remove_file(self.out.join("in-flight.iteration"));
        // Not a failure (times vary with the machine's load), but where to
        // look when a run takes long.
        let _ = std::fs::write(self.out.join("slowest"), slowest);
        self.summary
    }
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}
