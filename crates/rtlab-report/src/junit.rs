//! Budget evaluations as JUnit XML, the test report format CI systems read
//! (GitLab's `artifacts:reports:junit`, GitHub Actions test reporters,
//! Jenkins): one `<testsuite>` per run, one `<testcase>` per check.
//!
//! ```xml
//! <testsuites name="rtlab measure timer" tests="4" failures="1" errors="0" skipped="0" time="10.001">
//!   <testsuite name="rtlab timer 20261121T193012Z-4242" tests="4" failures="1" ...>
//!     <properties><property name="budget" value="p99.9&lt;100us,max&lt;2ms"/>...</properties>
//!     <testcase classname="timer.cpu0" name="max&lt;2ms" time="0.000"/>
//!     <testcase classname="timer.cpu1" name="max&lt;2ms" time="0.000">
//!       <failure type="budget" message="observed 2345.678 µs, limit &lt; 2000.000 µs">…</failure>
//!     </testcase>
//!   </testsuite>
//! </testsuites>
//! ```
//!
//! The measuring time is the suite's `time`; a check takes none. The
//! layout is described in docs/budgets.md.

use crate::budget::{Evaluation, Outcome};
use rtlab_core::fsutil::write_atomic_bytes;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// The XML of `evaluations`; `title` names the whole report (e.g. `rtlab
/// campaign run quick`).
pub fn to_xml(title: &str, evaluations: &[Evaluation]) -> String {
    let tests: usize = evaluations.iter().map(|e| e.checks.len()).sum();
    let failures: usize = evaluations.iter().map(Evaluation::failures).sum();
    let skipped: usize = evaluations.iter().map(Evaluation::skipped).sum();
    let elapsed: u64 = evaluations
        .iter()
        .fold(0u64, |sum, e| sum.saturating_add(e.elapsed_ns));
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{}\">",
        attr(title),
        seconds(elapsed)
    );
    for (id, e) in evaluations.iter().enumerate() {
        suite(&mut out, id, e);
    }
    out.push_str("</testsuites>\n");
    out
}

/// The testsuite's name: `rtlab timer RUN_ID`, with the run's place for a
/// campaign's run (`rtlab timer RUN_ID (run 3: vm × promoted)`).
pub fn suite_name(e: &Evaluation) -> String {
    let mut name = format!("rtlab {} {}", e.probe, e.run_id);
    if let Some(c) = &e.campaign {
        name += &format!(" (run {}: {} × {}", c.index, c.load, c.configuration);
        if c.repeat > 1 {
            name += &format!(", repeat {}", c.repeat);
        }
        name.push(')');
    }
    name
}

fn suite(out: &mut String, id: usize, e: &Evaluation) {
    let _ = write!(
        out,
        "  <testsuite name=\"{}\" id=\"{id}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{}\"",
        attr(&suite_name(e)),
        e.checks.len(),
        e.failures(),
        e.skipped(),
        seconds(e.elapsed_ns)
    );
    if let Some(host) = &e.hostname {
        let _ = write!(out, " hostname=\"{}\"", attr(host));
    }
    out.push_str(">\n    <properties>\n");
    let status = serde_json::to_value(e.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let mut properties = vec![
        ("budget", e.spec.clone()),
        ("run_id", e.run_id.clone()),
        ("probe", e.probe.clone()),
        ("status", status),
        ("started_at", e.started_at.clone()),
        ("elapsed_ns", e.elapsed_ns.to_string()),
    ];
    if let Some(c) = &e.campaign {
        properties.extend([
            ("campaign", c.name.clone()),
            ("execution", c.execution.clone()),
            ("index", c.index.to_string()),
            ("configuration", c.configuration.clone()),
            ("load", c.load.clone()),
            ("repeat", c.repeat.to_string()),
        ]);
    }
    for (name, value) in properties {
        let _ = writeln!(
            out,
            "      <property name=\"{name}\" value=\"{}\"/>",
            attr(&value)
        );
    }
    out.push_str("    </properties>\n");
    for c in &e.checks {
        let series = match (&c.series, c.matched) {
            (Some(series), _) => series.as_str(),
            (None, true) => "run",
            (None, false) => "unmatched",
        };
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"0.000\"",
            attr(&format!("{}.{series}", e.probe)),
            attr(&c.text)
        );
        match c.outcome {
            Outcome::Pass => out.push_str("/>\n"),
            Outcome::Fail => {
                let detail = format!(
                    "{} on {}.{series}: {}\nclause {} of budget \"{}\"; run {}, {} s measured{}",
                    c.text,
                    e.probe,
                    c.message(),
                    c.clause,
                    e.spec,
                    e.run_id,
                    seconds(e.elapsed_ns),
                    e.status_note().map_or(String::new(), |n| format!("\n{n}"))
                );
                let _ = write!(
                    out,
                    ">\n      <failure type=\"budget\" message=\"{}\">{}</failure>\n    </testcase>\n",
                    attr(&c.message()),
                    text(&detail)
                );
            }
            Outcome::Skipped => {
                let _ = write!(
                    out,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                    attr(c.note.as_deref().unwrap_or("does not apply to this run"))
                );
            }
        }
    }
    if let Some(note) = e.status_note() {
        let _ = writeln!(out, "    <system-out>{}</system-out>", text(&note));
    }
    out.push_str("  </testsuite>\n");
}

/// Writes the XML to `path` atomically (a temporary file renamed over it,
/// so a crash never leaves half a file), or to stdout for `-`.
pub fn write(path: &Path, title: &str, evaluations: &[Evaluation]) -> io::Result<()> {
    let xml = to_xml(title, evaluations);
    write_atomic_bytes(path, xml.as_bytes())
}

/// `12.345`: ns as seconds with ms precision.
fn seconds(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000_000_000, ns / 1_000_000 % 1000)
}

/// Text escaped for an attribute value: markup characters, quotes, and
/// the white space attribute normalization would turn into spaces.
pub fn attr(value: &str) -> String {
    escape(value, true)
}

/// Text escaped for element content; line breaks are kept.
pub fn text(value: &str) -> String {
    escape(value, false)
}

fn escape(value: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\t' | '\n' => out.push(c),
            // Not allowed in XML 1.0 at all, even as a character reference.
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}
