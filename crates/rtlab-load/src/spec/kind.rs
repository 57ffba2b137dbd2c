//! The kinds of load and the parameters each takes.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The kinds of load, in the order they are listed to users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadKind {
    /// Pure computation (square roots), like `stress --cpu N`.
    Cpu,
    /// Allocate, touch, verify and free memory, like `stress --vm N --vm-bytes B`.
    Vm,
    /// Write and fsync files in a private temporary directory, like dohell's `dd …; sync`.
    Io,
    /// Recursive directory walk with `lstat` on every entry, like `ls -lR /`.
    Fswalk,
    /// UDP flood over loopback.
    Net,
    /// Many short high-resolution timers.
    Timers,
    /// hackbench-style message groups over socketpairs.
    Msg,
    /// Reads /proc/interrupts and the process list in a loop (`cat`, `ps w`).
    Procfs,
    /// All of dohell's parts at once, at its intensities.
    Dohell,
    /// Any external command, run by `sh -c`.
    Cmd,
}

/// Every load kind, in the order they are listed to users.
pub const LOAD_KINDS: [LoadKind; 10] = [
    LoadKind::Cpu,
    LoadKind::Vm,
    LoadKind::Io,
    LoadKind::Fswalk,
    LoadKind::Net,
    LoadKind::Timers,
    LoadKind::Msg,
    LoadKind::Procfs,
    LoadKind::Dohell,
    LoadKind::Cmd,
];

/// The known loads as listed in error messages.
pub const KNOWN_LOADS: &str =
    "cpu, vm, io, fswalk, net, timers, msg, procfs, dohell, cmd:\"COMMAND\", or idle for none";

impl LoadKind {
    pub fn name(self) -> &'static str {
        match self {
            LoadKind::Cpu => "cpu",
            LoadKind::Vm => "vm",
            LoadKind::Io => "io",
            LoadKind::Fswalk => "fswalk",
            LoadKind::Net => "net",
            LoadKind::Timers => "timers",
            LoadKind::Msg => "msg",
            LoadKind::Procfs => "procfs",
            LoadKind::Dohell => "dohell",
            LoadKind::Cmd => "cmd",
        }
    }

    pub fn from_name(name: &str) -> Option<LoadKind> {
        LOAD_KINDS.iter().copied().find(|k| k.name() == name)
    }

    /// The parameters this load takes.
    pub fn params(self) -> &'static [Param] {
        use Param::*;
        match self {
            LoadKind::Cpu => &[Workers, Nice],
            LoadKind::Vm => &[Workers, Bytes, Nice],
            LoadKind::Io => &[Workers, Bytes, Block, Dir, Nice],
            LoadKind::Fswalk => &[Workers, Root, NoStat, Nice],
            LoadKind::Net => &[Workers, Size, Nice],
            LoadKind::Timers => &[Workers, Timers, Interval, Nice],
            LoadKind::Msg => &[Groups, Fds, Size, Nice],
            LoadKind::Procfs => &[Workers, Nice],
            LoadKind::Dohell => &[Dir, Root, NoStat, Nice],
            LoadKind::Cmd => &[Nice],
        }
    }

    pub fn takes(self, param: Param) -> bool {
        self.params().contains(&param)
    }

    pub(super) fn params_list(self) -> String {
        let names: Vec<&str> = self.params().iter().map(|p| p.key()).collect();
        match self {
            LoadKind::Cmd => "only its command (cmd:\"…\") and nice".to_string(),
            _ => names.join(", "),
        }
    }
}

impl fmt::Display for LoadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A parameter of a load, as written in a spec (`workers=4`, `no-stat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Param {
    Workers,
    Groups,
    Fds,
    Bytes,
    Block,
    Size,
    Timers,
    Interval,
    Dir,
    Root,
    NoStat,
    Nice,
}

/// Parameters in the order a canonical spec prints them.
pub(super) const PARAM_ORDER: [Param; 12] = [
    Param::Workers,
    Param::Groups,
    Param::Fds,
    Param::Bytes,
    Param::Block,
    Param::Size,
    Param::Timers,
    Param::Interval,
    Param::Dir,
    Param::Root,
    Param::NoStat,
    Param::Nice,
];

impl Param {
    pub fn key(self) -> &'static str {
        match self {
            Param::Workers => "workers",
            Param::Groups => "groups",
            Param::Fds => "fds",
            Param::Bytes => "bytes",
            Param::Block => "block",
            Param::Size => "size",
            Param::Timers => "timers",
            Param::Interval => "interval",
            Param::Dir => "dir",
            Param::Root => "root",
            Param::NoStat => "no-stat",
            Param::Nice => "nice",
        }
    }

    pub(super) fn from_key(key: &str) -> Option<Param> {
        PARAM_ORDER.iter().copied().find(|p| p.key() == key)
    }

    pub(super) fn is_flag(self) -> bool {
        self == Param::NoStat
    }

    /// What a value must look like, for error messages.
    pub(super) fn expected(self) -> &'static str {
        match self {
            Param::Workers => "a number of workers, 1-4096",
            Param::Groups => "a number of groups, 1-64",
            Param::Fds => "senders (= receivers) per group, 1-256",
            Param::Bytes => "a size such as 4096, 64K, 256M or 1G",
            Param::Block => "a block size such as 4K or 1M",
            Param::Size => "a message size in bytes such as 64 or 1K",
            Param::Timers => "timers per worker, 1-1024",
            Param::Interval => "a duration such as 100us or 1ms",
            Param::Dir | Param::Root => "a path",
            Param::NoStat => "nothing (it is a flag)",
            Param::Nice => "a nice value, -20 to 19",
        }
    }
}
