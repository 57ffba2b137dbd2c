//! How the analyses speak to a person: task names quoted so that no name
//! can break a line, durations in the units `rtlab` prints everywhere.

use rtlab_core::units::human_duration;

/// A task name in quotes, with quotes, backslashes and every character
/// that is not printable (a newline, a line separator) escaped: callers
/// validate names, but a reply line must hold whatever it is given.
pub(crate) fn quoted(name: &str) -> String {
    format!("{name:?}")
}

/// A duration for a person ("12.5ms").
pub(crate) fn duration(ns: u64) -> String {
    human_duration(ns)
}

/// How late `response` is for `deadline`: "response 12.5ms > deadline
/// 10ms: 2.5ms late".
pub(crate) fn lateness(response: u64, deadline: u64) -> String {
    format!(
        "response {} > deadline {}: {} late",
        duration(response),
        duration(deadline),
        duration(response.saturating_sub(deadline))
    )
}

/// How far the jobs due within `t` overrun it: "h(7ms) = 8ms > 7ms: 1ms
/// over".
pub(crate) fn demand_over(t: u64, demand: u64) -> String {
    format!(
        "h({}) = {} > {}: {} over",
        duration(t),
        duration(demand),
        duration(t),
        duration(demand.saturating_sub(t))
    )
}

/// A list for a sentence: "a", "a or b", "a, b or c".
pub(crate) fn either(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_never_break_the_line() {
        for name in [
            "a\nb",
            "a\rb",
            "a\u{2028}b",
            "a\u{85}b",
            "a\"b",
            "a\u{1b}[2Jb",
        ] {
            let text = quoted(name);
            assert!(
                !text.chars().any(|c| c.is_control() || c == '\u{2028}'),
                "{text}"
            );
            assert!(text.starts_with('"') && text.ends_with('"'), "{text}");
        }
        assert_eq!(quoted("video"), "\"video\"");
    }

    #[test]
    fn lateness_and_lists_read_as_sentences() {
        assert_eq!(
            lateness(12_500_000, 10_000_000),
            "response 12.5ms > deadline 10ms: 2.5ms late"
        );
        assert_eq!(either(&["a".into()]), "a");
        assert_eq!(either(&["a".into(), "b".into(), "c".into()]), "a, b or c");
    }
}
