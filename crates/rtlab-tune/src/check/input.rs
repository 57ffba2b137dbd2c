//! What the audit looks at: a root directory, uname, the threads and the
//! caller's limits.

use std::io;
use std::path::PathBuf;

use rtlab_core::env::Uname;

use super::limits::Limits;
use crate::task::Task;

/// Everything the audit looks at.
#[derive(Debug, Clone)]
pub struct AuditInput {
    /// `/` normally; tests point it at a fake tree holding `proc/...`,
    /// `sys/...`, `etc/...` and `boot/...`.
    pub root: PathBuf,
    /// uname(2), which decides the preemption model on older kernels.
    pub uname: Uname,
    /// Every thread of the machine (see [`crate::task::scan`]).
    pub tasks: Vec<Task>,
    /// The resource limits and capabilities of the calling process.
    pub limits: Limits,
}

impl AuditInput {
    /// The running machine: root `/`, the real uname, every thread, and this
    /// process's limits.
    pub fn from_system() -> io::Result<AuditInput> {
        Ok(AuditInput {
            root: PathBuf::from("/"),
            uname: Uname::current(),
            tasks: crate::task::scan()?,
            limits: Limits::current(),
        })
    }
}
