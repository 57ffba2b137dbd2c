//! Guards docs/schema/rtlab.run-1.json against drift: a realistic RunResult
//! must validate, documents broken in known ways must not, and the JSON must
//! round-trip through RunResult unchanged. Pure: reads only the schema file
//! and /proc + /sys (Environment::capture), never runs the binary.

use std::path::PathBuf;

use jsonschema::Validator;
use rtlab_core::env::Environment;
use rtlab_core::result::{
    BlockMaxima, BreakEvent, CampaignRef, Effective, ExecutiveReport, ExecutiveThread, GuardBucket,
    LoadRecord, NetMessageCounts, NetReport, NetServerCounters, NoiseCpu, NoiseReport, NoiseSource,
    OsnoiseSummary, Overflows, Percentiles, RunResult, RunStatus, Series, SeriesStats, Spike,
    ThreadSettings, TimelineRow, RUN_SCHEMA,
};
use rtlab_core::sched::{DeadlineParams, Policy, SchedParams};
use serde_json::{json, Value};

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/rtlab.run-1.json")
}

fn schema() -> Value {
    let path = schema_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

fn validator() -> Validator {
    let schema = schema();
    if let Err(e) = jsonschema::draft202012::meta::validate(&schema) {
        panic!("the schema is not a valid draft 2020-12 schema: {e}");
    }
    jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("compiling the schema: {e}"))
}

/// Every validation error as `path: message`.
fn errors(validator: &Validator, document: &Value) -> Vec<(String, String)> {
    validator
        .iter_errors(document)
        .map(|e| (e.instance_path().to_string(), e.to_string()))
        .collect()
}

fn assert_valid(validator: &Validator, document: &Value) {
    let errors = errors(validator, document);
    if !errors.is_empty() {
        let listing: Vec<String> = errors
            .iter()
            .map(|(path, message)| {
                format!("  {}: {message}", if path.is_empty() { "/" } else { path })
            })
            .collect();
        panic!(
            "document does not match rtlab.run-1.json ({} errors):\n{}\ndocument:\n{}",
            errors.len(),
            listing.join("\n"),
            serde_json::to_string_pretty(document).unwrap()
        );
    }
}

/// Asserts the document is invalid, with an error at `path` (so it fails for
/// the reason the test means, not another one).
fn assert_invalid_at(validator: &Validator, document: &Value, path: &str) {
    let errors = errors(validator, document);
    assert!(
        errors.iter().any(|(p, _)| p == path),
        "expected a validation error at {path}, got {errors:#?}"
    );
}

fn fifo(priority: u32) -> SchedParams {
    SchedParams {
        policy: Policy::Fifo,
        priority,
        deadline: None,
    }
}

/// A series that measured: a histfile limit with overflows, spikes, a max.
fn busy_series() -> Series {
    let top = vec![
        Spike {
            sample: 41_877,
            at_ns: 41_878_012_345,
            latency_ns: 1_203_456,
        },
        Spike {
            sample: 9_001,
            at_ns: 9_002_000_777,
            latency_ns: 87_654,
        },
        Spike {
            sample: 3,
            at_ns: 4_001_234,
            latency_ns: 12_001,
        },
    ];
    Series {
        name: "cpu0".into(),
        metric: "wakeup_latency".into(),
        cpu: Some(0),
        interval_ns: 1_000_000,
        thread: ThreadSettings {
            tid: 4242,
            pinned_cpu: Some(0),
            requested: fifo(90),
            actual: Some(fifo(90)),
            timer_slack_ns: Some(1),
        },
        stats: SeriesStats {
            samples: 41_878,
            missed: 1,
            dropped: 0,
            min_ns: 1_534,
            max_ns: 1_203_456,
            mean_ns: 2_871.412_345_678_9,
            stdev_ns: 6_012.345_678_901_234,
            percentiles_ns: Percentiles {
                p50: 2_463,
                p90: 3_119,
                p99: 5_887,
                p99_9: 14_015,
                p99_99: 87_615,
            },
            max_at: top.first().copied(),
            top,
            histogram_ns: vec![
                [1_534, 12],
                [2_047, 20_001],
                [3_119, 18_000],
                [1_204_223, 1],
            ],
            histogram_us: vec![[1, 12], [2, 38_001], [3, 3_864], [1_203, 1]],
            overflows: Some(Overflows {
                limit_us: 1_000,
                count: 1,
                first_samples: vec![41_877],
            }),
            block_maxima: Some(BlockMaxima {
                block_samples: 16,
                maxima_ns: vec![3_119, 2_047, 1_203_456, 2_463],
            }),
        },
    }
}

