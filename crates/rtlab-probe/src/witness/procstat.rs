//! The per-CPU lines of `/proc/stat`: time in hard and soft interrupts
//! and time stolen by the hypervisor, in clock ticks (`USER_HZ`).

/// A CPU's irq, softirq and steal times, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub irq_ns: u64,
    pub softirq_ns: u64,
    pub steal_ns: u64,
}

/// Nanoseconds per clock tick of /proc/stat.
pub fn tick_ns() -> u64 {
    // SAFETY: sysconf has no memory side effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1_000_000_000 / (hz.max(1) as u64)
}

/// The times of `cpu` in a `/proc/stat` text (`cpuN user nice system idle
/// iowait irq softirq steal ...`), None when the CPU has no line (offline)
/// or the line is short.
pub fn cpu_times(text: &[u8], cpu: usize, tick_ns: u64) -> Option<CpuTimes> {
    let mut name = [0u8; 24];
    let prefix = {
        use std::io::Write;
        let mut cursor = std::io::Cursor::new(&mut name[..]);
        write!(cursor, "cpu{cpu} ").ok()?;
        cursor.position() as usize
    };
    let line = text
        .split(|&b| b == b'\n')
        .find(|l| l.starts_with(&name[..prefix]))?;
    let mut fields = line[prefix..]
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
        .map(|f| std::str::from_utf8(f).ok()?.parse::<u64>().ok());
    let mut next = || fields.next().flatten();
    let (_user, _nice, _system, _idle, _iowait) = (next()?, next()?, next()?, next()?, next()?);
    let (irq, softirq, steal) = (next()?, next()?, next()?);
    Some(CpuTimes {
        irq_ns: irq * tick_ns,
        softirq_ns: softirq * tick_ns,
        steal_ns: steal * tick_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_line_gives_its_irq_softirq_and_steal_time() {
        let text = b"cpu  10 0 5 100 1 2 3 4 0 0\ncpu0 5 0 2 50 0 1 1 2 0 0\n\
cpu1 5 0 3 50 1 7 8 9 0 0\ncpu11 1 1 1 1 1 1 1 1 0 0\nintr 12 3\n";
        let times = cpu_times(text, 1, 10_000_000).unwrap();
        assert_eq!(
            times,
            CpuTimes {
                irq_ns: 70_000_000,
                softirq_ns: 80_000_000,
                steal_ns: 90_000_000
            }
        );
        assert_eq!(cpu_times(text, 11, 1).unwrap().steal_ns, 1);
        assert_eq!(cpu_times(text, 2, 1), None);
        assert_eq!(cpu_times(b"cpu3 1 2 3\n", 3, 1), None, "a short line");
    }
}
