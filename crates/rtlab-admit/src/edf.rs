//! Per-task response bounds under preemptive EDF, from the
//! `response-time-analysis` crate's verified busy-window analysis
//! (Bozhko & Brandenburg, ECRTS 2020). The verdict itself comes from the
//! processor demand (`demand.rs`); these bounds say how long each task
//! may take and, when the demand fails, which task could miss.
//!
//! Release jitter: a job released up to J_j after its nominal instant
//! keeps its nominal deadline, so measured from its release it is due
//! somewhere between D_j − J_j and D_j. Giving the crate D_i for the task
//! under analysis and D_j − J_j for the others counts every job that can
//! precede it (and maybe more): the bound stays safe.

use response_time_analysis::edf::fully_preemptive::{dedicated_uniproc_rta, Task as EdfTask};
use response_time_analysis::time::Duration;

use crate::item::Item;
use crate::meter::Meter;
use crate::response::{from_search, task_rbf, Limit, Response, TaskRbf};

/// The response bound of each of `items` (one CPU's tasks) under EDF, in
/// their order, each within its share of `budget` steps (the busy window
/// of a CPU with a 1 µs period holds millions of jobs, and these bounds
/// only inform: the demand decides). Under EDF any job may run before any
/// other, so an unknown WCET leaves every task's response unknown.
pub(crate) fn edf_responses(items: &[Item], budget: u64) -> Vec<Response> {
    if let Some(unknown) = items.iter().position(|item| item.exec.is_none()) {
        return (0..items.len())
            .map(|index| {
                Response::Unknown(if items[index].exec.is_none() {
                    index
                } else {
                    unknown
                })
            })
            .collect();
    }
    if items.iter().any(Item::overloads_itself) {
        return vec![Response::Unbounded; items.len()];
    }
    let share = budget / items.len().max(1) as u64;
    (0..items.len())
        .map(|index| response_of(items, index, &Meter::new(share)))
        .collect()
}

fn response_of(items: &[Item], index: usize, meter: &Meter) -> Response {
    let rbfs: Vec<TaskRbf> = items
        .iter()
        .map(|item| task_rbf(item, item.exec.unwrap_or(0), meter))
        .collect();
    let item = &items[index];
    let tua = EdfTask {
        rbf: &rbfs[index],
        deadline: Duration::from(item.deadline),
    };
    let others: Vec<EdfTask<TaskRbf>> = (0..items.len())
        .filter(|&other| other != index)
        .map(|other| EdfTask {
            rbf: &rbfs[other],
            deadline: Duration::from(items[other].deadline.saturating_sub(items[other].jitter)),
        })
        .collect();
    let limit = Duration::from(Limit::Full.for_item(item, items));
    from_search(item, dedicated_uniproc_rta(&tua, &others, limit), meter)
}