/// A series whose thread never produced a sample (and had its RT request
/// refused): every statistic at its empty value.
fn empty_series() -> Series {
    Series {
        name: "cpu1".into(),
        metric: "wakeup_latency".into(),
        cpu: Some(1),
        interval_ns: 1_000_500,
        thread: ThreadSettings {
            tid: 4243,
            pinned_cpu: Some(1),
            requested: fifo(90),
            actual: Some(SchedParams {
                policy: Policy::Other,
                priority: 0,
                deadline: None,
            }),
            timer_slack_ns: None,
        },
        stats: SeriesStats {
            missed: 3,
            ..SeriesStats::default()
        },
    }
}

/// A finished run stopped by `--break-at` on cpu0's largest sample.
fn realistic_result() -> RunResult {
    RunResult {
        schema: RUN_SCHEMA.into(),
        id: "20261121T193012Z-12345".into(),
        probe: "timer".into(),
        status: RunStatus::Break,
        started_at: "2026-11-21T19:30:12.123456Z".into(),
        ended_at: Some("2026-11-21T19:30:54.001002Z".into()),
        elapsed_ns: 41_878_012_345,
        command: [
            "rtlab",
            "measure",
            "timer",
            "--cpus",
            "0-1",
            "--break-at",
            "1ms",
        ]
        .map(String::from)
        .to_vec(),
        config: json!({
            "cpus": [0, 1],
            "interval_ns": 1_000_000,
            "distance_ns": 500,
            "length": { "duration_ns": 60_000_000_000u64 },
            "sched": { "policy": "fifo", "priority": 90 },
            "mode": "nanosleep",
            "break_at_ns": 1_000_000,
            "hist_max_us": 1_000
        }),
        effective: Effective {
            mlockall: true,
            dma_latency_us: Some(0),
            prefaulted_stack_bytes: 256 * 1024,
            system_changes: vec!["sysctl kernel.timer_migration=0".into()],
        },
        environment: Environment::capture(),
        series: vec![busy_series(), empty_series()],
        break_event: Some(BreakEvent {
            series: "cpu0".into(),
            threshold_ns: 1_000_000,
            latency_ns: 1_203_456,
            at_ns: 41_878_012_345,
            sample: 41_877,
            trace_marker: false,
            trace_note: "trace_marker not written: tracefs is not mounted".into(),
        }),
        loads: vec![LoadRecord {
            name: "vm".into(),
            spec: "vm:workers=4,bytes=256M".into(),
            work: [("bytes_touched".to_string(), 123_456_789u64)].into(),
            notes: vec!["capped to 2 workers of 256 MiB: 1.1 GiB available".into()],
        }],
        campaign: Some(CampaignRef {
            name: "quick".into(),
            execution: "20261121T193000Z-12345".into(),
            index: 3,
            total: 4,
            configuration: "promoted".into(),
            load: "vm".into(),
            repeat: 1,
        }),
        warnings: vec![
            "could not set fifo 90 (Operation not permitted): measuring with the policy the \
             thread already had"
                .into(),
        ],
        noise: None,
        net: None,
        traffic: None,
        executive: None,
        witness: Some(witness_report()),
    }
}

