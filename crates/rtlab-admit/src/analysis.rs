//! The two entry points: the analysis of a task set, and the admission
//! of one more task.

use std::collections::BTreeMap;

use crate::cpu::{analyse_cpu, analyse_with_candidate, CpuVerdict};
use crate::item::{items, Item};
use crate::meter::{Meter, STEPS_PER_CPU};
use crate::model::{Analysis, Overheads, Policy, Refusal, Task};
use crate::refusal::refusal;
use crate::response::Limit;
use crate::suggest::suggestions;

/// Analyses `tasks` (each on its CPU) under `policy` with `overheads`:
/// every test per CPU, every task's response bound, the verdict.
pub fn analyse(tasks: &[Task], policy: Policy, overheads: &Overheads) -> Analysis {
    let mut by_cpu: BTreeMap<usize, Vec<Item>> = BTreeMap::new();
    for item in items(tasks, overheads) {
        by_cpu.entry(item.task.cpu).or_default().push(item);
    }
    let verdicts: Vec<CpuVerdict> = by_cpu
        .into_iter()
        .map(|(cpu, items)| {
            analyse_cpu(cpu, items, policy, Limit::Full, &Meter::new(STEPS_PER_CPU))
        })
        .collect();
    Analysis {
        policy,
        overheads: overheads.clone(),
        schedulable: verdicts.iter().all(CpuVerdict::fits),
        cpus: verdicts.iter().map(CpuVerdict::to_analysis).collect(),
    }
}

/// Admits `candidate` beside the tasks `admitted` before it, or refuses it
/// with the failed test and what would fit on one of `cpus` (the CPUs it
/// may use). A candidate with an unknown WCET is admitted unless it would
/// void the guarantee of an admitted task with a known WCET at or below
/// its priority on its CPU; a candidate with a known WCET is refused when
/// an unknown WCET at or above its priority shares its CPU.
///
/// The rule behind both: it is admitted when every task with a known WCET
/// on its CPU is then proven to meet its deadline (under EDF any job may
/// delay any other, so there an unknown WCET voids every known one).
pub fn admit(
    admitted: &[Task],
    candidate: &Task,
    policy: Policy,
    overheads: &Overheads,
    cpus: &[usize],
) -> Result<Analysis, Refusal> {
    let meter = Meter::new(STEPS_PER_CPU);
    let verdict =
        analyse_with_candidate(admitted, candidate, policy, overheads, Limit::Full, &meter);
    if !verdict.fits() {
        let suggestions = suggestions(admitted, candidate, policy, overheads, cpus);
        return Err(refusal(&verdict, candidate, suggestions));
    }
    let mut everything = admitted.to_vec();
    everything.push(candidate.clone());
    Ok(analyse(&everything, policy, overheads))
}
