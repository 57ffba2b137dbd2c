//! One load and its parameters: built, checked and resolved to this
//! machine's defaults.

use super::defaults::{
    IO_DEFAULT_BLOCK, IO_DEFAULT_FILE, MSG_DEFAULT_FDS, MSG_DEFAULT_GROUPS, MSG_DEFAULT_SIZE,
    NET_DEFAULT_SIZE, TIMERS_DEFAULT_COUNT, TIMERS_DEFAULT_INTERVAL_NS, VM_DEFAULT_BYTES,
    VM_DEFAULT_WORKERS,
};
use super::kind::{LoadKind, Param, PARAM_ORDER};
use super::size::{format_duration_exact, format_size, parse_size};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

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

/// Where temporary files go unless `dir=` says: `$TMPDIR` or /tmp, or
/// /var/tmp when that one is tmpfs (writes to tmpfs never reach a disk).
pub fn default_temp_base() -> PathBuf {
    let base = std::env::temp_dir();
    if std::env::var_os("TMPDIR").is_none()
        && super::super::sys::is_tmpfs(&base)
        && std::path::Path::new("/var/tmp").is_dir()
        && !super::super::sys::is_tmpfs(std::path::Path::new("/var/tmp"))
    {
        return PathBuf::from("/var/tmp");
    }
    base
}
