//! Runs one target: its regression seeds, its corpus, then mutated
//! inputs, each under catch_unwind with the allocation guard armed.

use crate::alloc;
use crate::mutate::Mutator;
use crate::rng::{fnv1a, Rng};
use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, Instant};

/// Inputs are cut to 256 KiB: room for 64 Ki-character strings of
/// multi-byte characters, small enough for thousands of runs a second.
pub const MAX_INPUT: usize = 256 << 10;

/// The seed when `RTLAB_FUZZ_SEED` is not set: CI runs the same inputs
/// every time, so a failure there is a change's, not chance's.
const DEFAULT_SEED: u64 = 0x7274_6c61_6266_757a;

/// Distinct failures after which a run stops: enough for a report.
const MAX_FAILURES: usize = 20;

/// Oracle calls the minimizer may make per failure, and bytes it may
/// feed in all (a 70 KB input costs its parser 70 KB a call): bounds in
/// work, not time, so that a minimized input is the same on any machine.
const MINIMIZE_CALLS: usize = 1500;
const MINIMIZE_BYTES: usize = 4 << 20;

/// Regression seeds longer than this are not mutated (see `run_here`).
const BIG_REGRESSION: usize = 16 << 10;

/// Accepted mutants kept to mutate further.
const POOL: usize = 256;

/// A parser and its properties on one input (see [`Target::oracle`]).
pub type Oracle = fn(&[u8]) -> Result<Verdict, String>;
/// Seeds computed from the others (see [`Target::derive`]).
pub type Derive = fn(&[Vec<u8>]) -> Vec<Vec<u8>>;

/// What a parser made of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    Rejected,
}

/// A parser under test.
pub struct Target {
    /// Names the folders `fuzz/{corpus,regressions,pending}/NAME/`.
    pub name: &'static str,
    /// Runs the parser on an input: Ok(what it made of it), or Err(the
    /// property that broke: a round trip that differs, ...). Panics are
    /// caught by the harness.
    pub oracle: Oracle,
    /// Seeds computed from the corpus (binary plans from text ones).
    pub derive: Option<Derive>,
    /// Applied to half the mutants: repairs what a format checks before
    /// anything else (a binary plan's event count against its size), so
    /// that mutations reach the checks behind it.
    pub fixup: Option<fn(&mut Vec<u8>)>,
    /// Iterations when `RTLAB_FUZZ_ITERS` is not set.
    pub iterations: u64,
}

/// An input that panicked, broke a property or asked for too much memory.
#[derive(Debug, Clone)]
pub struct Failure {
    /// `panic`, `property` or `allocation`.
    pub kind: &'static str,
    pub message: String,
    /// Where it panicked (`file:line:column`), for a panic.
    pub location: Option<String>,
    /// Where the input came from: `iteration N`, `corpus FILE`, `regression FILE`.
    pub origin: String,
    /// The (minimized) input.
    pub file: PathBuf,
}

impl Failure {
    /// Failures with the same key are the same bug.
    fn key(&self) -> String {
        match (&self.location, self.kind) {
            (Some(location), _) => location.clone(),
            (None, "property") => self
                .message
                .chars()
                .filter(|c| !c.is_ascii_digit())
                .take(80)
                .collect(),
            // The allocator cannot say who asked: one per target.
            (None, "allocation") => "allocation".into(),
            (None, kind) => format!("{kind}: {}", self.message),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.kind, self.origin, self.message)?;
        if let Some(location) = &self.location {
            write!(f, " at {location}")?;
        }
        write!(f, "; input: {}", self.file.display())
    }
}

/// What a run did.
#[derive(Debug)]
pub struct Summary {
    pub target: &'static str,
    pub seed: u64,
    pub iterations: u64,
    pub accepted: u64,
    pub rejected: u64,
    /// New failures: the test fails.
    pub failures: Vec<Failure>,
    /// Pending seeds (`fuzz/pending/NAME/`, known bugs being fixed by
    /// their owners) and what they still do: None once fixed.
    pub pending: Vec<(PathBuf, Option<Failure>)>,
    /// Mutants that failed as a pending seed does (the same bug).
    pub known_hits: u64,
    /// Seeds (corpus, regressions, derived), and how many of them parse.
    pub seeds: usize,
    pub seeds_accepted: usize,
    pub slowest: Duration,
}

