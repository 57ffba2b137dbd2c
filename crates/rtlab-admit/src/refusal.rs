//! A refusal for a person and a program: the deciding test, the CPU, the
//! task that would miss (the candidate, or one admitted before it), by
//! how much, and what would fit, in one line.

use crate::bounds::exceeds_one;
use crate::cpu::CpuVerdict;
use crate::demand::Demand;
use crate::item::Item;
use crate::model::{Policy, Refusal, Suggestion, Task, Test};
use crate::response::Response;
use crate::text::{demand_over, duration, either, quoted};

/// The refusal of `candidate` by `verdict` (its CPU's analysis with it,
/// which does not fit).
pub(crate) fn refusal(
    verdict: &CpuVerdict,
    candidate: &Task,
    suggestions: Vec<Suggestion>,
) -> Refusal {
    let own = verdict.index_of(candidate).unwrap_or(0);
    let victim = verdict
        .failing()
        .find(|&index| index == own)
        .or_else(|| verdict.failing().next())
        .unwrap_or(own);
    let test = if exceeds_one(&verdict.items) {
        Test::Utilization
    } else if verdict.policy == Policy::Edf {
        Test::ProcessorDemand
    } else {
        Test::ResponseTime
    };
    let utilization: f64 = verdict.items.iter().map(Item::utilization).sum();
    let shortfall = match (test, verdict.demand) {
        (Test::Utilization, _) => format!("U = {utilization:.3} > 1"),
        (_, Some(Demand::Exceeds { t, demand })) => demand_over(t, demand),
        _ => verdict.shortfall(victim),
    };
    let what = match test {
        Test::Utilization => format!(
            "with task {}, U = {utilization:.3} > 1: {}",
            quoted(&candidate.name),
            who_misses(verdict, own, victim)
        ),
        Test::ProcessorDemand => match verdict.demand {
            Some(Demand::Exceeds { t, demand }) => format!(
                "with task {}, the jobs due within {} would need {} ({} over): {}",
                quoted(&candidate.name),
                duration(t),
                duration(demand),
                duration(demand - t),
                who_misses(verdict, own, victim)
            ),
            _ => who_misses(verdict, own, victim),
        },
        _ => who_misses(verdict, own, victim),
    };
    let message = format!(
        "refused by {} on CPU {}: {what}; {}",
        test_name(test),
        verdict.cpu,
        would_fit(&suggestions)
    );
    Refusal {
        test,
        cpu: verdict.cpu,
        victim: verdict.items[victim].task.name.clone(),
        shortfall,
        suggestions,
        message,
    }
}

fn test_name(test: Test) -> &'static str {
    match test {
        Test::Utilization => "the utilization test",
        Test::LiuLayland => "the Liu & Layland bound",
        Test::Hyperbolic => "the hyperbolic bound",
        Test::ResponseTime => "response-time analysis",
        Test::ProcessorDemand => "processor-demand analysis (QPA)",
    }
}

/// "task "video" would respond in 12.5ms, 2.5ms after its 10ms deadline",
/// or, when the victim was admitted before, "with task "video", task
/// "audio" would ...", or who voids whose guarantee.
fn who_misses(verdict: &CpuVerdict, own: usize, victim: usize) -> String {
    let name = |index: usize| quoted(verdict.items[index].name());
    let subject = if victim == own {
        format!("task {}", name(own))
    } else {
        format!("with task {}, task {}", name(own), name(victim))
    };
    let deadline = duration(verdict.items[victim].deadline);
    match verdict.responses[victim] {
        Response::Unknown(unknown) if unknown == own => format!(
            "task {} gives no budget (WCET unknown): task {} {} could no longer be guaranteed",
            name(own),
            name(victim),
            if verdict.policy == Policy::Edf {
                "(any job may delay any other under EDF)"
            } else {
                "(at or below its priority)"
            }
        ),
        Response::Unknown(unknown) => format!(
            "task {} (WCET unknown) shares the CPU {}: task {} could not be guaranteed",
            name(unknown),
            if verdict.policy == Policy::Edf {
                "under EDF"
            } else {
                "at or above its priority"
            },
            name(victim)
        ),
        _ if verdict.meets(victim).is_none() => format!(
            "{subject} could not be bounded within the analysis step budget (its deadline {deadline})"
        ),
        Response::Bounded(response) => format!(
            "{subject} would respond in {}, {} after its {deadline} deadline",
            duration(response),
            duration(response.saturating_sub(verdict.items[victim].deadline))
        ),
        _ => format!("{subject} would have no response bound (its deadline {deadline})"),
    }
}

/// "would fit with a period of at least 14ms, or a budget of at most
/// 1.2ms, or on CPU 0 or 2".
fn would_fit(suggestions: &[Suggestion]) -> String {
    let mut parts = Vec::new();
    let mut cpus = Vec::new();
    for suggestion in suggestions {
        match suggestion {
            Suggestion::Period { min_ns } => {
                parts.push(format!("a period of at least {}", duration(*min_ns)))
            }
            Suggestion::Budget { max_ns } => {
                parts.push(format!("a budget of at most {}", duration(*max_ns)))
            }
            Suggestion::Cpu { cpu } => cpus.push(cpu.to_string()),
        }
    }
    let mut text = match parts.is_empty() {
        true => String::new(),
        false => format!("with {}", parts.join(", or ")),
    };
    if !cpus.is_empty() {
        let on = format!("on CPU {}", either(&cpus));
        text = if text.is_empty() {
            on
        } else {
            format!("{text}, or {on}")
        };
    }
    if text.is_empty() {
        "no longer period, smaller budget or other CPU would fit".into()
    } else {
        format!("would fit {text}")
    }
}
