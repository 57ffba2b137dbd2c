//! Cell and column formatting shared by every renderer (terminal tables,
//! Markdown, the report): columns laid out by hand, Markdown cells made
//! inert, a run status in words.

use rtlab_core::result::RunStatus;
use rtlab_core::text::{pad, Align};
use std::fmt::Write;

/// The width in characters of each column: its widest cell.
pub fn column_widths(rows: &[Vec<String>]) -> Vec<usize> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    (0..columns)
        .map(|col| {
            rows.iter()
                .filter_map(|r| r.get(col))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// Lays rows out in columns two spaces apart: a cell is left-aligned where
/// `left(column, cell)` says so and right-aligned otherwise (numbers); with
/// `rule`, a line of dashes follows the first row (the header).
pub fn align(rows: &[Vec<String>], left: impl Fn(usize, &str) -> bool, rule: bool) -> String {
    let widths = column_widths(rows);
    let columns = widths.len();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            // By hand, not `{cell:<w$}`: that panics for a width of 65,536
            // or more, and a stored name can be that long.
            .map(|(col, (cell, w))| match left(col, cell) {
                true => pad(cell, *w, Align::Left),
                false => pad(cell, *w, Align::Right),
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        if rule && i == 0 {
            let _ = writeln!(
                out,
                "{}",
                "-".repeat(widths.iter().sum::<usize>() + 2 * columns.saturating_sub(1))
            );
        }
    }
    out
}

/// A run status as the JSON and the tables spell it.
pub fn status_text(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Running => "running",
        RunStatus::Complete => "complete",
        RunStatus::Partial => "partial",
        RunStatus::Break => "break",
        RunStatus::Failed => "failed",
    }
}

/// Escapes text for a Markdown table cell: the pipe, and markup that a
/// renderer would otherwise act on (`<script>`, or `![x](http://…)` that
/// a viewer would fetch, in a series name); control characters become `?`.
pub fn md_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '|' | '&' | '<' | '>' | '*' | '`' => {
                out.push('\\');
                out.push(c);
            }
            // `[text](url)` is a link, `![alt](url)` an image to fetch.
            '(' if out.ends_with(']') => out.push_str("\\("),
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => out.push('?'),
            // A bidirectional override would reorder the rendered cell.
            c if rtlab_core::result::is_invisible(c) => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// Text as a Markdown code span in a table cell: backslashes are literal
/// there, so only the pipe is escaped (GFM splits cells on it first), and
/// the fence is longer than any run of backticks inside.
pub fn md_code(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| match c {
            '\n' | '\r' | '\t' => ' ',
            c if c.is_control() => '?',
            c => c,
        })
        .collect::<String>()
        .replace('|', "\\|");
    let longest = clean.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if clean.starts_with('`') || clean.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{clean}{pad}{fence}")
}

/// One value in µs with one decimal, as the papers print them.
pub fn us1(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_cells_and_code_spans_are_inert() {
        assert_eq!(
            md_cell("a|b <script> ![x](http://h/a.png) *c* `d`\u{1b}"),
            "a\\|b \\<script\\> ![x]\\(http://h/a.png) \\*c\\* \\`d\\`?"
        );
        assert_eq!(md_cell("[45.861, 53.344]"), "[45.861, 53.344]");
        // Backslashes are literal in a code span: only the pipe is escaped.
        assert_eq!(
            md_code("rtlab --budget 'p99<1ms|x'"),
            "`rtlab --budget 'p99<1ms\\|x'`"
        );
        assert_eq!(md_code("a `b` c"), "``a `b` c``");
        assert_eq!(md_code("`x"), "`` `x ``");
    }
}
