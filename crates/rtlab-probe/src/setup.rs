//! Process-wide preparation for measuring: memory locked, CPUs held out of
//! deep idle states through /dev/cpu_dma_latency, and any system change
//! made through the journal. What could not be done becomes a warning
//! saying how to allow it, and the run goes on.

use rtlab_core::journal::Journal;
use rtlab_core::pmqos::{self, DmaLatencyHold};
use rtlab_core::result::Effective;
use rtlab_core::sched;

#[derive(Debug, Clone)]
pub struct ProcessOptions {
    pub mlock: bool,
    /// PM QoS target to hold (µs), None to leave power management alone.
    pub dma_latency_us: Option<i32>,
}

impl Default for ProcessOptions {
    fn default() -> Self {
        ProcessOptions {
            mlock: true,
            dma_latency_us: Some(0),
        }
    }
}

/// The process-wide state of a run; dropping it releases what it holds.
pub struct PreparedProcess {
    _dma_hold: Option<DmaLatencyHold>,
    locked: bool,
    pub effective: Effective,
    pub warnings: Vec<String>,
}

impl PreparedProcess {
    pub fn prepare(options: &ProcessOptions, journal: &mut Journal) -> PreparedProcess {
        let mut warnings = Vec::new();
        let mut effective = Effective {
            prefaulted_stack_bytes: sched::PREFAULT_STACK_BYTES,
            ..Effective::default()
        };

        let mut locked = false;
        if options.mlock {
            match sched::lock_memory() {
                Ok(()) => locked = true,
                Err(e) => warnings.push(format!(
                    "memory not locked (mlockall: {e}): page faults may show up as latency; to allow it, {}",
                    sched::MEMLOCK_PRIVILEGE_HINT
                )),
            }
        }
        effective.mlockall = locked;

        let mut dma_hold = None;
        if let Some(value) = options.dma_latency_us {
            match DmaLatencyHold::hold(value) {
                Ok(hold) => {
                    let path = std::path::Path::new(pmqos::DMA_LATENCY_PATH);
                    if let Err(e) = journal.note_held(
                        path,
                        &value.to_string(),
                        "released by the kernel when rtlab exits",
                    ) {
                        warnings.push(format!("journal: {e}"));
                    }
                    effective
                        .system_changes
                        .push(format!("{} held at {value} us", pmqos::DMA_LATENCY_PATH));
                    effective.dma_latency_us = Some(value);
                    dma_hold = Some(hold);
                }
                Err(e) => warnings.push(format!(
                    "{} not held at {value} us ({e}): CPUs may enter deep idle states and wake late; to allow it, {}",
                    pmqos::DMA_LATENCY_PATH,
                    pmqos::DMA_LATENCY_HINT
                )),
            }
        }

        PreparedProcess {
            _dma_hold: dma_hold,
            locked,
            effective,
            warnings,
        }
    }
}

impl Drop for PreparedProcess {
    fn drop(&mut self) {
        if self.locked {
            sched::unlock_memory();
        }
    }
}
