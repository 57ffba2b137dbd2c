//! The exposition: the contract's families in text (checked by promtool)
//! and in protobuf, whose native histogram decodes back consistent with
//! the classic one.

mod common;

use common::{exposition_of, families_of, figures_of, text_of};
use prometheus_client::encoding::prometheus_protobuf::prometheus_data_model::{
    Histogram, MetricFamily,
};
use rtlab_monitor::{Format, CLASSIC_BUCKETS_S, NATIVE_SCHEMA};
use std::io::Write;
use std::process::{Command, Stdio};

/// Latencies (ns) with their missed deadlines: from 400 ns to 250 ms,
/// under the first classic bucket, on bounds and past the last one.
const CPU0: &[(u64, u64)] = &[
    (400, 0),
    (3_000, 0),
    (10_000, 0),
    (15_000, 0),
    (15_000, 0),
    (120_000, 0),
    (2_500_000, 2),
    (70_000_000, 69),
    (250_000_000, 249),
];
const CPU5: &[(u64, u64)] = &[(8_000, 0), (9_000, 0)];

fn family<'a>(families: &'a [MetricFamily], name: &str) -> &'a MetricFamily {
    families
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no family {name}"))
}

fn cpu_of(
    metric: &prometheus_client::encoding::prometheus_protobuf::prometheus_data_model::Metric,
) -> String {
    metric
        .label
        .iter()
        .find(|l| l.name == "cpu")
        .map(|l| l.value.clone())
        .unwrap()
}

