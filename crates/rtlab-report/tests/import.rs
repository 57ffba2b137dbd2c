//! Importing cyclictest results: the golden histfiles rtlab's exporter
//! wrote, real cyclictest 2.40 output (histfile, stdout, JSON with and
//! without a histogram, -N), a round trip through the histfile, and bad
//! input of every kind (which must give a clear error, never a panic).

use rtlab_core::record::SeriesRecorder;
use rtlab_core::result::{Overflows, RunResult, RunStatus, Series};
use rtlab_core::sched::Policy;
use rtlab_report::export::{Exporter, HistfileExporter, JsonExporter};
use rtlab_report::import::{self, import_file, import_text, Format, ImportError};
use rtlab_stats::quantile::percentiles_known;
use std::path::PathBuf;

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn import_golden(name: &str) -> RunResult {
    import_file(&golden(name)).unwrap_or_else(|e| panic!("importing {name}: {e}"))
}

fn series<'a>(run: &'a RunResult, name: &str) -> &'a Series {
    run.series
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no series {name} in {:?}", names(run)))
}

fn names(run: &RunResult) -> Vec<&str> {
    run.series.iter().map(|s| s.name.as_str()).collect()
}

fn percentiles(s: &Series) -> [u64; 5] {
    let p = s.stats.percentiles_ns;
    [p.p50, p.p90, p.p99, p.p99_9, p.p99_99]
}

fn import_err(text: &str) -> String {
    match import_text(text, "bad.txt", None) {
        Ok(run) => panic!("imported {:?} from {text:?}", names(&run)),
        Err(e) => e.to_string(),
    }
}

// ---------------------------------------------------------------------------
// The histfiles rtlab's exporter wrote (tests/histfile.rs makes them)
// ---------------------------------------------------------------------------

#[test]
fn golden_histfile_with_all_threads_column() {
    let run = import_golden("two_threads_histofall.hist");
    assert_eq!(run.probe, "cyclictest");
    assert_eq!(run.status, RunStatus::Complete);
    assert_eq!(run.config["format"], "cyclictest-histfile");
    assert!(run.config["imported_from"]
        .as_str()
        .unwrap()
        .ends_with("two_threads_histofall.hist"));
    assert_eq!(names(&run), ["thread0", "thread1"]);

    let t0 = &series(&run, "thread0").stats;
    assert_eq!((t0.samples, t0.missed, t0.dropped), (7, 0, 0));
    assert_eq!((t0.min_ns, t0.max_ns), (0, 7_000));
    // The two overflows are counted at the max: here exactly where they were.
    assert_eq!(t0.histogram_us, vec![[0, 1], [2, 3], [4, 1], [7, 2]]);
    assert_eq!(
        t0.histogram_ns,
        vec![[0, 1], [2_000, 3], [4_000, 1], [7_000, 2]]
    );
    assert_eq!(
        t0.overflows,
        Some(Overflows {
            limit_us: 5,
            count: 2,
            first_samples: vec![3, 6],
        })
    );
    // ceil(0.5·7) = 4th sample is in bin 2; ceil(0.9·7) = 7th is an overflow.
    assert_eq!(
        percentiles(series(&run, "thread0")),
        [2_000, 7_000, 7_000, 7_000, 7_000]
    );
    // With overflows, cyclictest's (truncated) average is used.
    assert_eq!(t0.mean_ns, 3_000.0);
    assert_eq!((t0.max_at, t0.top.len()), (None, 0));

    let t1 = &series(&run, "thread1").stats;
    assert_eq!((t1.samples, t1.min_ns, t1.max_ns), (5, 1_000, 3_000));
    assert_eq!(t1.histogram_us, vec![[1, 4], [3, 1]]);
    // No overflow: the exact mean of the µs values, from the bins.
    assert_eq!(t1.mean_ns, 1_400.0);
    assert!((t1.stdev_ns - 894.427).abs() < 0.001, "{}", t1.stdev_ns);
    assert_eq!(t1.overflows.as_ref().map(|o| o.count), Some(0));
    assert!(run.warnings.iter().any(|w| w.contains("1 µs resolution")));
    assert!(run.warnings.iter().any(|w| w.contains("missed = 0")));
}

