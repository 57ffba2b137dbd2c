//! The utilization test (necessary for both policies) and the two
//! sufficient bounds for rate-monotonic priorities: Liu & Layland (1973),
//! U ≤ n(2^(1/n) − 1), and the hyperbolic bound of Bini, Buttazzo &
//! Buttazzo (2003), Π(U_i + 1) ≤ 2, which accepts every set Liu &
//! Layland accepts and more. Both assume deadlines equal to periods,
//! releases on time, no release cost and known WCETs; a failure of
//! either decides nothing.

use crate::item::Item;
use crate::model::{Policy, Test, TestOutcome, Verdict};
use crate::text::quoted;

/// Whether Σ C/T > 1, exactly when the sum's denominator fits in 128
/// bits (periods sharing factors, as real ones do), else in f64 (whose
/// error, below 1e-13 for 80 tasks, matters only for sets within that of
/// 1 whose hyperperiod is beyond 2^128 ns).
pub(crate) fn exceeds_one(items: &[Item]) -> bool {
    exact_exceeds_one(items)
        .unwrap_or_else(|| items.iter().map(Item::utilization).sum::<f64>() > 1.0)
}

fn exact_exceeds_one(items: &[Item]) -> Option<bool> {
    let (mut numerator, mut denominator) = (0u128, 1u128);
    for item in items {
        let (exec, period) = (u128::from(item.exec.unwrap_or(0)), u128::from(item.period));
        numerator = numerator
            .checked_mul(period)?
            .checked_add(exec.checked_mul(denominator)?)?;
        denominator = denominator.checked_mul(period)?;
        let common = gcd(numerator, denominator);
        (numerator, denominator) = (numerator / common, denominator / common);
    }
    Some(numerator > denominator)
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// The Liu & Layland bound for `n` tasks: n(2^(1/n) − 1), 1 for one
/// task, falling to ln 2 as n grows.
pub fn liu_layland_bound(n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let n = n as f64;
    n * (2f64.powf(1.0 / n) - 1.0)
}

pub(crate) fn utilization_outcome(items: &[Item]) -> TestOutcome {
    let utilization: f64 = items.iter().map(Item::utilization).sum();
    let over = exceeds_one(items);
    let unknown: Vec<String> = items
        .iter()
        .filter(|item| item.exec.is_none())
        .map(|item| quoted(item.name()))
        .collect();
    let of_known = if unknown.is_empty() {
        String::new()
    } else {
        format!(" (known WCETs only; unknown: {})", unknown.join(", "))
    };
    TestOutcome {
        test: Test::Utilization,
        verdict: if over { Verdict::Fail } else { Verdict::Pass },
        value: utilization,
        bound: 1.0,
        detail: format!(
            "U = {utilization:.3} {} 1{of_known}",
            if over { ">" } else { "≤" }
        ),
    }
}

pub(crate) fn liu_layland_outcome(items: &[Item], policy: Policy) -> TestOutcome {
    if let Some(why) = why_not_rate_monotonic(items, policy) {
        return not_applicable(Test::LiuLayland, why);
    }
    let utilization: f64 = items.iter().map(Item::utilization).sum();
    let bound = liu_layland_bound(items.len());
    let pass = utilization <= bound;
    TestOutcome {
        test: Test::LiuLayland,
        verdict: if pass { Verdict::Pass } else { Verdict::Fail },
        value: utilization,
        bound,
        detail: format!(
            "U = {utilization:.3} {} {bound:.3} (n = {}){}",
            if pass { "≤" } else { ">" },
            items.len(),
            if pass { "" } else { ": decides nothing" }
        ),
    }
}

pub(crate) fn hyperbolic_outcome(items: &[Item], policy: Policy) -> TestOutcome {
    if let Some(why) = why_not_rate_monotonic(items, policy) {
        return not_applicable(Test::Hyperbolic, why);
    }
    let product: f64 = items.iter().map(|item| item.utilization() + 1.0).product();
    let pass = product <= 2.0;
    TestOutcome {
        test: Test::Hyperbolic,
        verdict: if pass { Verdict::Pass } else { Verdict::Fail },
        value: product,
        bound: 2.0,
        detail: format!(
            "Π(U_i + 1) = {product:.3} {} 2{}",
            if pass { "≤" } else { ">" },
            if pass { "" } else { ": decides nothing" }
        ),
    }
}

pub(crate) fn not_applicable(test: Test, why: String) -> TestOutcome {
    TestOutcome {
        test,
        detail: format!("not applicable: {why}"),
        verdict: Verdict::NotApplicable(why),
        value: f64::NAN,
        bound: f64::NAN,
    }
}

/// Why the two bounds do not apply to `items`, if they do not. Strictly
/// rate-monotonic: a shorter period must have a higher priority, as
/// SCHED_FIFO runs equal priorities in release order, whatever the rate.
fn why_not_rate_monotonic(items: &[Item], policy: Policy) -> Option<String> {
    if policy == Policy::Edf {
        return Some("a bound for fixed priorities; the policy is EDF".into());
    }
    if let Some(item) = items.iter().find(|item| item.exec.is_none()) {
        return Some(format!("the WCET of {} is unknown", quoted(item.name())));
    }
    if let Some(item) = items.first().filter(|item| item.jitter > 0) {
        return Some(format!(
            "releases may come {} late (release jitter); the bound assumes none",
            rtlab_core::units::human_duration(item.jitter)
        ));
    }
    if let Some(item) = items
        .first()
        .filter(|item| item.release_cost > 0 && items.len() > 1)
    {
        return Some(format!(
            "each release costs {} at the executive's top priority, a lower task's too; the bound assumes none",
            rtlab_core::units::human_duration(item.release_cost)
        ));
    }
    if let Some(item) = items
        .iter()
        .find(|item| item.task.deadline_ns != item.task.period_ns)
    {
        return Some(format!(
            "{} has a deadline ({}) other than its period ({})",
            quoted(item.name()),
            rtlab_core::units::human_duration(item.task.deadline_ns),
            rtlab_core::units::human_duration(item.task.period_ns)
        ));
    }
    for shorter in items {
        if let Some(longer) = items
            .iter()
            .find(|longer| longer.period > shorter.period && longer.priority >= shorter.priority)
        {
            return Some(format!(
                "priorities not rate-monotonic: {} (period {}) is not above {} (period {})",
                quoted(shorter.name()),
                rtlab_core::units::human_duration(shorter.period),
                quoted(longer.name()),
                rtlab_core::units::human_duration(longer.period)
            ));
        }
    }
    None
}
