//! What the kernel says of a process or thread: its `/proc/PID/stat` (or
//! `/proc/PID/task/TID/stat`) line, and the boot it runs in. The one
//! parser of stat lines in the workspace: a process's name is chosen by its
//! user, so everything here reads bytes and counts from the last ')'.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsFd;
use std::path::Path;
use std::str::FromStr;

/// Field numbers of a stat line, as proc(5) counts them (from 1).
pub const STATE: usize = 3;
pub const PPID: usize = 4;
pub const PGRP: usize = 5;
pub const FLAGS: usize = 9;
pub const UTIME: usize = 14;
pub const STIME: usize = 15;
pub const STARTTIME: usize = 22;
pub const RT_PRIORITY: usize = 40;
pub const POLICY: usize = 41;

/// One stat line, split. Only the name (field 2) is held as bytes; the
/// fields after it are numbers and single letters the kernel writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// Field 1 (the pid or tid) as written.
    id: String,
    /// Field 2 without its parentheses: from the first '(' to the last ')'.
    comm: Vec<u8>,
    /// Fields 3 and on.
    fields: Vec<String>,
}

impl Stat {
    /// Splits a stat line, or None when it has no name in parentheses. The
    /// name may hold spaces, parentheses, newlines and bytes that are not
    /// UTF-8: it runs from the first '(' to the LAST ')', and only what
    /// follows it is split into fields.
    pub fn parse(line: &[u8]) -> Option<Stat> {
        let open = line.iter().position(|&b| b == b'(')?;
        let close = line.iter().rposition(|&b| b == b')')?;
        let comm = line.get(open + 1..close)?.to_vec();
        let id = String::from_utf8_lossy(&line[..open]).trim().to_string();
        let fields = line[close + 1..]
            .split(u8::is_ascii_whitespace)
            .filter(|f| !f.is_empty())
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        Some(Stat { id, comm, fields })
    }

    /// Reads and splits a stat file (`/proc/PID/stat`, a task's, or one in
    /// a copy of /proc's shape).
    pub fn read(path: &Path) -> io::Result<Stat> {
        let line = std::fs::read(path)?;
        Stat::parse(&line).ok_or_else(|| unparsable(&path.display().to_string()))
    }

    /// `/proc/ID/stat`: `id` may be a process id or any thread id.
    pub fn of(id: u32) -> io::Result<Stat> {
        Stat::read(Path::new(&format!("/proc/{id}/stat")))
    }

    /// `task/TID/stat` read through an open `/proc/PID` directory, so that
    /// it is the process that directory was opened on (a pid reused since
    /// has another directory), whatever happened to the pid since.
    pub fn of_task_at(proc_dir: &File, tid: i32) -> io::Result<Stat> {
        let name = format!("task/{tid}/stat");
        let fd = rustix::fs::openat(
            proc_dir.as_fd(),
            name.as_str(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        let mut line = Vec::new();
        File::from(fd).read_to_end(&mut line)?;
        Stat::parse(&line).ok_or_else(|| unparsable(&name))
    }

    /// Field 1, the pid or tid.
    pub fn id<T: FromStr>(&self) -> Option<T> {
        self.id.parse().ok()
    }

    /// Field 2, the name, as the kernel keeps it (at most 15 bytes, which
    /// need not be UTF-8).
    pub fn comm(&self) -> &[u8] {
        &self.comm
    }

    /// Field `n` (counted from 1 as in proc(5), so `n >= 3`) as written.
    pub fn field(&self, n: usize) -> Option<&str> {
        self.fields.get(n.checked_sub(STATE)?).map(String::as_str)
    }

    /// Field `n` parsed as a number (or any type), None if absent or not one.
    pub fn number<T: FromStr>(&self, n: usize) -> Option<T> {
        self.field(n)?.parse().ok()
    }

    /// Field 3: `R`, `S`, `D`, `Z` (zombie), `X` (dead), ...
    pub fn state(&self) -> Option<char> {
        self.field(STATE)?.chars().next()
    }

    /// Field 22, the start time in clock ticks since boot: with the pid, it
    /// tells a process from a later one that reused its pid.
    pub fn starttime(&self) -> Option<u64> {
        self.number(STARTTIME)
    }
}

fn unparsable(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("cannot parse {what}"))
}

/// This boot's id (/proc/sys/kernel/random/boot_id), or None if it cannot
/// be read: start times repeat across boots, so a pid and start time name
/// one process only together with the boot.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starttime_parsing() {
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10";
        let parsed = Stat::parse(stat.as_bytes()).unwrap();
        assert_eq!(parsed.state(), Some('S'));
        assert_eq!(parsed.starttime(), Some(98765));
        assert_eq!(parsed.comm(), b"a b) c");
        assert_eq!(parsed.id::<u32>(), Some(42));
        assert_eq!(Stat::parse(b"42 (x"), None);
        assert_eq!(Stat::parse(b"42 (x) Z 1").unwrap().starttime(), None);
        assert_eq!(Stat::parse(b"42 (x) Z 1").unwrap().state(), Some('Z'));
        assert!(Stat::of(std::process::id()).unwrap().starttime().unwrap() > 0);
    }

    #[test]
    fn a_name_with_newlines_and_bytes_that_are_not_utf8() {
        let line = b"7 (\xff)\n) (x) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 555 0 0";
        let stat = Stat::parse(line).unwrap();
        assert_eq!(stat.comm(), b"\xff)\n) (x");
        assert_eq!(stat.state(), Some('R'));
        assert_eq!(stat.number::<u32>(PPID), Some(1));
        assert_eq!(stat.starttime(), Some(555));
        assert_eq!(stat.field(2), None);
        assert_eq!(stat.field(0), None);
    }

    #[test]
    fn a_task_read_through_its_process_directory() {
        let me = std::process::id();
        let dir = File::open(format!("/proc/{me}")).unwrap();
        let through_dir = Stat::of_task_at(&dir, me as i32).unwrap();
        assert_eq!(through_dir.starttime(), Stat::of(me).unwrap().starttime());
        assert!(Stat::of_task_at(&dir, i32::MAX).is_err());
    }

    #[test]
    fn boot_id_is_read() {
        let id = boot_id().unwrap();
        assert_eq!(id.len(), 36, "{id}");
    }
}
