//! The model both forms of a plan read into: the header (modules and
//! their settings, the repeat period), events, and where a plan failed.

use std::fmt;

/// Bytes of module data an event carries.
pub const DATA_BYTES: usize = 12;

/// One event of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Event {
    /// Time from the plan's start (or from the start of its repetition), ns.
    pub offset_ns: u64,
    /// Index of the module in the plan's module table.
    pub module: u16,
    /// Reserved: 0 in version 1.
    pub flags: u16,
    pub data: [u8; DATA_BYTES],
}

/// A module the plan uses: its id (the index in the table), the name the
/// events use, its kind (`mark`, `udp`, `wake`, `signal`) and its settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModuleDecl {
    pub id: u16,
    pub name: String,
    pub kind: String,
    /// `key=value` settings in the order given.
    pub settings: Vec<(String, String)>,
}

impl ModuleDecl {
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// What a plan says besides its events.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlanHeader {
    pub modules: Vec<ModuleDecl>,
    /// The plan repeats with this period, ns (at least the last offset
    /// plus one); None: it runs once (unless the dispatcher is told to
    /// repeat it, back to back).
    pub repeat_ns: Option<u64>,
}

impl PlanHeader {
    pub fn module_named(&self, name: &str) -> Option<&ModuleDecl> {
        self.modules.iter().find(|m| m.name == name)
    }
}

/// Events by index: a plan in memory, or a mapped binary plan whose
/// events are read from the page cache as the dispatcher reaches them.
pub trait EventSource: Send + Sync {
    fn len(&self) -> u64;
    /// The event at `index` (< `len()`).
    fn event(&self, index: u64) -> Event;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Hints that events `[from, to)` will be read soon, `to` possibly
    /// past `len()` for a plan that repeats (the window then wraps to its
    /// start), and that the others will not: a mapped plan locks the
    /// window in and drops the rest from the process's resident memory,
    /// so a long plan costs what a short one does. Called off the hot
    /// path; a no-op for plans in memory.
    fn advise(&self, _from: u64, _to: u64) {}
    /// False when the plan's file no longer has the size it was mapped
    /// with (truncated by another process: reading the missing part would
    /// kill the process with SIGBUS). Always true for plans in memory.
    fn intact(&self) -> bool {
        true
    }
}

impl EventSource for Vec<Event> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }
    fn event(&self, index: u64) -> Event {
        self[index as usize]
    }
}

/// A plan that failed to read: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError {
    /// The file, as given.
    pub file: String,
    /// 1-based line of a text plan, or None (binary plans, whole-file errors).
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for PlanError {}

impl PlanError {
    /// An error at a 1-based line of a text plan.
    pub fn at(file: &str, line: usize, message: impl Into<String>) -> PlanError {
        PlanError {
            file: file.to_string(),
            line: Some(line),
            message: message.into(),
        }
    }

    /// An error about the whole file (or a binary plan).
    pub fn whole(file: &str, message: impl Into<String>) -> PlanError {
        PlanError {
            file: file.to_string(),
            line: None,
            message: message.into(),
        }
    }
}

/// The longest module name and kind (one byte of length in the binary form).
pub const MAX_NAME_BYTES: usize = 255;
/// The most modules a plan declares (ids are u16).
pub const MAX_MODULES: usize = 65_535;
