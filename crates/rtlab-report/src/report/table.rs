//! A table of the report as data (title, header, rows, note), and its
//! layout as terminal text, Markdown and HTML.

use super::svg::escape;
use crate::text::{align, column_widths, md_cell};
use serde::Serialize;
use std::fmt::Write;

/// A table: a title, a header row and rows of text. Columns other than the
/// first `text_columns` are numbers (right-aligned).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    pub title: String,
    /// What the figures mean, in a sentence (shown under the table).
    pub note: Option<String>,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    #[serde(skip)]
    pub text_columns: usize,
    /// `(row, column, columns)`: in HTML that cell spans `columns`
    /// columns and the cells it covers are not shown (a refused estimate
    /// is one cell across the estimate columns); text and Markdown show
    /// every cell.
    #[serde(skip)]
    pub spans: Vec<(usize, usize, usize)>,
    /// The first columns that hold run labels and series names (tables of
    /// runs, whose first column is `run`): in HTML they may break after a
    /// `/` or `.` rather than push the figures off the page.
    #[serde(skip)]
    pub label_columns: usize,
}

impl Table {
    pub(super) fn new(title: &str, header: &[&str], text_columns: usize) -> Table {
        Table {
            title: title.to_string(),
            note: None,
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            text_columns,
            spans: Vec::new(),
            label_columns: if header.first() == Some(&"run") {
                text_columns.min(2)
            } else {
                0
            },
        }
    }

    pub(super) fn with_note(mut self, note: &str) -> Table {
        self.note = Some(note.to_string());
        self
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Aligned columns under the title, for the terminal (control
    /// characters shown as `?`, so a name cannot drive the terminal).
    pub fn to_text(&self) -> String {
        let printable = |text: &String| -> String {
            text.chars()
                .map(|c| if c.is_control() { '?' } else { c })
                .collect()
        };
        let mut rows = vec![self.header.clone()];
        rows.extend(
            self.rows
                .iter()
                .map(|row| row.iter().map(printable).collect()),
        );
        // A spanned cell counts for no column's width: it is written from
        // its column's start, over the columns it spans and beyond.
        let mut spanned = Vec::new();
        for &(r, c, _) in &self.spans {
            if let Some(row) = rows.get_mut(r + 1).filter(|row| c < row.len()) {
                spanned.push((r, c, row[c].clone()));
                row.truncate(c);
            }
        }
        let mut table = align(&rows, |col, _| col < self.text_columns, true);
        if !spanned.is_empty() {
            let widths = column_widths(&rows);
            let mut lines: Vec<String> = table.lines().map(str::to_string).collect();
            for (r, c, text) in spanned {
                // Data row r is on line r + 2, under the header and its rule.
                let start = widths[..c].iter().sum::<usize>() + 2 * c;
                if let Some(line) = lines.get_mut(r + 2) {
                    // By hand: `{line:<start$}` panics for a width of 65,536 or more.
                    *line =
                        rtlab_core::text::pad(line, start, rtlab_core::text::Align::Left) + &text;
                }
            }
            table = lines.join("\n") + "\n";
        }
        let mut out = format!("{}\n", printable(&self.title));
        out.push_str(&table);
        if let Some(note) = &self.note {
            let _ = writeln!(out, "{note}");
        }
        out
    }

    /// A GitHub-flavoured Markdown table under a heading of `level` (2: `##`).
    pub fn to_markdown(&self, level: usize) -> String {
        let mut out = format!("{} {}\n\n", "#".repeat(level), md_cell(&self.title));
        let line = |cells: &[String]| {
            format!(
                "| {} |\n",
                cells
                    .iter()
                    .map(|c| md_cell(c))
                    .collect::<Vec<_>>()
                    .join(" | ")
            )
        };
        out.push_str(&line(&self.header));
        let rule: Vec<String> = (0..self.header.len())
            .map(|i| if i < self.text_columns { "---" } else { "---:" }.to_string())
            .collect();
        let _ = writeln!(out, "|{}|", rule.join("|"));
        for row in &self.rows {
            out.push_str(&line(row));
        }
        if let Some(note) = &self.note {
            let _ = write!(out, "\n{}\n", md_cell(note));
        }
        out
    }

    /// An HTML `<table>` with a caption.
    pub fn to_html(&self) -> String {
        let mut out = format!(
            "<table><caption>{}</caption><thead><tr>",
            escape(&self.title)
        );
        for (i, h) in self.header.iter().enumerate() {
            let class = if i < self.text_columns {
                ""
            } else {
                r#" class="num""#
            };
            let _ = write!(out, "<th{class}>{}</th>", escape(h));
        }
        out.push_str("</tr></thead><tbody>");
        for (r, row) in self.rows.iter().enumerate() {
            out.push_str("<tr>");
            let mut covered = 0;
            for (i, cell) in row.iter().enumerate() {
                if covered > 0 {
                    covered -= 1;
                    continue;
                }
                if let Some(&(_, _, columns)) =
                    self.spans.iter().find(|(sr, sc, _)| (*sr, *sc) == (r, i))
                {
                    covered = columns.saturating_sub(1);
                    let _ = write!(
                        out,
                        r#"<td class="span" colspan="{columns}">{}</td>"#,
                        escape(cell)
                    );
                    continue;
                }
                if i < self.label_columns {
                    // Labels and series names break after their `/`, `.`
                    // and `_` when the column is narrow, not inside a word
                    // (`response_from_send`, `task0.lateness`).
                    let text = escape(cell)
                        .replace('/', "/<wbr>")
                        .replace('.', ".<wbr>")
                        .replace('_', "_<wbr>");
                    let _ = write!(out, "<td>{text}</td>");
                } else if i < self.text_columns {
                    let _ = write!(out, "<td>{}</td>", escape(cell));
                } else {
                    let _ = write!(out, r#"<td class="num">{}</td>"#, escape(cell));
                }
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table>");
        if let Some(note) = &self.note {
            let _ = write!(out, r#"<p class="note">{}</p>"#, escape(note));
        }
        out
    }
}
