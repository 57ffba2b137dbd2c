//! CONTRACT: the analysis entry points (implemented by the admission helper).

use crate::model::{Analysis, Overheads, Policy, Refusal, Task};

/// Analyses `tasks` (each on its CPU) under `policy` with `overheads`:
/// every test per CPU, every task's response bound, the verdict.
pub fn analyse(tasks: &[Task], policy: Policy, overheads: &Overheads) -> Analysis {
    let _ = (tasks, policy, overheads);
    todo!("issue 19: admission analysis")
}

/// Admits `candidate` beside the tasks `admitted` before it, or refuses it
/// with the failed test and what would fit on one of `cpus` (the CPUs it
/// may use). A candidate with an unknown WCET is admitted unless it would
/// void the guarantee of an admitted task with a known WCET at or below
/// its priority on its CPU; a candidate with a known WCET is refused when
/// an unknown WCET at or above its priority shares its CPU.
pub fn admit(
    admitted: &[Task],
    candidate: &Task,
    policy: Policy,
    overheads: &Overheads,
    cpus: &[usize],
) -> Result<Analysis, Refusal> {
    let _ = (admitted, candidate, policy, overheads, cpus);
    todo!("issue 19: admission of one task")
}