#[test]
fn golden_histfile_with_capped_overflow_list() {
    let run = import_golden("one_thread_capped.hist");
    assert_eq!(names(&run), ["thread0"]);
    let s = &run.series[0].stats;
    assert_eq!((s.samples, s.min_ns, s.max_ns), (7, 0, 5_000));
    assert_eq!(s.histogram_us, vec![[0, 2], [1, 1], [5, 4]]);
    assert_eq!(
        s.overflows,
        Some(Overflows {
            limit_us: 2,
            count: 4,
            first_samples: vec![1, 3],
        })
    );
    assert_eq!(s.percentiles_ns.p50, 5_000);
    assert_eq!(s.mean_ns, 3_000.0);
}

// ---------------------------------------------------------------------------
// Round trip: rtlab result → histfile → import
// ---------------------------------------------------------------------------

fn recorded_run(values: &[Vec<u64>], hist_limit_us: u64) -> RunResult {
    let mut run = import_golden("two_threads_histofall.hist");
    run.series.clear();
    for (cpu, samples) in values.iter().enumerate() {
        let mut rec = SeriesRecorder::new(Some(hist_limit_us));
        for (i, v) in samples.iter().enumerate() {
            rec.record(*v, i as u64 * 1_000_000, 0);
        }
        let mut template = import_golden("one_thread_capped.hist").series.remove(0);
        template.name = format!("cpu{cpu}");
        template.cpu = Some(cpu);
        template.stats = rec.stats();
        run.series.push(template);
    }
    run
}

/// Latency-like values: a floor, a body and a few spikes, in ns.
fn latencies(seed: u64, n: usize) -> Vec<u64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let body = 8_000 + x % 30_000;
            if i % 997 == 0 {
                body + 400_000
            } else {
                body
            }
        })
        .collect()
}

fn round_trip(run: &RunResult, hist_max_us: u64) -> RunResult {
    let mut text = Vec::new();
    HistfileExporter {
        hist_max_us,
        all_threads_column: true,
    }
    .write(run, &mut text)
    .unwrap();
    import_text(&String::from_utf8(text).unwrap(), "round-trip.hist", None).unwrap()
}

#[test]
fn round_trip_through_the_histfile_keeps_everything_at_us_resolution() {
    let run = recorded_run(&[latencies(1, 5_000), latencies(2, 3_000)], 1_000);
    let back = round_trip(&run, 1_000);
    assert_eq!(back.series.len(), 2);
    for (orig, imported) in run.series.iter().zip(&back.series) {
        let (o, i) = (&orig.stats, &imported.stats);
        assert_eq!(i.samples, o.samples);
        assert_eq!(i.min_ns, o.min_ns / 1000 * 1000);
        assert_eq!(i.max_ns, o.max_ns / 1000 * 1000);
        assert_eq!(i.histogram_us, o.histogram_us, "{}", orig.name);
        // The mean of µs-truncated values: at most 1 µs below the exact one.
        assert!(i.mean_ns <= o.mean_ns && o.mean_ns - i.mean_ns < 1000.0);
        assert!((i.stdev_ns - o.stdev_ns).abs() < 1000.0);
        // HDR percentiles (3 significant digits) against exact µs bins.
        for (ip, op) in percentiles(imported).iter().zip(percentiles(orig)) {
            assert_eq!(ip % 1000, 0);
            assert!(ip.abs_diff(op / 1000 * 1000) <= 1000, "{ip} vs {op}");
        }
        assert_eq!(i.overflows, o.overflows);
    }
}

#[test]
fn round_trip_with_overflows_keeps_counts_and_cycle_numbers() {
    // A 100 µs histogram: the 400 µs spikes overflow.
    let run = recorded_run(&[latencies(3, 4_000)], 100);
    let back = round_trip(&run, 100);
    let (o, i) = (&run.series[0].stats, &back.series[0].stats);
    assert_eq!(i.samples, o.samples);
    assert_eq!(i.overflows, o.overflows);
    assert_eq!(i.overflows.as_ref().unwrap().count, 5);
    assert_eq!(i.max_ns, o.max_ns / 1000 * 1000);
    // In range, the bins are the same; the overflows sit at the max.
    let in_range: Vec<[u64; 2]> = o
        .histogram_us
        .iter()
        .copied()
        .filter(|b| b[0] < 100)
        .collect();
    assert_eq!(&i.histogram_us[..in_range.len()], &in_range[..]);
    assert_eq!(i.histogram_us.last(), Some(&[o.max_ns / 1000, 5]));
}