#[test]
fn the_text_has_every_family_of_the_contract_but_the_native_one_and_passes_promtool() {
    let text = text_of(&exposition_of(figures_of(&[(0, CPU0), (5, CPU5)])));
    for family in [
        "# TYPE rtlab_wakeup_latency_seconds histogram",
        "# TYPE rtlab_wakeup_latency_window_max_seconds gauge",
        "# TYPE rtlab_wakeup_latency_max_seconds gauge",
        "# TYPE rtlab_wakeup_samples_total counter",
        "# TYPE rtlab_wakeup_missed_total counter",
        "# TYPE rtlab_monitor_measuring_seconds_total counter",
        "# TYPE rtlab_environment_info gauge",
        "# TYPE rtlab_monitor_cpu_seconds_total counter",
    ] {
        assert!(text.contains(family), "{family} missing:\n{text}");
    }
    assert!(!text.contains("native"), "{text}");
    for line in [
        r#"rtlab_wakeup_latency_seconds_bucket{cpu="0",le="1e-06"} 1"#,
        r#"rtlab_wakeup_latency_seconds_bucket{cpu="0",le="1e-05"} 3"#,
        r#"rtlab_wakeup_latency_seconds_bucket{cpu="0",le="0.1"} 8"#,
        r#"rtlab_wakeup_latency_seconds_bucket{cpu="0",le="+Inf"} 9"#,
        r#"rtlab_wakeup_latency_seconds_count{cpu="5"} 2"#,
        r#"rtlab_wakeup_samples_total{cpu="0"} 9"#,
        r#"rtlab_wakeup_missed_total{cpu="0"} 320"#,
        r#"rtlab_wakeup_latency_max_seconds{cpu="0"} 0.25"#,
        r#"rtlab_wakeup_latency_window_max_seconds{cpu="0"} 0.25"#,
        // (9 samples + 320 missed) deadlines of 1 ms.
        r#"rtlab_monitor_measuring_seconds_total{cpu="0"} 0.329"#,
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    let info = text
        .lines()
        .find(|l| l.starts_with("rtlab_environment_info{"))
        .unwrap();
    for label in [
        r#"kernel="6.1.0-rt""#,
        r#"preemption="rt""#,
        r#"hostname="bench-7""#,
        r#"dma_latency_held="false""#,
    ] {
        assert!(info.contains(label), "{info}");
    }
    assert!(info.ends_with(" 1"), "{info}");

    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (scripts/setup installs it)");
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Native bucket `index` of `schema` is (2^((index-1)/2^schema), 2^(index/2^schema)].
fn native_bounds(schema: i32, index: i32) -> (f64, f64) {
    let base = 2f64.powf(2f64.powi(-schema));
    (base.powi(index - 1), base.powi(index))
}

/// The positive buckets as (index, count), from spans and deltas.
fn native_buckets(h: &Histogram) -> Vec<(i32, u64)> {
    let mut buckets = Vec::new();
    let mut deltas = h.positive_delta.iter();
    let (mut index, mut count) = (0i32, 0i64);
    for span in &h.positive_span {
        index += span.offset;
        for _ in 0..span.length {
            count += deltas.next().expect("a delta per bucket of the spans");
            assert!(count >= 0);
            buckets.push((index, count as u64));
            index += 1;
        }
    }
    assert!(deltas.next().is_none(), "deltas beyond the spans");
    buckets
}

#[test]
fn the_protobuf_native_histogram_holds_the_same_samples_as_the_classic_one() {
    let exposition = exposition_of(figures_of(&[(0, CPU0), (5, CPU5)]));
    let families = families_of(&exposition.encode(Format::Protobuf).unwrap());
    let classic = family(&families, "rtlab_wakeup_latency_seconds");
    let native = family(&families, "rtlab_wakeup_latency_native_seconds");
    for name in [
        "rtlab_wakeup_latency_window_max_seconds",
        "rtlab_wakeup_samples_total",
        "rtlab_monitor_cpu_seconds_total",
        "rtlab_environment_info",
    ] {
        family(&families, name);
    }
    assert_eq!(classic.metric.len(), 2);
    assert_eq!(native.metric.len(), 2);
    for (c, n) in classic.metric.iter().zip(&native.metric) {
        assert_eq!(cpu_of(c), cpu_of(n));
        let (c, n) = (c.histogram.as_ref().unwrap(), n.histogram.as_ref().unwrap());
        // The classic family is classic only, the native one native only.
        assert!(c.positive_span.is_empty());
        assert!(n.bucket.is_empty());
        assert_eq!(n.schema, i32::from(NATIVE_SCHEMA));
        assert_eq!(c.sample_count, n.sample_count);
        assert!((c.sample_sum - n.sample_sum).abs() < 1e-12);
        let buckets = native_buckets(n);
        let native_total: u64 = buckets.iter().map(|b| b.1).sum::<u64>() + n.zero_count;
        assert_eq!(native_total, n.sample_count);
        // Each classic bound's cumulative count lies between the native
        // buckets wholly under it and those that start under it.
        for bucket in &c.bucket {
            let bound = bucket.upper_bound;
            let wholly: u64 = buckets
                .iter()
                .filter(|(i, _)| native_bounds(n.schema, *i).1 <= bound)
                .map(|b| b.1)
                .sum();
            let started: u64 = buckets
                .iter()
                .filter(|(i, _)| native_bounds(n.schema, *i).0 < bound)
                .map(|b| b.1)
                .sum();
            let cumulative = bucket.cumulative_count;
            assert!(
                wholly + n.zero_count <= cumulative && cumulative <= started + n.zero_count,
                "le={bound}: {wholly} <= {cumulative} <= {started}"
            );
        }
    }
    // CPU 0's buckets are where its samples are: 70 ms and 250 ms each
    // alone in theirs, above every classic bound but +Inf for 250 ms.
    let cpu0 = native.metric[0].histogram.as_ref().unwrap();
    let buckets = native_buckets(cpu0);
    for (latency_ns, _) in CPU0 {
        let v = *latency_ns as f64 / 1e9;
        let holder = buckets.iter().find(|(i, _)| {
            let (low, high) = native_bounds(cpu0.schema, *i);
            low < v && v <= high * (1.0 + 1e-12)
        });
        assert!(holder.is_some(), "no native bucket holds {v}");
    }
    assert_eq!(
        CLASSIC_BUCKETS_S.last().copied(),
        Some(0.1),
        "the contract's buckets end at 100 ms"
    );
}

#[test]
fn a_prometheus_asking_for_protobuf_gets_it_and_anyone_else_text() {
    // Prometheus 2.42 with --enable-feature=native-histograms, then without.
    let with_native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.1";
    let without = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert_eq!(Format::negotiate(Some(with_native)), Format::Protobuf);
    assert_eq!(Format::negotiate(Some(without)), Format::Text);
    assert_eq!(Format::negotiate(None), Format::Text);
    assert_eq!(Format::negotiate(Some("*/*")), Format::Text);
    // Refused with q=0, or another message or encoding.
    let refused = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
encoding=delimited;q=0";
    assert_eq!(Format::negotiate(Some(refused)), Format::Text);
    let text_encoding =
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text";
    assert_eq!(Format::negotiate(Some(text_encoding)), Format::Text);
    // A client that prefers text (a Prometheus whose scrape_protocols put
    // a text format first) gets text; an equal preference, protobuf.
    let prefers_text = "text/plain;version=0.0.4;q=0.9,application/vnd.google.protobuf;\
proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.2";
    assert_eq!(Format::negotiate(Some(prefers_text)), Format::Text);
    let prefers_openmetrics = "application/openmetrics-text;version=1.0.0,application/\
vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5";
    assert_eq!(Format::negotiate(Some(prefers_openmetrics)), Format::Text);
    let equal = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
encoding=delimited;q=0.5,text/plain;q=0.5";
    assert_eq!(Format::negotiate(Some(equal)), Format::Protobuf);
    // Prometheus 2.49 and later weigh their scrape_protocols in order.
    let weighted = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,application/\
openmetrics-text;version=0.0.1;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1";
    assert_eq!(Format::negotiate(Some(weighted)), Format::Protobuf);
    // A q that is not a number refuses its range.
    let bad_q = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
encoding=delimited;q=NaN";
    assert_eq!(Format::negotiate(Some(bad_q)), Format::Text);
}
