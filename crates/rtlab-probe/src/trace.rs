//! The ftrace `trace_marker`: a line written there lands in the kernel
//! trace next to the events that caused a latency, so `--break-at` can
//! point a tracer at the exact moment.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

const MARKERS: &[&str] = &[
    "/sys/kernel/tracing/trace_marker",
    "/sys/kernel/debug/tracing/trace_marker",
];

/// An open trace_marker, or the reason there is none.
pub enum TraceMarker {
    Open(File),
    Unavailable(String),
}

impl TraceMarker {
    /// Opens the marker of a mounted tracefs.
    pub fn open() -> TraceMarker {
        for path in MARKERS {
            if Path::new(path).exists() {
                return match OpenOptions::new().write(true).open(path) {
                    Ok(file) => TraceMarker::Open(file),
                    Err(e) => TraceMarker::Unavailable(format!("cannot open {path}: {e}")),
                };
            }
        }
        TraceMarker::Unavailable(
            "tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)".into(),
        )
    }

    /// Writes one line; returns whether it reached the trace.
    pub fn write(&mut self, line: &[u8]) -> bool {
        match self {
            TraceMarker::Open(file) => file.write_all(line).is_ok(),
            TraceMarker::Unavailable(_) => false,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            TraceMarker::Open(_) => "written to the ftrace trace_marker".into(),
            TraceMarker::Unavailable(why) => format!("no trace marker: {why}"),
        }
    }
}
