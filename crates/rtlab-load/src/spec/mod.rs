//! What load to run and how hard: `vm`, `vm:workers=4,bytes=256M`,
//! `fswalk:no-stat`, `cmd:"stress-ng --cpu 2"`, and lists of them for
//! `--load vm,io`.
//!
//! Grammar of a list (see docs/load.md):
//!
//! ```text
//! list   := "" | "idle" | item ("," item)*
//! item   := NAME | NAME ":" param | "cmd:" QUOTED | "cmd:" REST-OF-STRING | param
//! param  := KEY "=" VALUE | FLAG          (continues the load before it)
//! ```
//!
//! A comma-separated token that does not start with a load's name continues
//! the parameters of the load before it, so `vm:workers=4,bytes=256M,io` is
//! a vm load with two parameters followed by an io load. Values may be
//! quoted (`dir="/a,b"`). `cmd:"…"` is quoted and may hold commas; an
//! unquoted `cmd:` takes the rest of the string.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

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

    fn params_list(self) -> String {
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
const PARAM_ORDER: [Param; 12] = [
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

    fn from_key(key: &str) -> Option<Param> {
        PARAM_ORDER.iter().copied().find(|p| p.key() == key)
    }

    fn is_flag(self) -> bool {
        self == Param::NoStat
    }

    /// What a value must look like, for error messages.
    fn expected(self) -> &'static str {
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

/// The intensity of a load. `None` means the load's default (see
/// [`LoadSpec::resolved`] and docs/load.md).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadParams {
    /// Threads doing the work (cpu, vm, io, fswalk, timers, procfs; net: senders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<u32>,
    /// msg: groups of senders and receivers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<u32>,
    /// msg: senders and receivers per group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fds: Option<u32>,
    /// vm: bytes per worker; io: bytes per file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// io: bytes per write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<u64>,
    /// net: datagram payload; msg: message size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// timers: timers per worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timers: Option<u32>,
    /// timers: period of each timer, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ns: Option<u64>,
    /// io, dohell: where the private temporary directory is made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// fswalk, dohell: where the walk starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<PathBuf>,
    /// fswalk, dohell: list names only, no lstat (the modified dohell).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_stat: bool,
    /// Nice value of the load's processes (SCHED_OTHER); 0 when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// cmd: the command line, run by `sh -c`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

impl LoadParams {
    fn is_set(&self, param: Param) -> bool {
        match param {
            Param::Workers => self.workers.is_some(),
            Param::Groups => self.groups.is_some(),
            Param::Fds => self.fds.is_some(),
            Param::Bytes => self.bytes.is_some(),
            Param::Block => self.block.is_some(),
            Param::Size => self.size.is_some(),
            Param::Timers => self.timers.is_some(),
            Param::Interval => self.interval_ns.is_some(),
            Param::Dir => self.dir.is_some(),
            Param::Root => self.root.is_some(),
            Param::NoStat => self.no_stat,
            Param::Nice => self.nice.is_some(),
        }
    }

    /// The value as a canonical spec writes it; None when not set.
    fn value_text(&self, param: Param) -> Option<String> {
        Some(match param {
            Param::Workers => self.workers?.to_string(),
            Param::Groups => self.groups?.to_string(),
            Param::Fds => self.fds?.to_string(),
            Param::Bytes => format_size(self.bytes?),
            Param::Block => format_size(self.block?),
            Param::Size => format_size(self.size?),
            Param::Timers => self.timers?.to_string(),
            Param::Interval => format_duration_exact(self.interval_ns?),
            Param::Dir => quote_if_needed(&self.dir.as_ref()?.to_string_lossy()),
            Param::Root => quote_if_needed(&self.root.as_ref()?.to_string_lossy()),
            Param::NoStat => return self.no_stat.then(String::new),
            Param::Nice => self.nice?.to_string(),
        })
    }
}

/// One load with its intensity. Sent to the worker process as JSON;
/// shown to people (and recorded) in the spec grammar via `Display`.
///
/// `Display` writes the parameters that are set, in a fixed order, so it
/// round-trips through `FromStr`; [`LoadSpec::resolved`] first fills in
/// every default, which is what a [`LoadRecord`](rtlab_core::result::LoadRecord)
/// shows (`cpu` runs as `cpu:workers=2` on a 2-CPU machine).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadSpec {
    pub kind: LoadKind,
    #[serde(flatten)]
    pub params: LoadParams,
}

/// A spec could not be read: the message is complete, for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadSpecError(pub String);

impl fmt::Display for LoadSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadSpecError {}

// Defaults (docs/load.md lists them).
pub(crate) const VM_DEFAULT_WORKERS: u32 = 2;
pub(crate) const VM_DEFAULT_BYTES: u64 = 256 << 20;
pub(crate) const IO_DEFAULT_FILE: u64 = 64 << 20;
pub(crate) const IO_DEFAULT_BLOCK: u64 = 1 << 20;
pub(crate) const NET_DEFAULT_SIZE: u64 = 64;
pub(crate) const TIMERS_DEFAULT_COUNT: u32 = 8;
pub(crate) const TIMERS_DEFAULT_INTERVAL_NS: u64 = 100_000;
pub(crate) const MSG_DEFAULT_GROUPS: u32 = 1;
pub(crate) const MSG_DEFAULT_FDS: u32 = 20;
pub(crate) const MSG_DEFAULT_SIZE: u64 = 100;

impl LoadSpec {
    /// A load with every parameter at its default.
    pub fn new(kind: LoadKind) -> LoadSpec {
        LoadSpec {
            kind,
            params: LoadParams::default(),
        }
    }

    /// `cmd:"…"`: an external command run by `sh -c`.
    pub fn command(command: impl Into<String>) -> LoadSpec {
        LoadSpec {
            kind: LoadKind::Cmd,
            params: LoadParams {
                command: Some(command.into()),
                ..LoadParams::default()
            },
        }
    }

    /// "cpu", "vm", ..., "cmd".
    pub fn name(&self) -> &str {
        self.kind.name()
    }

    /// Checks what a spec built in code (or read from JSON) may get wrong:
    /// parameters the load does not take and values out of range.
    pub fn validate(&self) -> Result<(), LoadSpecError> {
        let p = &self.params;
        for param in PARAM_ORDER {
            if p.is_set(param) && !self.kind.takes(param) {
                return Err(LoadSpecError(format!(
                    "load '{}' has no parameter '{}' ({} takes {})",
                    self.kind,
                    param.key(),
                    self.kind,
                    self.kind.params_list()
                )));
            }
        }
        let bad = |param: Param, value: String| {
            Err(LoadSpecError(format!(
                "load '{}': {}={value} is out of range (expected {})",
                self.kind,
                param.key(),
                param.expected()
            )))
        };
        let in_range = |v: Option<u64>, lo: u64, hi: u64| v.is_none_or(|v| (lo..=hi).contains(&v));
        if !in_range(p.workers.map(u64::from), 1, 4096) {
            return bad(Param::Workers, p.workers.unwrap_or(0).to_string());
        }
        if !in_range(p.groups.map(u64::from), 1, 64) {
            return bad(Param::Groups, p.groups.unwrap_or(0).to_string());
        }
        if !in_range(p.fds.map(u64::from), 1, 256) {
            return bad(Param::Fds, p.fds.unwrap_or(0).to_string());
        }
        if !in_range(p.timers.map(u64::from), 1, 1024) {
            return bad(Param::Timers, p.timers.unwrap_or(0).to_string());
        }
        if !in_range(p.bytes, 4096, 1 << 50) {
            return bad(Param::Bytes, format_size(p.bytes.unwrap_or(0)));
        }
        if !in_range(p.block, 512, 256 << 20) {
            return bad(Param::Block, format_size(p.block.unwrap_or(0)));
        }
        let size_max = if self.kind == LoadKind::Net {
            65_507
        } else {
            1 << 20
        };
        if !in_range(p.size, 1, size_max) {
            return Err(LoadSpecError(format!(
                "load '{}': size={} is out of range (expected 1 to {size_max} bytes)",
                self.kind,
                format_size(p.size.unwrap_or(0))
            )));
        }
        if !in_range(p.interval_ns, 1_000, 10_000_000_000) {
            return Err(LoadSpecError(format!(
                "load '{}': interval={} is out of range (expected 1us to 10s)",
                self.kind,
                format_duration_exact(p.interval_ns.unwrap_or(0))
            )));
        }
        if let Some(nice) = p.nice {
            if !(-20..=19).contains(&nice) {
                return bad(Param::Nice, nice.to_string());
            }
        }
        if let (Some(bytes), Some(block)) = (p.bytes, p.block) {
            if block > bytes {
                return Err(LoadSpecError(format!(
                    "load '{}': block={} is larger than the file (bytes={})",
                    self.kind,
                    format_size(block),
                    format_size(bytes)
                )));
            }
        }
        for (param, path) in [(Param::Dir, &p.dir), (Param::Root, &p.root)] {
            if path.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
                return bad(param, "\"\"".into());
            }
        }
        match (self.kind, &p.command) {
            (LoadKind::Cmd, None) => Err(LoadSpecError(
                "load 'cmd' needs a command: cmd:\"stress-ng --cpu 2\"".into(),
            )),
            (LoadKind::Cmd, Some(c)) if c.trim().is_empty() => Err(LoadSpecError(
                "load 'cmd' has an empty command: cmd:\"stress-ng --cpu 2\"".into(),
            )),
            (LoadKind::Cmd, Some(_)) | (_, None) => Ok(()),
            (kind, Some(_)) => Err(LoadSpecError(format!(
                "load '{kind}' takes no command (only cmd does)"
            ))),
        }
    }

    /// The spec with every default filled in for this machine, as it runs
    /// and as its record shows it. `cpu` and `timers` default to one worker
    /// per online CPU; `dir` to the system temporary directory (or
    /// /var/tmp when that one is tmpfs, so writes reach a disk).
    pub fn resolved(&self) -> LoadSpec {
        let online = rtlab_core::cpuset::CpuSet::online().len().max(1) as u32;
        let mut p = self.params.clone();
        match self.kind {
            LoadKind::Cpu => {
                p.workers.get_or_insert(online);
            }
            LoadKind::Vm => {
                p.workers.get_or_insert(VM_DEFAULT_WORKERS);
                p.bytes.get_or_insert(VM_DEFAULT_BYTES);
            }
            LoadKind::Io => {
                p.workers.get_or_insert(1);
                p.bytes.get_or_insert(IO_DEFAULT_FILE);
                p.block
                    .get_or_insert(IO_DEFAULT_BLOCK.min(p.bytes.unwrap_or(IO_DEFAULT_FILE)));
                p.dir.get_or_insert_with(default_temp_base);
            }
            LoadKind::Fswalk => {
                p.workers.get_or_insert(1);
                p.root.get_or_insert_with(|| PathBuf::from("/"));
            }
            LoadKind::Net => {
                p.workers.get_or_insert(1);
                p.size.get_or_insert(NET_DEFAULT_SIZE);
            }
            LoadKind::Timers => {
                p.workers.get_or_insert(online);
                p.timers.get_or_insert(TIMERS_DEFAULT_COUNT);
                p.interval_ns.get_or_insert(TIMERS_DEFAULT_INTERVAL_NS);
            }
            LoadKind::Msg => {
                p.groups.get_or_insert(MSG_DEFAULT_GROUPS);
                p.fds.get_or_insert(MSG_DEFAULT_FDS);
                p.size.get_or_insert(MSG_DEFAULT_SIZE);
            }
            LoadKind::Procfs => {
                p.workers.get_or_insert(1);
            }
            LoadKind::Dohell => {
                p.dir.get_or_insert_with(default_temp_base);
                p.root.get_or_insert_with(|| PathBuf::from("/"));
            }
            LoadKind::Cmd => {}
        }
        LoadSpec {
            kind: self.kind,
            params: p,
        }
    }

    /// Sets one parameter from its text (as after `=` in a spec); used by
    /// the parser and by command-line flags such as `--workers`.
    pub fn set_param(&mut self, key: &str, value: Option<&str>) -> Result<(), LoadSpecError> {
        let kind = self.kind;
        let param = Param::from_key(key).ok_or_else(|| {
            LoadSpecError(format!(
                "load '{kind}' has no parameter '{key}' ({kind} takes {})",
                kind.params_list()
            ))
        })?;
        if !kind.takes(param) {
            return Err(LoadSpecError(format!(
                "load '{kind}' has no parameter '{key}' ({kind} takes {})",
                kind.params_list()
            )));
        }
        if self.params.is_set(param) {
            return Err(LoadSpecError(format!(
                "load '{kind}': '{key}' is given twice"
            )));
        }
        let value = match (param.is_flag(), value) {
            (true, None) => "",
            (true, Some(_)) => {
                return Err(LoadSpecError(format!(
                    "load '{kind}': '{key}' is a flag and takes no value (write {kind}:{key})"
                )))
            }
            (false, None) | (false, Some("")) => {
                return Err(LoadSpecError(format!(
                    "load '{kind}': '{key}' needs a value: {key}=VALUE (expected {})",
                    param.expected()
                )))
            }
            (false, Some(v)) => v,
        };
        let bad = || {
            LoadSpecError(format!(
                "load '{kind}': {key}={value} is not valid (expected {})",
                param.expected()
            ))
        };
        let p = &mut self.params;
        match param {
            Param::Workers => p.workers = Some(value.parse().map_err(|_| bad())?),
            Param::Groups => p.groups = Some(value.parse().map_err(|_| bad())?),
            Param::Fds => p.fds = Some(value.parse().map_err(|_| bad())?),
            Param::Timers => p.timers = Some(value.parse().map_err(|_| bad())?),
            Param::Bytes => p.bytes = Some(parse_size(value).map_err(|_| bad())?),
            Param::Block => p.block = Some(parse_size(value).map_err(|_| bad())?),
            Param::Size => p.size = Some(parse_size(value).map_err(|_| bad())?),
            Param::Interval => {
                p.interval_ns = Some(
                    rtlab_core::units::parse_duration_ns(value)
                        .map_err(|e| LoadSpecError(format!("load '{kind}': {key}: {e}")))?,
                )
            }
            Param::Dir => p.dir = Some(PathBuf::from(value)),
            Param::Root => p.root = Some(PathBuf::from(value)),
            Param::NoStat => p.no_stat = true,
            Param::Nice => p.nice = Some(value.parse().map_err(|_| bad())?),
        }
        Ok(())
    }
}