/// The witness's view of one spike: an RT thread, the usual interrupts.
fn witness_report() -> rtlab_core::result::WitnessReport {
    use rtlab_core::result::{ExplainedSpike, SourceCount, ThreadRan, WitnessReport};
    WitnessReport {
        period_ns: 50_000_000,
        windows: 200,
        cpu_ns: 80_000_000,
        spikes: vec![ExplainedSpike {
            series: "cpu0".into(),
            cpu: 0,
            sample: 4_000,
            at_ns: 4_000_000_000,
            latency_ns: 3_100_000,
            from_ns: 3_950_000_000,
            to_ns: 4_000_500_000,
            verdict: "RT thread rtl-hog (fifo 95) ran 3.02ms".into(),
            source: "proc".into(),
            interrupts: vec![SourceCount {
                name: "irq:LOC".into(),
                count: 50,
                usual: 50,
            }],
            softirqs: vec![],
            threads: vec![ThreadRan {
                name: "rtl-hog".into(),
                pid: 300,
                tid: 301,
                policy: "fifo".into(),
                priority: 95,
                ran_ns: 3_020_000,
                waited_ns: 0,
            }],
            steal_ns: 0,
            irq_ns: 0,
            softirq_ns: 0,
            probe_preempted: 1,
            rt_at_or_above: true,
        }],
        notes: vec!["no steal time: /proc/stat: gone".into()],
    }
}

/// A noise run: one CPU's events and their attribution, with the kernel
/// osnoise tracer's line beside them.
fn noise_result() -> RunResult {
    let mut series = busy_series();
    series.metric = "noise".into();
    series.interval_ns = 0;
    series.stats.missed = 0;
    RunResult {
        probe: "noise".into(),
        status: RunStatus::Complete,
        break_event: None,
        campaign: None,
        loads: Vec::new(),
        config: json!({ "cpus": [0], "threshold_ns": 1000 }),
        series: vec![series],
        noise: Some(NoiseReport {
            threshold_ns: 1_000,
            window_ns: 10_000_000,
            runtime_ns: 900_000_000,
            period_ns: 1_000_000_000,
            cpus: vec![NoiseCpu {
                cpu: 0,
                series: "cpu0".into(),
                measured_ns: 8_100_000_000,
                noise_ns: 1_234_567,
                noise_percent: 0.0152,
                max_single_ns: 201_000,
                events: 812,
                windows: 810,
                sources: vec![
                    NoiseSource {
                        source: "preempted".into(),
                        events: 40,
                        total_ns: 800_000,
                        min_ns: 19_000,
                        mean_ns: 20_000.5,
                        max_ns: 201_000,
                        counted: 40,
                    },
                    NoiseSource {
                        source: "irq:LOC".into(),
                        events: 0,
                        total_ns: 0,
                        min_ns: 0,
                        mean_ns: 0.0,
                        max_ns: 0,
                        counted: 2_000,
                    },
                ],
                osnoise: Some(OsnoiseSummary {
                    runtime_us: 8_100_000,
                    noise_us: 1_300,
                    cpu_available_percent: 99.98395,
                    max_noise_us: 210,
                    max_single_noise_us: 199,
                    hw: 3,
                    nmi: 0,
                    irq: 2_010,
                    softirq: 12,
                    thread: 41,
                }),
            }],
            osnoise_note: None,
        }),
        ..realistic_result()
    }
}

fn net_result() -> RunResult {
    let mut series = busy_series();
    series.name = "response".into();
    series.metric = "response_time".into();
    RunResult {
        probe: "net".into(),
        status: RunStatus::Complete,
        break_event: None,
        campaign: None,
        config: json!({ "mode": "exchange", "round_trips": 4 }),
        series: vec![series],
        net: Some(NetReport {
            target: "10.77.0.2:7700".into(),
            transport: "udp".into(),
            mode: "exchange".into(),
            round_trips: 4,
            payload_bytes: 64,
            interval_ns: 30_000_000,
            timeout_ns: 100_000_000,
            messages: NetMessageCounts {
                planned: 3,
                sent: 3,
                completed: 2,
                lost: 1,
                late_replies: 1,
                ..NetMessageCounts::default()
            },
            server: Some(NetServerCounters {
                received: 9,
                replied: 9,
                malformed: 2,
                ..NetServerCounters::default()
            }),
            timeline: vec![
                TimelineRow(0, 0, 12_000, Some(180_000)),
                TimelineRow(1, 30_000_000, 9_000, None),
                TimelineRow(2, 60_000_000, 11_000, Some(171_000)),
            ],
            timeline_complete: true,
            server_thread: None,
        }),
        ..realistic_result()
    }
}

