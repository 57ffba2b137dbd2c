//! A campaign at a glance: loads × configurations with the worst p99.9 and
//! maximum of each cell, and the verdict `rtlab quick` ends with.

use rtlab_core::result::RunResult;
use rtlab_core::units::Micros;
use serde::Serialize;
use std::fmt::Write;

/// The worst figures of the runs that share one load and configuration
/// (over their series and repeats).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cell {
    pub load: String,
    pub configuration: String,
    /// Whether the probe threads asked for a real-time policy.
    pub realtime: bool,
    pub runs: usize,
    pub samples: u64,
    pub missed: u64,
    pub p99_9_ns: u64,
    pub max_ns: u64,
    /// Statuses other than `complete` seen in the cell (e.g. `partial`).
    pub incomplete: Vec<String>,
}

/// The cells of a campaign's results, loads and configurations in the
/// order they first appear.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Matrix {
    pub loads: Vec<String>,
    pub configurations: Vec<String>,
    pub cells: Vec<Cell>,
}

fn push_new(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|x| x == item) {
        list.push(item.to_string());
    }
}

impl Matrix {
    /// Runs without a campaign place are grouped under load `-` and
    /// configuration `-`.
    pub fn of(results: &[RunResult]) -> Matrix {
        let mut matrix = Matrix {
            loads: Vec::new(),
            configurations: Vec::new(),
            cells: Vec::new(),
        };
        for result in results {
            let (load, configuration) = result
                .campaign
                .as_ref()
                .map_or(("-", "-"), |c| (c.load.as_str(), c.configuration.as_str()));
            push_new(&mut matrix.loads, load);
            push_new(&mut matrix.configurations, configuration);
            let realtime = result
                .series
                .first()
                .is_some_and(|s| s.thread.requested.policy.is_realtime());
            let index = match matrix
                .cells
                .iter()
                .position(|c| c.load == load && c.configuration == configuration)
            {
                Some(index) => index,
                None => {
                    matrix.cells.push(Cell {
                        load: load.to_string(),
                        configuration: configuration.to_string(),
                        realtime,
                        runs: 0,
                        samples: 0,
                        missed: 0,
                        p99_9_ns: 0,
                        max_ns: 0,
                        incomplete: Vec::new(),
                    });
                    matrix.cells.len() - 1
                }
            };
            let cell = &mut matrix.cells[index];
            cell.runs += 1;
            let status = serde_json::to_value(result.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            if status != "complete" {
                push_new(&mut cell.incomplete, &status);
            }
            for series in &result.series {
                let s = &series.stats;
                cell.samples += s.samples;
                cell.missed += s.missed;
                if s.samples > 0 {
                    cell.p99_9_ns = cell.p99_9_ns.max(s.percentiles_ns.p99_9);
                    cell.max_ns = cell.max_ns.max(s.max_ns);
                }
            }
        }
        matrix
    }

    pub fn cell(&self, load: &str, configuration: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.load == load && c.configuration == configuration)
    }

    /// Rows are loads, columns configurations; each cell `p99.9 / max` in µs.
    pub fn table(&self) -> String {
        let mut header = vec!["load".to_string()];
        header.extend(
            self.configurations
                .iter()
                .map(|c| format!("{c} p99.9 / max µs")),
        );
        let mut rows = vec![header];
        for load in &self.loads {
            let mut row = vec![load.clone()];
            for configuration in &self.configurations {
                row.push(match self.cell(load, configuration) {
                    None => "-".to_string(),
                    Some(cell) if cell.samples == 0 => "no samples".to_string(),
                    Some(cell) => {
                        let mut text =
                            format!("{} / {}", Micros(cell.p99_9_ns), Micros(cell.max_ns));
                        if cell.missed > 0 {
                            let _ = write!(text, " ({} missed)", cell.missed);
                        }
                        if !cell.incomplete.is_empty() {
                            let _ = write!(text, " [{}]", cell.incomplete.join(","));
                        }
                        text
                    }
                });
            }
            rows.push(row);
        }
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for row in &rows {
            for (i, (cell, width)) in row.iter().zip(&widths).enumerate() {
                if i == 0 {
                    let _ = write!(out, "{cell:<width$}");
                } else {
                    let _ = write!(out, "  {cell:>width$}");
                }
            }
            out.push('\n');
        }
        out
    }

    /// The short verdict: the worst case under each load, and what
    /// real-time promotion changed where the campaign has exactly one
    /// real-time and one non-real-time configuration.
    pub fn verdict(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Worst case under each load:");
        for load in &self.loads {
            let worst = self
                .cells
                .iter()
                .filter(|c| &c.load == load && c.samples > 0)
                .max_by_key(|c| c.max_ns);
            match worst {
                Some(cell) => {
                    let _ = writeln!(
                        out,
                        "  {load:<10} max {:>10} µs  ({}), p99.9 {} µs",
                        Micros(cell.max_ns),
                        cell.configuration,
                        Micros(cell.p99_9_ns)
                    );
                }
                None => {
                    let _ = writeln!(out, "  {load:<10} nothing measured");
                }
            }
        }
        let promoted: Vec<&String> = self
            .configurations
            .iter()
            .filter(|c| {
                self.cells
                    .iter()
                    .any(|x| &x.configuration == *c && x.realtime)
            })
            .collect();
        let plain: Vec<&String> = self
            .configurations
            .iter()
            .filter(|c| {
                self.cells
                    .iter()
                    .any(|x| &x.configuration == *c && !x.realtime)
            })
            .collect();
        if let ([rt], [other]) = (promoted.as_slice(), plain.as_slice()) {
            let _ = writeln!(out, "Real-time promotion ({rt} against {other}):");
            for load in &self.loads {
                let (Some(a), Some(b)) = (self.cell(load, rt), self.cell(load, other)) else {
                    continue;
                };
                if a.samples == 0 || b.samples == 0 {
                    continue;
                }
                let _ = writeln!(
                    out,
                    "  {load:<10} p99.9 {} → {} µs ({}), max {} → {} µs ({})",
                    Micros(b.p99_9_ns),
                    Micros(a.p99_9_ns),
                    change(b.p99_9_ns, a.p99_9_ns),
                    Micros(b.max_ns),
                    Micros(a.max_ns),
                    change(b.max_ns, a.max_ns),
                );
            }
        }
        out
    }
}

/// `3.2× lower`, `1.4× higher` or `unchanged` (within 5 %).
fn change(before: u64, after: u64) -> String {
    if before == 0 || after == 0 {
        return "n/a".to_string();
    }
    let ratio = before as f64 / after as f64;
    if (0.95..=1.0 / 0.95).contains(&ratio) {
        "about the same".to_string()
    } else if ratio > 1.0 {
        format!("{ratio:.1}× lower")
    } else {
        format!("{:.1}× higher", 1.0 / ratio)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_names_the_direction() {
        assert_eq!(change(300, 100), "3.0× lower");
        assert_eq!(change(100, 250), "2.5× higher");
        assert_eq!(change(100, 102), "about the same");
        assert_eq!(change(0, 5), "n/a");
    }
}
