//! The start rendezvous of the measuring threads, with no way to leave a
//! thread parked behind: each thread sets itself up, reports (its set-up or
//! why it failed) on a channel, and waits on a channel of its own for the
//! common start. The starting thread waits for the reports with a timeout;
//! on any error (a thread that could not be spawned, a failed or panicking
//! set-up, a thread that does not report in time) it drops the start
//! channels, which wakes every waiting thread to leave, and joins them
//! before it returns the error. A [`Launch`] dropped without
//! [`Launch::go`] (a `?`, a panic) does the same.

use std::any::Any;
use std::io;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::{Builder, JoinHandle};
use std::time::{Duration, Instant};

/// How long threads told to leave get to end before they are left to end
/// on their own (a thread still in its set-up leaves when it reports).
pub const LEAVE_GRACE: Duration = Duration::from_secs(2);

/// The text of a panic's payload.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs a thread's set-up; a panic in it is an error with its message.
pub fn caught<R>(set_up: impl FnOnce() -> Result<R, String>) -> Result<R, String> {
    std::panic::catch_unwind(AssertUnwindSafe(set_up))
        .unwrap_or_else(|panic| Err(format!("its set-up panicked: {}", panic_message(&*panic))))
}

/// One thread's set-up report.
struct Ready<R> {
    index: usize,
    result: Result<R, String>,
}

/// A started thread's side of the rendezvous.
pub struct Gate<R> {
    index: usize,
    ready: mpsc::Sender<Ready<R>>,
    go: mpsc::Receiver<u64>,
}

impl<R> Gate<R> {
    /// Reports the thread's set-up, then waits for the common start (ns,
    /// `CLOCK_MONOTONIC`). None: the set-up failed, or the thread is told
    /// to leave.
    pub fn ready(self, result: Result<R, String>) -> Option<u64> {
        let Gate { index, ready, go } = self;
        let ok = result.is_ok();
        // The receiver may be gone (the start was given up): leave then.
        let _ = ready.send(Ready { index, result });
        drop(ready);
        if !ok {
            return None;
        }
        go.recv().ok()
    }
}

/// Threads started and waiting at the rendezvous.
pub struct Launch<T, R> {
    /// What each thread is, for messages (`the spinner of CPU 1`).
    names: Vec<String>,
    threads: Vec<JoinHandle<T>>,
    go: Vec<mpsc::Sender<u64>>,
    /// Dropped once every thread is spawned, so that threads gone without
    /// a report are seen.
    ready_tx: Option<mpsc::Sender<Ready<R>>>,
    ready_rx: mpsc::Receiver<Ready<R>>,
}

impl<T: Send + 'static, R: Send + 'static> Default for Launch<T, R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send + 'static, R: Send + 'static> Launch<T, R> {
    pub fn new() -> Self {
        let (ready_tx, ready_rx) = mpsc::channel();
        Launch {
            names: Vec::new(),
            threads: Vec::new(),
            go: Vec::new(),
            ready_tx: Some(ready_tx),
            ready_rx,
        }
    }

    /// Spawns `body`, which must call [`Gate::ready`] once set up and
    /// leave when it returns None.
    pub fn spawn(
        &mut self,
        name: String,
        builder: Builder,
        body: impl FnOnce(Gate<R>) -> T + Send + 'static,
    ) -> io::Result<()> {
        let Some(ready_tx) = self.ready_tx.as_ref() else {
            return Err(io::Error::other("the rendezvous is already under way"));
        };
        let (go_tx, go_rx) = mpsc::channel();
        let gate = Gate {
            index: self.threads.len(),
            ready: ready_tx.clone(),
            go: go_rx,
        };
        let handle = builder
            .spawn(move || body(gate))
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start {name}: {e}")))?;
        self.names.push(name);
        self.threads.push(handle);
        self.go.push(go_tx);
        Ok(())
    }

