//! What a run command writes besides its tables, in one sequence: the
//! outputs are checked and created before anything runs ([`Outputs::open`]),
//! the result JSON is rewritten while it runs (into a file only, see
//! [`Outputs::snapshot_target`]), and at its end come the result JSON (a
//! file or stdout), the budget's evaluation (in the JSON and the human
//! report), the JUnit file, and the exit code ([`exit`]).
//!
//! Every file goes through [`rtlab_core::fsutil`]: created without
//! following another user's symlink, written atomically and durably.
//! The model is hyperfine's export manager: one target per flag
//! ([`OutputTarget`]), parsed by clap, and one manager.

pub mod budget;
pub mod checks;
pub mod exit;
pub mod file;
mod target;

pub use target::OutputTarget;

use crate::input::InputError;
use anyhow::Context;
use file::{create_output, rewritable, Output};
use rtlab_report::budget::{Budget, Evaluation};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The outputs a command was given, as its command line names them.
#[derive(Default)]
pub struct Requested<'a> {
    /// `--json`: the result document.
    pub json: Option<&'a OutputTarget>,
    /// `--samples`: every sample as CSV, streamed while measuring.
    pub samples: Option<&'a OutputTarget>,
    /// The command's own files (`--histfile`), with their flags, written
    /// by the command itself through [`OutputTarget::write_with`].
    pub files: Vec<(&'static str, &'a OutputTarget)>,
    /// The result store the command writes, which no output may be.
    pub store: Option<&'a Path>,
    /// The budget every run is checked against.
    pub budget: Option<&'a Budget>,
    /// `--junit`: the budget's checks as JUnit XML.
    pub junit: Option<&'a OutputTarget>,
}

/// A command's outputs, checked and opened before it measures.
pub struct Outputs {
    json: Option<OutputTarget>,
    junit: Option<PathBuf>,
    budget: Option<Budget>,
    samples: Option<Box<dyn Write + Send>>,
    /// Whether one of the outputs (`--json -`, `--samples -`,
    /// `--histfile -`) is stdout, which then carries that output only.
    stdout_taken: bool,
    /// The files opened before measuring, held open until the command
    /// has written them: the reader of a FIFO given as one (a named pipe
    /// to `jq`) would otherwise see the end of its input before the
    /// document, and the final write would wait for it forever. Each one
    /// created and left empty is removed when they are dropped.
    held: Vec<Output>,
}

impl Outputs {
    /// Checks the outputs (no two in one file, a `--junit` that can be
    /// written and has a budget) and opens the files, so a bad path fails
    /// in the first second and not after a ten-minute run. Nothing is
    /// emptied yet: a command refused later leaves a file as it was.
    pub fn open(requested: Requested) -> anyhow::Result<Outputs> {
        let mut named: Vec<checks::Named> = requested
            .files
            .iter()
            .map(|(flag, target)| (*flag, (*target).clone()))
            .collect();
        named.extend(requested.json.map(|t| ("--json", t.clone())));
        named.extend(requested.samples.map(|t| ("--samples", t.clone())));
        named.extend(
            requested
                .store
                .map(|p| ("result store (--db)", OutputTarget::File(p.to_path_buf()))),
        );
        // Two outputs in one file: the last written would silently destroy
        // the other (or the result store).
        checks::check_distinct(&named)?;
        checks::check_junit(requested.junit, requested.budget, &named)?;
        let stdout_taken = named.iter().any(|(_, target)| target.is_stdout());
        let mut held = Vec::new();
        let files = requested
            .files
            .iter()
            .map(|(flag, target)| (*flag, *target));
        for (flag, target) in files.chain(requested.json.map(|t| ("--json", t))) {
            if let Some(path) = target.file() {
                held.push(create_output(path, flag)?);
            }
        }
        let samples: Option<Box<dyn Write + Send>> = match requested.samples {
            None => None,
            Some(OutputTarget::Stdout) => Some(Box::new(io::stdout())),
            Some(OutputTarget::File(path)) => {
                let mut output = create_output(path, "--samples")?;
                let writer = output
                    .writer()
                    .map_err(|e| InputError(format!("--samples {}: {e}", path.display())))?;
                held.push(output);
                Some(Box::new(io::BufWriter::with_capacity(1 << 20, writer)))
            }
        };
        Ok(Outputs {
            json: requested.json.cloned(),
            junit: requested
                .junit
                .and_then(OutputTarget::file)
                .map(Path::to_path_buf),
            budget: requested.budget.cloned(),
            samples,
            stdout_taken,
            held,
        })
    }

    /// `--json`, if given.
    pub fn json(&self) -> Option<&OutputTarget> {
        self.json.as_ref()
    }

    /// Whether the JSON goes to stdout, which then carries nothing else.
    pub fn json_on_stdout(&self) -> bool {
        self.json.as_ref().is_some_and(OutputTarget::is_stdout)
    }

    /// Where the human-readable output goes: stderr when an output goes
    /// to stdout, so stdout is that output only (JSON, CSV or histogram).
    pub fn human(&self) -> Box<dyn Write> {
        if self.stdout_taken {
            Box::new(io::stderr())
        } else {
            Box::new(io::stdout())
        }
    }

    /// The `--samples` writer, for the probe to stream into (once).
    pub fn take_samples(&mut self) -> Option<Box<dyn Write + Send>> {
        self.samples.take()
    }

    /// Where the JSON of a running command is rewritten after each step:
    /// a regular file only (or none yet), never stdout, a FIFO or a device
    /// (`--json >(jq .)`, `/dev/null`), which get the one final document.
    pub fn snapshot_target(&self) -> Option<OutputTarget> {
        self.json
            .as_ref()
            .filter(|t| t.file().is_some_and(rewritable))
            .cloned()
    }

