//! Telling a process that never yields from one that works: the kernel's
//! own counts of its thread (time on the CPU, voluntary switches), which
//! the process cannot write. A thread that ran most of a whole window
//! without once blocking never waited for its next activation, whatever
//! its page says.

/// What the kernel counted for a thread at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    at_ns: u64,
    /// Time on the CPU, ns (`schedstat`, field 1).
    runtime_ns: u64,
    /// `voluntary_ctxt_switches` of its `status`.
    voluntary: u64,
}

fn read_counts(pid: i32, tid: i32, at_ns: u64) -> Option<Counts> {
    let dir = format!("/proc/{pid}/task/{tid}");
    let schedstat = std::fs::read_to_string(format!("{dir}/schedstat")).ok()?;
    let runtime_ns = schedstat.split_whitespace().next()?.parse().ok()?;
    let status = std::fs::read_to_string(format!("{dir}/status")).ok()?;
    let voluntary = status
        .lines()
        .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))?
        .trim()
        .parse()
        .ok()?;
    Some(Counts {
        at_ns,
        runtime_ns,
        voluntary,
    })
}

/// Windows of a thread's life, judged one after the other.
pub struct Watch {
    pid: i32,
    tid: i32,
    window_ns: u64,
    start: Option<Counts>,
}

impl Watch {
    pub fn new(pid: i32, tid: i32, window_ns: u64) -> Watch {
        Watch {
            pid,
            tid,
            window_ns,
            start: None,
        }
    }

    /// Once a window has passed: why the thread counts as never yielding
    /// (it ran more than half the window and never blocked), or None.
    pub fn check(&mut self, now_ns: u64) -> Option<String> {
        let Some(start) = self.start else {
            self.start = read_counts(self.pid, self.tid, now_ns);
            return None;
        };
        if now_ns < start.at_ns + self.window_ns {
            return None;
        }
        let now = read_counts(self.pid, self.tid, now_ns)?;
        self.start = Some(now);
        let elapsed = now.at_ns - start.at_ns;
        let ran = now.runtime_ns.saturating_sub(start.runtime_ns);
        (now.voluntary == start.voluntary && ran > elapsed / 2).then(|| {
            format!(
                "it never yielded: {} ms on the CPU in {} ms without once waiting",
                ran / 1_000_000,
                elapsed / 1_000_000
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spinning_thread_is_seen_and_a_sleeping_one_not() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let pid = std::process::id() as i32;
        let (tx, rx) = std::sync::mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let spinning_until = Arc::clone(&stop);
        let spinner = std::thread::spawn(move || {
            // Real-time, so a loaded machine still gives it its CPU.
            let fifo = rtlab_core::sched::SchedParams {
                policy: rtlab_core::sched::Policy::Fifo,
                priority: 1,
                deadline: None,
            };
            let promoted = rtlab_core::sched::set_current_thread(&fifo).is_ok();
            tx.send((rtlab_core::sched::gettid(), promoted)).unwrap();
            // Never blocks until told to stop (a load only shares its CPU).
            while !spinning_until.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        let (tid, promoted) = rx.recv().unwrap();
        if !promoted {
            stop.store(true, Ordering::Relaxed);
            spinner.join().unwrap();
            eprintln!("skipped: SCHED_FIFO is not allowed here");
            return;
        }
        let mut spinning = Watch::new(pid, tid, 200_000_000);
        let mut sleeping = Watch::new(pid, rtlab_core::sched::gettid(), 200_000_000);
        let t0 = rtlab_core::clock::now_ns();
        assert_eq!(spinning.check(t0), None, "too early to say");
        assert_eq!(sleeping.check(t0), None);
        // Seen once it ran more than half of a whole window: at once on a
        // quiet machine, later on a loaded one (never an absolute time:
        // the cap is only against a hang).
        let mut seen = None;
        for _ in 0..500 {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let now = rtlab_core::clock::now_ns();
            assert_eq!(sleeping.check(now), None, "the sleeping thread yields");
            seen = spinning.check(now);
            if seen.is_some() {
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        spinner.join().unwrap();
        let seen = seen.expect("a thread that never blocks is seen within 10 s");
        assert!(seen.contains("never yielded"), "{seen}");
    }
}