impl Summary {
    /// Fails the test when anything new failed, listing every failure
    /// with the seed to reproduce it.
    pub fn assert_clean(&self) {
        println!("{self}");
        if !self.failures.is_empty() {
            let list: Vec<String> = self.failures.iter().map(|f| format!("  {f}")).collect();
            panic!(
                "fuzz target {}: {} failure(s) (seed {:#x}, {} iterations; rerun with \
                 RTLAB_FUZZ_SEED={:#x} RTLAB_FUZZ_ITERS={}):\n{}\nAdd each input to \
                 fuzz/regressions/{}/ once fixed (docs/fuzz.md).",
                self.target,
                self.failures.len(),
                self.seed,
                self.iterations,
                self.seed,
                self.iterations,
                list.join("\n"),
                self.target
            );
        }
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "fuzz {}: {} seeds ({} parse), seed {:#x}, {} iterations, {} accepted, {} rejected, {} failure(s), slowest input {:.1} ms",
            self.target,
            self.seeds,
            self.seeds_accepted,
            self.seed,
            self.iterations,
            self.accepted,
            self.rejected,
            self.failures.len(),
            self.slowest.as_secs_f64() * 1e3
        )?;
        for (file, failure) in &self.pending {
            match failure {
                Some(failure) => writeln!(
                    f,
                    "  pending {}: still fails: {} {}{}",
                    file.display(),
                    failure.kind,
                    failure.message,
                    failure
                        .location
                        .as_ref()
                        .map_or(String::new(), |l| format!(" at {l}"))
                )?,
                None => writeln!(
                    f,
                    "  pending {}: passes now: move it to fuzz/regressions/{}/",
                    file.display(),
                    self.target
                )?,
            }
        }
        if self.known_hits > 0 {
            writeln!(
                f,
                "  {} mutant(s) failed as a pending seed does (not counted)",
                self.known_hits
            )?;
        }
        Ok(())
    }
}

thread_local! {
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    static CAUGHT: RefCell<Option<(String, Option<String>)>> = const { RefCell::new(None) };
}

/// Panics of fuzz inputs are recorded, not printed (thousands would
/// drown the output); every other panic goes to the usual hook.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !CAPTURING.with(Cell::get) {
                return previous(info);
            }
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(a panic without a message)".into());
            let location = info.location().map(|l| {
                let at = format!("{}:{}:{}", l.file(), l.line(), l.column());
                match caller_in_workspace(l.file()) {
                    Some(caller) => format!("{at}, called from {caller}"),
                    None => at,
                }
            });
            CAUGHT.with(|c| *c.borrow_mut() = Some((message, location)));
        }));
    });
}

/// For a panic inside the standard library or a dependency (a Display
/// that fails under `to_string`, an `unwrap` in a crate), the first frame
/// in rtlab's own crates: without it every such panic would look alike.
fn caller_in_workspace(file: &str) -> Option<String> {
    if !(file.starts_with("/rustc/") || file.contains("/.cargo/registry/")) {
        return None;
    }
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    trace
        .lines()
        .filter_map(|line| line.trim().strip_prefix("at "))
        .map(|at| at.trim_start_matches("./"))
        .find(|at| at.contains("crates/rtlab") && !at.contains("rtlab-fuzz"))
        .map(|at| match at.find("crates/rtlab") {
            Some(i) => at[i..].to_string(),
            None => at.to_string(),
        })
}

/// A failure, before its input is written anywhere.
struct Fault {
    kind: &'static str,
    message: String,
    location: Option<String>,
}

impl Fault {
    fn key(&self) -> String {
        Failure {
            kind: self.kind,
            message: self.message.clone(),
            location: self.location.clone(),
            origin: String::new(),
            file: PathBuf::new(),
        }
        .key()
    }
}

fn run_one(oracle: Oracle, input: &[u8]) -> Result<Verdict, Fault> {
    CAPTURING.with(|c| c.set(true));
    alloc::arm(true);
    let result = panic::catch_unwind(AssertUnwindSafe(|| oracle(input)));
    alloc::arm(false);
    CAPTURING.with(|c| c.set(false));
    let refused = alloc::take_refused();
    let fault = match result {
        Ok(Ok(verdict)) => match refused {
            None => return Ok(verdict),
            Some(size) => Fault {
                kind: "allocation",
                message: format!(
                    "asked for {size} bytes at once (limit {})",
                    crate::ALLOC_LIMIT
                ),
                location: None,
            },
        },
        Ok(Err(property)) => Fault {
            kind: "property",
            message: property,
            location: None,
        },
        Err(_) => {
            let (message, location) = CAUGHT
                .with(|c| c.borrow_mut().take())
                .unwrap_or_else(|| ("(panic not captured)".into(), None));
            Fault {
                kind: "panic",
                message,
                location,
            }
        }
    };
    Err(fault)
}

