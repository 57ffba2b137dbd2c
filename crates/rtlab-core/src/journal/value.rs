//! Kernel settings as files: reading, writing and checking a sysfs/procfs
//! value, restoring one, and sysctl assignments.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::affinity::restore_affinities;
use super::cgroup::{disable_controller, move_process_back, remove_cgroup_dir};
use super::entry::{Entry, Outcome};
use super::error::{io_message, JournalError};
use super::socket::remove_socket_file;
use super::sysv::{remove_sysv_sem_set, SysvSemSet};
use super::thread::{restore_thread, ForeignThread};

/// Upper bound for a value read from a sysfs/procfs file: a journal is not
/// the place for `/dev/zero`.
const MAX_VALUE_LEN: u64 = 64 * 1024;

/// Reads a sysfs/procfs value without its trailing newline. Multiple-choice
/// files (`always [madvise] never`) yield the selected choice, which is what
/// must be written back.
pub(super) fn read_value(path: &Path) -> io::Result<String> {
    let mut raw = Vec::new();
    File::open(path)?
        .take(MAX_VALUE_LEN + 1)
        .read_to_end(&mut raw)?;
    if raw.len() as u64 > MAX_VALUE_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("more than {MAX_VALUE_LEN} bytes, not a setting"),
        ));
    }
    let text = String::from_utf8(raw)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))?;
    Ok(selected_choice(text.trim_end_matches('\n')))
}

fn selected_choice(value: &str) -> String {
    let mut selected = None;
    for token in value.split_whitespace() {
        if let Some(choice) = token.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            if selected.is_some() || choice.is_empty() || choice.contains(['[', ']']) {
                return value.to_string();
            }
            selected = Some(choice);
        } else if token.contains(['[', ']']) {
            return value.to_string();
        }
    }
    selected.map_or_else(|| value.to_string(), str::to_string)
}

fn is_kernel_fs(file: &File) -> bool {
    // SAFETY: statfs is plain data; the fd is valid for the lifetime of `file`.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } != 0 {
        // Unknown: do not truncate, the safe choice for kernel files.
        return true;
    }
    let magic = st.f_type as u32;
    [
        libc::PROC_SUPER_MAGIC as u32,
        libc::SYSFS_MAGIC as u32,
        libc::CGROUP_SUPER_MAGIC as u32,
        libc::CGROUP2_SUPER_MAGIC as u32,
        libc::DEBUGFS_MAGIC as u32,
        libc::TRACEFS_MAGIC as u32,
        libc::SECURITYFS_MAGIC as u32,
    ]
    .contains(&magic)
}

/// Writes `value\n` the way `echo value > path` does, without O_TRUNC
/// (some /proc/sys files refuse it). An ordinary file (tests, or a setting
/// kept on a real file system) is cut after the value so that a shorter
/// value leaves no tail of the longer one.
pub(super) fn write_value(path: &Path, value: &str) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).open(path)?;
    let line = format!("{value}\n");
    file.write_all(line.as_bytes())?;
    if file.metadata()?.is_file() && !is_kernel_fs(&file) {
        file.set_len(line.len() as u64)?;
    }
    Ok(())
}

pub(super) fn check_value(path: &Path, value: &str) -> Result<(), JournalError> {
    if value.contains(['\n', '\0']) {
        return Err(JournalError::InvalidValue {
            path: path.to_path_buf(),
            value: value.to_string(),
            reason: "a value must be one line without NUL bytes".into(),
        });
    }
    Ok(())
}

pub(super) fn restore_entry(entry: &Entry) -> Outcome {
    match entry {
        Entry::File { path, old, .. } => {
            let was = read_value(path).ok();
            match write_value(path, old) {
                Ok(()) => Outcome::Restored { was },
                // The change never happened: rtlab died between journaling
                // it and the kernel refusing the write (an IRQ that cannot
                // move). Nothing to put back, and a refused write must not
                // keep the entry (and every later rtlab) stuck forever.
                Err(_) if was.as_deref() == Some(old.as_str()) => Outcome::Restored { was },
                // The setting went with its file (an IRQ whose device was
                // removed, a module unloaded): nothing left to put back,
                // and the entry must not keep every later rtlab stuck.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Outcome::Skipped {
                    reason: "the file is gone (its device or module went away)".into(),
                },
                Err(e) => Outcome::Failed {
                    error: io_message(&e),
                },
            }
        }
        Entry::Held { .. } => Outcome::Released,
        Entry::SysvSem {
            semid, ctime, cuid, ..
        } => remove_sysv_sem_set(SysvSemSet {
            semid: *semid,
            ctime: *ctime,
            cuid: *cuid,
        }),
        Entry::ThreadSched {
            pid,
            tid,
            starttime,
            old,
            affinity,
            ..
        } => restore_thread(
            ForeignThread {
                pid: *pid,
                tid: *tid,
                starttime: *starttime,
            },
            old,
            affinity,
        ),
        Entry::Socket { path, dev, ino, .. } => remove_socket_file(path, *dev, *ino),
        Entry::CgroupDir {
            path, return_to, ..
        } => remove_cgroup_dir(path, return_to),
        Entry::CgroupProcess {
            pid,
            starttime,
            from,
            to,
            ..
        } => move_process_back(*pid, *starttime, from, to),
        Entry::CgroupController {
            path, controller, ..
        } => disable_controller(path, controller),
        Entry::ThreadAffinities { threads, .. } => restore_affinities(threads),
    }
}

