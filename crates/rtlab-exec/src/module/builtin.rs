//! The built-in modules: `mark`, `udp`, `wake`, `signal`.

use super::kinds::{signal_number, validate};
use super::model::Module;
use super::socket::connected_udp;
use crate::plan::model::{Event, ModuleDecl, DATA_BYTES};
use rtlab_probe::switch::{futex_wait_for, futex_wake};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Builds the module a declaration asks for (after [`validate`]).
pub fn build(decl: &ModuleDecl) -> Result<Box<dyn Module>, String> {
    validate(decl)?;
    Ok(match decl.kind.as_str() {
        "mark" => Box::new(Mark::default()),
        "udp" => Box::new(Udp::new(decl)?),
        "wake" => Box::new(Wake::new(decl)?),
        "signal" => Box::new(Signal::new(decl)?),
        "traffic" => super::traffic::plain_sender(decl)?,
        other => return Err(format!("module {}: no kind '{other}'", decl.name)),
    })
}

/// Only the timestamp: the dispatch error is the whole point.
#[derive(Default)]
struct Mark {
    fired: u64,
}

impl Module for Mark {
    fn fire(&mut self, _event: &Event, _now_ns: u64) {
        self.fired += 1;
    }
    fn counts(&self) -> (u64, u64) {
        (self.fired, 0)
    }
}

/// Sends a prepared datagram to `dest`: the event's 12 data bytes, then
/// the fire time (u64 little-endian, CLOCK_MONOTONIC ns), zeros to `size`
/// (64 by default). The seed of paper 002's ARTS traffic generator.
struct Udp {
    socket: UdpSocket,
    datagram: Vec<u8>,
    fired: u64,
    failed: u64,
}

impl Udp {
    fn new(decl: &ModuleDecl) -> Result<Udp, String> {
        let dest: SocketAddr = decl
            .setting("dest")
            .and_then(|d| d.parse().ok())
            .ok_or_else(|| format!("module {}: udp needs dest=ADDR:PORT", decl.name))?;
        let size = decl
            .setting("size")
            .map_or(Ok(64), str::parse::<usize>)
            .map_err(|e| format!("module {}: size: {e}", decl.name))?;
        let socket = connected_udp(dest)
            .map_err(|e| format!("module {}: cannot send to {dest}: {e}", decl.name))?;
        Ok(Udp {
            socket,
            datagram: vec![0u8; size.max(DATA_BYTES)],
            fired: 0,
            failed: 0,
        })
    }
}

impl Module for Udp {
    fn fire(&mut self, event: &Event, now_ns: u64) {
        self.datagram[..DATA_BYTES].copy_from_slice(&event.data);
        if self.datagram.len() >= DATA_BYTES + 8 {
            self.datagram[DATA_BYTES..DATA_BYTES + 8].copy_from_slice(&now_ns.to_le_bytes());
        }
        self.fired += 1;
        if self.socket.send(&self.datagram).is_err() {
            self.failed += 1;
        }
    }
    fn counts(&self) -> (u64, u64) {
        (self.fired, self.failed)
    }
}

/// Wakes a waiting thread through a futex (`via=futex`, the default) or an
/// eventfd (`via=eventfd`). The waiter is rtlab's own thread, which counts
/// the wake-ups it saw (the tests compare that count with the events).
struct Wake {
    via: Via,
    fired: u64,
    stop: Arc<AtomicBool>,
    /// Wake-ups the waiter counted (read by the tests).
    #[cfg_attr(not(test), allow(dead_code))]
    seen: Arc<AtomicU64>,
    waiter: Option<JoinHandle<()>>,
}

enum Via {
    Futex(Arc<AtomicU32>),
    Eventfd(Arc<OwnedFd>),
}

impl Wake {
    fn new(decl: &ModuleDecl) -> Result<Wake, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicU64::new(0));
        let (via, waiter) = match decl.setting("via").unwrap_or("futex") {
            "eventfd" => {
                // SAFETY: plain eventfd(2); the descriptor is owned below.
                let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
                if fd < 0 {
                    return Err(format!(
                        "module {}: eventfd: {}",
                        decl.name,
                        std::io::Error::last_os_error()
                    ));
                }
                // SAFETY: a fresh descriptor nobody else owns.
                let fd = Arc::new(unsafe { OwnedFd::from_raw_fd(fd) });
                let (stop, seen, wait_fd) = (Arc::clone(&stop), Arc::clone(&seen), Arc::clone(&fd));
                let waiter = std::thread::Builder::new()
                    .name("rtlab-wake-waiter".into())
                    .spawn(move || eventfd_waiter(&wait_fd, &stop, &seen))
                    .map_err(|e| format!("module {}: {e}", decl.name))?;
                (Via::Eventfd(fd), waiter)
            }
            _ => {
                let word = Arc::new(AtomicU32::new(0));
                let (stop, seen, wait_word) =
                    (Arc::clone(&stop), Arc::clone(&seen), Arc::clone(&word));
                let waiter = std::thread::Builder::new()
                    .name("rtlab-wake-waiter".into())
                    .spawn(move || futex_waiter(&wait_word, &stop, &seen))
                    .map_err(|e| format!("module {}: {e}", decl.name))?;
                (Via::Futex(word), waiter)
            }
        };
        Ok(Wake {
            via,
            fired: 0,
            stop,
            seen,
            waiter: Some(waiter),
        })
    }
}