/// Removes chunks of `input` while it still fails the same way.
fn minimize(oracle: Oracle, input: &[u8], key: &str) -> Vec<u8> {
    let mut best = input.to_vec();
    let (mut calls, mut bytes) = (0, 0);
    let spent = |calls: usize, bytes: usize| calls >= MINIMIZE_CALLS || bytes >= MINIMIZE_BYTES;
    let mut chunk = best.len().div_ceil(2);
    while chunk >= 1 && !spent(calls, bytes) {
        let mut progressed = false;
        let mut at = 0;
        while at < best.len() && !spent(calls, bytes) {
            let end = (at + chunk).min(best.len());
            let candidate: Vec<u8> = best[..at].iter().chain(&best[end..]).copied().collect();
            calls += 1;
            bytes += candidate.len();
            match run_one(oracle, &candidate) {
                Err(fault) if fault.key() == key => {
                    best = candidate;
                    progressed = true;
                }
                _ => at += chunk,
            }
        }
        if !progressed {
            if chunk == 1 {
                break;
            }
            chunk = chunk.div_ceil(2);
        }
    }
    best
}

fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// `target/fuzz/NAME/`, in the cargo target directory of the running test:
/// where a target's failing inputs go (and any scratch file of its own).
pub fn out_dir(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            // target/debug/deps/fuzz-HASH
            let exe = std::env::current_exe().ok()?;
            Some(exe.ancestors().nth(3)?.to_path_buf())
        })
        .unwrap_or_else(|| repo_root().join("target"));
    target.join("fuzz").join(name)
}

/// The files of a folder, sorted (none if it does not exist).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let text = text.trim();
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={text}: expected a whole number")))
}

/// Set in a child process to the target it runs.
const CHILD_ENV: &str = "RTLAB_FUZZ_CHILD";
/// In a child: the one input to run (a pending seed), and nothing else.
const REPLAY_ENV: &str = "RTLAB_FUZZ_REPLAY";
/// In a child: pending seeds that kill the process, not to run there.
const LETHAL_ENV: &str = "RTLAB_FUZZ_LETHAL";
/// In a child: iterations not to run (their mutants kill the process as
/// a pending seed does).
const SKIP_ENV: &str = "RTLAB_FUZZ_SKIP";

/// Fuzzes a target and fails the calling test on anything new. The test
/// must be named `fuzz_NAME`: the work runs in a child process (this test
/// binary again, for that test alone), so that an input that kills the
/// process (a refused allocation aborts, a stack overflow is fatal) is
/// reported with its file instead of ending every other test.
pub fn fuzz(target: &Target) {
    match std::env::var(CHILD_ENV) {
        Ok(name) if name == target.name => match std::env::var_os(REPLAY_ENV) {
            Some(path) => replay(target, Path::new(&path)),
            None => run(target).assert_clean(),
        },
        _ => supervise(target),
    }
}

/// In a child: runs one input, says what it did on stdout.
fn replay(target: &Target, path: &Path) {
    install_panic_hook();
    let oracle = target.oracle;
    let input = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let result = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || run_one(oracle, &input).err())
        .expect("spawning the replay thread")
        .join()
        .unwrap_or_else(|e| panic::resume_unwind(e));
    match result {
        None => println!("replay: passes"),
        Some(f) => println!("replay: {} {} at {:?}", f.kind, f.message, f.location),
    }
}