/// Parses `kernel.timer_migration=0` or `kernel/timer_migration = 0` into
/// (`/proc/sys/kernel/timer_migration`, `"0"`). As with sysctl(8), a key
/// containing '/' keeps its dots (`net/ipv4/conf/eth0.100/forwarding`).
pub fn parse_sysctl(assignment: &str) -> Result<(PathBuf, String), JournalError> {
    let invalid = |reason: String| JournalError::InvalidSysctl {
        input: assignment.to_string(),
        reason,
    };
    let (key, value) = assignment
        .split_once('=')
        .ok_or_else(|| invalid("missing '='".into()))?;
    let (key, value) = (key.trim(), value.trim());
    if key.is_empty() {
        return Err(invalid("empty key".into()));
    }
    if value.is_empty() {
        return Err(invalid("empty value".into()));
    }
    if key.contains("..") {
        return Err(invalid("'..' is not allowed in a key".into()));
    }
    if let Some(c) = key
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/')))
    {
        return Err(invalid(format!("character {c:?} is not allowed in a key")));
    }
    let relative = if key.contains('/') {
        key.to_string()
    } else {
        key.replace('.', "/")
    };
    if relative
        .split('/')
        .any(|segment| segment.is_empty() || segment == ".")
    {
        return Err(invalid("empty path segment in the key".into()));
    }
    let path = Path::new("/proc/sys").join(&relative);
    match fs::metadata(&path) {
        Ok(md) if md.is_file() => Ok((path, value.to_string())),
        Ok(_) => Err(invalid(format!(
            "{} is a directory, not a setting",
            path.display()
        ))),
        Err(_) => Err(JournalError::UnknownSysctl {
            input: assignment.to_string(),
            key: key.to_string(),
            path,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_write_of_the_value_already_there_is_restored() {
        // Read-only even for root (a sysctl of mode 0444), as an IRQ the
        // kernel refuses to move is: a focus SIGKILLed between journaling
        // its write and the refusal leaves this entry.
        let path = PathBuf::from("/proc/sys/kernel/osrelease");
        let now = read_value(&path).unwrap();
        assert!(write_value(&path, &now).is_err(), "{path:?} is writable");
        let unchanged = Entry::File {
            path: path.clone(),
            old: now.clone(),
            new: "0".into(),
        };
        assert_eq!(
            restore_entry(&unchanged),
            Outcome::Restored {
                was: Some(now.clone())
            }
        );
        let changed = Entry::File {
            path,
            old: format!("{now}-other"),
            new: now,
        };
        assert!(matches!(restore_entry(&changed), Outcome::Failed { .. }));
    }

    #[test]
    fn a_file_that_is_gone_is_skipped_not_failed_forever() {
        let tmp = tempfile::TempDir::new().unwrap();
        let path = tmp.path().join("smp_affinity_list");
        std::fs::write(&path, "0\n").unwrap();
        let entry = Entry::File {
            path: path.clone(),
            old: "0-1".into(),
            new: "0".into(),
        };
        std::fs::remove_file(&path).unwrap();
        assert!(
            matches!(restore_entry(&entry), Outcome::Skipped { ref reason } if reason.contains("gone")),
            "{:?}",
            restore_entry(&entry)
        );
        assert!(!path.exists(), "restoring created the file");
    }

    #[test]
    fn multiple_choice_values() {
        assert_eq!(selected_choice("always [madvise] never"), "madvise");
        assert_eq!(selected_choice("[none] mq-deadline"), "none");
        assert_eq!(selected_choice("1"), "1");
        assert_eq!(selected_choice("4\t4\t1\t7"), "4\t4\t1\t7");
        assert_eq!(selected_choice("[a] [b]"), "[a] [b]");
    }

    #[test]
    fn parse_sysctl_accepts_and_rejects() {
        let expected = PathBuf::from("/proc/sys/kernel/pid_max");
        assert_eq!(
            parse_sysctl("kernel.pid_max=4096").unwrap(),
            (expected.clone(), "4096".to_string())
        );
        assert_eq!(
            parse_sysctl("kernel/pid_max = 4096").unwrap(),
            (expected, "4096".to_string())
        );
        if Path::new("/proc/sys/kernel/timer_migration").exists() {
            assert_eq!(
                parse_sysctl("kernel.timer_migration=0").unwrap(),
                (
                    PathBuf::from("/proc/sys/kernel/timer_migration"),
                    "0".to_string()
                )
            );
            assert_eq!(
                parse_sysctl("kernel/timer_migration = 0").unwrap().0,
                PathBuf::from("/proc/sys/kernel/timer_migration")
            );
        }
        for bad in [
            "../etc/passwd=1",
            "=1",
            "kernel.x",
            "nonexistent.key=1",
            "kernel.pid_max=",
            "kernel=1",
            "kernel.pid max=1",
        ] {
            let err = parse_sysctl(bad).unwrap_err();
            assert!(
                err.to_string().contains(&format!("{bad:?}")),
                "{bad}: {err}"
            );
        }
        let err = parse_sysctl("nonexistent.key=1").unwrap_err();
        assert!(matches!(err, JournalError::UnknownSysctl { .. }), "{err}");
        assert!(
            err.to_string().contains("/proc/sys/nonexistent/key"),
            "{err}"
        );
        let err = parse_sysctl("kernel.x").unwrap_err();
        assert!(err.to_string().contains("missing '='"), "{err}");
    }
}
