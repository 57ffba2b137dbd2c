//! Run results built by hand for the store's tests.
#![allow(dead_code)]

use std::collections::BTreeMap;

use rtlab_core::env::Environment;
use rtlab_core::result::{
    BlockMaxima, BreakEvent, CampaignRef, Effective, LoadRecord, Overflows, Percentiles, RunResult,
    RunStatus, Series, SeriesStats, Spike, ThreadSettings, RUN_SCHEMA,
};
use rtlab_core::sched::{Policy, SchedParams};
use serde_json::{json, Value};

pub fn fifo(priority: u32) -> SchedParams {
    SchedParams {
        policy: Policy::Fifo,
        priority,
        deadline: None,
    }
}

/// A series that measured: overflows, three spikes, a max. `scale`
/// multiplies its latencies so runs differ.
pub fn busy_series(name: &str, cpu: usize, scale: u64) -> Series {
    let top = vec![
        Spike {
            sample: 41_877,
            at_ns: 41_878_012_345,
            latency_ns: 1_203_456 * scale,
        },
        Spike {
            sample: 9_001,
            at_ns: 9_002_000_777,
            latency_ns: 87_654 * scale,
        },
        Spike {
            sample: 3,
            at_ns: 4_001_234,
            latency_ns: 12_001 * scale,
        },
    ];
    Series {
        name: name.into(),
        metric: "wakeup_latency".into(),
        cpu: Some(cpu),
        interval_ns: 1_000_000,
        thread: ThreadSettings {
            tid: 4242 + cpu as i32,
            pinned_cpu: Some(cpu),
            requested: fifo(90),
            actual: Some(fifo(90)),
            timer_slack_ns: Some(1),
        },
        stats: SeriesStats {
            samples: 41_878,
            missed: 1,
            dropped: 0,
            min_ns: 1_534,
            max_ns: 1_203_456 * scale,
            mean_ns: 2_871.412_345_678_9,
            stdev_ns: 6_012.345_678_901_234,
            percentiles_ns: Percentiles {
                p50: 2_463,
                p90: 3_119,
                p99: 5_887,
                p99_9: 14_015 * scale,
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
                maxima_ns: vec![3_119, 2_047, 1_203_456 * scale, 2_463],
            }),
        },
    }
}

/// A series whose thread never produced a sample.
pub fn empty_series(name: &str, cpu: usize) -> Series {
    Series {
        name: name.into(),
        metric: "wakeup_latency".into(),
        cpu: Some(cpu),
        interval_ns: 1_000_500,
        thread: ThreadSettings {
            tid: 4300,
            pinned_cpu: Some(cpu),
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

pub fn environment(host: &str) -> Environment {
    Environment {
        hostname: Some(host.into()),
        kernel_release: Some("6.12.0-rt".into()),
        preempt_model: "rt".into(),
        cpu_count: Some(2),
        governors: BTreeMap::from([("cpu0".into(), "performance".into())]),
        rtlab_version: rtlab_core::VERSION.into(),
        captured_at: "2026-11-21T19:30:12Z".into(),
        ..Environment::default()
    }
}

/// A complete run on `host` that started at `started_at`, with two series
/// (one busy, one empty).
pub fn run(id: &str, started_at: &str, host: &str) -> RunResult {
    RunResult {
        schema: RUN_SCHEMA.into(),
        id: id.into(),
        probe: "timer".into(),
        status: RunStatus::Complete,
        started_at: started_at.into(),
        ended_at: Some(started_at.replace("12.", "54.")),
        elapsed_ns: 41_878_012_345,
        command: ["rtlab", "measure", "timer", "--cpus", "0-1"]
            .map(String::from)
            .to_vec(),
        config: json!({
            "cpus": [0, 1],
            "interval_ns": 1_000_000,
            "length": { "duration_ns": 60_000_000_000u64 },
            "sched": { "policy": "fifo", "priority": 90 },
            "mode": "nanosleep",
        }),
        effective: Effective {
            mlockall: true,
            dma_latency_us: Some(0),
            prefaulted_stack_bytes: 256 * 1024,
            system_changes: vec!["sysctl kernel.timer_migration=0".into()],
        },
        environment: environment(host),
        series: vec![busy_series("cpu0", 0, 1), empty_series("cpu1", 1)],
        break_event: None,
        loads: Vec::new(),
        campaign: None,
        noise: None,
        net: None,
        traffic: None,
        witness: None,
        executive: None,
        warnings: Vec::new(),
    }
}

/// A run of a campaign execution at `index` of `total`.
pub fn campaign_run(id: &str, started_at: &str, execution: &str, index: usize) -> RunResult {
    let mut result = run(id, started_at, "rig1");
    result.campaign = Some(CampaignRef {
        name: "quick".into(),
        execution: execution.into(),
        index,
        total: 4,
        configuration: if index.is_multiple_of(2) {
            "promoted"
        } else {
            "stock"
        }
        .into(),
        load: "vm".into(),
        repeat: 1,
    });
    result.loads = vec![LoadRecord {
        name: "vm".into(),
        spec: "vm:workers=4,bytes=256M".into(),
        work: [("bytes_touched".to_string(), 123_456_789u64)].into(),
        notes: vec!["capped to 2 workers of 256 MiB: 1.1 GiB available".into()],
    }];
    result
}

/// Every optional part filled: loads, campaign, spikes, a break, warnings.
pub fn realistic_result() -> RunResult {
    let mut result = campaign_run(
        "20261121T193012Z-12345-3",
        "2026-11-21T19:30:12.123456Z",
        "20261121T193000Z-12345",
        3,
    );
    result.status = RunStatus::Break;
    result.break_event = Some(BreakEvent {
        series: "cpu0".into(),
        threshold_ns: 1_000_000,
        latency_ns: 1_203_456,
        at_ns: 41_878_012_345,
        sample: 41_877,
        trace_marker: false,
        trace_note: "trace_marker not written: tracefs is not mounted".into(),
    });
    result.command.extend(["--break-at".into(), "1ms".into()]);
    result.config["break_at_ns"] = json!(1_000_000);
    result.warnings = vec![
        "could not set fifo 90 (Operation not permitted): measuring with the policy the thread \
         already had"
            .into(),
    ];
    result
}

pub fn to_json(result: &RunResult) -> Value {
    serde_json::to_value(result).expect("a RunResult always serializes")
}

/// Asserts two results are the same document.
pub fn assert_same(got: &RunResult, expected: &RunResult) {
    assert_eq!(
        to_json(got),
        to_json(expected),
        "run {} read back differs from what was saved",
        expected.id
    );
}