    /// Waits at most `timeout` for every thread's report: their set-ups in
    /// spawn order, or why not every thread is ready.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<Vec<R>, String> {
        self.ready_tx = None;
        let n = self.threads.len();
        let mut reports: Vec<Option<R>> = (0..n).map(|_| None).collect();
        let deadline = Instant::now() + timeout;
        let mut got = 0;
        while got < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.ready_rx.recv_timeout(left) {
                Ok(Ready {
                    index,
                    result: Ok(set_up),
                }) => {
                    if reports[index].replace(set_up).is_none() {
                        got += 1;
                    }
                }
                Ok(Ready {
                    index,
                    result: Err(why),
                }) => return Err(format!("{}: {why}", self.names[index])),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "{} did not get ready within {} s",
                        self.missing(&reports),
                        timeout.as_secs_f64()
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!(
                        "{} ended without getting ready",
                        self.missing(&reports)
                    ))
                }
            }
        }
        Ok(reports.into_iter().flatten().collect())
    }

    /// The names of the threads without a report.
    fn missing(&self, reports: &[Option<R>]) -> String {
        self.names
            .iter()
            .zip(reports)
            .filter(|(_, r)| r.is_none())
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Publishes the common start: the threads are on their own from here.
    pub fn go(mut self, start_ns: u64) -> Vec<JoinHandle<T>> {
        for go in self.go.drain(..) {
            // A thread gone since its report shows when it is joined.
            let _ = go.send(start_ns);
        }
        std::mem::take(&mut self.threads)
    }

    /// Gives the start up: tells every thread to leave and joins them
    /// (waiting at most `grace`); `why` is returned as the error, with the
    /// threads that had to be left running, if any.
    pub fn fail(mut self, why: String) -> anyhow::Error {
        let left = self.abandon(LEAVE_GRACE);
        if left.is_empty() {
            anyhow::anyhow!(why)
        } else {
            anyhow::anyhow!(
                "{why} ({} did not end within {} s of being told to leave; it leaves when its \
set-up ends)",
                left.join(", "),
                LEAVE_GRACE.as_secs()
            )
        }
    }

    /// Drops the start channels (every waiting thread leaves) and joins
    /// the threads that end within `grace`; returns the names of the
    /// others, which are left to end on their own.
    fn abandon(&mut self, grace: Duration) -> Vec<String> {
        self.go.clear();
        self.ready_tx = None;
        let threads = std::mem::take(&mut self.threads);
        let names = std::mem::take(&mut self.names);
        let running = join_within(threads, grace);
        running.into_iter().map(|i| names[i].clone()).collect()
    }
}

impl<T, R> Drop for Launch<T, R> {
    fn drop(&mut self) {
        self.go.clear();
        self.ready_tx = None;
        let _ = join_within(std::mem::take(&mut self.threads), LEAVE_GRACE);
    }
}

