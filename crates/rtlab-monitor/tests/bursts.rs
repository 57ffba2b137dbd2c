//! The measuring threads keep their bursts: every deadline planned lies in
//! its CPU's burst of `--duty` on the second's grid (staggered per CPU),
//! and every complete burst accounts for all its deadlines, met or missed.

use rtlab_monitor::config::BURST_PERIOD_NS;
use rtlab_monitor::{measure, MonitorConfig};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn every_deadline_is_in_its_burst_and_every_complete_burst_is_accounted() {
    let last = std::thread::available_parallelism().map_or(1, |n| n.get()) - 1;
    let cpus = if last == 0 { vec![0] } else { vec![0, last] };
    let config = MonitorConfig {
        interval_ns: 2_000_000,
        duty_percent: 10.0,
        ..MonitorConfig::new(cpus)
    };
    assert_eq!(config.validate(), Ok(()));
    let stop = Arc::new(AtomicBool::new(false));
    let (measuring, mut inputs) = measure::start(&config, &stop).unwrap();
    // Rings hold 2 s of samples: stop within them, after a few bursts.
    std::thread::sleep(Duration::from_millis(1_700));
    stop.store(true, Ordering::Relaxed);
    for thread in measuring.threads {
        thread.join().unwrap();
    }
    let burst_ns = config.burst_ns();
    let per_burst = config.deadlines_per_burst();
    assert_eq!(per_burst, 50);
    for (index, input) in inputs.iter_mut().enumerate() {
        assert_eq!(input.dropped.load(Ordering::Relaxed), 0);
        let offset = config.burst_offset_ns(index);
        // Deadlines met or missed per burst.
        let mut bursts: BTreeMap<u64, u64> = BTreeMap::new();
        while let Ok(sample) = input.consumer.pop() {
            let since = sample
                .at_ns
                .checked_sub(offset)
                .expect("after the CPU's offset");
            let (burst, phase) = (since / BURST_PERIOD_NS, since % BURST_PERIOD_NS);
            let last_swallowed = phase + sample.missed * config.interval_ns;
            assert!(
                phase >= config.interval_ns && last_swallowed <= burst_ns,
                "CPU {}: a deadline at {phase} ns (+{} missed) outside the burst of {burst_ns} ns",
                input.cpu,
                sample.missed
            );
            *bursts.entry(burst).or_default() += 1 + sample.missed;
        }
        assert!(bursts.len() >= 2, "CPU {}: {bursts:?}", input.cpu);
        // The last burst may have been cut by the stop; the others not.
        let (&last_burst, _) = bursts.iter().next_back().unwrap();
        for (burst, deadlines) in &bursts {
            if *burst != last_burst {
                assert_eq!(*deadlines, per_burst, "CPU {} burst {burst}", input.cpu);
            }
        }
    }
}
