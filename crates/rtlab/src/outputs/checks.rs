//! The checks every command's outputs pass before anything runs: no two
//! outputs in one file (nor both on stdout), and a `--junit` that has a
//! budget to report, is a file, and destroys no other output.

use super::file::check_writable;
use super::target::OutputTarget;
use crate::input::bad_input;
use rtlab_report::budget::Budget;
use std::path::{Path, PathBuf};

/// One of a command's outputs (or inputs it must not overwrite), named by
/// its flag: `("--json", target)`, `("result store (--db)", file)`.
pub type Named<'a> = (&'a str, OutputTarget);

/// Checks the flags before measuring: `--junit` needs a budget (given by
/// `--budget` or, for a campaign, by its file), a regular file it can
/// write, and a file none of the command's other outputs (`others`: flag
/// and target; the result store among them) is written to: the JUnit file
/// is replaced whole at the end and would destroy it.
pub fn check_junit(
    junit: Option<&OutputTarget>,
    budget: Option<&Budget>,
    others: &[Named],
) -> anyhow::Result<()> {
    let Some(junit) = junit else {
        return Ok(());
    };
    if let OutputTarget::File(path) = junit {
        for (flag, other) in others {
            if other.file().is_some_and(|other| same_file(path, other)) {
                bad_input!(
                    "--junit {}: is also the {flag} file, which the JUnit report would replace; \
                     give another file",
                    path.display()
                );
            }
        }
        if path.exists() && !path.is_file() {
            bad_input!(
                "--junit {}: exists and is not a regular file",
                path.display()
            );
        }
    }
    if budget.is_none() {
        bad_input!(
            "--junit {junit}: the JUnit file holds the checks of a budget: give --budget too"
        );
    }
    match junit {
        OutputTarget::Stdout => {
            bad_input!("--junit -: give a file (stdout carries the tables or the JSON)")
        }
        OutputTarget::File(path) => check_writable(path, "--junit"),
    }
}

/// Whether two paths name the same file (also through symlinks or a
/// different spelling of the directory), including the store's WAL and
/// shared-memory files beside a database.
pub fn same_file(a: &Path, b: &Path) -> bool {
    let normal = |p: &Path| -> Option<PathBuf> {
        let name = p.file_name()?;
        let dir = match p.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) => dir.canonicalize().ok()?,
            None => std::env::current_dir().ok()?,
        };
        let joined = dir.join(name);
        Some(joined.canonicalize().unwrap_or(joined))
    };
    // Two names of one inode (a hard link, a bind mount).
    if let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        use std::os::unix::fs::MetadataExt;
        if ma.dev() == mb.dev() && ma.ino() == mb.ino() {
            return true;
        }
    }
    let (Some(a), Some(b)) = (normal(a), normal(b)) else {
        return false;
    };
    let companions = ["", "-wal", "-shm", "-journal"].map(|suffix| {
        let mut name = b.as_os_str().to_os_string();
        name.push(suffix);
        PathBuf::from(name)
    });
    companions.contains(&a)
}

/// Refuses, as bad input, two of a command's outputs (flag and target)
/// that are the same file: the second written would destroy the first.
/// Stdout twice is refused too; a FIFO or a device (`/dev/null`) may take
/// several.
pub fn check_distinct(outputs: &[Named]) -> anyhow::Result<()> {
    for (i, (flag_a, a)) in outputs.iter().enumerate() {
        for (flag_b, b) in &outputs[i + 1..] {
            match (a.file(), b.file()) {
                (None, None) => {
                    bad_input!("{flag_a} - and {flag_b} -: both on stdout; give one of them a file")
                }
                (Some(a), Some(b))
                    if !special(a) && !special(b) && (same_file(a, b) || same_file(b, a)) =>
                {
                    bad_input!(
                        "{flag_a} {} and {flag_b} {}: the same file, one would destroy the other; \
                         give two files",
                        a.display(),
                        b.display()
                    )
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// An existing FIFO, device or socket (not a file one output replaces).
fn special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}
