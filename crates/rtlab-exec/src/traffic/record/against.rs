//! `--against`: the plan that was sent. A replay's stamp carries the
//! packet's sequence (its index over all repetitions); the plan gives
//! each sequence its planned instant (`index mod len` into the plan,
//! plus a period per repetition, as the dispatcher plays it) and the
//! count expected. The events stay in the mapped file: nothing is
//! sized by what the peer sends.

use crate::plan::{self, LoadedPlan};
use crate::traffic::format::KIND;
use std::path::Path;

/// A sent plan's schedule.
pub struct Against {
    plan: LoadedPlan,
    len: u64,
    /// One repetition's length: the plan's `repeat`, else back to back.
    period_ns: u64,
}

impl Against {
    /// Reads `path`; the error names the file (and the line, for a text
    /// plan) and what is wrong.
    pub fn load(path: &Path) -> Result<Against, String> {
        let plan = plan::load(path).map_err(|e| e.to_string())?;
        let len = plan.events.len();
        if len == 0 {
            return Err(format!("{}: the plan has no events", path.display()));
        }
        if let Some(other) = plan.header.modules.iter().find(|m| m.kind != KIND) {
            return Err(format!(
                "{}: module {} is of kind {}, not {KIND}: not a traffic plan",
                path.display(),
                other.name,
                other.kind
            ));
        }
        let last = plan.events.event(len - 1).offset_ns;
        let period_ns = plan
            .header
            .repeat_ns
            .unwrap_or(last.saturating_add(1))
            .max(1);
        Ok(Against {
            plan,
            len,
            period_ns,
        })
    }

    /// Events in one repetition (never 0: `load` refuses an empty plan).
    pub fn events_per_repetition(&self) -> u64 {
        self.len
    }

    /// The planned instant of `sequence`, ns from the replay's start;
    /// None past what a u64 holds (a hostile sequence).
    pub fn planned_ns(&self, sequence: u64) -> Option<u64> {
        let offset = self.plan.events.event(sequence % self.len).offset_ns;
        (sequence / self.len)
            .checked_mul(self.period_ns)?
            .checked_add(offset)
    }

    /// The packets sent up to the end of the repetition `highest` is in.
    pub fn expected(&self, highest: u64) -> u64 {
        (highest / self.len)
            .saturating_add(1)
            .saturating_mul(self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::format::TrafficData;
    use crate::traffic::sink::{FlowKey, PlanSink};

    #[test]
    fn sequences_map_to_instants_over_repetitions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sent.plan");
        let mut sink = PlanSink::create(&path).unwrap();
        let flow = sink
            .flow(FlowKey {
                src: None,
                dest: Some("127.0.0.1:7000".parse().unwrap()),
            })
            .unwrap();
        for offset in [0, 1_000_000, 3_000_000] {
            let data = TrafficData {
                size: 64,
                digest: 0,
            };
            sink.push(offset, flow, data).unwrap();
        }
        sink.set_repeat(Some(10_000_000));
        sink.finish(|_| {}).unwrap();
        let against = match Against::load(&path) {
            Ok(a) => a,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(against.events_per_repetition(), 3);
        assert_eq!(against.planned_ns(2), Some(3_000_000));
        assert_eq!(against.planned_ns(4), Some(11_000_000));
        assert_eq!(against.planned_ns(u64::MAX), None);
        assert_eq!(against.expected(4), 6);
        assert_eq!(against.expected(u64::MAX), u64::MAX);
    }

    #[test]
    fn a_plan_of_other_modules_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ticks.plan");
        std::fs::write(&path, "rtlab-plan 1\nmodule t mark\nevents\n0us t\n").unwrap();
        let e = Against::load(&path).err().unwrap();
        assert!(e.contains("not a traffic plan"), "{e}");
    }
}
