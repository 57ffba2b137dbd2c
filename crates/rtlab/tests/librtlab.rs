//! librtlab end to end: `scripts/install-lib` installs the library, its
//! header and pkg-config file into a prefix and removes exactly them; the
//! header compiles as C99 and C++; the library exports exactly the
//! header's functions; examples/c/periodic.c compiles warning-free with
//! gcc and pkg-config against the installed copy. Then, under `rtlab exec
//! serve`, the C and the Rust example run periodically and print their
//! statistics, and a SIGKILL of the executive gives the running program an
//! error instead of blocking it. Never an absolute timing: counts, exit
//! codes and messages, with generous caps on how long things take to end.
//!
//! The install uses the debug build (`--debug`): the nested `cargo build`
//! shares this test run's target directory. Tests skip, saying why, when
//! gcc, g++, pkg-config or binutils are missing (scripts/setup installs
//! them).

mod common;

use common::{rtlab, signal, skip};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The first of `tools` that does not run, as a skip reason.
fn missing(tools: &[&str]) -> Option<String> {
    tools
        .iter()
        .find(|tool| {
            Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_err()
        })
        .map(|tool| format!("{tool} not found (scripts/setup installs it)"))
}

macro_rules! require_tools {
    ($($tool:expr),*) => {
        if let Some(why) = missing(&[$($tool),*]) {
            skip(&why);
            return;
        }
    };
}

