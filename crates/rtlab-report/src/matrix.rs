//! A campaign at a glance: loads × configurations with the worst p99.9 and
//! maximum of each cell, and the verdict `rtlab quick` ends with.

use rtlab_core::result::RunResult;
use rtlab_core::text::{pad, Align};
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
                    Some(cell) => {
                        // Without samples there are no figures; the status
                        // still says why (a failed run that measured nothing).
                        let mut text = match cell.samples {
                            0 => "no samples".to_string(),
                            _ => format!("{} / {}", Us1(cell.p99_9_ns), Us1(cell.max_ns)),
                        };
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
        crate::text::align(&rows, |col, _| col == 0, false)
    }

    /// The short verdict: the worst case under each load, and what
    /// real-time promotion changed where the campaign has exactly one
    /// real-time and one non-real-time configuration.
    pub fn verdict(&self) -> String {
        let mut out = String::new();
        // Loads in one column: at least 10 wide, as wide as the longest.
        let width = self
            .loads
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(0)
            .max(10);
        let _ = writeln!(out, "Worst case under each load:");
        for load in &self.loads {
            let worst = self
                .cells
                .iter()
                .filter(|c| &c.load == load && c.samples > 0)
                .max_by_key(|c| c.max_ns);
            // A configuration that measured nothing under this load (a run
            // refused before it measured) is named: the worst case of the
            // others alone read as if it had been measured and done better.
            let unmeasured: Vec<&str> = self
                .cells
                .iter()
                .filter(|c| &c.load == load && c.samples == 0)
                .map(|c| c.configuration.as_str())
                .collect();
            match worst {
                Some(cell) => {
                    let _ = write!(
                        out,
                        "  {} max {:>10} µs  ({}), p99.9 {} µs",
                        pad(load, width, Align::Left),
                        Us1(cell.max_ns),
                        cell.configuration,
                        Us1(cell.p99_9_ns)
                    );
                    if !unmeasured.is_empty() {
                        let _ = write!(out, "; nothing measured under {}", unmeasured.join(", "));
                    }
                    let _ = writeln!(out);
                }
                None => {
                    let _ = writeln!(out, "  {} nothing measured", pad(load, width, Align::Left));
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
                    "  {} p99.9 {} → {} µs ({}), max {} → {} µs ({})",
                    pad(load, width, Align::Left),
                    Us1(b.p99_9_ns),
                    Us1(a.p99_9_ns),
                    change(b.p99_9_ns, a.p99_9_ns),
                    Us1(b.max_ns),
                    Us1(a.max_ns),
                    change(b.max_ns, a.max_ns),
                );
            }
        }
        out
    }
}

/// One matrix per probe kind, in the order the kinds first ran: a switch
/// probe's latencies and a noise probe's gap lengths are not one figure.
pub fn per_probe(results: &[RunResult]) -> Vec<(String, Matrix)> {
    let mut kinds: Vec<&str> = Vec::new();
    for result in results {
        if !kinds.contains(&result.probe.as_str()) {
            kinds.push(&result.probe);
        }
    }
    kinds
        .into_iter()
        .map(|kind| {
            let runs: Vec<RunResult> = results
                .iter()
                .filter(|r| r.probe == kind)
                .cloned()
                .collect();
            (kind.to_string(), Matrix::of(&runs))
        })
        .collect()
}

/// The verdict `rtlab quick` ends with, for each probe kind of the
/// results (see [`per_probe`]): its [`Matrix::verdict`]. `rtlab quick`
/// prints it for a campaign of one probe kind; the report shows each.
pub fn verdicts(results: &[RunResult]) -> Vec<(String, String)> {
    per_probe(results)
        .into_iter()
        .map(|(probe, matrix)| (probe, matrix.verdict()))
        .collect()
}

/// µs with one decimal: a campaign's cells are read at a glance, and on
/// these scales the tenth of a µs is the noise floor anyway.
struct Us1(u64);

