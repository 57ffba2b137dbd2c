//! What the monitor's tests share: an aggregator fed known samples, and
//! the exposition over it.

#![allow(dead_code)]

use prometheus_client::encoding::prometheus_protobuf::prometheus_data_model::MetricFamily;
use rtlab_core::env::Environment;
use rtlab_monitor::aggregate::{Aggregator, CpuFigures};
use rtlab_monitor::exposition::environment_labels;
use rtlab_monitor::measure::CpuInput;
use rtlab_monitor::{Exposition, Format};
use rtlab_probe::recorder::Sample;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

pub const INTERVAL_NS: u64 = 1_000_000;

/// The figures of CPUs given as (cpu, [(latency ns, missed)]), each
/// sample 1 ms after the one before, as the aggregator counts them.
pub fn figures_of(cpus: &[(usize, &[(u64, u64)])]) -> Arc<Vec<CpuFigures>> {
    let mut inputs = Vec::new();
    let mut producers = Vec::new();
    for &(cpu, _) in cpus {
        let (producer, consumer) = rtrb::RingBuffer::new(1024);
        producers.push(producer);
        inputs.push(CpuInput {
            cpu,
            consumer,
            dropped: Arc::new(AtomicU64::new(0)),
        });
    }
    let aggregator = Aggregator::spawn(inputs, INTERVAL_NS, 60_000_000_000).unwrap();
    for (producer, &(_, samples)) in producers.iter_mut().zip(cpus) {
        for (i, &(latency_ns, missed)) in samples.iter().enumerate() {
            let sample = Sample {
                at_ns: i as u64 * INTERVAL_NS,
                latency_ns,
                missed,
            };
            producer.push(sample).unwrap();
        }
    }
    // Gone producers end the aggregator once their rings are drained.
    drop(producers);
    aggregator.finish()
}

pub fn exposition_of(figures: Arc<Vec<CpuFigures>>) -> Exposition {
    let env = Environment {
        hostname: Some("bench-7".into()),
        kernel_release: Some("6.1.0-rt".into()),
        preempt_model: "rt".into(),
        ..Environment::default()
    };
    Exposition::new(figures, environment_labels(&env))
}

pub fn text_of(exposition: &Exposition) -> String {
    String::from_utf8(exposition.encode(Format::Text).unwrap()).unwrap()
}

/// Decodes a delimited protobuf exposition.
pub fn families_of(mut bytes: &[u8]) -> Vec<MetricFamily> {
    use prost::Message;
    let mut families = Vec::new();
    while !bytes.is_empty() {
        families.push(MetricFamily::decode_length_delimited(&mut bytes).unwrap());
    }
    families
}