// ---------------------------------------------------------------------------
// Real cyclictest 2.40 output
// ---------------------------------------------------------------------------

#[test]
fn real_cyclictest_histfile() {
    // cyclictest -m -q -p 90 -i 1000 -l 3000 -t 2 -a -H 40 --histfile=… --json=…
    let run = import_golden("cyclictest-2.40-H40.hist");
    assert_eq!(names(&run), ["thread0", "thread1"]);
    let t0 = series(&run, "thread0");
    let t1 = series(&run, "thread1");
    assert_eq!(
        (t0.stats.samples, t0.stats.min_ns, t0.stats.max_ns),
        (3_000, 10_000, 4_897_000)
    );
    assert_eq!(
        (t1.stats.samples, t1.stats.min_ns, t1.stats.max_ns),
        (3_000, 11_000, 7_038_000)
    );
    // 60 and 132 overflows: more than 1 %, so from p99 up it is the max.
    assert_eq!(
        percentiles(t0),
        [24_000, 33_000, 4_897_000, 4_897_000, 4_897_000]
    );
    assert_eq!(
        percentiles(t1),
        [27_000, 35_000, 7_038_000, 7_038_000, 7_038_000]
    );
    let o0 = t0.stats.overflows.as_ref().unwrap();
    assert_eq!(
        (o0.limit_us, o0.count, o0.first_samples.len()),
        (40, 60, 40)
    );
    assert_eq!(&o0.first_samples[..3], &[57, 98, 239]);
    assert_eq!(t1.stats.overflows.as_ref().unwrap().count, 132);
    assert_eq!((t0.stats.mean_ns, t1.stats.mean_ns), (32_000.0, 31_000.0));
    assert_eq!(t0.stats.histogram_us.len(), 29 + 1);
}

#[test]
fn real_cyclictest_json_agrees_with_its_histfile() {
    let json = import_golden("cyclictest-2.40-H40.json");
    let hist = import_golden("cyclictest-2.40-H40.hist");
    assert_eq!(json.config["format"], "cyclictest-json");
    // -a: each thread has its CPU, so the series are named after it.
    assert_eq!(names(&json), ["cpu0", "cpu1"]);
    for (j, h) in json.series.iter().zip(&hist.series) {
        assert_eq!(j.stats.samples, h.stats.samples);
        assert_eq!(
            (j.stats.min_ns, j.stats.max_ns),
            (h.stats.min_ns, h.stats.max_ns)
        );
        assert_eq!(percentiles(j), percentiles(h));
        assert_eq!(j.stats.histogram_us, h.stats.histogram_us);
        assert_eq!(j.stats.histogram_ns, h.stats.histogram_ns);
        assert_eq!(
            j.stats.overflows.as_ref().map(|o| (o.limit_us, o.count)),
            h.stats.overflows.as_ref().map(|o| (o.limit_us, o.count))
        );
        assert_eq!(j.interval_ns, 1_000_000);
        assert_eq!(j.thread.requested.policy, Policy::Fifo);
        assert_eq!(j.thread.requested.priority, 90);
    }
    // The JSON's average has two decimals; the histfile's is truncated.
    assert_eq!(json.series[0].stats.mean_ns, 32_270.0);
    assert_eq!(json.series[1].stats.mean_ns, 31_260.0);
    assert_eq!(json.series[1].cpu, Some(1));
    assert_eq!(json.started_at, "2026-11-21T20:02:16.000000Z");
    assert_eq!(
        json.ended_at.as_deref(),
        Some("2026-11-21T20:02:19.000000Z")
    );
    assert_eq!(json.elapsed_ns, 3_000_000_000);
    assert!(json.effective.mlockall);
    assert_eq!(json.command[0], "cyclictest");
    assert_eq!(json.config["rt_tests_version"], "2.40");
    assert_eq!(json.config["cyclictest"]["num_threads"], 2);
    let env = &json.environment;
    assert_eq!(env.hostname.as_deref(), Some("vm"));
    assert_eq!(env.kernel_release.as_deref(), Some("6.18.44-fc-v595"));
    assert_eq!(env.machine.as_deref(), Some("x86_64"));
    assert_eq!(env.preempt_model, "dynamic-unknown");
    assert_eq!(env.realtime_sysfs, Some(false));
}

