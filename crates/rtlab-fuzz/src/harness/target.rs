//! What a fuzz test hands the harness (a [`Target`]) and what it gets
//! back (a [`Summary`] of [`Failure`]s).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// A parser and its properties on one input (see [`Target::oracle`]).
pub type Oracle = fn(&[u8]) -> Result<Verdict, String>;
/// Seeds computed from the others (see [`Target::derive`]).
pub type Derive = fn(&[Vec<u8>]) -> Vec<Vec<u8>>;

/// What a parser made of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    Rejected,
}

/// A parser under test.
pub struct Target {
    /// Names the folders `fuzz/{corpus,regressions,pending}/NAME/`.
    pub name: &'static str,
    /// Runs the parser on an input: Ok(what it made of it), or Err(the
    /// property that broke: a round trip that differs, ...). Panics are
    /// caught by the harness.
    pub oracle: Oracle,
    /// Seeds computed from the corpus (binary plans from text ones).
    pub derive: Option<Derive>,
    /// Applied to half the mutants: repairs what a format checks before
    /// anything else (a binary plan's event count against its size), so
    /// that mutations reach the checks behind it.
    pub fixup: Option<fn(&mut Vec<u8>)>,
    /// Iterations when `RTLAB_FUZZ_ITERS` is not set.
    pub iterations: u64,
}

/// An input that panicked, broke a property or asked for too much memory.
#[derive(Debug, Clone)]
pub struct Failure {
    /// `panic`, `property` or `allocation`.
    pub kind: &'static str,
    pub message: String,
    /// Where it panicked (`file:line:column`), for a panic.
    pub location: Option<String>,
    /// Where the input came from: `iteration N`, `corpus FILE`, `regression FILE`.
    pub origin: String,
    /// The (minimized) input.
    pub file: PathBuf,
}

impl Failure {
    /// Failures with the same key are the same bug.
    pub(super) fn key(&self) -> String {
        match (&self.location, self.kind) {
            (Some(location), _) => location.clone(),
            (None, "property") => self
                .message
                .chars()
                .filter(|c| !c.is_ascii_digit())
                .take(80)
                .collect(),
            // The allocator cannot say who asked: one per target.
            (None, "allocation") => "allocation".into(),
            (None, kind) => format!("{kind}: {}", self.message),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.kind, self.origin, self.message)?;
        if let Some(location) = &self.location {
            write!(f, " at {location}")?;
        }
        write!(f, "; input: {}", self.file.display())
    }
}

/// What a run did.
#[derive(Debug)]
pub struct Summary {
    pub target: &'static str,
    pub seed: u64,
    pub iterations: u64,
    pub accepted: u64,
    pub rejected: u64,
    /// New failures: the test fails.
    pub failures: Vec<Failure>,
    /// Pending seeds (`fuzz/pending/NAME/`, known bugs being fixed by
    /// their owners) and what they still do: None once fixed.
    pub pending: Vec<(PathBuf, Option<Failure>)>,
    /// Mutants that failed as a pending seed does (the same bug).
    pub known_hits: u64,
    /// Seeds (corpus, regressions, derived), and how many of them parse.
    pub seeds: usize,
    pub seeds_accepted: usize,
    pub slowest: Duration,
}

impl Summary {
    /// Fails the test when anything new failed, listing every failure
    /// with the seed to reproduce it.
    pub fn assert_clean(&self) {
        println!("{self}");
        if !self.failures.is_empty() {
            let list: Vec<String> = self.failures.iter().map(|f| format!("  {f}")).collect();
            panic!(
                "fuzz target {}: {} failure(s) (seed {:#x}, {} iterations; rerun with \
                 RTLAB_FUZZ_SEED={:#x} RTLAB_FUZZ_ITERS={}):\n{}\nAdd each input to \
                 fuzz/regressions/{}/ once fixed (docs/fuzz.md).",
                self.target,
                self.failures.len(),
                self.seed,
                self.iterations,
                self.seed,
                self.iterations,
                list.join("\n"),
                self.target
            );
        }
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "fuzz {}: {} seeds ({} parse), seed {:#x}, {} iterations, {} accepted, {} rejected, {} failure(s), slowest input {:.1} ms",
            self.target,
            self.seeds,
            self.seeds_accepted,
            self.seed,
            self.iterations,
            self.accepted,
            self.rejected,
            self.failures.len(),
            self.slowest.as_secs_f64() * 1e3
        )?;
        for (file, failure) in &self.pending {
            match failure {
                Some(failure) => writeln!(
                    f,
                    "  pending {}: still fails: {} {}{}",
                    file.display(),
                    failure.kind,
                    failure.message,
                    failure
                        .location
                        .as_ref()
                        .map_or(String::new(), |l| format!(" at {l}"))
                )?,
                None => writeln!(
                    f,
                    "  pending {}: passes now: move it to fuzz/regressions/{}/",
                    file.display(),
                    self.target
                )?,
            }
        }
        if self.known_hits > 0 {
            writeln!(
                f,
                "  {} mutant(s) failed as a pending seed does (not counted)",
                self.known_hits
            )?;
        }
        Ok(())
    }
}
