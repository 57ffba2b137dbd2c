//! The trait every format implements, and writing an export to a file
//! atomically.

use rtlab_core::result::RunResult;
use std::io::{self, Write};
use std::path::Path;

pub trait Exporter {
    fn write(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()>;
}

/// Writes `result` to `path` through `exporter`, atomically (see
/// [`write_with`]). `-` is stdout.
pub fn write_file(exporter: &dyn Exporter, result: &RunResult, path: &Path) -> io::Result<()> {
    write_with(path, |out| exporter.write(result, out))
}

/// Writes what `body` produces to `path` so that a reader (or a crash)
/// never sees a half-written file, and another user who controls a
/// directory on the way cannot redirect the write (rtlab runs as root):
/// see [`rtlab_core::fsutil`]. `-` is stdout; an existing FIFO or
/// character device is written as it is, never replaced.
pub fn write_with(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    rtlab_core::fsutil::write_atomic(path, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The temporary file was `.NAME.tmp-PID`: anyone who could write the
    /// directory could plant a symlink there, and root wrote through it.
    #[test]
    fn a_symlink_at_the_old_temporary_name_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("tmp");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let planted = shared.join(format!(".out.json.tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let out = shared.join("out.json");
        write_with(&out, |w| w.write_all(b"{}\n")).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert_eq!(std::fs::read(&out).unwrap(), b"{}\n");
        assert!(std::fs::symlink_metadata(&planted).unwrap().is_symlink());
    }
}