#[test]
fn real_cyclictest_json_without_histogram() {
    // cyclictest -m -q -p 80 -i 500 -l 1000 -t 1 --json=…
    let run = import_golden("cyclictest-2.40-no-hist.json");
    let s = &run.series[0];
    assert_eq!(s.name, "cpu0");
    assert_eq!(
        (s.stats.samples, s.stats.min_ns, s.stats.max_ns),
        (1_000, 13_000, 329_000)
    );
    assert_eq!(s.stats.mean_ns, 27_440.0);
    assert!(!percentiles_known(&s.stats));
    assert!(s.stats.histogram_ns.is_empty() && s.stats.overflows.is_none());
    assert_eq!(s.interval_ns, 500_000);
    assert_eq!(
        (s.thread.requested.policy, s.thread.requested.priority),
        (Policy::Fifo, 80)
    );
    assert!(run
        .warnings
        .iter()
        .any(|w| w.contains("no histogram") && w.contains("percentiles")));
}

#[test]
fn real_cyclictest_json_in_nanoseconds() {
    // cyclictest -N … -h 60000: bins and figures in ns.
    let run = import_golden("cyclictest-2.40-nsecs.json");
    let s = &run.series[0].stats;
    assert_eq!(run.config["resolution_ns"], 1);
    assert_eq!((s.samples, s.min_ns, s.max_ns), (40, 18_357, 82_555));
    assert_eq!(
        (s.percentiles_ns.p50, s.percentiles_ns.p90),
        (34_444, 42_525)
    );
    assert_eq!(s.percentiles_ns.p99, 82_555);
    assert_eq!(s.mean_ns, 35_553.0);
    assert!(s.overflows.is_none());
    assert!(run.warnings.iter().any(|w| w.contains("1 ns resolution")));
}

#[test]
fn real_cyclictest_stdout_with_status_lines() {
    // cyclictest -m -p 90 -i 1000 -l 300 -t 1 -h 60 > file: status lines with
    // terminal escapes, then the histogram.
    let run = import_golden("cyclictest-2.40-stdout-h60.txt");
    let s = &run.series[0];
    assert_eq!(run.series.len(), 1);
    assert_eq!(
        (s.stats.samples, s.stats.min_ns, s.stats.max_ns),
        (300, 15_000, 68_000)
    );
    assert_eq!(percentiles(s)[..4], [33_000, 37_000, 44_000, 68_000]);
    let o = s.stats.overflows.as_ref().unwrap();
    assert_eq!(
        (o.limit_us, o.count, o.first_samples.clone()),
        (60, 2, vec![100, 200])
    );
}

#[test]
fn histfile_without_header_and_with_blank_lines() {
    let text = "000000 000001\n\n000001 000002\n# Total: 000000003\n";
    let run = import_text(text, "bare.hist", None).unwrap();
    let s = &run.series[0].stats;
    assert_eq!((s.samples, s.min_ns, s.max_ns), (3, 0, 1_000));
    assert!(run
        .warnings
        .iter()
        .any(|w| w.contains("Histogram Overflows")));
}

#[test]
fn imported_runs_match_the_json_schema() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/rtlab.run-1.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    for name in [
        "two_threads_histofall.hist",
        "one_thread_capped.hist",
        "cyclictest-2.40-H40.hist",
        "cyclictest-2.40-H40.json",
        "cyclictest-2.40-no-hist.json",
        "cyclictest-2.40-nsecs.json",
        "cyclictest-2.40-stdout-h60.txt",
    ] {
        let doc = serde_json::to_value(import_golden(name)).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
}