impl fmt::Display for LoadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.kind == LoadKind::Cmd {
            parts.push(quote(self.params.command.as_deref().unwrap_or("")));
        }
        for param in PARAM_ORDER {
            if let Some(value) = self.params.value_text(param) {
                parts.push(if param.is_flag() {
                    param.key().to_string()
                } else {
                    format!("{}={value}", param.key())
                });
            }
        }
        if parts.is_empty() {
            f.write_str(self.kind.name())
        } else {
            write!(f, "{}:{}", self.kind.name(), parts.join(","))
        }
    }
}

impl FromStr for LoadSpec {
    type Err = LoadSpecError;
    /// Exactly one load (`vm:workers=4,bytes=256M`); see [`parse_list`] for lists.
    fn from_str(s: &str) -> Result<LoadSpec, LoadSpecError> {
        let mut list = parse_list(s)?;
        match list.len() {
            1 => Ok(list.remove(0)),
            0 => Err(LoadSpecError(format!(
                "'{s}' is no load (expected one of {KNOWN_LOADS})"
            ))),
            n => Err(LoadSpecError(format!(
                "'{s}' is {n} loads where one was expected"
            ))),
        }
    }
}

/// A list of loads in the spec grammar, e.g. for `--load vm,io`; `""` and
/// `idle` are no load (an empty list).
pub fn parse_list(s: &str) -> Result<Vec<LoadSpec>, LoadSpecError> {
    let trimmed = s.trim();
    if trimmed.is_empty() || trimmed == "idle" {
        return Ok(Vec::new());
    }
    let tokens = tokenize(trimmed).map_err(|why| LoadSpecError(format!("'{s}': {why}")))?;
    let mut specs: Vec<LoadSpec> = Vec::new();
    for token in tokens {
        let token = token.trim();
        if token.is_empty() {
            return Err(LoadSpecError(format!(
                "'{s}': empty item between commas (known loads: {KNOWN_LOADS})"
            )));
        }
        let (head, rest) = match token.split_once(':') {
            Some((h, r)) => (h.trim(), Some(r)),
            None => (token, None),
        };
        if head == "idle" {
            return Err(LoadSpecError(format!(
                "'{s}': idle means no load and cannot be combined with other loads"
            )));
        }
        if let Some(kind) = LoadKind::from_name(head) {
            let mut spec = LoadSpec::new(kind);
            match (kind, rest) {
                (LoadKind::Cmd, None) => {
                    return Err(LoadSpecError(format!(
                        "'{s}': cmd needs a command: cmd:\"stress-ng --cpu 2\""
                    )))
                }
                (LoadKind::Cmd, Some(command)) => {
                    let command = unquote(command.trim())
                        .map_err(|why| LoadSpecError(format!("'{s}': cmd: {why}")))?;
                    spec.params.command = Some(command);
                }
                (_, Some(param)) => set_param_token(&mut spec, param, s)?,
                (_, None) => {}
            }
            specs.push(spec);
            continue;
        }
        // Not a load's name: a parameter of the load before it.
        let key = token.split_once('=').map_or(token, |(k, _)| k).trim();
        let looks_like_param = token.contains('=') || Param::from_key(key).is_some();
        match specs.last_mut() {
            Some(previous) if looks_like_param => set_param_token(previous, token, s)?,
            Some(previous) => {
                return Err(LoadSpecError(format!(
                    "'{s}': unknown load '{token}' (known loads: {KNOWN_LOADS}; parameters of {} are {})",
                    previous.kind,
                    previous.kind.params_list()
                )))
            }
            None if looks_like_param => {
                return Err(LoadSpecError(format!(
                    "'{s}': '{token}' is a parameter but no load comes before it (write e.g. vm:{token}; known loads: {KNOWN_LOADS})"
                )))
            }
            None => {
                return Err(LoadSpecError(format!(
                    "'{s}': unknown load '{head}' (known loads: {KNOWN_LOADS})"
                )))
            }
        }
    }
    for spec in &specs {
        spec.validate()
            .map_err(|e| LoadSpecError(format!("'{s}': {e}")))?;
    }
    Ok(specs)
}

