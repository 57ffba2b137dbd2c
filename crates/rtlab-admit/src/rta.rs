//! Exact response-time analysis for preemptive fixed priorities with
//! release jitter (Joseph & Pandya 1986; Audsley et al. 1993):
//! R_i = J_i + w_i, w_i = C_i + Σ_{j ∈ hep(i), j ≠ i} ⌈(w_i + J_j)/T_j⌉ C_j,
//! where equal priorities interfere both ways (SCHED_FIFO runs the first
//! released to completion). The recurrence is solved by the
//! `response-time-analysis` crate's verified busy-window analysis
//! (Bozhko & Brandenburg, ECRTS 2020), which also covers jobs of the task
//! that queue behind each other.
//!
//! The executive releases every task of its CPU at its own top priority,
//! so a release of a lower-priority task preempts task i too: each lower
//! task j adds ⌈(w_i + J_j)/T_j⌉ × (release cost) to w_i (its own release
//! cost is in its C_i; a higher task's in its C_j).

use response_time_analysis::fixed_priority::fully_preemptive::dedicated_uniproc_rta;
use response_time_analysis::time::Duration;

use crate::item::Item;
use crate::meter::Meter;
use crate::response::{from_search, task_rbf, Limit, Response};

/// The response of each of `items` (one CPU's tasks) under fixed
/// priorities, in their order.
pub(crate) fn fixed_priority_responses(
    items: &[Item],
    limit: Limit,
    meter: &Meter,
) -> Vec<Response> {
    (0..items.len())
        .map(|index| response_of(items, index, limit, meter))
        .collect()
}

fn response_of(items: &[Item], index: usize, limit: Limit, meter: &Meter) -> Response {
    let item = &items[index];
    let Some(exec) = item.exec else {
        return Response::Unknown(index);
    };
    let interferers: Vec<usize> = (0..items.len())
        .filter(|&other| other != index && items[other].priority >= item.priority)
        .collect();
    if let Some(&unknown) = interferers
        .iter()
        .find(|&&other| items[other].exec.is_none())
    {
        return Response::Unknown(unknown);
    }
    if item.overloads_itself()
        || interferers
            .iter()
            .any(|&other| items[other].overloads_itself())
    {
        return Response::Unbounded;
    }
    let lower: Vec<usize> = (0..items.len())
        .filter(|&other| items[other].priority < item.priority && items[other].release_cost > 0)
        .collect();
    if lower
        .iter()
        .any(|&other| items[other].release_cost > items[other].period)
    {
        return Response::Unbounded;
    }
    let tua = task_rbf(item, exec, meter);
    let interfering: Vec<_> = interferers
        .iter()
        .map(|&other| task_rbf(&items[other], items[other].exec.unwrap_or(0), meter))
        .chain(
            lower
                .iter()
                .map(|&other| task_rbf(&items[other], items[other].release_cost, meter)),
        )
        .collect();
    let limit = Duration::from(limit.for_item(item, items));
    from_search(
        item,
        dedicated_uniproc_rta(&tua, &interfering, limit),
        meter,
    )
}