#[test]
fn rtlab_json_is_taken_as_it_is() {
    let run = recorded_run(&[latencies(4, 100)], 1_000);
    let mut text = Vec::new();
    JsonExporter.write(&run, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert_eq!(import::detect(&text), Some(Format::RtlabJson));
    let back = import_text(&text, "run.json", None).unwrap();
    assert_eq!(back.id, run.id);
    assert_eq!(back.series[0].stats, run.series[0].stats);

    let wrong = text.replace("rtlab.run/1", "rtlab.run/9");
    let err = import_text(&wrong, "run.json", None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("run.json: $.schema: expected \"rtlab.run/1\""),
        "{err}"
    );
}

#[test]
fn import_file_dates_a_histfile_by_its_mtime_and_names_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.hist");
    std::fs::copy(golden("one_thread_capped.hist"), &path).unwrap();
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    let run = import_file(&path).unwrap();
    assert_eq!(
        run.started_at,
        humantime::format_rfc3339_micros(modified).to_string()
    );
    assert!(run.warnings.iter().any(|w| w.contains("modification time")));

    let missing = dir.path().join("nope.hist");
    let err = import_file(&missing).unwrap_err();
    assert!(matches!(err, ImportError::Io { .. }));
    assert!(err.to_string().contains("nope.hist"), "{err}");
}

// ---------------------------------------------------------------------------
// Bad input: clear errors, never a panic
// ---------------------------------------------------------------------------

#[test]
fn garbage_is_refused_listing_the_formats() {
    for text in [
        "hello\nworld\n",
        "\u{0}\u{1}binary",
        "{\"a\": 1}",
        "[1, 2]",
        "",
    ] {
        let err = import_err(text);
        assert!(err.starts_with("bad.txt: "), "{err}");
        assert!(
            err.contains("cyclictest histogram") && err.contains("rtlab.run/1"),
            "{err}"
        );
    }
}

#[test]
fn histfile_errors_name_the_line() {
    let err = import_err("# Histogram\n000000 000001\n000001 00x002\n# Total: 000000003\n");
    assert!(err.starts_with("bad.txt:3: "), "{err}");
    assert!(err.contains("00x002"), "{err}");

    let err = import_err("# Histogram\n000000 000001\n000001 000002\n000002 000");
    assert!(err.contains("truncated"), "{err}");
    assert!(err.starts_with("bad.txt:4: "), "{err}");

    let err = import_err("# Histogram\n000000 000001\n000001 000002 000003\n# Total: 1\n");
    assert!(
        err.starts_with("bad.txt:3: ") && err.contains("count columns"),
        "{err}"
    );

    let err = import_err("# Histogram\n000000 000001\n000001 000002\n# Total: 000000009\n");
    assert!(
        err.starts_with("bad.txt:4: ") && err.contains("sums to 3"),
        "{err}"
    );

    let err = import_err("# Histogram\n000001 000001\n000000 000002\n# Total: 3\n");
    assert!(
        err.starts_with("bad.txt:3: ") && err.contains("increasing"),
        "{err}"
    );

    let err = import_err("# Histogram\n000000 000001\n# Total: 1\n# Max Latencies: abc\n");
    assert!(
        err.starts_with("bad.txt:4: ") && err.contains("'abc'"),
        "{err}"
    );

    let err = import_err("# Histogram\n000000 000001\n# Total: 1\n000001 000001\n");
    assert!(
        err.starts_with("bad.txt:4: ") && err.contains("after"),
        "{err}"
    );

    let err = import_err(
        "# Histogram\n000000 000001\t000001\n# Total: 1 1\n# Min Latencies: 0 0\n\
         # Max Latencies: 0\n",
    );
    assert!(
        err.starts_with("bad.txt:5: ") && err.contains("one per thread"),
        "{err}"
    );
}

#[test]
fn json_errors_name_the_path() {
    let good = std::fs::read_to_string(golden("cyclictest-2.40-H40.json")).unwrap();

    let err = import_err(&good[..good.len() / 2]);
    assert!(err.contains("ends early"), "{err}");

    let err = import_err(&good.replace("\"cycles\": 3000", "\"cycles\": \"many\""));
    assert!(
        err.contains("$.thread[\"0\"].cycles: expected a non-negative integer, found \"many\""),
        "{err}"
    );

    let err = import_err(&good.replace("\"avg\": 32.27", "\"avg\": true"));
    assert!(
        err.contains("$.thread[\"0\"].avg: expected a number"),
        "{err}"
    );

    let err = import_err(&good.replace("\"13\": ", "\"x13\": "));
    assert!(err.contains("$.thread[\"0\"].histogram"), "{err}");

    let err = import_err("{\"thread\": [1, 2]}");
    assert!(
        err.contains("$.thread: expected an object of threads"),
        "{err}"
    );

    let err = import_err("{\"thread\": {\"0\": {\"min\": 1}}}");
    assert!(err.contains("$.thread[\"0\"].cycles: missing"), "{err}");
}

