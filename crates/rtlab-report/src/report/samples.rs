//! Every sample of a run, read back from the CSV that `--samples FILE`
//! wrote during it, so the report can draw one dot per sample.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

/// A run's samples by series name: `(t_ns, latency_ns)` in file order;
/// `None` as latency is a lost message (net).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampleFile {
    pub series: BTreeMap<String, Vec<(u64, Option<u64>)>>,
}

/// A samples file that cannot be used, with the place.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}: {message}")]
pub struct SamplesError {
    pub path: String,
    pub line: usize,
    pub message: String,
}

/// The net probe's per-message columns and the series each one feeds.
const NET_HEADER: &str = "index,t_ns,send_lag_ns,response_ns,response_from_send_ns,lost";
/// The noise probe's events: a gap of `duration_ns` at `start_ns`.
const NOISE_HEADER: &str = "cpu,start_ns,duration_ns,source";

impl SampleFile {
    /// Reads `LABEL,t_ns,latency_ns` (timer, switch, periodic, dispatch),
    /// the net probe's per-message CSV or the noise probe's events.
    /// `series_names` are the run's series: a timer's label `0` is series
    /// `cpu0`.
    pub fn read(path: &Path, series_names: &[String]) -> Result<SampleFile, SamplesError> {
        let error = |line: usize, message: String| SamplesError {
            path: path.display().to_string(),
            line,
            message,
        };
        let file = std::fs::File::open(path).map_err(|e| error(0, e.to_string()))?;
        let mut lines = std::io::BufReader::new(file).lines();
        let header = match lines.next() {
            Some(Ok(h)) => h,
            Some(Err(e)) => return Err(error(1, e.to_string())),
            None => return Err(error(1, "empty file: no header".into())),
        };
        let net = header.trim() == NET_HEADER;
        let noise = header.trim() == NOISE_HEADER;
        if !net
            && !noise
            && !matches!(
                header.trim(),
                "cpu,t_ns,latency_ns" | "series,t_ns,latency_ns"
            )
        {
            return Err(error(
                1,
                format!(
                    "header `{}` is not a samples file of rtlab (expected `cpu,t_ns,latency_ns`, `series,t_ns,latency_ns`, `{NOISE_HEADER}` or `{NET_HEADER}`)",
                    header.trim()
                ),
            ));
        }
        let resolve = |label: &str| -> Option<String> {
            if series_names.iter().any(|s| s == label) {
                return Some(label.to_string());
            }
            let cpu = format!("cpu{label}");
            series_names.contains(&cpu).then_some(cpu)
        };
        let mut out = SampleFile::default();
        for (i, line) in lines.enumerate() {
            let number = i + 2;
            let line = line.map_err(|e| error(number, e.to_string()))?;
            if line.trim().is_empty() {
                continue;
            }
            // A noise event's source (the last column) may hold commas.
            let fields: Vec<&str> = if noise {
                line.splitn(4, ',').collect()
            } else {
                line.split(',').collect()
            };
            let int = |col: usize, name: &str| -> Result<Option<u64>, SamplesError> {
                match fields.get(col).map(|f| f.trim()) {
                    None => Err(error(number, format!("missing column `{name}`"))),
                    Some("") => Ok(None),
                    Some(text) => text.parse().map(Some).map_err(|_| {
                        error(
                            number,
                            format!("column `{name}`: `{text}` is not a whole number of ns"),
                        )
                    }),
                }
            };
            let required = |col: usize, name: &str| -> Result<u64, SamplesError> {
                int(col, name)?.ok_or_else(|| error(number, format!("column `{name}` is empty")))
            };
            if net {
                if fields.len() != 6 {
                    return Err(error(
                        number,
                        format!("{} columns, expected 6", fields.len()),
                    ));
                }
                let at = required(1, "t_ns")?;
                let lost = fields[5].trim() == "1";
                let response = if lost { None } else { int(3, "response_ns")? };
                let from_send = if lost {
                    None
                } else {
                    int(4, "response_from_send_ns")?
                };
                let lag = int(2, "send_lag_ns")?;
                out.push("response", at, response);
                out.push("response_from_send", at, from_send);
                if let Some(lag) = lag {
                    out.push("send_lag", at, Some(lag));
                }
            } else {
                let expected = if noise { 4 } else { 3 };
                if fields.len() != expected {
                    return Err(error(
                        number,
                        format!("{} columns, expected {expected}", fields.len()),
                    ));
                }
                let label = fields[0].trim();
                let series = resolve(label).ok_or_else(|| {
                    error(
                        number,
                        format!(
                            "series `{label}` is not in the run (its series: {})",
                            series_names.join(", ")
                        ),
                    )
                })?;
                let (at, value) = if noise {
                    (required(1, "start_ns")?, required(2, "duration_ns")?)
                } else {
                    (required(1, "t_ns")?, required(2, "latency_ns")?)
                };
                out.push(&series, at, Some(value));
            }
        }
        Ok(out)
    }

    fn push(&mut self, series: &str, at_ns: u64, latency_ns: Option<u64>) {
        self.series
            .entry(series.to_string())
            .or_default()
            .push((at_ns, latency_ns));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    #[test]
    fn timer_labels_name_cpu_series_and_net_rows_mark_lost_messages() {
        let names = vec!["cpu0".to_string(), "cpu1".to_string()];
        let f = file("cpu,t_ns,latency_ns\n0,1000,50\n1,1000,70\n0,2000,60\n");
        let samples = SampleFile::read(f.path(), &names).unwrap();
        assert_eq!(
            samples.series["cpu0"],
            vec![(1000, Some(50)), (2000, Some(60))]
        );
        assert_eq!(samples.series["cpu1"], vec![(1000, Some(70))]);

        let f = file(&format!("{NET_HEADER}\n0,0,5,900,895,0\n1,30,4,,,1\n"));
        let samples = SampleFile::read(f.path(), &[]).unwrap();
        assert_eq!(samples.series["response"], vec![(0, Some(900)), (30, None)]);
        assert_eq!(
            samples.series["send_lag"],
            vec![(0, Some(5)), (30, Some(4))]
        );
    }

    #[test]
    fn bad_files_name_the_line_and_the_column() {
        let names = vec!["cpu0".to_string()];
        let f = file("cpu,t_ns,latency_ns\n0,1000,50\n0,2000,x\n");
        let e = SampleFile::read(f.path(), &names).unwrap_err().to_string();
        assert!(
            e.ends_with(":3: column `latency_ns`: `x` is not a whole number of ns"),
            "{e}"
        );
        let f = file("cpu,t_ns,latency_ns\n7,1000,50\n");
        let e = SampleFile::read(f.path(), &names).unwrap_err().to_string();
        assert!(
            e.contains(":2: series `7` is not in the run (its series: cpu0)"),
            "{e}"
        );
        let f = file("cpu,start_ns,duration_ns,source\n0,100,5000,\"irq:a,b\"\n");
        let samples = SampleFile::read(f.path(), &names).unwrap();
        assert_eq!(samples.series["cpu0"], vec![(100, Some(5000))]);
        let f = file("a,b\n");
        let e = SampleFile::read(f.path(), &names).unwrap_err().to_string();
        assert!(e.contains(":1: header `a,b` is not a samples file"), "{e}");
    }
}