/// The canonical text of a list of loads (`vm:workers=4,io`); parses back
/// with [`parse_list`]. An empty list is `idle`.
pub fn format_list(specs: &[LoadSpec]) -> String {
    if specs.is_empty() {
        return "idle".into();
    }
    specs
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn set_param_token(spec: &mut LoadSpec, token: &str, whole: &str) -> Result<(), LoadSpecError> {
    let (key, value) = match token.split_once('=') {
        Some((k, v)) => (
            k.trim(),
            Some(
                unquote(v.trim())
                    .map_err(|why| LoadSpecError(format!("'{whole}': {}: {why}", k.trim())))?,
            ),
        ),
        None => (token.trim(), None),
    };
    spec.set_param(key, value.as_deref())
        .map_err(|e| LoadSpecError(format!("'{whole}': {e}")))
}

/// Splits at commas outside quotes; an unquoted `cmd:` takes the rest.
fn tokenize(s: &str) -> Result<Vec<String>, String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    loop {
        let start = i;
        // Looked at in place: copying the rest for every token made a spec
        // of n commas cost n² (137 s for 70,000 in a debug build).
        let skip_blank = |mut j: usize| {
            while chars.get(j).is_some_and(|c| c.is_whitespace()) {
                j += 1;
            }
            j
        };
        let word = skip_blank(i);
        if chars
            .get(word..word + 4)
            .is_some_and(|w| w == ['c', 'm', 'd', ':'])
        {
            let after = skip_blank(word + 4);
            if !matches!(chars.get(after), Some('"' | '\'')) {
                tokens.push(chars[i..].iter().collect());
                return Ok(tokens);
            }
        }
        let mut quote: Option<char> = None;
        while i < chars.len() {
            let c = chars[i];
            match quote {
                Some('"') if c == '\\' => i += 1,
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == '"' || c == '\'' => quote = Some(c),
                None if c == ',' => break,
                None => {}
            }
            i += 1;
        }
        if let Some(q) = quote {
            return Err(format!(
                "unterminated {q} quote in '{}'",
                chars[start..].iter().collect::<String>()
            ));
        }
        tokens.push(chars[start..i.min(chars.len())].iter().collect());
        if i >= chars.len() {
            return Ok(tokens);
        }
        i += 1; // the comma
    }
}