#[test]
fn json_with_nan_from_a_thread_without_cycles() {
    let text = "{\"thread\": {\"0\": {\"histogram\": {}, \"cycles\": 0, \"min\": 1000000, \
                \"max\": 0, \"avg\": -nan, \"cpu\": 0}}}";
    let run = import_text(text, "nan.json", None).unwrap();
    assert_eq!(run.series[0].stats.samples, 0);
    assert!(run.warnings.iter().any(|w| w.contains("nan")));
}

/// Every prefix of every golden file, and byte mutations of them: an
/// error or a result, never a panic.
#[test]
fn truncated_and_mutated_files_never_panic() {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for name in [
        "two_threads_histofall.hist",
        "one_thread_capped.hist",
        "cyclictest-2.40-H40.hist",
        "cyclictest-2.40-H40.json",
        "cyclictest-2.40-no-hist.json",
        "cyclictest-2.40-nsecs.json",
        "cyclictest-2.40-stdout-h60.txt",
    ] {
        let bytes = std::fs::read(golden(name)).unwrap();
        for end in 0..bytes.len() {
            let text = String::from_utf8_lossy(&bytes[..end]);
            let _ = import_text(&text, name, None);
        }
        for _ in 0..300 {
            let mut mutated = bytes.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() % mutated.len() as u64) as usize;
                mutated[at] = match next() % 4 {
                    0 => b'9',
                    1 => b'#',
                    2 => b'\n',
                    _ => next() as u8,
                };
            }
            let _ = import_text(&String::from_utf8_lossy(&mutated), name, None);
        }
    }
    // Numbers at the edge of u64.
    let huge = "# Histogram\n18446744073709551615 18446744073709551615\n\
                # Total: 18446744073709551615\n# Max Latencies: 18446744073709551615\n";
    let _ = import_text(huge, "huge.hist", None);
    let huge_json = "{\"thread\": {\"0\": {\"histogram\": {\"18446744073709551615\": \
                     18446744073709551615}, \"cycles\": 18446744073709551615, \
                     \"max\": 18446744073709551615, \"avg\": 1e308}}}";
    let _ = import_text(huge_json, "huge.json", None);
}

// ---------------------------------------------------------------------------
// Input that once panicked or would be printed raw (issue 16, items 6 and 8)
// ---------------------------------------------------------------------------

