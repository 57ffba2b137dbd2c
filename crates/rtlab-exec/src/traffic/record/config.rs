//! What a recording is told, and the one place its settings are checked.

use rtlab_core::sched::{Policy, SchedParams};
use rtlab_core::settings::FieldError;
use rtlab_probe::settings::{check_priority, check_span, refuse_deadline};
use serde::Serialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Everything a recording needs; serialized as the result's `config`.
#[derive(Debug, Clone, Serialize)]
pub struct RecordConfig {
    pub listen: SocketAddr,
    /// The plan written (None: only measured).
    pub output: Option<PathBuf>,
    /// Stop after this long (from the start), this many datagrams, or
    /// once nothing came for `idle_ns` after the first; else at SIGINT.
    pub duration_ns: Option<u64>,
    pub count: Option<u64>,
    pub idle_ns: Option<u64>,
    /// The plan that was sent: planned instants by stamp sequence (the
    /// stamps' own planned instants otherwise), and the count expected.
    pub against: Option<PathBuf>,
    pub cpu: Option<usize>,
    pub sched: SchedParams,
}

impl RecordConfig {
    /// Receives on `listen` with the defaults: no plan written, no limit
    /// (a signal ends it), SCHED_FIFO at rtlab's default priority, not
    /// pinned.
    pub fn new(listen: SocketAddr) -> RecordConfig {
        RecordConfig {
            listen,
            output: None,
            duration_ns: None,
            count: None,
            idle_ns: None,
            against: None,
            cpu: None,
            sched: SchedParams {
                policy: Policy::Fifo,
                priority: rtlab_probe::DEFAULT_PRIORITY,
                deadline: None,
            },
        }
    }

    /// Checks the settings; errors name `rtlab traffic record`'s flag
    /// without dashes.
    pub fn validate(&self) -> Result<(), FieldError> {
        if let Some(ns) = self.duration_ns {
            check_positive("duration", ns)?;
        }
        if let Some(ns) = self.idle_ns {
            check_positive("idle", ns)?;
        }
        if self.count == Some(0) {
            return Err(FieldError::new("count", "must be at least 1"));
        }
        if self.output.as_deref() == Some(Path::new("-")) {
            return Err(FieldError::new(
                "output",
                "a plan is written to a file, not to stdout",
            ));
        }
        if let (Some(output), Some(against)) = (&self.output, &self.against) {
            if output == against {
                return Err(FieldError::new(
                    "output",
                    format!(
                        "{} is also --against: the plan sent would be overwritten by the one received",
                        output.display()
                    ),
                ));
            }
        }
        refuse_deadline(
            &self.sched,
            "the receiver waits for datagrams, it has no period",
        )?;
        check_priority(&self.sched)
    }
}

fn check_positive(key: &'static str, ns: u64) -> Result<(), FieldError> {
    if ns == 0 {
        return Err(FieldError::new(key, "must be longer than 0"));
    }
    check_span(key, ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_core::settings::flag;

    fn config() -> RecordConfig {
        RecordConfig::new("127.0.0.1:7000".parse().unwrap())
    }

    fn refused(config: RecordConfig) -> (&'static str, String) {
        let e = config.validate().unwrap_err();
        (e.field, e.render(flag))
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(config().validate(), Ok(()));
    }

    #[test]
    fn every_bad_setting_names_its_flag() {
        let (field, text) = refused(RecordConfig {
            count: Some(0),
            ..config()
        });
        assert_eq!(
            (field, text.as_str()),
            ("count", "--count: must be at least 1")
        );
        assert_eq!(
            refused(RecordConfig {
                idle_ns: Some(0),
                ..config()
            })
            .0,
            "idle"
        );
        assert_eq!(
            refused(RecordConfig {
                duration_ns: Some(u64::MAX),
                ..config()
            })
            .0,
            "duration"
        );
        let (field, text) = refused(RecordConfig {
            output: Some("-".into()),
            ..config()
        });
        assert_eq!(field, "output");
        assert!(text.contains("not to stdout"), "{text}");
        let (field, text) = refused(RecordConfig {
            output: Some("a.plan".into()),
            against: Some("a.plan".into()),
            ..config()
        });
        assert_eq!(field, "output");
        assert!(text.contains("also --against"), "{text}");
        let mut zero = config();
        zero.sched.priority = 0;
        assert_eq!(refused(zero).0, "priority");
    }
}
