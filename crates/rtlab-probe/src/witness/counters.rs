//! The witness's counter reads: `/proc/interrupts` and `/proc/softirqs`
//! through the noise probe's parsers (one column per watched CPU from one
//! read of each file), and `/proc/stat`'s times; each window is what rose
//! since the last read.

use super::procstat::{self, CpuTimes};
use super::window::CpuWindow;
use crate::noise::counters::{
    column_of, counter_delta, header, CounterFile, CounterKind, CounterLayout, INTERRUPTS, SOFTIRQS,
};
use std::path::Path;

/// One counter file read for every watched CPU.
struct PerCpuFile {
    file: CounterFile,
    layout: CounterLayout,
    /// The last reading per watched CPU (None: no usable reading).
    last: Vec<Option<(u64, Vec<u64>)>>,
    values: Vec<u64>,
}

impl PerCpuFile {
    fn open(path: &str, kind: CounterKind, cpus: usize) -> Result<PerCpuFile, String> {
        let text = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        let layout = CounterLayout::learn(&String::from_utf8_lossy(&text), kind)
            .map_err(|e| format!("{path}: {e}"))?;
        let file = CounterFile::open(Path::new(path), CounterFile::capacity_for(text.len()))
            .map_err(|e| format!("{path}: {e}"))?;
        let lines = layout.lines.len();
        Ok(PerCpuFile {
            file,
            layout,
            last: vec![None; cpus],
            values: vec![0; lines],
        })
    }

    fn names(&self) -> Vec<String> {
        self.layout.lines.iter().map(|l| l.name.clone()).collect()
    }

    /// Reads the file once and, for each watched CPU, hands `rose` the
    /// lines that rose since the last reading (nothing for a CPU whose
    /// reading cannot be compared: a first one, a line layout changed).
    fn read(&mut self, cpus: &[usize], mut rose: impl FnMut(usize, u16, u32)) {
        let Ok(text) = self.file.read() else {
            self.last.iter_mut().for_each(|l| *l = None);
            return;
        };
        for (slot, &cpu) in cpus.iter().enumerate() {
            let Some(column) = column_of(header(text), cpu) else {
                self.last[slot] = None;
                continue;
            };
            let outcome = self.layout.parse(text, column, &mut self.values);
            if outcome.missing_values > 0 {
                self.last[slot] = None;
                continue;
            }
            if let Some((signature, before)) = &self.last[slot] {
                if *signature == outcome.signature {
                    for (line, (&b, &a)) in before.iter().zip(&self.values).enumerate() {
                        let delta = counter_delta(b, a);
                        if delta > 0 && line <= usize::from(u16::MAX) {
                            rose(slot, line as u16, delta.min(u64::from(u32::MAX)) as u32);
                        }
                    }
                }
            }
            match &mut self.last[slot] {
                Some((signature, before)) => {
                    *signature = outcome.signature;
                    before.copy_from_slice(&self.values);
                }
                None => self.last[slot] = Some((outcome.signature, self.values.clone())),
            }
        }
    }
}

/// The counters of the watched CPUs.
pub struct Counters {
    cpus: Vec<usize>,
    irqs: Option<PerCpuFile>,
    softirqs: Option<PerCpuFile>,
    stat: Option<CounterFile>,
    last_times: Vec<Option<CpuTimes>>,
    tick_ns: u64,
}

impl Counters {
    /// Opens the files for `cpus`; what cannot be read is a note (the
    /// witness then names causes without it).
    pub fn open(cpus: &[usize], notes: &mut Vec<String>) -> Counters {
        let mut file = |path, kind| match PerCpuFile::open(path, kind, cpus.len()) {
            Ok(f) => Some(f),
            Err(e) => {
                notes.push(format!("no interrupt counts: {e}"));
                None
            }
        };
        let irqs = file(INTERRUPTS, CounterKind::Irq);
        let softirqs = file(SOFTIRQS, CounterKind::Softirq);
        let stat = match CounterFile::open(Path::new("/proc/stat"), 1 << 20) {
            Ok(f) => Some(f),
            Err(e) => {
                notes.push(format!("no steal time: /proc/stat: {e}"));
                None
            }
        };
        Counters {
            cpus: cpus.to_vec(),
            irqs,
            softirqs,
            stat,
            last_times: vec![None; cpus.len()],
            tick_ns: procstat::tick_ns(),
        }
    }

    /// The names of the interrupt and softirq lines, in line order.
    pub fn names(&self) -> (Vec<String>, Vec<String>) {
        let names = |f: &Option<PerCpuFile>| f.as_ref().map_or_else(Vec::new, PerCpuFile::names);
        (names(&self.irqs), names(&self.softirqs))
    }

    /// Reads every counter into `windows` (one per watched CPU, in the
    /// order of the CPUs given to [`Counters::open`]).
    pub fn read_into(&mut self, windows: &mut [CpuWindow]) {
        if let Some(irqs) = &mut self.irqs {
            irqs.read(&self.cpus, |slot, line, n| {
                windows[slot].irqs.push((line, n))
            });
        }
        if let Some(softirqs) = &mut self.softirqs {
            softirqs.read(&self.cpus, |slot, line, n| {
                windows[slot].softirqs.push((line, n))
            });
        }
        let Some(stat) = &mut self.stat else {
            return;
        };
        let text = stat.read().ok();
        for (slot, &cpu) in self.cpus.iter().enumerate() {
            let now = text.and_then(|t| procstat::cpu_times(t, cpu, self.tick_ns));
            if let (Some(before), Some(now)) = (self.last_times[slot], now) {
                let window = &mut windows[slot];
                window.steal_ns += now.steal_ns.saturating_sub(before.steal_ns);
                window.irq_ns += now.irq_ns.saturating_sub(before.irq_ns);
                window.softirq_ns += now.softirq_ns.saturating_sub(before.softirq_ns);
            }
            self.last_times[slot] = now;
        }
    }
}