    /// The run measured: the files are this run's now and are never
    /// removed; a `--samples` file nothing was written to is emptied (what
    /// it held is not this run's). A file that cannot be emptied must not
    /// cost the result: a warning says so.
    pub fn measured(&mut self) {
        for output in &mut self.held {
            if let Err(e) = output.keep() {
                eprintln!("warning: emptying {}: {e}", output.path().display());
            }
        }
    }

    /// Writes the result JSON with `body` (an exporter), if `--json` was given.
    pub fn write_json_with(
        &self,
        body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> anyhow::Result<()> {
        match &self.json {
            Some(target) => target
                .write_with(body)
                .with_context(|| format!("writing {target}")),
            None => Ok(()),
        }
    }

    /// Writes `doc` pretty-printed as the result JSON, if `--json` was given.
    pub fn write_json(&self, doc: &impl serde::Serialize) -> anyhow::Result<()> {
        if self.json.is_none() {
            return Ok(());
        }
        let text = serde_json::to_string_pretty(doc)? + "\n";
        self.write_json_with(|out| out.write_all(text.as_bytes()))
    }

    /// Rewrites the JSON file of a running command with `doc` (see
    /// [`Outputs::snapshot_target`]); nothing to do for stdout, a FIFO or
    /// a device.
    pub fn snapshot_json(&self, doc: &serde_json::Value) -> anyhow::Result<()> {
        let Some(target) = self.snapshot_target() else {
            return Ok(());
        };
        let text = serde_json::to_string_pretty(doc)? + "\n";
        target
            .write_with(|out| out.write_all(text.as_bytes()))
            .with_context(|| format!("rewriting {target}"))
    }

    /// The budget every run is checked against, if any.
    pub fn budget(&self) -> Option<&Budget> {
        self.budget.as_ref()
    }

    /// Every result checked against the budget, if there is one.
    pub fn evaluate(&self, results: &[rtlab_core::result::RunResult]) -> Vec<Evaluation> {
        budget::evaluate_all(self.budget.as_ref(), results)
    }

    /// The budget's part of a JSON document over several runs.
    pub fn budget_json(&self, evaluations: &[Evaluation]) -> serde_json::Value {
        budget::json(self.budget.as_ref(), evaluations)
    }

    /// Writes (or rewrites) the `--junit` file, if given, titled `title`.
    pub fn write_junit(&self, title: &str, evaluations: &[Evaluation]) -> anyhow::Result<()> {
        match &self.junit {
            Some(path) => budget::write_junit(path, title, evaluations),
            None => Ok(()),
        }
    }

    /// The end of a command over several runs: the JSON document (`doc`,
    /// made only when `--json` was given) and the JUnit file.
    pub fn finish(
        &self,
        doc: impl FnOnce() -> anyhow::Result<serde_json::Value>,
        title: &str,
        evaluations: &[Evaluation],
    ) -> anyhow::Result<()> {
        if self.json.is_some() {
            self.write_json(&doc()?)?;
        }
        self.write_junit(title, evaluations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &Path) -> OutputTarget {
        OutputTarget::File(path.to_path_buf())
    }

    #[test]
    fn json_on_stdout_sends_the_tables_to_stderr_and_takes_no_snapshots() {
        let stdout = OutputTarget::Stdout;
        let outputs = Outputs::open(Requested {
            json: Some(&stdout),
            ..Requested::default()
        })
        .unwrap();
        assert!(outputs.json_on_stdout());
        assert_eq!(outputs.snapshot_target(), None);
    }

    #[test]
    fn a_json_file_is_created_before_and_removed_when_nothing_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let json = file(&path);
        let outputs = Outputs::open(Requested {
            json: Some(&json),
            ..Requested::default()
        })
        .unwrap();
        assert!(path.is_file());
        assert_eq!(outputs.snapshot_target(), Some(json.clone()));
        drop(outputs);
        assert!(!path.exists(), "an empty file it created is removed");

        let mut outputs = Outputs::open(Requested {
            json: Some(&json),
            ..Requested::default()
        })
        .unwrap();
        outputs.measured();
        outputs.write_json(&serde_json::json!({"a": 1})).unwrap();
        drop(outputs);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"a\": 1\n}\n"
        );
    }

    #[test]
    fn two_outputs_in_one_place_are_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let (json, samples) = (file(&path), file(&dir.path().join("./out")));
        let refused = |requested: Requested| {
            let e = Outputs::open(requested).err().expect("refused");
            assert!(e.downcast_ref::<InputError>().is_some(), "{e}");
            e.to_string()
        };
        let message = refused(Requested {
            json: Some(&json),
            samples: Some(&samples),
            ..Requested::default()
        });
        assert!(message.contains("the same file"), "{message}");
        let stdout = OutputTarget::Stdout;
        let message = refused(Requested {
            json: Some(&stdout),
            files: vec![("--histfile", &stdout)],
            ..Requested::default()
        });
        assert_eq!(
            message,
            "--histfile - and --json -: both on stdout; give one of them a file"
        );
        let message = refused(Requested {
            junit: Some(&stdout),
            budget: Some(&"max<1ms".parse().unwrap()),
            ..Requested::default()
        });
        assert!(message.starts_with("--junit -: give a file"), "{message}");
        let message = refused(Requested {
            junit: Some(&json),
            store: Some(&path),
            budget: Some(&"max<1ms".parse().unwrap()),
            ..Requested::default()
        });
        assert!(message.contains("result store (--db)"), "{message}");
        assert!(!path.exists(), "a refused command creates nothing");
    }
}