#[test]
fn net_result_is_valid() {
    let validator = validator();
    let result = net_result();
    assert_valid(&validator, &to_json(&result));
    let mut document = to_json(&result);
    document["net"]["timeline"][1][3] = json!("lost");
    assert_invalid_at(&validator, &document, "/net/timeline/1/3");
    let mut document = to_json(&result);
    document["net"]["mode"] = json!("ping");
    assert_invalid_at(&validator, &document, "/net/mode");
}

#[test]
fn noise_result_is_valid() {
    let validator = validator();
    let mut result = noise_result();
    assert_valid(&validator, &to_json(&result));
    // Without the tracer: its note instead of its lines.
    let report = result.noise.as_mut().unwrap();
    report.cpus[0].osnoise = None;
    report.osnoise_note = Some("the kernel has no osnoise tracer".into());
    assert_valid(&validator, &to_json(&result));
    let mut document = to_json(&result);
    document["noise"]["cpus"][0]["sources"][0]["events"] = json!(-1);
    assert_invalid_at(&validator, &document, "/noise/cpus/0/sources/0/events");
}

fn to_json(result: &RunResult) -> Value {
    serde_json::to_value(result).expect("a RunResult always serializes")
}

#[test]
fn realistic_result_is_valid() {
    let document = to_json(&realistic_result());
    // The optional keys are exercised, not silently skipped.
    assert!(document.get("break_event").is_some());
    assert!(document.pointer("/loads/0/work/bytes_touched").is_some());
    assert!(document.pointer("/campaign/execution").is_some());
    assert!(document.pointer("/series/0/overflows").is_some());
    assert!(document.pointer("/series/1/overflows").is_none());
    assert!(document.pointer("/series/0/max_at/at_ns").is_some());
    assert!(document.pointer("/series/1/max_at").unwrap().is_null());
    assert!(document
        .pointer("/witness/spikes/0/threads/0/ran_ns")
        .is_some());
    assert_valid(&validator(), &document);
}

#[test]
fn running_snapshot_is_valid() {
    // What rtlab rewrites while measuring: no end, no break.
    let mut result = realistic_result();
    result.status = RunStatus::Running;
    result.ended_at = None;
    result.break_event = None;
    assert_valid(&validator(), &to_json(&result));
}

#[test]
fn deadline_threads_are_valid() {
    let deadline = SchedParams {
        policy: Policy::Deadline,
        priority: 0,
        deadline: Some(DeadlineParams {
            runtime_ns: 100_000,
            deadline_ns: 1_000_000,
            period_ns: 1_000_000,
        }),
    };
    let mut result = realistic_result();
    result.status = RunStatus::Complete;
    result.break_event = None;
    // Deadline threads float: no pinning, named by index.
    for (index, series) in result.series.iter_mut().enumerate() {
        series.name = format!("thread{index}");
        series.cpu = None;
        series.thread.pinned_cpu = None;
        series.thread.requested = deadline;
        series.thread.actual = Some(deadline);
    }
    result.series[1].thread.actual = None;
    let document = to_json(&result);
    assert!(document
        .pointer("/series/0/thread/actual/deadline")
        .is_some());
    assert_valid(&validator(), &document);
}