/// The last lines of a child's output: what it said before dying.
fn tail(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// What a dying child said: the refusal or overflow, and the first frame
/// in rtlab's crates of the backtrace Rust prints on an allocation failure.
fn cause(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let said = text.lines().filter(|l| {
        l.contains("refused an allocation")
            || l.contains("has overflowed its stack")
            || l.contains("memory allocation of")
    });
    let frame = frame(stderr).map(|at| format!("in {at}"));
    let parts: Vec<String> = said.map(str::to_string).chain(frame).collect();
    if parts.is_empty() {
        tail(stderr, 12)
    } else {
        parts.join("; ")
    }
}

/// How long one input may run before the child is taken for hung and
/// killed (`RTLAB_FUZZ_HANG_SECS`): no timing is asserted, but a parser
/// that never returns must not hang CI.
const HANG_SECS: u64 = 600;

/// Runs a child to its end like `Command::output`, killing it when the
/// input in flight (`in_flight`, rewritten before each input) has not
/// changed for [`HANG_SECS`].
fn watched(
    command: &mut std::process::Command,
    in_flight: &Path,
) -> std::io::Result<std::process::Output> {
    use std::io::Read;
    use std::process::Stdio;
    let hang = Duration::from_secs(env_number("RTLAB_FUZZ_HANG_SECS").unwrap_or(HANG_SECS));
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let changed = || std::fs::metadata(in_flight).and_then(|m| m.modified()).ok();
    let (mut last, mut since) = (changed(), Instant::now());
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(200));
        let now = changed();
        if now != last {
            (last, since) = (now, Instant::now());
        } else if since.elapsed() > hang {
            let _ = child.kill();
            let status = child.wait()?;
            let file = save(
                in_flight.parent().unwrap_or(in_flight),
                "hang",
                &std::fs::read(in_flight).unwrap_or_default(),
            );
            let mut stdout = stdout.join().unwrap_or_default();
            stdout.extend(
                format!(
                    "  HANG: one input ran over {} s; killed; the input: {}\n",
                    hang.as_secs(),
                    file.display()
                )
                .into_bytes(),
            );
            return Ok(std::process::Output {
                status,
                stdout,
                stderr: stderr.join().unwrap_or_default(),
            });
        }
    };
    Ok(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// The first frame in rtlab's crates of a dying child's backtrace.
fn frame(stderr: &[u8]) -> Option<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("at "))
        .find(|at| at.contains("crates/rtlab") && !at.contains("rtlab-fuzz"))
        .map(|at| at.trim_start_matches("./").to_string())
}

/// How a child ended, when not by exiting.
fn death(status: std::process::ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    status.signal().map(|signal| {
        let name = match signal {
            libc_signal::SIGABRT => "SIGABRT: an abort, e.g. a refused allocation",
            libc_signal::SIGSEGV => "SIGSEGV: e.g. a stack overflow",
            libc_signal::SIGKILL => "SIGKILL: e.g. the out-of-memory killer",
            _ => "a signal",
        };
        format!("killed by signal {signal} ({name})")
    })
}

/// The few signal numbers [`death`] names (Linux).
mod libc_signal {
    pub const SIGABRT: i32 = 6;
    pub const SIGKILL: i32 = 9;
    pub const SIGSEGV: i32 = 11;
}

/// In the test process: runs the target's pending seeds one child each
/// (finding those that kill), then the target in one child.
fn supervise(target: &Target) {
    let name = target.name;
    // /proc/self/exe runs this very binary even after a rebuild replaced
    // (deleted) its file during a long run.
    let exe = if Path::new("/proc/self/exe").exists() {
        PathBuf::from("/proc/self/exe")
    } else {
        std::env::current_exe().expect("the test binary's path")
    };
    let child = || {
        let mut command = std::process::Command::new(&exe);
        command
            .args([
                &format!("fuzz_{name}"),
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, name)
            // The backtrace of an allocation failure names the parser.
            .env("RUST_BACKTRACE", "1");
        command
    };
    let in_flight = out_dir(name).join("in-flight");
    let run_child = |command: &mut std::process::Command| {
        watched(command, &in_flight).unwrap_or_else(|e| panic!("running {}: {e}", exe.display()))
    };
    // Pending seeds that kill the process, and the frame that asked.
    let mut lethal = Vec::new();
    let mut lethal_frames = Vec::new();
    for path in files(&repo_root().join("fuzz/pending").join(name)) {
        let out = run_child(child().env(REPLAY_ENV, &path));
        if let Some(how) = death(out.status) {
            println!(
                "  pending {}: kills the process ({how}): {}",
                path.display(),
                cause(&out.stderr)
            );
            lethal.push(path.display().to_string());
            lethal_frames.extend(frame(&out.stderr));
        }
    }
    // A mutant that dies where a pending seed does is the same bug: the
    // child runs again, skipping it (at most a few times).
    let mut skip: Vec<String> = Vec::new();
    let out = loop {
        let out = run_child(
            child()
                .env(LETHAL_ENV, lethal.join("\n"))
                .env(SKIP_ENV, skip.join(",")),
        );
        let known = death(out.status).is_some()
            && frame(&out.stderr).is_some_and(|f| lethal_frames.contains(&f));
        let iteration = std::fs::read_to_string(out_dir(name).join("in-flight.iteration"));
        match iteration {
            Ok(i) if known && skip.len() < 5 => skip.push(i.trim().to_string()),
            _ => break out,
        }
    };
    // The child's report, without its test runner's lines.
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let runner = line.is_empty()
            || line.starts_with("running ")
            || line.starts_with("test result:")
            || (line.starts_with("test fuzz_") && !line.contains("fuzz "));
        if !runner {
            println!(
                "{}",
                line.strip_prefix(&format!("test fuzz_{name} ... "))
                    .unwrap_or(line)
            );
        }
    }
    if !skip.is_empty() {
        println!(
            "  mutant(s) of iteration(s) {} killed the process where a pending seed does (not counted)",
            skip.join(", ")
        );
    }
    if out.status.success() {
        return;
    }
    if let Some(how) = death(out.status) {
        let input = std::fs::read(&in_flight).unwrap_or_default();
        let file = save(&out_dir(name), "lethal", &input);
        panic!(
            "fuzz target {name}: the fuzz process was {how} running the input now in {}:\n{}",
            file.display(),
            cause(&out.stderr)
        );
    }
    panic!("fuzz target {name} failed:\n{}", tail(&out.stderr, 40));
}

