//! Reading /proc and /sys under a root, and the small text values in them.

use std::fs;
use std::path::{Path, PathBuf};

/// Reads a small text file, trimmed; `None` if unreadable or empty.
///
/// Trailing NULs are trimmed too, because device-tree files
/// (/proc/device-tree/model) end with one.
pub fn read_trimmed(path: &Path) -> Option<String> {
    // Lossy decoding: a stray non-UTF-8 byte in e.g. a DMI string should not
    // cost us the whole value.
    let bytes = fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let trimmed = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    if trimmed.is_empty() {
        None
    } else {
        Some(trimmed.to_string())
    }
}

/// Reads absolute system paths relative to a root, so tests can point the
/// whole capture at a fake tree.
pub(super) struct Sys {
    pub(super) root: PathBuf,
}

impl Sys {
    pub(super) fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    pub(super) fn read(&self, abs: &str) -> Option<String> {
        read_trimmed(&self.path(abs))
    }

    pub(super) fn read_i64(&self, abs: &str) -> Option<i64> {
        self.read(abs)?.parse().ok()
    }

    pub(super) fn exists(&self, abs: &str) -> bool {
        self.path(abs).exists()
    }
}

pub(super) fn non_empty(s: String) -> Option<String> {
    let t = s.trim();
    if t.is_empty() {
        None
    } else {
        Some(t.to_string())
    }
}

/// The word written as "[word]" in e.g. "always [madvise] never".
pub(super) fn bracketed(text: &str) -> Option<String> {
    let start = text.find('[')? + 1;
    let len = text[start..].find(']')?;
    non_empty(text[start..start + len].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    #[test]
    fn bracketed_values() {
        assert_eq!(
            bracketed("always [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(
            bracketed("[always] madvise never").as_deref(),
            Some("always")
        );
        assert_eq!(bracketed("always madvise never"), None);
        assert_eq!(bracketed("[]"), None);
        assert_eq!(bracketed("broken [value"), None);
    }

    #[test]
    fn read_trimmed_behaviour() {
        let dir = TempDir::new().unwrap();
        let p = dir.path().join("f");
        assert_eq!(read_trimmed(&p), None);
        fs::write(&p, "  \n").unwrap();
        assert_eq!(read_trimmed(&p), None);
        fs::write(&p, "Raspberry Pi 4\0").unwrap();
        assert_eq!(read_trimmed(&p).as_deref(), Some("Raspberry Pi 4"));
        // A directory is unreadable as a file.
        assert_eq!(read_trimmed(dir.path()), None);
    }
}
