//! Where a target's seeds are read and its failing inputs written.

use crate::rng::fnv1a;
use std::path::{Path, PathBuf};

pub(super) fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// `target/fuzz/NAME/`, in the cargo target directory of the running test:
/// where a target's failing inputs go (and any scratch file of its own).
pub fn out_dir(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            // target/debug/deps/fuzz-HASH
            let exe = std::env::current_exe().ok()?;
            Some(exe.ancestors().nth(3)?.to_path_buf())
        })
        .unwrap_or_else(|| repo_root().join("target"));
    target.join("fuzz").join(name)
}

/// The files of a folder, sorted (none if it does not exist).
pub(super) fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Writes a failing input to `target/fuzz/NAME/KIND-HASH`.
pub(super) fn save(out: &Path, kind: &str, input: &[u8]) -> PathBuf {
    let file = out.join(format!("{kind}-{:016x}", fnv1a(input)));
    std::fs::write(&file, input).unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
    file
}