/// The golden cyclictest JSON with `edit` applied to it.
fn cyclictest_json_with(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let text = std::fs::read_to_string(golden("cyclictest-2.40-no-hist.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(&mut doc);
    doc.to_string()
}

#[test]
fn a_date_after_the_year_9999_is_an_error_naming_the_field() {
    // It used to panic in humantime's RFC 3339 formatting (exit 101).
    for (field, date) in [
        ("start_time", "Sat, 21 Nov 10000 20:02:19 +0000"),
        (
            "end_time",
            "Sat, 21 Nov 99999999999999999999 20:02:19 +0000",
        ),
    ] {
        let text = cyclictest_json_with(|doc| doc[field] = date.into());
        let error = import_text(&text, "ct.json", None).unwrap_err();
        assert!(matches!(error, ImportError::Json { .. }), "{error}");
        let message = error.to_string();
        assert!(message.starts_with("ct.json: "), "{message}");
        assert!(message.contains(&format!("$.{field}")), "{message}");
        assert!(message.contains("after 9999"), "{message}");
    }
    // The last second RFC 3339 holds still imports.
    let text =
        cyclictest_json_with(|doc| doc["start_time"] = "Fri, 31 Dec 9999 23:59:59 +0000".into());
    let run = import_text(&text, "ct.json", None).unwrap();
    assert_eq!(run.started_at, "9999-12-31T23:59:59.000000Z");
}

#[test]
fn a_histfile_dated_outside_1970_to_9999_is_dated_by_the_import() {
    let text = std::fs::read_to_string(golden("one_thread_capped.hist")).unwrap();
    let epoch = std::time::UNIX_EPOCH;
    for modified in [
        epoch + std::time::Duration::from_secs(253_402_300_800),
        epoch + std::time::Duration::from_secs(u64::MAX / 4),
        epoch - std::time::Duration::from_secs(86_400),
    ] {
        let run = import_text(&text, "h.hist", Some(modified)).unwrap();
        assert!(run.started_at.starts_with("20"), "{}", run.started_at);
        assert!(
            run.warnings
                .iter()
                .any(|w| w.contains("before 1970 or after 9999")),
            "{:?}",
            run.warnings
        );
    }
}

#[test]
fn huge_thread_numbers_and_distances_do_not_overflow() {
    let text = cyclictest_json_with(|doc| {
        doc["cmdline:"] = "cyclictest -i 18446744073709551615 -d 18446744073709551615".into();
        let thread = doc["thread"]["0"].clone();
        doc["thread"] = serde_json::json!({ "18446744073709551615": thread });
    });
    let run = import_text(&text, "ct.json", None).unwrap();
    assert_eq!(run.series[0].interval_ns, u64::MAX);
}

#[test]
fn control_characters_in_an_imported_document_are_refused() {
    let text = cyclictest_json_with(|doc| doc["sysinfo"]["nodename"] = "vm\u{1b}[2J".into());
    let message = import_text(&text, "ct.json", None).unwrap_err().to_string();
    assert!(
        message.contains("$[\"sysinfo\"][\"nodename\"]"),
        "{message}"
    );
    assert!(message.contains("\\u{1b}"), "{message}");
    assert!(!message.contains('\u{1b}'), "{message}");

    // An rtlab result: an id with an escape sequence, or any other text.
    let base = import_golden("cyclictest-2.40-no-hist.json");
    let mut doc = serde_json::to_value(&base).unwrap();
    doc["id"] = "x\u{1b}[2J".into();
    let message = import_text(&doc.to_string(), "run.json", None)
        .unwrap_err()
        .to_string();
    assert!(message.starts_with("run.json: $[\"id\"]"), "{message}");
    assert!(!message.contains('\u{1b}'), "{message}");

    for bad in ["", "../../etc", "-rf", "a b", &"x".repeat(65)] {
        let mut doc = serde_json::to_value(&base).unwrap();
        doc["id"] = bad.into();
        let message = import_text(&doc.to_string(), "run.json", None)
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("run.json: $.id: "),
            "{bad:?}: {message}"
        );
    }
    let mut doc = serde_json::to_value(&base).unwrap();
    doc["warnings"][0] = "ok\u{7}".into();
    let message = import_text(&doc.to_string(), "run.json", None)
        .unwrap_err()
        .to_string();
    assert!(message.contains("$[\"warnings\"][0]"), "{message}");
    // Tabs and newlines are text.
    doc["warnings"][0] = "two\nlines\tand a tab".into();
    import_text(&doc.to_string(), "run.json", None).unwrap();
}

#[test]
fn a_file_too_large_to_be_a_result_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.hist");
    // Sparse: no disk used, but 65 MiB to read.
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(import::MAX_IMPORT_BYTES + 1).unwrap();
    let message = import_file(&big).unwrap_err().to_string();
    assert!(message.contains("big.hist"), "{message}");
    assert!(message.contains("larger than 64 MiB"), "{message}");
    // A device that never ends, too.
    let message = import_file(std::path::Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(message.contains("larger than"), "{message}");
}

#[test]
fn a_histfile_line_is_quoted_with_control_characters_escaped() {
    let message = import_err("# Histogram\n000000 00\u{1b}[2J1\n");
    assert!(message.contains("\\u{1b}"), "{message}");
    assert!(!message.contains('\u{1b}'), "{message}");
}

#[test]
fn counts_no_run_reaches_are_refused_in_every_format() {
    // A histfile whose overflow line says i64::MAX, and an rtlab result of
    // three series of u64::MAX samples: both were stored, then their sums
    // overflowed (`rtlab import` exit 101 after storing the run, `report`
    // exit 101, `runs` 'integer overflow' for good).
    let histfile = "0 1\t0\n1 0\t4\n#Total:1 4\n#Histogram Overflows:9223372036854775807 0\n";
    let mut run = import_golden("cyclictest-2.40-no-hist.json");
    run.id = "20261126T000000Z-9".into();
    let template = run.series[0].clone();
    run.series = (0..3)
        .map(|i| {
            let mut series = template.clone();
            series.name = format!("cpu{i}");
            series.stats.samples = u64::MAX;
            series
        })
        .collect();
    let mut json = Vec::new();
    JsonExporter.write(&run, &mut json).unwrap();
    let json = String::from_utf8(json).unwrap();
    for (text, series) in [(histfile, "`thread0`"), (json.as_str(), "`cpu0`")] {
        let error = import_text(text, "big", None).unwrap_err();
        assert!(matches!(error, ImportError::Counts { .. }), "{error}");
        let message = error.to_string();
        assert!(message.starts_with("big: series "), "{message}");
        assert!(message.contains(series), "{message}");
        assert!(message.contains("2^53"), "{message}");
    }
    // The limit itself imports.
    run.series.truncate(1);
    run.series[0].stats.samples = import::MAX_IMPORTED_EVENTS - run.series[0].stats.missed;
    run.series[0].stats.dropped = 0;
    let mut json = Vec::new();
    JsonExporter.write(&run, &mut json).unwrap();
    let back = import_text(&String::from_utf8(json).unwrap(), "big", None).unwrap();
    assert_eq!(back.series[0].stats.samples, run.series[0].stats.samples);
}

#[test]
fn an_rtlab_result_with_a_label_longer_than_rtlab_takes_is_refused() {
    // `--load` and campaign names stop at 1024 characters; an imported run
    // stored 70,000-character ones and printed them whole.
    let mut run = import_golden("cyclictest-2.40-no-hist.json");
    run.id = "20261126T000000Z-7".into();
    run.loads.push(rtlab_core::result::LoadRecord {
        name: "cmd".into(),
        spec: "s".repeat(70_000),
        ..Default::default()
    });
    let mut json = Vec::new();
    JsonExporter.write(&run, &mut json).unwrap();
    let error = import_text(&String::from_utf8(json).unwrap(), "long.json", None).unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with("long.json: $.loads[0].spec: the label is 70000 characters long"),
        "{message}"
    );
    // At the limit it imports.
    run.loads[0].spec = "s".repeat(rtlab_core::text::MAX_LABEL_CHARS);
    let mut json = Vec::new();
    JsonExporter.write(&run, &mut json).unwrap();
    import_text(&String::from_utf8(json).unwrap(), "long.json", None).unwrap();
}