#[test]
fn captured_environment_alone_is_valid() {
    // The environment is captured from this machine, whatever it is: check
    // it against its own definition too, so a failure names it directly.
    let schema = schema();
    let standalone = json!({
        "$schema": schema["$schema"],
        "$defs": schema["$defs"],
        "$ref": "#/$defs/Environment",
    });
    let validator = jsonschema::draft202012::new(&standalone).unwrap();
    let environment = serde_json::to_value(Environment::capture()).unwrap();
    assert_valid(&validator, &environment);
}

#[test]
fn wrong_schema_version_is_invalid() {
    let validator = validator();
    let mut document = to_json(&realistic_result());
    document["schema"] = json!("rtlab.run/2");
    assert_invalid_at(&validator, &document, "/schema");
}

#[test]
fn series_without_missed_is_invalid() {
    let validator = validator();
    let mut document = to_json(&realistic_result());
    let removed = document["series"][0]
        .as_object_mut()
        .unwrap()
        .remove("missed");
    assert!(
        removed.is_some(),
        "the flattened stats put `missed` in the series"
    );
    assert_invalid_at(&validator, &document, "/series/0");
}

#[test]
fn unknown_key_in_series_is_invalid() {
    let validator = validator();
    let mut document = to_json(&realistic_result());
    document["series"][1]["p99_ns"] = json!(5_887);
    assert_invalid_at(&validator, &document, "/series/1");
}

#[test]
fn unknown_status_is_invalid() {
    let validator = validator();
    let mut document = to_json(&realistic_result());
    document["status"] = json!("done");
    assert_invalid_at(&validator, &document, "/status");
}

#[test]
fn inconsistent_documents_are_invalid() {
    let validator = validator();
    let good = to_json(&realistic_result());

    // A break without its event, and an event without a break.
    let mut document = good.clone();
    document.as_object_mut().unwrap().remove("break_event");
    assert_invalid_at(&validator, &document, "");
    let mut document = good.clone();
    document["status"] = json!("complete");
    assert_invalid_at(&validator, &document, "");

    // A finished run without an end.
    let mut document = good.clone();
    document["ended_at"] = Value::Null;
    assert_invalid_at(&validator, &document, "/ended_at");

    // A histogram bucket is a pair.
    let mut document = good.clone();
    document["series"][0]["histogram_us"][0] = json!([1, 12, 0]);
    assert_invalid_at(&validator, &document, "/series/0/histogram_us/0");

    // Priorities are 0-99.
    let mut document = good;
    document["series"][0]["thread"]["requested"]["priority"] = json!(120);
    assert_invalid_at(&validator, &document, "/series/0/thread/requested/priority");
}

