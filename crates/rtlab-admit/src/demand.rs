//! Processor demand under preemptive EDF: the jobs due within any
//! interval t must fit in it, h(t) ≤ t, with
//! h(t) = Σ max(0, ⌊(t + T_i − D'_i)/T_i⌋) C_i and D' = D − J (a job
//! released J late keeps its nominal deadline: Spuri 1996). Checked by
//! Quick convergence Processor-demand Analysis (QPA: Zhang & Burns,
//! "Schedulability Analysis for Real-Time Systems with EDF Scheduling",
//! IEEE Trans. Computers 58(9), 2009), which walks t down from the last
//! deadline before L = min(La, Lb) instead of visiting every deadline.

use crate::bounds::exceeds_one;
use crate::item::{Item, TIME_CAP};
use crate::meter::Meter;

/// What the processor demand says about one CPU's known tasks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Demand {
    /// Every deadline is its period and no release jitter: U ≤ 1 is exact
    /// (Liu & Layland 1973).
    ImplicitFits { utilization: f64 },
    /// h(t) ≤ t at every deadline below `horizon`; QPA looked at `points`
    /// values of t, the largest h(t)/t among them `worst_ratio`.
    Fits {
        horizon: u64,
        points: u64,
        worst_ratio: f64,
    },
    /// The jobs due within `t` need `demand` > t.
    Exceeds { t: u64, demand: u64 },
    /// U > 1: the demand outgrows every interval.
    Overloaded { utilization: f64 },
    /// The step budget ran out first.
    Undecided,
}

impl Demand {
    pub fn fits(self) -> Option<bool> {
        match self {
            Demand::ImplicitFits { .. } | Demand::Fits { .. } => Some(true),
            Demand::Exceeds { .. } | Demand::Overloaded { .. } => Some(false),
            Demand::Undecided => None,
        }
    }
}

/// One task's part of the demand (D' = D − J; execution known).
#[derive(Debug, Clone, Copy)]
struct Due {
    period: u64,
    deadline: u64,
    exec: u64,
    jitter: u64,
}

/// The processor demand of `items` (one CPU's tasks, every WCET known).
pub(crate) fn processor_demand(items: &[Item], meter: &Meter) -> Demand {
    let utilization: f64 = items.iter().map(Item::utilization).sum();
    if exceeds_one(items) {
        return Demand::Overloaded { utilization };
    }
    if items
        .iter()
        .all(|item| item.deadline == item.period && item.jitter == 0)
    {
        return Demand::ImplicitFits { utilization };
    }
    let dues: Vec<Due> = items
        .iter()
        .filter_map(|item| {
            let exec = item.exec.filter(|&exec| exec > 0)?;
            Some(Due {
                period: item.period,
                deadline: item.deadline.saturating_sub(item.jitter),
                exec,
                jitter: item.jitter,
            })
        })
        .collect();
    let due_at_once: u64 = dues
        .iter()
        .filter(|due| due.deadline == 0)
        .fold(0, |sum, due| sum.saturating_add(due.exec));
    if due_at_once > 0 {
        return Demand::Exceeds {
            t: 0,
            demand: due_at_once,
        };
    }
    match horizon(&dues, utilization, meter) {
        Some(horizon) => quick_convergence(&dues, horizon, meter),
        None => Demand::Undecided,
    }
}

/// h(t): the execution of every job with its deadline within t.
fn demand_within(dues: &[Due], t: u64) -> u64 {
    dues.iter()
        .filter(|due| due.deadline <= t)
        .map(|due| ((t - due.deadline) / due.period + 1).saturating_mul(due.exec))
        .fold(0, u64::saturating_add)
}

/// The latest absolute deadline strictly before `t` (jobs released at 0,
/// T, 2T, ...), if any.
fn last_deadline_before(dues: &[Due], t: u64) -> Option<u64> {
    dues.iter()
        .filter(|due| due.deadline < t)
        .map(|due| due.deadline + (t - 1 - due.deadline) / due.period * due.period)
        .max()
}

/// L = min(La, Lb): beyond it no deadline needs checking. La (Zhang &
/// Burns 2009, eq. 4) = Σ (T_i − D'_i) U_i / (1 − U), for U < 1; Lb the
/// synchronous busy period with jitter (w = Σ ⌈(w + J_i)/T_i⌉ C_i).
fn horizon(dues: &[Due], utilization: f64, meter: &Meter) -> Option<u64> {
    let la = (utilization < 1.0)
        .then(|| {
            let weighted: f64 = dues
                .iter()
                .map(|due| (due.period - due.deadline) as f64 * due.exec as f64 / due.period as f64)
                .sum();
            (weighted / (1.0 - utilization)).ceil()
        })
        .filter(|la| la.is_finite() && *la <= TIME_CAP as f64)
        .map(|la| la as u64);
    let lb = busy_period(dues, meter);
    match (la, lb) {
        (Some(la), Some(lb)) => Some(la.min(lb)),
        (la, lb) => la.or(lb),
    }
}

fn busy_period(dues: &[Due], meter: &Meter) -> Option<u64> {
    let mut window = dues
        .iter()
        .fold(0u64, |sum, due| sum.saturating_add(due.exec));
    loop {
        if window > TIME_CAP || !meter.take(dues.len() as u64) {
            return None;
        }
        let next = dues
            .iter()
            .map(|due| {
                (window + due.jitter)
                    .div_ceil(due.period)
                    .saturating_mul(due.exec)
            })
            .fold(0, u64::saturating_add);
        if next == window {
            return Some(window);
        }
        window = next;
    }
}

/// QPA (Zhang & Burns 2009, Algorithm/Theorem 5): t starts at the last
/// deadline before L; while h(t) ≤ t and h(t) > d_min, t becomes h(t)
/// when h(t) < t, else the last deadline before t. The set fits iff it
/// ends with h(t) ≤ d_min. t falls at every step, so it ends; the meter
/// bounds the steps a hostile set could ask for.
fn quick_convergence(dues: &[Due], horizon: u64, meter: &Meter) -> Demand {
    let d_min = dues.iter().map(|due| due.deadline).min().unwrap_or(0);
    let mut points = 0;
    let mut worst_ratio: f64 = 0.0;
    let mut next = last_deadline_before(dues, horizon);
    while let Some(t) = next {
        if !meter.take(2 * dues.len() as u64) {
            return Demand::Undecided;
        }
        points += 1;
        let demand = demand_within(dues, t);
        worst_ratio = worst_ratio.max(demand as f64 / t as f64);
        if demand > t {
            return Demand::Exceeds { t, demand };
        }
        if demand <= d_min {
            break;
        }
        next = if demand < t {
            Some(demand)
        } else {
            last_deadline_before(dues, t)
        };
    }
    Demand::Fits {
        horizon,
        points,
        worst_ratio,
    }
}