/// Runs a target here with the seeds of `fuzz/` and the seed and
/// iteration count of the environment (`RTLAB_FUZZ_SEED`,
/// `RTLAB_FUZZ_ITERS`), and says what it found.
pub fn run(target: &Target) -> Summary {
    let seed =
        env_number("RTLAB_FUZZ_SEED").unwrap_or(DEFAULT_SEED) ^ fnv1a(target.name.as_bytes());
    let iterations = env_number("RTLAB_FUZZ_ITERS").unwrap_or(target.iterations);
    run_in(target, &repo_root().join("fuzz"), seed, iterations)
}

/// Runs a target with the seeds under `root` (`corpus/NAME/`,
/// `regressions/NAME/`, `pending/NAME/`), on a thread with the 8 MiB
/// stack of a main thread (the stack the parsers get in rtlab itself).
pub fn run_in(target: &Target, root: &Path, seed: u64, iterations: u64) -> Summary {
    install_panic_hook();
    let name = target.name;
    let oracle = target.oracle;
    let derive = target.derive;
    let fixup = target.fixup;
    let root = root.to_path_buf();
    std::thread::Builder::new()
        .name(format!("fuzz-{name}"))
        .stack_size(8 << 20)
        .spawn(move || run_here(name, &root, oracle, derive, fixup, seed, iterations))
        .expect("spawning the fuzz thread")
        .join()
        .unwrap_or_else(|e| panic::resume_unwind(e))
}

