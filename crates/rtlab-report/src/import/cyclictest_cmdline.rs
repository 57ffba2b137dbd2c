//! The command line cyclictest records in its JSON, read back as rt-tests
//! 2.x reads it: the interval, distance, priority, policy, histogram limit,
//! nanoseconds and mlockall.

use rtlab_core::sched::{Policy, SchedParams};

/// What the recorded command line says, as rt-tests 2.x reads it.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct CommandLine {
    pub interval_us: Option<u64>,
    pub distance_us: Option<u64>,
    pub priority: Option<u32>,
    pub policy: Option<String>,
    pub histogram: Option<u64>,
    pub nsecs: bool,
    pub mlockall: bool,
}

impl CommandLine {
    pub fn parse(cmdline: &str) -> CommandLine {
        let mut c = CommandLine::default();
        let args: Vec<&str> = cmdline.split_whitespace().skip(1).collect();
        // Short options that take a value (attached or next), and those
        // whose value is optional (taken only when it looks like one).
        const WITH_VALUE: &str = "AbcdDFhHilop";
        const OPTIONAL: &str = "at";
        let mut i = 0;
        let num = |s: &str| s.trim().parse::<u64>().ok();
        while i < args.len() {
            let arg = args[i];
            i += 1;
            if let Some(long) = arg.strip_prefix("--") {
                let (name, inline) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (long, None),
                };
                let takes = matches!(
                    name,
                    "interval" | "distance" | "priority" | "policy" | "histogram" | "histofall"
                );
                let value = match inline {
                    Some(v) => Some(v),
                    None if takes && i < args.len() => {
                        i += 1;
                        Some(args[i - 1])
                    }
                    None => None,
                };
                match (name, value) {
                    ("interval", Some(v)) => c.interval_us = num(v),
                    ("distance", Some(v)) => c.distance_us = num(v),
                    ("priority", Some(v)) => c.priority = num(v).map(|p| p as u32),
                    ("policy", Some(v)) => c.policy = Some(v.to_string()),
                    ("histogram" | "histofall", Some(v)) => c.histogram = num(v),
                    ("nsecs", _) => c.nsecs = true,
                    ("mlockall", _) => c.mlockall = true,
                    _ => {}
                }
                continue;
            }
            let Some(cluster) = arg.strip_prefix('-') else {
                continue;
            };
            for (pos, opt) in cluster.char_indices() {
                let attached = &cluster[pos + opt.len_utf8()..];
                if opt == 'm' {
                    // -m takes no value in cyclictest: --mlockall.
                    c.mlockall = true;
                    continue;
                }
                if opt == 'N' {
                    c.nsecs = true;
                    continue;
                }
                if WITH_VALUE.contains(opt) {
                    let value = if !attached.is_empty() {
                        Some(attached)
                    } else if i < args.len() {
                        i += 1;
                        Some(args[i - 1])
                    } else {
                        None
                    };
                    if let Some(v) = value {
                        match opt {
                            'i' => c.interval_us = num(v),
                            'd' => c.distance_us = num(v),
                            'p' => c.priority = num(v).map(|p| p as u32),
                            'h' | 'H' => c.histogram = num(v),
                            _ => {}
                        }
                    }
                    break;
                }
                if OPTIONAL.contains(opt) {
                    if attached.is_empty() && i < args.len() {
                        let next = args[i];
                        if next
                            .chars()
                            .all(|ch| ch.is_ascii_digit() || ch == ',' || ch == '-')
                            && !next.starts_with('-')
                        {
                            i += 1;
                        }
                    }
                    break;
                }
            }
        }
        c
    }

    /// The requested scheduling of every thread.
    pub fn sched(&self) -> Option<SchedParams> {
        let priority = self.priority.unwrap_or(0).min(99);
        let policy = match self.policy.as_deref() {
            Some("fifo") => Policy::Fifo,
            Some("rr") => Policy::Rr,
            Some("other" | "normal") => Policy::Other,
            Some("batch") => Policy::Batch,
            Some("idle") => Policy::Idle,
            Some(_) => return None,
            None if priority > 0 => Policy::Fifo,
            None => Policy::Other,
        };
        Some(SchedParams {
            policy,
            priority: if policy.takes_priority() { priority } else { 0 },
            deadline: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_command_line_like_cyclictest() {
        let c = CommandLine::parse(
            "cyclictest -mq -p 90 -i 500 -t 2 -a -h200 --json=/tmp/x.json --policy=rr",
        );
        assert_eq!(c.interval_us, Some(500));
        assert_eq!(c.priority, Some(90));
        assert_eq!(c.histogram, Some(200));
        assert!(c.mlockall);
        assert_eq!(c.policy.as_deref(), Some("rr"));
        let c = CommandLine::parse("cyclictest -t 3 -d 100 --interval 250 -N -H 50");
        assert_eq!((c.interval_us, c.distance_us), (Some(250), Some(100)));
        assert_eq!(c.histogram, Some(50));
        assert!(c.nsecs && !c.mlockall);
        assert_eq!(CommandLine::parse(""), CommandLine::default());
    }
}
