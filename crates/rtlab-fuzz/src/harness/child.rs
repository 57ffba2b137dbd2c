//! The fuzz work runs in a child process (the test binary again), so that
//! an input that kills the process is reported with its file: the
//! parent's side (`supervise`, `watched`) and the child's `replay`.

use super::catch::{install_panic_hook, run_one};
use super::files::{files, out_dir, repo_root, save};
use super::settings::env_number;
use super::target::Target;
use std::panic;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Set in a child process to the target it runs.
pub(super) const CHILD_ENV: &str = "RTLAB_FUZZ_CHILD";
/// In a child: the one input to run (a pending seed), and nothing else.
pub(super) const REPLAY_ENV: &str = "RTLAB_FUZZ_REPLAY";
/// In a child: pending seeds that kill the process, not to run there.
pub(super) const LETHAL_ENV: &str = "RTLAB_FUZZ_LETHAL";
/// In a child: iterations not to run (their mutants kill the process as
/// a pending seed does).
pub(super) const SKIP_ENV: &str = "RTLAB_FUZZ_SKIP";

/// In a child: runs one input, says what it did on stdout.
pub(super) fn replay(target: &Target, path: &Path) {
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
pub(super) fn supervise(target: &Target) {
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