/// `"a \"b\""` → `a "b"`, `'x'` → `x`, anything else as it is. Text after
/// the closing quote is an error.
fn unquote(s: &str) -> Result<String, String> {
    let mut chars = s.chars();
    let quote = match chars.next() {
        Some(q @ ('"' | '\'')) => q,
        _ => return Ok(s.to_string()),
    };
    let mut out = String::new();
    while let Some(c) = chars.next() {
        if quote == '"' && c == '\\' {
            match chars.next() {
                Some(e) => out.push(e),
                None => return Err(format!("unterminated \" quote in {s}")),
            }
        } else if c == quote {
            let after: String = chars.collect();
            if !after.trim().is_empty() {
                return Err(format!(
                    "unexpected '{}' after the closing quote in {s} (separate items with commas)",
                    after.trim()
                ));
            }
            return Ok(out);
        } else {
            out.push(c);
        }
    }
    Err(format!("unterminated {quote} quote in {s}"))
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn quote_if_needed(s: &str) -> String {
    let needs = s.is_empty()
        || s.contains([',', '"', '\'', '\\'])
        || s.trim() != s
        || s.starts_with(|c: char| c.is_whitespace());
    if needs {
        quote(s)
    } else {
        s.to_string()
    }
}

const SIZE_UNITS: [(&str, u64); 5] = [
    ("T", 1 << 40),
    ("G", 1 << 30),
    ("M", 1 << 20),
    ("K", 1 << 10),
    ("", 1),
];

/// Parses `4096`, `64K`, `256M`, `1G`, `1.5G`, `256MiB`, `4096B` (binary
/// units, as `stress --vm-bytes`).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let text = s.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = unit.trim();
    let unit_upper = unit.to_ascii_uppercase();
    let unit_key = unit_upper
        .strip_suffix("IB")
        .or_else(|| unit_upper.strip_suffix('B'))
        .unwrap_or(&unit_upper);
    let scale = SIZE_UNITS
        .iter()
        .find(|(u, _)| *u == unit_key)
        .map(|(_, s)| *s)
        .ok_or_else(|| format!("'{s}': unknown unit '{unit}' (K, M, G, T)"))?;
    if number.is_empty() {
        return Err(format!("'{s}' must start with a number"));
    }
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if frac.contains('.') {
        return Err(format!("'{s}': more than one decimal point"));
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| format!("'{s}' is too large"))?
    };
    let mut bytes = (whole as u128) * scale as u128;
    let mut denominator: u128 = 1;
    let mut numerator: u128 = 0;
    for d in frac.bytes() {
        denominator *= 10;
        numerator = numerator * 10 + u128::from(d - b'0');
        if denominator > 1_000_000_000_000 {
            return Err(format!("'{s}': too many decimals"));
        }
    }
    if numerator != 0 {
        let scaled = numerator * scale as u128;
        if !scaled.is_multiple_of(denominator) {
            return Err(format!("'{s}' is not a whole number of bytes"));
        }
        bytes += scaled / denominator;
    }
    u64::try_from(bytes).map_err(|_| format!("'{s}' is too large"))
}