/// Block maxima a recorder keeps import; crafted ones (no recorder keeps
/// them) are refused naming the series and the JSON path, before a
/// worst-case estimate would fit them as the series' own.
#[test]
fn crafted_block_maxima_are_refused() {
    let run = recorded_run(&[latencies(5, 2000)], 1_000);
    let blocks = run.series[0].stats.block_maxima.clone().unwrap();
    assert_eq!(blocks.maxima_ns.len(), 125);
    let mut text = Vec::new();
    JsonExporter.write(&run, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    import_text(&text, "run.json", None).expect("a recorder's block maxima import");
    let crafted = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
        edit(&mut value["series"][0]["block_maxima"]);
        let err = import_text(&value.to_string(), "run.json", None)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("run.json: $.series[0].block_maxima: series `cpu0`: "),
            "{err}"
        );
        err
    };
    let zero = crafted(&|b| b["block_samples"] = 0.into());
    assert!(zero.contains("blocks of 0 samples"), "{zero}");
    let huge = crafted(&|b| b["block_samples"] = u64::MAX.into());
    assert!(
        huge.contains("more than the series' 2000 samples"),
        "{huge}"
    );
    let many = crafted(&|b| b["maxima_ns"] = vec![20_000u64; 4096].into());
    assert!(
        many.contains("more than the series' 2000 samples"),
        "{many}"
    );
    let max = crafted(&|b| b["maxima_ns"][3] = u64::MAX.into());
    assert!(
        max.contains("a block maximum of 18446744073709551615 ns outside"),
        "{max}"
    );
    let zero_max = crafted(&|b| b["maxima_ns"][0] = 0.into());
    assert!(
        zero_max.contains("a block maximum of 0 ns outside"),
        "{zero_max}"
    );
}