impl std::fmt::Display for Us1 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Integer rounding: half a tenth rounds up, as a reader expects.
        let tenths = self.0.saturating_add(50) / 100;
        let text = format!("{}.{}", tenths / 10, tenths % 10);
        f.pad(&text)
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
    use rtlab_core::env::Environment;
    use rtlab_core::result::{
        CampaignRef, Effective, Percentiles, RunStatus, Series, SeriesStats, ThreadSettings,
    };
    use rtlab_core::sched::{Policy, SchedParams};

    fn run(
        load: &str,
        configuration: &str,
        policy: Policy,
        p99_9_us: u64,
        max_us: u64,
    ) -> RunResult {
        let series = Series {
            name: "cpu0".into(),
            metric: "wakeup_latency".into(),
            cpu: Some(0),
            interval_ns: 1_000_000,
            thread: ThreadSettings {
                tid: 1,
                pinned_cpu: Some(0),
                requested: SchedParams {
                    policy,
                    priority: if policy.is_realtime() { 90 } else { 0 },
                    deadline: None,
                },
                actual: None,
                timer_slack_ns: Some(1),
            },
            stats: SeriesStats {
                samples: 1000,
                missed: if max_us > 1000 { 2 } else { 0 },
                max_ns: max_us * 1000,
                percentiles_ns: Percentiles {
                    p99_9: p99_9_us * 1000,
                    ..Percentiles::default()
                },
                ..SeriesStats::default()
            },
        };
        RunResult {
            schema: rtlab_core::result::RUN_SCHEMA.into(),
            id: format!("{load}-{configuration}"),
            probe: "timer".into(),
            status: RunStatus::Complete,
            started_at: String::new(),
            ended_at: None,
            elapsed_ns: 0,
            command: Vec::new(),
            config: serde_json::Value::Null,
            effective: Effective::default(),
            environment: Environment::default(),
            series: vec![series],
            break_event: None,
            loads: Vec::new(),
            campaign: Some(CampaignRef {
                name: "t".into(),
                execution: "e".into(),
                index: 1,
                total: 4,
                configuration: configuration.into(),
                load: load.into(),
                repeat: 1,
            }),
            warnings: Vec::new(),
            noise: None,
            net: None,
            traffic: None,
            witness: None,
            executive: None,
        }
    }

    #[test]
    fn matrix_table_and_verdict() {
        let results = [
            run("idle", "promoted", Policy::Fifo, 40, 90),
            run("idle", "plain", Policy::Other, 120, 400),
            run("vm", "promoted", Policy::Fifo, 80, 2500),
            run("vm", "plain", Policy::Other, 800, 2400),
        ];
        let matrix = Matrix::of(&results);
        assert_eq!(matrix.loads, ["idle", "vm"]);
        assert_eq!(matrix.configurations, ["promoted", "plain"]);
        assert_eq!(
            matrix.table(),
            "load   promoted p99.9 / max µs       plain p99.9 / max µs\n\
             idle               40.0 / 90.0              120.0 / 400.0\n\
             vm    80.0 / 2500.0 (2 missed)  800.0 / 2400.0 (2 missed)\n"
        );
        assert_eq!(
            matrix.verdict(),
            "Worst case under each load:\n\
             \x20 idle       max      400.0 µs  (plain), p99.9 120.0 µs\n\
             \x20 vm         max     2500.0 µs  (promoted), p99.9 80.0 µs\n\
             Real-time promotion (promoted against plain):\n\
             \x20 idle       p99.9 120.0 → 40.0 µs (3.0× lower), max 400.0 → 90.0 µs (4.4× lower)\n\
             \x20 vm         p99.9 800.0 → 80.0 µs (10.0× lower), max 2400.0 → 2500.0 µs (about the same)\n"
        );
    }

    #[test]
    fn the_verdict_keeps_its_columns_with_long_load_names() {
        let results = [
            run("idle", "promoted", Policy::Fifo, 40, 90),
            run("dohell-no-stat", "promoted", Policy::Fifo, 80, 2500),
        ];
        let verdict = Matrix::of(&results).verdict();
        let columns: Vec<usize> = verdict
            .lines()
            .skip(1)
            .map(|l| l.find(" max ").unwrap())
            .collect();
        assert_eq!(columns, [16, 16], "{verdict}");
    }

    #[test]
    fn change_names_the_direction() {
        assert_eq!(change(300, 100), "3.0× lower");
        assert_eq!(change(100, 250), "2.5× higher");
        assert_eq!(change(100, 102), "about the same");
        assert_eq!(change(0, 5), "n/a");
    }

    #[test]
    fn microseconds_have_one_decimal_and_pad() {
        assert_eq!(format!("{:>8}", Us1(7_063_417)), "  7063.4");
        assert_eq!(Us1(950).to_string(), "1.0");
    }
}