/// The largest binary unit that keeps the size exact: `256M`, `1000K`, `4097`.
pub fn format_size(bytes: u64) -> String {
    for (unit, scale) in SIZE_UNITS {
        if bytes >= scale && bytes.is_multiple_of(scale) && !unit.is_empty() {
            return format!("{}{unit}", bytes / scale);
        }
    }
    bytes.to_string()
}

/// Bytes for people: `256 MiB`, `1.5 GiB`, `512 B`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (unit, scale) in UNITS {
        if bytes >= scale {
            let text = format!("{:.2}", bytes as f64 / scale as f64);
            let text = text.trim_end_matches('0').trim_end_matches('.');
            return format!("{text} {unit}");
        }
    }
    format!("{bytes} B")
}

/// A duration in the largest unit that keeps it exact: `100us`, `1500us`, `2s`.
fn format_duration_exact(ns: u64) -> String {
    for (unit, scale) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns >= scale && ns.is_multiple_of(scale) {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

/// Where temporary files go unless `dir=` says: `$TMPDIR` or /tmp, or
/// /var/tmp when that one is tmpfs (writes to tmpfs never reach a disk).
pub fn default_temp_base() -> PathBuf {
    let base = std::env::temp_dir();
    if std::env::var_os("TMPDIR").is_none()
        && super::sys::is_tmpfs(&base)
        && std::path::Path::new("/var/tmp").is_dir()
        && !super::sys::is_tmpfs(std::path::Path::new("/var/tmp"))
    {
        return PathBuf::from("/var/tmp");
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> LoadSpec {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn names_parse_alone() {
        for kind in LOAD_KINDS {
            if kind == LoadKind::Cmd {
                continue;
            }
            let spec = one(kind.name());
            assert_eq!(spec, LoadSpec::new(kind));
            assert_eq!(spec.name(), kind.name());
            assert_eq!(spec.to_string(), kind.name());
        }
    }

    #[test]
    fn parameters_parse() {
        let vm = one("vm:workers=4,bytes=256M");
        assert_eq!(vm.params.workers, Some(4));
        assert_eq!(vm.params.bytes, Some(256 << 20));
        assert_eq!(vm.to_string(), "vm:workers=4,bytes=256M");
        let fs = one("fswalk:no-stat");
        assert!(fs.params.no_stat);
        assert_eq!(fs.to_string(), "fswalk:no-stat");
        let t = one("timers:interval=250us,timers=4");
        assert_eq!(t.params.interval_ns, Some(250_000));
        assert_eq!(t.to_string(), "timers:timers=4,interval=250us");
        let io = one("io:dir=\"/tmp/a,b\",bytes=1.5M,block=4K");
        assert_eq!(io.params.dir, Some(PathBuf::from("/tmp/a,b")));
        assert_eq!(io.params.bytes, Some(1536 << 10));
        assert_eq!(io.to_string(), "io:bytes=1536K,block=4K,dir=\"/tmp/a,b\"");
        assert_eq!(one("cpu:nice=-5").params.nice, Some(-5));
    }

    #[test]
    fn commands_quoted_and_unquoted() {
        let quoted = one("cmd:\"stress-ng --cpu 2\"");
        assert_eq!(quoted.params.command.as_deref(), Some("stress-ng --cpu 2"));
        assert_eq!(quoted.to_string(), "cmd:\"stress-ng --cpu 2\"");
        let bare = one("cmd:stress-ng --cpu 2");
        assert_eq!(bare, quoted);
        let with_comma = parse_list("cmd:\"echo a,b\",io").unwrap();
        assert_eq!(with_comma.len(), 2);
        assert_eq!(with_comma[0].params.command.as_deref(), Some("echo a,b"));
        assert_eq!(with_comma[1], LoadSpec::new(LoadKind::Io));
        let rest = parse_list("io,cmd:sh -c 'x,y',z").unwrap();
        assert_eq!(rest.len(), 2);
        assert_eq!(rest[1].params.command.as_deref(), Some("sh -c 'x,y',z"));
        let escaped = one(r#"cmd:"echo \"hi\" \\ there""#);
        assert_eq!(
            escaped.params.command.as_deref(),
            Some(r#"echo "hi" \ there"#)
        );
        let niced = parse_list("cmd:'sleep 1',nice=5").unwrap();
        assert_eq!(niced[0].params.nice, Some(5));
        assert_eq!(niced[0].to_string(), "cmd:\"sleep 1\",nice=5");
    }

    #[test]
    fn lists_continue_parameters() {
        let list = parse_list("vm:workers=4,bytes=256M,io").unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].params.workers, Some(4));
        assert_eq!(list[0].params.bytes, Some(256 << 20));
        assert_eq!(list[1].kind, LoadKind::Io);
        let list = parse_list(" vm , io , fswalk:root=/usr,no-stat ").unwrap();
        assert_eq!(list.len(), 3);
        assert!(list[2].params.no_stat);
        assert_eq!(list[2].params.root, Some(PathBuf::from("/usr")));
        // A bare load followed by a parameter takes it too.
        assert_eq!(
            parse_list("vm,workers=3").unwrap()[0].params.workers,
            Some(3)
        );
    }

    #[test]
    fn idle_and_empty_are_no_load() {
        assert!(parse_list("").unwrap().is_empty());
        assert!(parse_list("  idle ").unwrap().is_empty());
        assert_eq!(format_list(&[]), "idle");
        assert!(parse_list("idle,vm").unwrap_err().0.contains("idle"));
    }

    #[test]
    fn display_round_trips() {
        let cases = [
            "cpu",
            "cpu:workers=3,nice=10",
            "vm:workers=40,bytes=256M",
            "vm:bytes=4097",
            "io:workers=2,bytes=100M,block=1000K,dir=/var/tmp",
            "fswalk:workers=2,root=\"/a b,c\",no-stat",
            "net:workers=2,size=1472",
            "timers:workers=1,timers=64,interval=1500us",
            "msg:groups=2,fds=10,size=1K",
            "procfs:workers=2",
            "dohell:no-stat",
            "dohell:dir=/mnt/disk,root=/usr",
            "cmd:\"stress-ng --cpu 2 --vm 1, really\"",
            "cmd:\"echo \\\"quoted\\\"\",nice=3",
        ];
        for case in cases {
            let spec = one(case);
            assert_eq!(spec.to_string(), case);
            assert_eq!(one(&spec.to_string()), spec);
            let json = serde_json::to_string(&spec).unwrap();
            assert_eq!(serde_json::from_str::<LoadSpec>(&json).unwrap(), spec);
        }
        let list = parse_list("vm:workers=4,bytes=256M,io,cmd:\"a,b\",cpu").unwrap();
        assert_eq!(parse_list(&format_list(&list)).unwrap(), list);
        // Resolved specs round-trip as well.
        for kind in LOAD_KINDS {
            let spec = if kind == LoadKind::Cmd {
                LoadSpec::command("true")
            } else {
                LoadSpec::new(kind)
            };
            let resolved = spec.resolved();
            resolved.validate().unwrap();
            assert_eq!(one(&resolved.to_string()), resolved);
        }
    }

    #[test]
    fn defaults_resolve() {
        let online = rtlab_core::cpuset::CpuSet::online().len() as u32;
        assert_eq!(one("cpu").resolved().params.workers, Some(online));
        let vm = one("vm").resolved();
        assert_eq!(vm.to_string(), "vm:workers=2,bytes=256M");
        let io = one("io:bytes=512K").resolved();
        assert_eq!(io.params.block, Some(512 << 10));
        assert!(io.params.dir.is_some());
        assert_eq!(
            one("msg").resolved().to_string(),
            "msg:groups=1,fds=20,size=100"
        );
        // Explicit values are kept.
        assert_eq!(one("cpu:workers=7").resolved().params.workers, Some(7));
    }

    fn err(s: &str) -> String {
        parse_list(s).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_token_and_what_was_expected() {
        let e = err("vm,cpuu");
        assert!(
            e.contains("'cpuu'") && e.contains("known loads") && e.contains("fswalk"),
            "{e}"
        );
        let e = err("stress");
        assert!(
            e.contains("unknown load 'stress'") && e.contains("cmd:"),
            "{e}"
        );
        let e = err("vm:dir=/tmp");
        assert!(
            e.contains("'dir'") && e.contains("vm takes workers, bytes, nice"),
            "{e}"
        );
        let e = err("vm:bytes=lots");
        assert!(e.contains("bytes=lots") && e.contains("256M"), "{e}");
        let e = err("cpu:workers=0");
        assert!(e.contains("workers=0") && e.contains("1-4096"), "{e}");
        let e = err("cpu:workers=two");
        assert!(e.contains("workers=two"), "{e}");
        let e = err("timers:interval=100");
        assert!(e.contains("interval") && e.contains("unit"), "{e}");
        let e = err("workers=4");
        assert!(e.contains("no load comes before it"), "{e}");
        let e = err("cmd");
        assert!(e.contains("cmd needs a command"), "{e}");
        let e = err("cmd:\"unterminated");
        assert!(e.contains("unterminated"), "{e}");
        let e = err("cmd:\"a\"b");
        assert!(e.contains("after the closing quote"), "{e}");
        let e = err("vm,,io");
        assert!(e.contains("empty item"), "{e}");
        let e = err("fswalk:no-stat=1");
        assert!(e.contains("flag"), "{e}");
        let e = err("vm:workers=2,workers=3");
        assert!(e.contains("twice"), "{e}");
        let e = err("io:bytes=64K,block=1M");
        assert!(e.contains("larger than the file"), "{e}");
        let e = err("net:size=100K");
        assert!(e.contains("65507"), "{e}");
        let e = err("cpu:nice=30");
        assert!(e.contains("nice=30"), "{e}");
        let e = "vm,io".parse::<LoadSpec>().unwrap_err().to_string();
        assert!(e.contains("2 loads"), "{e}");
        let e = "idle".parse::<LoadSpec>().unwrap_err().to_string();
        assert!(e.contains("no load"), "{e}");
    }

    #[test]
    fn json_specs_are_validated() {
        let spec: LoadSpec = serde_json::from_str(r#"{"kind":"cpu","bytes":4096}"#).unwrap();
        assert!(spec
            .validate()
            .unwrap_err()
            .0
            .contains("no parameter 'bytes'"));
        let spec: LoadSpec = serde_json::from_str(r#"{"kind":"cmd"}"#).unwrap();
        assert!(spec.validate().is_err());
        let spec: LoadSpec = serde_json::from_str(r#"{"kind":"vm","workers":3}"#).unwrap();
        assert_eq!(spec.to_string(), "vm:workers=3");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("512B"), Ok(512));
        assert!(parse_size("1.3").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("10 parsecs").is_err());
        assert!(parse_size("99999999999T").is_err());
        assert_eq!(format_size(256 << 20), "256M");
        assert_eq!(format_size(1_024_000), "1000K");
        assert_eq!(format_size(4097), "4097");
        assert_eq!(format_size(0), "0");
        assert_eq!(human_bytes(256 << 20), "256 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(human_bytes(100), "100 B");
    }
}