/// Joins the threads that end within `grace`; returns the indices of the
/// others (detached).
pub fn join_within<T>(threads: Vec<JoinHandle<T>>, grace: Duration) -> Vec<usize> {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && !threads.iter().all(JoinHandle::is_finished) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut running = Vec::new();
    for (index, thread) in threads.into_iter().enumerate() {
        if thread.is_finished() {
            let _ = thread.join();
        } else {
            running.push(index);
        }
    }
    running
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// What a test thread does in its set-up.
    #[derive(Clone, Copy)]
    enum SetUp {
        Ok,
        Fail,
        Panic,
        /// Waits this long before reporting.
        Slow(Duration),
    }

    /// Spawns a thread doing `set_up`; it returns Some(start) when started,
    /// None when it left; `left` counts the leavers.
    fn spawn(
        launch: &mut Launch<Option<u64>, usize>,
        index: usize,
        set_up: SetUp,
        left: &Arc<AtomicUsize>,
    ) {
        let left = Arc::clone(left);
        launch
            .spawn(format!("thread {index}"), Builder::new(), move |gate| {
                let report = caught(|| match set_up {
                    SetUp::Ok => Ok(index),
                    SetUp::Fail => Err("no such thing".to_string()),
                    SetUp::Panic => panic!("set-up of {index} broke"),
                    SetUp::Slow(delay) => {
                        std::thread::sleep(delay);
                        Ok(index)
                    }
                });
                let start = gate.ready(report);
                if start.is_none() {
                    left.fetch_add(1, Ordering::SeqCst);
                }
                start
            })
            .unwrap();
    }

    fn launch_of(set_ups: &[SetUp]) -> (Launch<Option<u64>, usize>, Arc<AtomicUsize>) {
        let left = Arc::new(AtomicUsize::new(0));
        let mut launch = Launch::new();
        for (index, &set_up) in set_ups.iter().enumerate() {
            spawn(&mut launch, index, set_up, &left);
        }
        (launch, left)
    }

    #[test]
    fn every_thread_gets_the_common_start() {
        let (mut launch, left) = launch_of(&[SetUp::Ok, SetUp::Ok, SetUp::Ok]);
        assert_eq!(
            launch.wait_ready(Duration::from_secs(10)),
            Ok(vec![0, 1, 2])
        );
        let threads = launch.go(12345);
        let starts: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(starts, vec![Some(12345); 3]);
        assert_eq!(left.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_failed_set_up_sends_the_others_away() {
        let (mut launch, left) = launch_of(&[SetUp::Ok, SetUp::Fail, SetUp::Ok]);
        let why = launch.wait_ready(Duration::from_secs(10)).unwrap_err();
        assert_eq!(why, "thread 1: no such thing");
        let err = launch.fail(why).to_string();
        assert_eq!(err, "thread 1: no such thing");
        // Joined before the error came back: all three left.
        assert_eq!(left.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_panic_in_a_set_up_is_an_error_not_a_deadlock() {
        let (mut launch, left) = launch_of(&[SetUp::Ok, SetUp::Panic]);
        let why = launch.wait_ready(Duration::from_secs(10)).unwrap_err();
        assert!(
            why.starts_with("thread 1: its set-up panicked: set-up of 1 broke"),
            "{why}"
        );
        drop(launch);
        assert_eq!(left.load(Ordering::SeqCst), 2);
    }

    /// Waits (10 s at most) until `left` threads have left.
    fn wait_left(left: &AtomicUsize, n: usize) {
        let give_up = Instant::now() + Duration::from_secs(10);
        while left.load(Ordering::SeqCst) < n && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(left.load(Ordering::SeqCst), n);
    }

    #[test]
    fn a_thread_that_does_not_report_in_time_is_an_error() {
        let (mut launch, left) = launch_of(&[
            SetUp::Ok,
            SetUp::Slow(Duration::from_millis(300)),
            SetUp::Ok,
        ]);
        let why = launch.wait_ready(Duration::from_millis(50)).unwrap_err();
        // On a loaded machine the others may be late too.
        assert!(why.contains("thread 1"), "{why}");
        assert!(why.ends_with(" did not get ready within 0.05 s"), "{why}");
        // Every thread leaves: the slow one once its set-up is done.
        let err = launch.fail(why.clone()).to_string();
        assert!(err.starts_with(&why), "{err}");
        wait_left(&left, 3);
    }

    #[test]
    fn a_thread_still_setting_up_after_the_grace_is_named() {
        let (mut launch, left) = launch_of(&[SetUp::Ok, SetUp::Slow(Duration::from_millis(400))]);
        let why = launch.wait_ready(Duration::from_millis(20)).unwrap_err();
        assert!(why.contains("thread 1"), "{why}");
        let left_running = launch.abandon(Duration::from_millis(20));
        assert!(
            left_running.contains(&"thread 1".to_string()),
            "{left_running:?}"
        );
        // It leaves by itself once set up.
        wait_left(&left, 2);
    }

    #[test]
    fn a_thread_that_cannot_be_spawned_sends_the_started_ones_away() {
        let (mut launch, left) = launch_of(&[SetUp::Ok, SetUp::Ok]);
        // A stack no machine can map.
        let err = launch
            .spawn(
                "thread 2".into(),
                Builder::new().stack_size(1 << 50),
                |gate| gate.ready(Ok(2)),
            )
            .unwrap_err();
        assert!(
            err.to_string().starts_with("cannot start thread 2"),
            "{err}"
        );
        // What `?` does in `start`: the launch is dropped.
        drop(launch);
        assert_eq!(left.load(Ordering::SeqCst), 2);
    }
}
