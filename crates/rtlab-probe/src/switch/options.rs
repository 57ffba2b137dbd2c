//! The switch probe's choices: how the timer thread releases the task, and
//! a delay injected on that release path.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// How the timer thread releases the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    Futex,
    PthreadMutex,
    PthreadCond,
    PosixSem,
    SysvSem,
    Pipe,
    Eventfd,
    Mq,
    Signal,
}

impl Mechanism {
    /// Every mechanism, in the order `--all` runs them.
    pub const ALL: &'static [Mechanism] = &[
        Mechanism::Futex,
        Mechanism::PthreadMutex,
        Mechanism::PthreadCond,
        Mechanism::PosixSem,
        Mechanism::SysvSem,
        Mechanism::Pipe,
        Mechanism::Eventfd,
        Mechanism::Mq,
        Mechanism::Signal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Mechanism::Futex => "futex",
            Mechanism::PthreadMutex => "pthread-mutex",
            Mechanism::PthreadCond => "pthread-cond",
            Mechanism::PosixSem => "posix-sem",
            Mechanism::SysvSem => "sysv-sem",
            Mechanism::Pipe => "pipe",
            Mechanism::Eventfd => "eventfd",
            Mechanism::Mq => "mq",
            Mechanism::Signal => "signal",
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for Mechanism {
    type Err = String;
    fn from_str(s: &str) -> Result<Mechanism, String> {
        Mechanism::ALL
            .iter()
            .copied()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                let known: Vec<&str> = Mechanism::ALL.iter().map(|m| m.as_str()).collect();
                format!("unknown mechanism `{s}` (known: {})", known.join(", "))
            })
    }
}

/// A delay spun between the release stamp and the release itself, to
/// prove that the switch series sees what happens on the release path
/// (and the interrupt series does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct InjectDelay {
    pub delay_ns: u64,
    /// Every `every`-th event (1 = every event), counting from the first.
    /// Events are counted by release: an event the timer thread missed, or
    /// whose release it skipped because the task had not run yet, has no
    /// release path to delay and is not counted. At least 1.
    pub every: u64,
}

/// How the hand-offs are paced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pacing {
    /// A timer thread wakes on absolute periodic deadlines and releases the
    /// task at each (paper 001): a late wake-up is counted as missed events.
    #[default]
    Grid,
    /// As the rt-tests tool of the mechanism (ptsematest, pmqtest,
    /// sigwaittest, svsematest): a sender releases the receiver and blocks
    /// at once on the same mechanism in the other direction; the receiver
    /// stamps, sleeps `interval` (relative) and hands the go-ahead back.
    /// Both threads run at the same priority, as the tools' one pair.
    RtTests,
}

impl Pacing {
    pub fn is_grid(&self) -> bool {
        *self == Pacing::Grid
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Pacing::Grid => "grid",
            Pacing::RtTests => "rt-tests",
        }
    }
}

impl fmt::Display for Pacing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for Pacing {
    type Err = String;
    fn from_str(s: &str) -> Result<Pacing, String> {
        match s {
            "grid" => Ok(Pacing::Grid),
            "rt-tests" => Ok(Pacing::RtTests),
            _ => Err(format!("unknown pacing `{s}` (known: grid, rt-tests)")),
        }
    }
}

impl Mechanism {
    /// The rt-tests tool that measures this hand-off, whose structure
    /// `--pacing rt-tests` copies.
    pub fn rt_tests_tool(self) -> Option<&'static str> {
        match self {
            Mechanism::PthreadMutex => Some("ptsematest"),
            Mechanism::Mq => Some("pmqtest"),
            Mechanism::Signal => Some("sigwaittest"),
            Mechanism::SysvSem => Some("svsematest"),
            _ => None,
        }
    }
}
