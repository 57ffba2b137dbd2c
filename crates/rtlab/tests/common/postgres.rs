//! A real PostgreSQL for the fleet tests: a throwaway cluster started by
//! `scripts/pg-test-cluster` (local socket, no TCP port), one per test
//! binary and shared by its tests, each test in a database of its own.
//! The cluster stops and its directory goes once the test binary ends
//! (an atexit handler stops it; a watcher process of its own stops it
//! should the test binary be killed).
//! A test that must break the server (the dropped-connection tests) starts
//! a private one with [`Cluster::private`], stopped when dropped.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// A running test cluster.
pub struct Cluster {
    dir: PathBuf,
    /// Stop it when dropped (a private cluster); the shared one is stopped
    /// at exit.
    owned: bool,
    /// Stops the cluster if this test binary dies without stopping it
    /// (SIGKILL): a shell polling this process, in a process group of its
    /// own so that stopping it takes its `sleep` too.
    watcher: std::sync::Mutex<Option<std::process::Child>>,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-test-cluster")
}

/// Why a cluster cannot be started here (no PostgreSQL, not root), or Ok.
pub fn available() -> Result<(), String> {
    let found = std::fs::read_dir("/usr/lib/postgresql")
        .map(|mut dirs| dirs.any(|d| d.is_ok_and(|d| d.path().join("bin/initdb").exists())))
        .unwrap_or(false);
    if !found {
        return Err("PostgreSQL is not installed (scripts/setup installs it)".into());
    }
    if !super::is_root() {
        // As another user the cluster would be that user's, which works,
        // but the fleet tests also change hostnames (UTS namespaces).
        return Err("the PostgreSQL tests need root".into());
    }
    Ok(())
}

static SHARED: OnceLock<Result<Cluster, String>> = OnceLock::new();

/// Stops the shared cluster, and its watcher, as the test binary exits
/// (the harness returns from main, which runs atexit handlers): nothing of
/// it may outlive the binary, since the next one may snapshot every
/// process (the focus tests).
extern "C" fn stop_shared_at_exit() {
    if let Some(Ok(cluster)) = SHARED.get() {
        cluster.stop();
    }
}

/// The shared cluster of this test binary, started on first use; None
/// (with the reason printed as a skip) where it cannot run.
pub fn shared() -> Option<&'static Cluster> {
    match SHARED.get_or_init(|| {
        available()?;
        let cluster = Cluster::start(false)?;
        // SAFETY: registers a plain function with no arguments.
        unsafe { libc::atexit(stop_shared_at_exit) };
        Ok(cluster)
    }) {
        Ok(cluster) => Some(cluster),
        Err(why) => {
            super::skip(why);
            None
        }
    }
}

impl Cluster {
    /// A cluster of the calling test's own, stopped when dropped; None
    /// (skip printed) where it cannot run.
    pub fn private() -> Option<Cluster> {
        match available().and_then(|()| Cluster::start(true)) {
            Ok(cluster) => Some(cluster),
            Err(why) => {
                super::skip(&why);
                None
            }
        }
    }

    fn start(owned: bool) -> Result<Cluster, String> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        // Under /tmp with searchable parents: the server runs as `postgres`.
        let dir = PathBuf::from(format!(
            "/tmp/rtlab-pg-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let out = Command::new(script())
            .arg("start")
            .arg(&dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("scripts/pg-test-cluster: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "scripts/pg-test-cluster start failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let watcher = Command::new("bash")
            .args([
                "-c",
                "while kill -0 \"$1\" 2>/dev/null; do sleep 1; done; exec \"$2\" stop \"$3\"",
                "watcher",
            ])
            .arg(std::process::id().to_string())
            .arg(script())
            .arg(&dir)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok();
        Ok(Cluster {
            dir,
            owned,
            watcher: std::sync::Mutex::new(watcher),
        })
    }

    /// A new empty database named `name` (letters, digits, `_`), and the
    /// URL `--db` takes for it.
    pub fn database(&self, name: &str) -> String {
        assert!(
            name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
            "database name {name:?}"
        );
        let out = Command::new(script())
            .arg("createdb")
            .arg(&self.dir)
            .arg(name)
            .stdin(Stdio::null())
            .output()
            .expect("scripts/pg-test-cluster createdb runs");
        assert!(
            out.status.success(),
            "createdb {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// The directory of the server's socket (psql's -h).
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.join("sock")
    }

    /// Stops the server at once, as a crash would (connections drop).
    pub fn kill_server(&self) {
        self.pg_ctl(&["-m", "immediate", "stop"]);
    }

    /// Starts the server again after [`Cluster::kill_server`].
    pub fn restart_server(&self) {
        let options = format!(
            "-c listen_addresses='' -c unix_socket_directories='{}' -c fsync=off",
            self.socket_dir().display()
        );
        let log = self.dir.join("server.log");
        self.pg_ctl(&["-l", log.to_str().unwrap(), "-o", &options, "start"]);
    }

    /// Runs one SQL statement with psql in database `db`; its output
    /// (unaligned, tuples only).
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = Command::new("runuser")
            .args([
                "-u",
                "postgres",
                "--",
                "psql",
                "-X",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
            ])
            .arg(self.socket_dir())
            .args(["-d", db, "-c", sql])
            .stdin(Stdio::null())
            .output()
            .expect("psql runs");
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn pg_ctl(&self, args: &[&str]) {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .unwrap()
            .filter_map(|d| d.ok().map(|d| d.path().join("bin/pg_ctl")))
            .filter(|p| p.exists())
            .max()
            .expect("pg_ctl");
        let status = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(bin)
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-w", "-s"])
            .args(args)
            .stdin(Stdio::null())
            .status()
            .expect("pg_ctl runs");
        assert!(status.success(), "pg_ctl {args:?}");
    }
}

impl Cluster {
    /// Stops the server, removes its directory and ends the watcher (its
    /// whole process group), reaped: nothing of the cluster is left.
    fn stop(&self) {
        let _ = Command::new(script())
            .arg("stop")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let watcher = self.watcher.lock().map(|mut w| w.take());
        if let Ok(Some(mut watcher)) = watcher {
            // SAFETY: signals the watcher's own process group.
            unsafe { libc::kill(-(watcher.id() as i32), libc::SIGKILL) };
            let _ = watcher.wait();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.owned {
            self.stop();
        }
    }
}
