//! The cyclictest histfile, checked byte for byte against files written by
//! hand from cyclictest's print_hist() rules.

use rtlab_core::env::Environment;
use rtlab_core::result::{
    Effective, Overflows, RunResult, RunStatus, Series, SeriesStats, ThreadSettings, RUN_SCHEMA,
};
use rtlab_core::sched::{Policy, SchedParams};
use rtlab_report::export::{Exporter, HistfileExporter};

fn series(name: &str, bins: &[[u64; 2]], min_ns: u64, max_ns: u64, overflows: Overflows) -> Series {
    let sched = SchedParams {
        policy: Policy::Fifo,
        priority: 90,
        deadline: None,
    };
    Series {
        name: name.into(),
        metric: "wakeup_latency".into(),
        cpu: Some(0),
        interval_ns: 1_000_000,
        thread: ThreadSettings {
            tid: 1,
            pinned_cpu: Some(0),
            requested: sched,
            actual: Some(sched),
            timer_slack_ns: Some(1),
        },
        stats: SeriesStats {
            samples: bins.iter().map(|b| b[1]).sum(),
            min_ns,
            max_ns,
            histogram_us: bins.to_vec(),
            overflows: Some(overflows),
            ..SeriesStats::default()
        },
    }
}

fn result(series: Vec<Series>) -> RunResult {
    RunResult {
        schema: RUN_SCHEMA.into(),
        id: "test".into(),
        probe: "timer".into(),
        status: RunStatus::Complete,
        started_at: String::new(),
        ended_at: None,
        elapsed_ns: 0,
        command: vec![],
        config: serde_json::Value::Null,
        effective: Effective::default(),
        environment: Environment::default(),
        series,
        break_event: None,
        loads: Vec::new(),
        campaign: None,
        noise: None,
        net: None,
        traffic: None,
        witness: None,
        executive: None,
        warnings: vec![],
    }
}

fn render(exporter: &HistfileExporter, result: &RunResult) -> String {
    let mut out = Vec::new();
    exporter.write(result, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn two_threads_with_summary_column() {
    let run = result(vec![
        series(
            "cpu0",
            &[[0, 1], [2, 3], [4, 1], [7, 2]],
            800,
            7_900,
            Overflows {
                limit_us: 5,
                count: 2,
                first_samples: vec![3, 6],
            },
        ),
        series(
            "cpu1",
            &[[1, 4], [3, 1]],
            1_200,
            3_500,
            Overflows {
                limit_us: 5,
                count: 0,
                first_samples: vec![],
            },
        ),
    ]);
    let exporter = HistfileExporter {
        hist_max_us: 5,
        all_threads_column: true,
    };
    assert_eq!(
        render(&exporter, &run),
        include_str!("golden/two_threads_histofall.hist")
    );
}

#[test]
fn overflow_list_is_capped_like_cyclictest() {
    let run = result(vec![series(
        "cpu0",
        &[[0, 2], [1, 1], [5, 4]],
        0,
        5_999,
        Overflows {
            limit_us: 2,
            count: 4,
            first_samples: vec![1, 3],
        },
    )]);
    let exporter = HistfileExporter {
        hist_max_us: 2,
        all_threads_column: true,
    };
    assert_eq!(
        render(&exporter, &run),
        include_str!("golden/one_thread_capped.hist")
    );
}
