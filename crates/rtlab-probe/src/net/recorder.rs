//! The net probe's recorder: drains the client's ring of finished messages
//! into the three series, the per-message timeline and the samples CSV.

use super::client::{MessageRecord, LOST};
use rtlab_core::record::{LiveStats, SeriesRecorder};
use rtlab_core::result::{SeriesStats, TimelineRow};
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Messages the result's timeline keeps (the samples CSV keeps them all).
pub const TIMELINE_LIMIT: u64 = 100_000;
const DRAIN_PERIOD: Duration = Duration::from_millis(5);

struct State {
    /// response, response_from_send, send_lag.
    series: [SeriesRecorder; 3],
    timeline: Vec<TimelineRow>,
    timeline_complete: bool,
}

pub struct NetRecorder {
    state: Arc<Mutex<State>>,
    handle: JoinHandle<io::Result<()>>,
}

/// What the recorder hands back at the end.
pub struct Recorded {
    pub stats: Vec<SeriesStats>,
    pub timeline: Vec<TimelineRow>,
    pub timeline_complete: bool,
    /// Why the samples CSV is incomplete, when it is: the measurement is
    /// kept whatever happened to the file.
    pub csv_error: Option<String>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl NetRecorder {
    pub fn spawn(
        consumer: rtrb::Consumer<MessageRecord>,
        dropped: Arc<AtomicU64>,
        csv: Option<Box<dyn Write + Send>>,
    ) -> io::Result<NetRecorder> {
        let state = Arc::new(Mutex::new(State {
            series: [
                SeriesRecorder::new(None),
                SeriesRecorder::new(None),
                SeriesRecorder::new(None),
            ],
            timeline: Vec::new(),
            timeline_complete: true,
        }));
        let shared = Arc::clone(&state);
        let handle = std::thread::Builder::new()
            .name("rtlab-recorder".into())
            .spawn(move || record_loop(consumer, &dropped, &shared, csv))?;
        Ok(NetRecorder { state, handle })
    }

    pub fn live(&self) -> Vec<LiveStats> {
        lock(&self.state)
            .series
            .iter()
            .map(SeriesRecorder::live)
            .collect()
    }

    pub fn stats(&self) -> Vec<SeriesStats> {
        lock(&self.state)
            .series
            .iter()
            .map(SeriesRecorder::stats)
            .collect()
    }

    /// Waits until the client's ring is abandoned and drained.
    pub fn finish(self) -> io::Result<Recorded> {
        let written = self
            .handle
            .join()
            .map_err(|_| io::Error::other("the recorder thread panicked"))?;
        let mut state = lock(&self.state);
        let mut timeline = std::mem::take(&mut state.timeline);
        timeline.sort_unstable_by_key(|row| row.0);
        // Messages lost between the client and the recorder have no row.
        let dropped = state.series[0].live().dropped > 0;
        Ok(Recorded {
            stats: state.series.iter().map(SeriesRecorder::stats).collect(),
            timeline,
            timeline_complete: state.timeline_complete && !dropped,
            csv_error: written
                .err()
                .map(|e| format!("the samples CSV is incomplete: {e}")),
        })
    }
}

fn record_loop(
    mut consumer: rtrb::Consumer<MessageRecord>,
    dropped: &AtomicU64,
    state: &Mutex<State>,
    mut csv: Option<Box<dyn Write + Send>>,
) -> io::Result<()> {
    if let Some(out) = csv.as_mut() {
        writeln!(
            out,
            "index,t_ns,send_lag_ns,response_ns,response_from_send_ns,lost"
        )?;
    }
    let mut csv_error = None;
    loop {
        let done = consumer.is_abandoned();
        {
            let mut state = lock(state);
            while let Ok(m) = consumer.pop() {
                record(&mut state, &m);
                if let (Some(out), None) = (csv.as_mut(), &csv_error) {
                    let written = if m.response_ns == LOST {
                        writeln!(out, "{},{},{},,,1", m.index, m.at_ns, m.send_lag_ns)
                    } else {
                        writeln!(
                            out,
                            "{},{},{},{},{},0",
                            m.index, m.at_ns, m.send_lag_ns, m.response_ns, m.from_send_ns
                        )
                    };
                    if let Err(e) = written {
                        csv_error = Some(e);
                    }
                }
            }
            let lost_in_ring = dropped.load(Ordering::Relaxed);
            for series in &mut state.series {
                series.set_dropped(lost_in_ring);
            }
        }
        if done {
            break;
        }
        std::thread::sleep(DRAIN_PERIOD);
    }
    if let Some(mut out) = csv {
        out.flush()?;
    }
    csv_error.map_or(Ok(()), Err)
}

fn record(state: &mut State, m: &MessageRecord) {
    let [response, from_send, send_lag] = &mut state.series;
    send_lag.record(m.send_lag_ns, m.at_ns, 0);
    if m.response_ns == LOST {
        response.add_missed(1);
        from_send.add_missed(1);
    } else {
        response.record(m.response_ns, m.at_ns, 0);
        from_send.record(m.from_send_ns, m.at_ns, 0);
    }
    if m.index < TIMELINE_LIMIT {
        let response = (m.response_ns != LOST).then_some(m.response_ns);
        state
            .timeline
            .push(TimelineRow(m.index, m.at_ns, m.send_lag_ns, response));
    } else {
        state.timeline_complete = false;
    }
}