fn futex_waiter(word: &AtomicU32, stop: &AtomicBool, seen: &AtomicU64) {
    // The word starts at 0: a wake-up before this thread first ran counts too.
    let mut last = 0;
    while !stop.load(Ordering::Acquire) {
        // Bounded waits so that the stop flag is seen.
        futex_wait_for(word, last, 100_000_000);
        let now = word.load(Ordering::Acquire);
        if now != last {
            seen.fetch_add(u64::from(now.wrapping_sub(last)), Ordering::Relaxed);
            last = now;
        }
    }
}

fn eventfd_waiter(fd: &OwnedFd, stop: &AtomicBool, seen: &AtomicU64) {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    while !stop.load(Ordering::Acquire) {
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, 100) } <= 0 {
            continue;
        }
        let mut count = 0u64;
        // SAFETY: an eventfd read takes exactly 8 bytes.
        let n = unsafe { libc::read(fd.as_raw_fd(), (&mut count as *mut u64).cast(), 8) };
        if n == 8 {
            seen.fetch_add(count, Ordering::Relaxed);
        }
    }
}

impl Module for Wake {
    fn fire(&mut self, _event: &Event, _now_ns: u64) {
        self.fired += 1;
        match &self.via {
            Via::Futex(word) => {
                word.fetch_add(1, Ordering::Release);
                futex_wake(word, 1);
            }
            Via::Eventfd(fd) => {
                let one = 1u64;
                // SAFETY: an eventfd write takes exactly 8 bytes.
                unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
            }
        }
    }
    fn counts(&self) -> (u64, u64) {
        (self.fired, 0)
    }
}

impl Wake {
    /// Wake-ups the waiter saw.
    #[cfg(test)]
    fn seen(&self) -> u64 {
        self.seen.load(Ordering::Relaxed)
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Via::Futex(word) = &self.via {
            word.fetch_add(1, Ordering::Release);
            futex_wake(word, 1);
        }
        if let Some(waiter) = self.waiter.take() {
            let _ = waiter.join();
        }
    }
}

/// Sends `signal` (USR1 by default) to process `pid`.
struct Signal {
    pid: libc::pid_t,
    signal: i32,
    fired: u64,
    failed: u64,
}

impl Signal {
    fn new(decl: &ModuleDecl) -> Result<Signal, String> {
        let pid = decl
            .setting("pid")
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("module {}: signal needs pid=N", decl.name))?;
        let signal = signal_number(decl.setting("signal").unwrap_or("USR1"))
            .ok_or_else(|| format!("module {}: unknown signal", decl.name))?;
        // Probe the target once now (signal 0): a wrong pid fails here,
        // not at every event.
        // SAFETY: kill with signal 0 only checks.
        if unsafe { libc::kill(pid, 0) } != 0 {
            return Err(format!(
                "module {}: cannot signal process {pid}: {}",
                decl.name,
                std::io::Error::last_os_error()
            ));
        }
        Ok(Signal {
            pid,
            signal,
            fired: 0,
            failed: 0,
        })
    }
}

impl Module for Signal {
    fn fire(&mut self, _event: &Event, _now_ns: u64) {
        self.fired += 1;
        // SAFETY: plain kill(2).
        if unsafe { libc::kill(self.pid, self.signal) } != 0 {
            self.failed += 1;
        }
    }
    fn counts(&self) -> (u64, u64) {
        (self.fired, self.failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(kind: &str, settings: &[(&str, &str)]) -> ModuleDecl {
        ModuleDecl {
            id: 0,
            name: "m".into(),
            kind: kind.into(),
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn udp_sends_the_event_data_and_the_fire_time() {
        let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
        let dest = receiver.local_addr().unwrap().to_string();
        let mut udp = build(&decl("udp", &[("dest", &dest), ("size", "32")])).unwrap();
        let event = Event {
            data: *b"hello world!",
            ..Event::default()
        };
        udp.fire(&event, 0x1122_3344);
        let mut buf = [0u8; 64];
        let n = receiver.recv(&mut buf).unwrap();
        assert_eq!(n, 32);
        assert_eq!(&buf[..12], b"hello world!");
        assert_eq!(
            u64::from_le_bytes(buf[12..20].try_into().unwrap()),
            0x1122_3344
        );
        assert_eq!(udp.counts(), (1, 0));
    }

    #[test]
    fn wake_reaches_its_waiter_through_a_futex_and_an_eventfd() {
        for via in ["futex", "eventfd"] {
            let mut wake = Wake::new(&decl("wake", &[("via", via)])).unwrap();
            for _ in 0..5 {
                wake.fire(&Event::default(), 0);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while wake.seen() < 5 && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            assert_eq!(wake.seen(), 5, "{via}");
        }
    }

    #[test]
    fn signal_refuses_a_process_that_is_not_there_and_signals_one_that_is() {
        let err = build(&decl("signal", &[("pid", "999999999")]))
            .err()
            .unwrap();
        assert!(err.contains("cannot signal process 999999999"), "{err}");
        let me = std::process::id().to_string();
        // CONT to ourselves: harmless.
        let mut signal = build(&decl("signal", &[("pid", &me), ("signal", "CONT")])).unwrap();
        signal.fire(&Event::default(), 0);
        assert_eq!(signal.counts(), (1, 0));
    }
}
