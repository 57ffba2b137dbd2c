//! The terminal rendering of a [`Report`].
//!
//! Findings are listed worst first, one section per severity. Summaries and
//! explanations are wrapped; fix lines are not, so a command copied from the
//! terminal stays one line.

use std::fmt::Write;

use super::finding::Severity;
use super::report::Report;

const WIDTH: usize = 100;
const ORDER: [Severity; 4] = [
    Severity::Critical,
    Severity::Warning,
    Severity::Info,
    Severity::Ok,
];

impl Report {
    /// The terminal rendering: a header, then the findings worst first with
    /// their explanation and fix; ok findings get one line each.
    pub fn render_text(&self) -> String {
        text(self)
    }
}

fn text(report: &Report) -> String {
    let mut out = String::new();
    let host = &report.host;
    let mut facts = Vec::new();
    if let Some(h) = &host.hostname {
        facts.push(format!("host {h}"));
    }
    if let Some(r) = &host.kernel_release {
        facts.push(format!("kernel {r}"));
    }
    facts.push(format!("preempt {}", host.preempt_model));
    if let Some(n) = host.cpu_count {
        facts.push(format!("{n} CPUs"));
    }
    if let Some(v) = &host.virtualization {
        facts.push(if v == "none" {
            "bare metal".to_string()
        } else {
            v.clone()
        });
    }
    let counts = report.counts();
    let _ = writeln!(out, "rtlab tune check: {}", facts.join(", "));
    let _ = writeln!(
        out,
        "worst: {} ({} critical, {} warning, {} info, {} ok)",
        report.worst(),
        counts.critical,
        counts.warning,
        counts.info,
        counts.ok
    );

    let id_width = report
        .findings
        .iter()
        .map(|f| f.id.len())
        .max()
        .unwrap_or(0);
    let indent = " ".repeat(2 + id_width + 2);
    for severity in ORDER {
        let findings: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.severity == severity)
            .collect();
        if findings.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{}", severity.as_str().to_uppercase());
        for f in findings {
            let first = format!("  {:<id_width$}  ", f.id);
            push_wrapped(&mut out, &first, &indent, &f.summary);
            if severity == Severity::Ok {
                continue;
            }
            if let Some(detail) = &f.detail {
                push_wrapped(
                    &mut out,
                    &format!("{indent}why: "),
                    &format!("{indent}     "),
                    detail,
                );
            }
            if let Some(fix) = &f.fix {
                for (i, line) in fix.lines().enumerate() {
                    let label = if i == 0 { "fix: " } else { "     " };
                    let _ = writeln!(out, "{indent}{label}{line}");
                }
            }
        }
    }
    out.push_str("\nrtlab tune check changes nothing; --json adds what each check read.\n");
    out
}

/// Appends `text` word-wrapped to WIDTH columns: the first line starts with
/// `first`, the others with `rest`. A word longer than the line stays whole.
fn push_wrapped(out: &mut String, first: &str, rest: &str, text: &str) {
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_words_and_indent() {
        let mut out = String::new();
        let text = "word ".repeat(40);
        push_wrapped(&mut out, "> ", "  ", &text);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 1);
        assert!(lines.iter().all(|l| l.chars().count() <= WIDTH));
        assert!(lines[0].starts_with("> word"));
        assert!(lines[1].starts_with("  word"));
        assert_eq!(out.split_whitespace().filter(|w| *w == "word").count(), 40);

        let mut out = String::new();
        let long = "x".repeat(WIDTH + 10);
        push_wrapped(&mut out, "", "", &long);
        assert_eq!(out.trim_end(), long);
    }
}