fn run_here(
    name: &'static str,
    root: &Path,
    oracle: Oracle,
    derive: Option<Derive>,
    fixup: Option<fn(&mut Vec<u8>)>,
    seed: u64,
    iterations: u64,
) -> Summary {
    let out = out_dir(name);
    std::fs::create_dir_all(&out).unwrap_or_else(|e| panic!("creating {}: {e}", out.display()));
    let in_flight = out.join("in-flight");
    // A previous run's, if it died: only this run's may be read.
    let _ = std::fs::remove_file(out.join("in-flight.iteration"));
    // Printed first: if the process dies (a refused allocation aborts, a
    // stack overflow kills), this file holds the input that did it.
    println!(
        "fuzz {name}: seed {seed:#x}, {iterations} iterations; the input in flight is kept in {}",
        in_flight.display()
    );
    let run_saved = |input: &[u8]| {
        let _ = std::fs::write(&in_flight, input);
        run_one(oracle, input)
    };

    let mut summary = Summary {
        target: name,
        seed,
        iterations,
        accepted: 0,
        rejected: 0,
        failures: Vec::new(),
        pending: Vec::new(),
        known_hits: 0,
        seeds: 0,
        seeds_accepted: 0,
        slowest: Duration::ZERO,
    };
    // Keys of the failures met so far: each bug is reported once.
    let mut seen: HashSet<String> = HashSet::new();
    let read = |path: &Path| {
        std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
    };

    // Known bugs first: what they fail with is not news below. Those that
    // kill the process were run alone by the parent (see `supervise`).
    let lethal = std::env::var(LETHAL_ENV).unwrap_or_default();
    let lethal: Vec<&str> = lethal.split('\n').collect();
    for path in files(&root.join("pending").join(name)) {
        if lethal.contains(&path.display().to_string().as_str()) {
            continue;
        }
        let fault = run_saved(&read(&path)).err();
        if let Some(fault) = &fault {
            seen.insert(fault.key());
        }
        let failure = fault.map(|f| Failure {
            kind: f.kind,
            message: f.message,
            location: f.location,
            origin: format!("pending {}", path.display()),
            file: path.clone(),
        });
        summary.pending.push((path, failure));
    }
    let known = seen.clone();

    // Regression seeds and corpus seeds must pass as they are.
    let mut seeds = Vec::new();
    for (kind, dir) in [("regression", "regressions"), ("corpus", "corpus")] {
        for path in files(&root.join(dir).join(name)) {
            let input = read(&path);
            let result = run_saved(&input);
            summary.seeds += 1;
            summary.seeds_accepted += usize::from(matches!(result, Ok(Verdict::Accepted)));
            if let Err(fault) = result {
                seen.insert(fault.key());
                summary.failures.push(Failure {
                    kind: fault.kind,
                    message: fault.message,
                    location: fault.location,
                    origin: format!("{kind} {}", path.display()),
                    file: path.clone(),
                });
            }
            // A 64 Ki-char regression seed is replayed, not mutated: every
            // mutant of it would cost what it does (the mutator makes
            // such runs from small seeds anyway).
            if kind == "corpus" || input.len() <= BIG_REGRESSION {
                seeds.push(input);
            }
        }
    }
    if let Some(derive) = derive {
        for input in derive(&seeds) {
            let result = run_saved(&input);
            summary.seeds += 1;
            summary.seeds_accepted += usize::from(matches!(result, Ok(Verdict::Accepted)));
            if let Err(fault) = result {
                let file = save(&out, "derived", &input);
                seen.insert(fault.key());
                summary.failures.push(Failure {
                    kind: fault.kind,
                    message: fault.message,
                    location: fault.location,
                    origin: "a seed derived from the corpus".into(),
                    file,
                });
            }
            seeds.push(input);
        }
    }

    assert!(
        !seeds.is_empty(),
        "fuzz target {name}: no seeds in {}",
        root.join("corpus").join(name).display()
    );
    let mutator = Mutator::from_seeds(&seeds, MAX_INPUT);
    let mut rng = Rng::new(seed);
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut slowest = Vec::new();
    let iteration_file = out.join("in-flight.iteration");
    let skip: Vec<u64> = std::env::var(SKIP_ENV)
        .unwrap_or_default()
        .split(',')
        .filter_map(|i| i.parse().ok())
        .collect();
    for iteration in 0..iterations {
        if summary.failures.len() >= MAX_FAILURES {
            break;
        }
        let base = if !pool.is_empty() && rng.one_in(3) {
            rng.pick(&pool)
        } else {
            rng.pick(&seeds)
        };
        let mut input = mutator.mutate(&mut rng, base, &seeds);
        if let Some(fixup) = fixup {
            if rng.one_in(2) {
                fixup(&mut input);
            }
        }
        if skip.contains(&iteration) {
            summary.known_hits += 1;
            continue;
        }
        let _ = std::fs::write(&iteration_file, iteration.to_string());
        let started = Instant::now();
        let result = run_saved(&input);
        if started.elapsed() > summary.slowest {
            summary.slowest = started.elapsed();
            slowest = input.clone();
        }
        match result {
            Ok(Verdict::Accepted) => {
                summary.accepted += 1;
                if pool.len() < POOL {
                    pool.push(input);
                } else {
                    let i = rng.below(POOL);
                    pool[i] = input;
                }
            }
            Ok(Verdict::Rejected) => summary.rejected += 1,
            Err(fault) => {
                let key = fault.key();
                if known.contains(&key) {
                    summary.known_hits += 1;
                    continue;
                }
                if !seen.insert(key.clone()) {
                    continue;
                }
                let small = minimize(oracle, &input, &key);
                let file = save(&out, fault.kind, &small);
                summary.failures.push(Failure {
                    kind: fault.kind,
                    message: fault.message,
                    location: fault.location,
                    origin: format!(
                        "iteration {iteration}, {} bytes minimized to {}",
                        input.len(),
                        small.len()
                    ),
                    file,
                });
            }
        }
    }
    let _ = std::fs::remove_file(&in_flight);
    let _ = std::fs::remove_file(&iteration_file);
    // Not a failure (times vary with the machine's load), but where to
    // look when a run takes long.
    let _ = std::fs::write(out.join("slowest"), &slowest);
    summary
}

/// Writes a failing input to `target/fuzz/NAME/KIND-HASH`.
fn save(out: &Path, kind: &str, input: &[u8]) -> PathBuf {
    let file = out.join(format!("{kind}-{:016x}", fnv1a(input)));
    std::fs::write(&file, input).unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
    file
}