fn output(cmd: &mut Command) -> Output {
    let out = cmd.stdin(Stdio::null()).output().expect("the command runs");
    eprintln!("{cmd:?}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Bad arguments: exit code 2 and the usage on stderr.
fn assert_usage_error(out: &Output, usage: &str, args: &[&str]) {
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(
        stderr_of(out).contains(usage),
        "{args:?}: {}",
        stderr_of(out)
    );
}

fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `scripts/install-lib --debug ARGS`.
fn install_lib(args: &[&str]) -> Output {
    output(
        Command::new(repo().join("scripts/install-lib"))
            .arg("--debug")
            .args(args),
    )
}

fn install_into(prefix: &Path) {
    let out = install_lib(&["--prefix", prefix.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "install-lib failed: {}",
        stderr_of(&out)
    );
}

/// `pkg-config ARGS rtlab` against the prefix's rtlab.pc, split in words.
fn pkg_config(prefix: &Path, args: &[&str]) -> Vec<String> {
    let out = output(
        Command::new("pkg-config")
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
            .args(args)
            .arg("rtlab"),
    );
    assert!(out.status.success(), "pkg-config: {}", stderr_of(&out));
    stdout_of(&out)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Installs into `dir`/prefix and compiles `source` (under the repository)
/// against it into `dir`/`name` with gcc, C99, every warning an error; the
/// program's path.
fn build_c_program(dir: &Path, source: &str, name: &str) -> PathBuf {
    let prefix = dir.join("prefix");
    install_into(&prefix);
    let program = dir.join(name);
    let strict = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"];
    let out = output(
        Command::new("gcc")
            .args(strict)
            .args(["-O2", "-pthread"])
            .arg(repo().join(source))
            .arg("-o")
            .arg(&program)
            .args(pkg_config(&prefix, &["--cflags", "--libs"])),
    );
    assert!(out.status.success(), "gcc {source}: {}", stderr_of(&out));
    program
}

fn build_c_example(dir: &Path) -> PathBuf {
    build_c_program(dir, "examples/c/periodic.c", "periodic")
}

/// The C example, run against the library installed in `dir`/prefix only.
fn c_example(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(dir.join("periodic"));
    cmd.args(args)
        .env("LD_LIBRARY_PATH", dir.join("prefix/lib"))
        .env_remove("RTLAB_SOCKET");
    cmd
}

/// Every file and link under `dir`, relative to it.
fn entries(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut to_visit = vec![dir.to_path_buf()];
    while let Some(at) = to_visit.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
            if kind.is_dir() {
                to_visit.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(name);
            }
        }
    }
    out
}

fn link_target(path: &Path) -> String {
    std::fs::read_link(path)
        .unwrap_or_else(|e| panic!("{} is not a link: {e}", path.display()))
        .display()
        .to_string()
}

#[test]
fn install_lib_installs_the_library_and_uninstalls_exactly_what_it_installed() {
    require_tools!("pkg-config", "readelf");
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    // Files of others in the same directories are never touched.
    std::fs::create_dir_all(prefix.join("lib/pkgconfig")).unwrap();
    std::fs::create_dir_all(prefix.join("include")).unwrap();
    std::fs::write(prefix.join("lib/libother.so"), "other").unwrap();
    std::fs::write(prefix.join("lib/pkgconfig/other.pc"), "other").unwrap();
    std::fs::write(prefix.join("include/other.h"), "other").unwrap();
    let others = entries(&prefix);

    install_into(&prefix);
    // Again: the same result (idempotent).
    install_into(&prefix);
    let lib = prefix.join("lib");
    assert_eq!(link_target(&lib.join("librtlab.so")), "librtlab.so.0");
    assert_eq!(link_target(&lib.join("librtlab.so.0")), "librtlab.so.0.1.0");
    let real = lib.join("librtlab.so.0.1.0");
    assert!(std::fs::symlink_metadata(&real).unwrap().is_file());
    let dynamic = stdout_of(&output(Command::new("readelf").arg("-d").arg(&real)));
    assert!(
        dynamic.contains("Library soname: [librtlab.so.0]"),
        "{dynamic}"
    );
    let header = std::fs::read(prefix.join("include/rtlab.h")).unwrap();
    assert_eq!(
        header,
        std::fs::read(repo().join("include/rtlab.h")).unwrap()
    );
    let added: BTreeSet<String> = entries(&prefix).difference(&others).cloned().collect();
    let expected = [
        "include/rtlab.h",
        "lib/librtlab.so",
        "lib/librtlab.so.0",
        "lib/librtlab.so.0.1.0",
        "lib/pkgconfig/rtlab.pc",
    ];
    assert_eq!(added, expected.iter().map(|s| s.to_string()).collect());

    let flags = pkg_config(&prefix, &["--cflags", "--libs"]);
    let include = format!("-I{}", prefix.join("include").display());
    let libdir = format!("-L{}", lib.display());
    assert_eq!(flags, [include, libdir, "-lrtlab".to_string()]);
    assert_eq!(pkg_config(&prefix, &["--modversion"]), ["0.1.0"]);

    let out = install_lib(&["--prefix", prefix.to_str().unwrap(), "--uninstall"]);
    assert!(out.status.success());
    assert_eq!(entries(&prefix), others);
    let out = install_lib(&["--prefix", prefix.to_str().unwrap(), "--uninstall"]);
    assert!(out.status.success());
    assert!(
        stdout_of(&out).contains("not installed"),
        "{}",
        stdout_of(&out)
    );

    // The directories an install created (the prefix too) go with it, also
    // after a reinstall.
    let fresh = dir.path().join("fresh");
    install_into(&fresh);
    install_into(&fresh);
    let out = install_lib(&["--prefix", fresh.to_str().unwrap(), "--uninstall"]);
    assert!(out.status.success());
    assert!(!fresh.exists(), "left: {:?}", entries(&fresh));
}

#[test]
fn install_lib_refuses_bad_arguments_with_exit_code_2() {
    for args in [
        &["--prefix", "relative/dir"][..],
        &["--prefix", "/tmp/with space"],
        &["--prefix"],
        &["--frobnicate"],
    ] {
        assert_usage_error(&install_lib(args), "usage: scripts/install-lib", args);
    }
}

#[test]
fn the_header_compiles_alone_as_c99_and_as_cpp() {
    require_tools!("gcc", "g++");
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("only_the_header.c");
    std::fs::write(
        &source,
        "#include <rtlab.h>\nint main(void) { return RTLAB_OK; }\n",
    )
    .unwrap();
    let include = repo().join("include");
    let strict = ["-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only"];
    let c = output(
        Command::new("gcc")
            .arg("-std=c99")
            .args(strict)
            .arg("-I")
            .arg(&include)
            .arg(&source),
    );
    assert!(c.status.success(), "as C99: {}", stderr_of(&c));
    let cpp = output(
        Command::new("g++")
            .args(["-x", "c++", "-std=c++11"])
            .args(strict)
            .arg("-I")
            .arg(&include)
            .arg(&source),
    );
    assert!(cpp.status.success(), "as C++: {}", stderr_of(&cpp));
}

#[test]
fn the_library_exports_exactly_the_functions_of_the_header() {
    require_tools!("pkg-config", "readelf", "nm");
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    install_into(&prefix);
    let header = std::fs::read_to_string(repo().join("include/rtlab.h")).unwrap();
    let declared: BTreeSet<String> = header
        .lines()
        .filter(|line| !line.starts_with(' ') && line.ends_with(");"))
        .filter_map(|line| line.split('(').next()?.rsplit([' ', '*']).next())
        .map(str::to_string)
        .collect();
    assert_eq!(declared.len(), 7, "{declared:?}");
    let out = output(
        Command::new("nm")
            .args(["-D", "--defined-only"])
            .arg(prefix.join("lib/librtlab.so")),
    );
    assert!(out.status.success());
    let exported: BTreeSet<String> = stdout_of(&out)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(2))
        .map(str::to_string)
        .collect();
    assert_eq!(exported, declared);
}

#[test]
fn the_c_example_compiles_warning_free_and_refuses_bad_arguments() {
    require_tools!("gcc", "pkg-config", "readelf");
    let dir = tempfile::tempdir().unwrap();
    build_c_example(dir.path());
    for args in [&["0"][..], &["10", "x"], &["10", "5", "extra"], &["-5"]] {
        let out = output(&mut c_example(dir.path(), args));
        assert_usage_error(&out, "usage: periodic [PERIOD_MS [ACTIVATIONS]]", args);
    }
}

/// docs/librtlab.md shows both examples in full: they are the files.
#[test]
fn the_doc_page_shows_the_examples_as_they_are() {
    let doc = std::fs::read_to_string(repo().join("docs/librtlab.md")).unwrap();
    for (file, fence) in [
        ("examples/c/periodic.c", "```c\n"),
        ("crates/rtlab-client/examples/periodic.rs", "```rust\n"),
    ] {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        assert!(
            doc.contains(&format!("{fence}{text}```\n")),
            "docs/librtlab.md does not show {file} as it is"
        );
    }
}

// ---- With the executive (`rtlab exec serve`) ----

/// `rtlab exec serve` as a test holds it: killed when the test ends
/// early (a failed assertion), so that no executive outlives its test for
/// its 5 minutes, spinning at SCHED_FIFO on a CPU the other tests use.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `rtlab exec serve` on `socket`, once it listens.
fn start_serve(state: &Path, socket: &Path) -> Serve {
    let mut serve = Serve(
        rtlab(state)
            .args(["exec", "serve", "--socket"])
            .arg(socket)
            .args(["--duration", "5m"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("rtlab starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    // Ready when it answers (its socket appears once it listens).
    while rtlab_client::executive_status(Some(socket)).is_err() {
        if let Ok(Some(status)) = serve.0.try_wait() {
            panic!("rtlab exec serve exited with {status} before listening");
        }
        assert!(
            Instant::now() < deadline,
            "rtlab exec serve did not listen within 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    serve
}

/// Waits for `child` to end within `cap`; kills it and fails otherwise.
fn wait_within(child: &mut Child, cap: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + cap;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not end within {cap:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Stops the executive as a user would (SIGTERM): it ends and leaves no
/// socket behind.
fn stop_serve(mut serve: Serve, socket: &Path) {
    signal(&serve.0, libc::SIGTERM);
    wait_within(&mut serve.0, Duration::from_secs(30), "rtlab exec serve");
    assert!(!socket.exists(), "the socket {} is left", socket.display());
}

/// The figure of `name` in an example's printed statistics.
fn figure(stdout: &str, name: &str) -> u64 {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no '{name}' figure in:\n{stdout}"))
}

/// An example's run of 50 activations every 10 ms: exit 0, every
/// activation worked, and its statistics printed.
fn assert_ran_50(out: &Output, which: &str) {
    let stdout = stdout_of(out);
    assert!(
        out.status.success(),
        "{which}: {}\n{stdout}",
        stderr_of(out)
    );
    assert!(stdout.contains("periodic: attached, every 10 ms for 50 activations"));
    assert_eq!(figure(&stdout, "activations "), 50, "{which}");
    for name in ["missed ", "deadline misses ", "budget overruns "] {
        // Counted, whatever the host's spikes made them.
        figure(&stdout, name);
    }
    assert!(figure(&stdout, "lateness p50 ") <= figure(&stdout, "lateness max "));
}

/// NEEDS the serve branch (`rtlab exec serve`).
#[test]
fn the_c_and_rust_examples_run_periodically_under_exec_serve() {
    require_realtime!();
    require_tools!("gcc", "pkg-config", "readelf");
    let dir = tempfile::tempdir().unwrap();
    build_c_example(dir.path());
    let socket = dir.path().join("exec.sock");
    let serve = start_serve(&dir.path().join("state"), &socket);

    let out = output(c_example(dir.path(), &["10", "50"]).env("RTLAB_SOCKET", &socket));
    assert_ran_50(&out, "C");

    // The Rust example, built beside the rtlab binary under test.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = output(
        Command::new(cargo)
            .args([
                "build",
                "--locked",
                "-p",
                "rtlab-client",
                "--example",
                "periodic",
            ])
            .arg("--manifest-path")
            .arg(repo().join("Cargo.toml")),
    );
    assert!(built.status.success(), "{}", stderr_of(&built));
    let profile_dir = Path::new(env!("CARGO_BIN_EXE_rtlab")).parent().unwrap();
    let out = output(
        Command::new(profile_dir.join("examples/periodic"))
            .args(["10", "50"])
            .env("RTLAB_SOCKET", &socket),
    );
    assert_ran_50(&out, "Rust");

    stop_serve(serve, &socket);
}

/// NEEDS the serve branch. tests/c/threads.c: the attachment is the
/// calling thread's, once at a time; a second thread runs on its own; a
/// child of fork() is not attached and its exit does not detach the parent.
#[test]
fn attachments_are_per_thread_and_not_inherited_by_a_child() {
    require_realtime!();
    require_tools!("gcc", "pkg-config", "readelf");
    let dir = tempfile::tempdir().unwrap();
    let program = build_c_program(dir.path(), "crates/rtlab/tests/c/threads.c", "threads");
    let socket = dir.path().join("exec.sock");
    let serve = start_serve(&dir.path().join("state"), &socket);
    let out = output(
        Command::new(&program)
            .env("LD_LIBRARY_PATH", dir.path().join("prefix/lib"))
            .env("RTLAB_SOCKET", &socket),
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "threads: every check passed\n");
    stop_serve(serve, &socket);
}

/// NEEDS the serve branch (`Periodic::attach`).
#[test]
fn the_c_example_says_when_no_executive_answers() {
    require_tools!("gcc", "pkg-config", "readelf");
    let dir = tempfile::tempdir().unwrap();
    build_c_example(dir.path());
    let socket = dir.path().join("nobody.sock");
    let out = output(c_example(dir.path(), &["10", "5"]).env("RTLAB_SOCKET", &socket));
    assert_eq!(out.status.code(), Some(1));
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("periodic: rtlab_attach: no executive ("),
        "{stderr}"
    );
    assert!(stderr.contains(socket.to_str().unwrap()), "{stderr}");
}

/// NEEDS the serve branch. The executive SIGKILLed while a program waits
/// for its activations: the program gets RTLAB_E_GONE and exits, it is not
/// left blocked.
#[test]
fn a_killed_executive_gives_the_running_program_an_error() {
    require_realtime!();
    require_tools!("gcc", "pkg-config", "readelf");
    let dir = tempfile::tempdir().unwrap();
    build_c_example(dir.path());
    let state = dir.path().join("state");
    let socket = dir.path().join("exec.sock");
    let mut serve = start_serve(&state, &socket);

    // 10 ms × 100 000: far longer than the test.
    let mut program = c_example(dir.path(), &["10", "100000"])
        .env("RTLAB_SOCKET", &socket)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kept open to the end: the program's stdout is not a broken pipe.
    let mut printed = BufReader::new(program.stdout.take().unwrap());
    let mut first = String::new();
    printed.read_line(&mut first).unwrap();
    assert!(first.starts_with("periodic: attached"), "{first:?}");
    // A few activations, then the executive dies.
    std::thread::sleep(Duration::from_millis(300));
    serve.0.kill().unwrap();
    serve.0.wait().unwrap();

    let status = wait_within(&mut program, Duration::from_secs(30), "the C example");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut program.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("periodic: rtlab_wait_next: the executive is gone"),
        "{stderr}"
    );

    // What the killed executive changed is put back by `rtlab restore`.
    let out = output(rtlab(&state).arg("restore"));
    assert!(out.status.success(), "{}", stderr_of(&out));
}
