//! The calling thread's own scheduling and CPUs, saved before attaching
//! and put back after: lowering one's own policy and widening one's own
//! affinity need no privilege, so a process the executive promoted gets
//! its old scheduling back even when the executive is gone.

/// The kernel's `struct sched_attr`, first version (48 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// What the thread had before attaching.
pub struct Saved {
    attr: SchedAttr,
    cpus: libc::cpu_set_t,
}

fn errno_text(call: &str) -> String {
    format!("{call}: {}", std::io::Error::last_os_error())
}

impl Saved {
    /// The calling thread's scheduling and affinity now.
    pub fn now() -> Result<Saved, String> {
        let mut attr = SchedAttr::default();
        // SAFETY: attr is a valid buffer of the size given; 0 = this thread.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_sched_getattr,
                0,
                &mut attr as *mut SchedAttr,
                std::mem::size_of::<SchedAttr>() as u32,
                0,
            )
        };
        if rc < 0 {
            return Err(errno_text("sched_getattr"));
        }
        // SAFETY: cpu_set_t is plain data; the size passed is its size.
        let mut cpus: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut cpus) }
            != 0
        {
            return Err(errno_text("sched_getaffinity"));
        }
        Ok(Saved { attr, cpus })
    }

    /// Puts the calling thread back: the policy first (it drops the
    /// real-time priority), then the CPUs. Both are attempted; the first
    /// failure is returned.
    pub fn restore(&self) -> Result<(), String> {
        let mut attr = SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            ..self.attr
        };
        // SAFETY: attr is a valid, fully initialised sched_attr.
        let sched =
            unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &mut attr as *mut SchedAttr, 0) };
        let sched = (sched >= 0)
            .then_some(())
            .ok_or_else(|| errno_text("sched_setattr"));
        // SAFETY: a cpu_set_t read from the kernel, of its own size.
        let cpus = unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.cpus)
        };
        let cpus = (cpus == 0)
            .then_some(())
            .ok_or_else(|| errno_text("sched_setaffinity"));
        sched.and(cpus)
    }
}

/// The calling thread's policy now (SCHED_OTHER is 0), for tests and checks.
pub fn current_policy() -> i32 {
    // SAFETY: no memory effects; 0 = the calling thread.
    unsafe { libc::sched_getscheduler(0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_and_restore_round_trip() {
        let saved = Saved::now().unwrap();
        saved.restore().unwrap();
        assert_eq!(current_policy() & !0x4000_0000, saved.attr.policy as i32);
    }
}