/// Every key rtlab writes is pinned: renaming any of them (as a careless
/// refactor of a Rust field would) makes the document invalid.
#[test]
fn every_renamed_key_is_caught() {
    fn object_paths(node: &Value, path: &str, out: &mut Vec<String>) {
        // `config` is probe specific, `governors` is keyed by CPU name and
        // a load's `work` by counter name.
        if path == "/config" || path == "/environment/governors" || path.ends_with("/work") {
            return;
        }
        match node {
            Value::Object(map) => {
                out.push(path.to_string());
                for (key, child) in map {
                    object_paths(child, &format!("{path}/{key}"), out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    object_paths(child, &format!("{path}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let validator = validator();
    let mut uncaught = Vec::new();
    let mut checked = 0;
    for document in [
        to_json(&realistic_result()),
        to_json(&noise_result()),
        to_json(&net_result()),
    ] {
        let mut objects = Vec::new();
        object_paths(&document, "", &mut objects);
        for object in &objects {
            let keys: Vec<String> = document
                .pointer(object)
                .unwrap()
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            for key in keys {
                let mut renamed = document.clone();
                let map = renamed
                    .pointer_mut(object)
                    .unwrap()
                    .as_object_mut()
                    .unwrap();
                let value = map.remove(&key).unwrap();
                map.insert(format!("{key}_renamed"), value);
                checked += 1;
                if validator.is_valid(&renamed) {
                    uncaught.push(format!("{object}/{key}"));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} keys checked");
    assert!(
        uncaught.is_empty(),
        "renaming these keys went unnoticed: {uncaught:#?}"
    );
}

#[test]
fn json_round_trips_through_run_result() {
    // Caveat: jsonschema turns on serde_json's `float_roundtrip` for this
    // test binary only, so floats read back exactly here; rtlab itself parses
    // without it and may be off by one ULP on `mean_ns` / `stdev_ns`.
    let original = realistic_result();
    // As the exporter writes it: pretty-printed text.
    let text = serde_json::to_string_pretty(&original).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    let back: RunResult = serde_json::from_str(&text).expect("rtlab reads back what it writes");
    assert_eq!(to_json(&back), value);
    assert_eq!(value, to_json(&original));
}

/// Every property the schema declares says what it is.
#[test]
fn every_property_is_described() {
    fn walk(node: &Value, path: &str, missing: &mut Vec<String>) {
        match node {
            Value::Object(map) => {
                if let Some(Value::Object(properties)) = map.get("properties") {
                    for (key, property) in properties {
                        let described = property
                            .get("description")
                            .and_then(Value::as_str)
                            .is_some_and(|d| !d.trim().is_empty())
                            // A bare `$ref` takes the description of its target.
                            || property.get("$ref").is_some();
                        if !described {
                            missing.push(format!("{path}/properties/{key}"));
                        }
                    }
                }
                for (key, child) in map {
                    // Conditions restate keys described elsewhere.
                    if matches!(key.as_str(), "if" | "then" | "else" | "not") {
                        continue;
                    }
                    walk(child, &format!("{path}/{key}"), missing);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, &format!("{path}/{i}"), missing);
                }
            }
            _ => {}
        }
    }
    let schema = schema();
    let mut missing = Vec::new();
    walk(&schema, "", &mut missing);
    assert!(
        missing.is_empty(),
        "properties without a description: {missing:#?}"
    );
    // ... and the `$ref` targets are described themselves.
    for (name, def) in schema["$defs"].as_object().unwrap() {
        assert!(
            def.get("description").and_then(Value::as_str).is_some(),
            "$defs/{name} has no description"
        );
    }
}

/// A periodic run with what its executive learned: valid, read back the
/// same; a document of before the field reads as a run without it.
#[test]
fn executive_result_is_valid_and_older_documents_still_read() {
    let validator = validator();
    let mut result = realistic_result();
    result.probe = "periodic".into();
    let bucket = |from, below, guard_ns| GuardBucket {
        idle_from_ns: from,
        idle_below_ns: below,
        observations: 498,
        quantile_ns: Some(136_000),
        max_ns: 1_250_000,
        guard_ns,
        capped: 0,
    };
    result.executive = Some(ExecutiveReport {
        threads: vec![ExecutiveThread {
            role: "executive".into(),
            cpu: Some(1),
            guard_mode: "auto".into(),
            release_early_mode: "auto".into(),
            quantile: 0.995,
            spin_budget_percent: 25,
            guards: vec![bucket(3_000_000, Some(10_000_000), 230_000)],
            release_early: Some(bucket(0, None, 24_000)),
            capped: 0,
            spin_ns: 123_456_789,
            elapsed_ns: 5_000_000_000,
            spin_percent: 2.469,
        }],
    });
    let document = to_json(&result);
    assert_valid(&validator, &document);
    let back: RunResult = serde_json::from_value(document.clone()).unwrap();
    assert_eq!(back.executive, result.executive);
    let mut broken = document.clone();
    broken["executive"]["threads"][0]["guard_mode"] = json!("sometimes");
    assert_invalid_at(&validator, &broken, "/executive/threads/0/guard_mode");
    let mut older = document;
    older.as_object_mut().unwrap().remove("executive");
    let back: RunResult = serde_json::from_value(older).unwrap();
    assert!(back.executive.is_none());
    assert!(to_json(&back).get("executive").is_none());
}
