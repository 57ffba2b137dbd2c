//! rtlab's load generators: `cpu`, `vm`, `io`, `fswalk`, `net`, `timers`,
//! `msg`, `procfs`, `dohell` and `cmd:"…"` (any external command).
//!
//! Each load runs in its own worker process (a re-exec of the calling
//! binary, see [`Launcher`]) at SCHED_OTHER, in its own process group and,
//! where cgroup v2 is writable, its own cgroup. A worker ends with its
//! parent even when the parent is SIGKILLed (stdin pipe + parent-death
//! signal), removes its temporary files, and is only ever signalled
//! through its process group or cgroup, never by name. See docs/load.md.
//!
//! ```no_run
//! use rtlab_load::{parse_list, Launcher, RunningLoads};
//! let specs = parse_list("vm:workers=4,bytes=256M,io").unwrap();
//! let launcher = Launcher::this_executable(&["__load-worker"]).unwrap();
//! let mut loads = RunningLoads::start(&specs, &launcher).unwrap();
//! // ... measure ...
//! loads.check().unwrap();
//! let records = loads.stop();
//! ```

// Paths inside the crate are written relative (`super::`), never
// `crate::`, so that the sources also build as a module of another crate.
pub mod cgroup;
mod cmd;
mod ctx;
mod loads;
pub mod plan;
mod spec;
mod supervisor;
pub mod sys;
mod worker;

pub use loads::counter_text;
pub use plan::{plan_vm, MemFigures, VmPlan};
pub use spec::{
    default_temp_base, format_list, format_size, human_bytes, parse_list, parse_size, LoadKind,
    LoadParams, LoadSpec, LoadSpecError, Param, KNOWN_LOADS, LOAD_KINDS,
};
pub use supervisor::{Launcher, RunningLoads, READY_TIMEOUT, STOP_TIMEOUT};
pub use worker::{worker_main, Ready, PARENT_DEATH_SIGNAL};
