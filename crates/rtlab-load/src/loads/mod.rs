//! The load generators. Each runs as threads of the worker process; every
//! counter is incremented where the work is really done.

use super::ctx::Ctx;
use super::plan::{plan_vm, MemFigures};
use super::spec::{human_bytes, LoadKind, LoadSpec};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Everything a started load owns until it is stopped.
#[derive(Default)]
pub struct Started {
    pub threads: Vec<(String, JoinHandle<()>)>,
    /// Private directories made for the load; removed at stop.
    pub temp_dirs: Vec<PathBuf>,
    /// Caps applied and anything else a reader must know.
    pub notes: Vec<String>,
    /// The external command of a `cmd` load.
    pub command: Option<super::cmd::CommandLoad>,
    /// The load's private cgroup, when it has one (a `cmd` load puts its
    /// processes in a child of it).
    pub cgroup: Option<super::cgroup::Cgroup>,
}

const STACK: usize = 256 * 1024;

impl Started {
    /// Starts one thread of the load; a panic in it is a fatal error of the load.
    pub fn spawn(
        &mut self,
        ctx: &Ctx,
        name: String,
        body: impl FnOnce() + Send + 'static,
    ) -> Result<(), String> {
        let fail_ctx = ctx.clone();
        let thread_name = name.clone();
        let handle = std::thread::Builder::new()
            .name(name.chars().take(15).collect())
            .stack_size(STACK)
            .spawn(move || {
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).is_err() {
                    fail_ctx.fail(format!("thread {thread_name} panicked"));
                }
            })
            .map_err(|e| format!("cannot start thread {name}: {e}"))?;
        self.threads.push((name, handle));
        Ok(())
    }

    /// Stops the threads (they see `ctx.stop`), waiting at most `timeout`;
    /// threads still busy are left to die with the process (noted).
    pub fn join(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline && self.threads.iter().any(|(_, h)| !h.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut busy = Vec::new();
        for (name, handle) in self.threads.drain(..) {
            if handle.is_finished() {
                let _ = handle.join();
            } else {
                busy.push(name);
            }
        }
        if !busy.is_empty() {
            self.notes.push(format!(
                "{} thread(s) still busy {} after the stop: {}",
                busy.len(),
                rtlab_core::units::human_duration(timeout.as_nanos() as u64),
                busy.join(", ")
            ));
        }
    }

    /// Removes the private temporary directories.
    pub fn remove_temp_dirs(&mut self) {
        for dir in self.temp_dirs.drain(..) {
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    self.notes
                        .push(format!("could not remove {}: {e}", dir.display()));
                }
            }
        }
    }
}

/// Starts `spec` (resolved: every parameter set) as threads of this
/// process. Returns once every thread runs; Err names what failed.
pub fn start(spec: &LoadSpec, ctx: &Ctx, started: &mut Started) -> Result<(), String> {
    let p = &spec.params;
    let workers = p.workers.unwrap_or(1);
    match spec.kind {
        LoadKind::Cpu => start_cpu(ctx, started, workers),
        LoadKind::Vm => {
            let mem = MemFigures::read().map_err(|e| format!("vm: reading /proc/meminfo: {e}"))?;
            let plan = plan_vm(workers, p.bytes.unwrap_or(256 << 20), mem)?;
            if let Some(note) = plan.note {
                started.notes.push(note);
            }
            start_vm(ctx, started, plan.workers, plan.bytes_per_worker)
        }
        LoadKind::Io => {
            let dir = p.dir.clone().unwrap_or_else(super::spec::default_temp_base);
            start_io(
                ctx,
                started,
                &dir,
                workers,
                p.bytes.unwrap_or(64 << 20),
                p.block.unwrap_or(1 << 20),
            )
        }
        LoadKind::Fswalk => {
            let root = p.root.clone().unwrap_or_else(|| PathBuf::from("/"));
            start_fswalk(ctx, started, &root, workers, !p.no_stat)
        }
        LoadKind::Net => start_net(ctx, started, workers, p.size.unwrap_or(64) as usize),
        LoadKind::Timers => start_timers(
            ctx,
            started,
            workers,
            p.timers.unwrap_or(8),
            p.interval_ns.unwrap_or(100_000),
        ),
        LoadKind::Msg => start_msg(
            ctx,
            started,
            p.groups.unwrap_or(1),
            p.fds.unwrap_or(20),
            p.size.unwrap_or(100) as usize,
        ),
        LoadKind::Procfs => {
            for i in 0..workers {
                let c = ctx.clone();
                started.spawn(ctx, format!("procfs-{i}"), move || {
                    procfs_loop(&c, true, true)
                })?;
            }
            Ok(())
        }
        LoadKind::Dohell => start_dohell(spec, ctx, started),
        LoadKind::Cmd => {
            let command = p.command.clone().unwrap_or_default();
            let cgroup = started.cgroup.clone();
            let mut spawn = |name, body| started.spawn(ctx, name, body);
            let load = super::cmd::CommandLoad::start(&command, ctx, &mut spawn, cgroup.as_ref())?;
            started.command = Some(load);
            Ok(())
        }
    }
}

/// dohell's parts, at its intensities, in this one process:
/// `hackbench 1` (one group of 20 × 20), `dd if=/dev/zero of=FILE
/// bs=1024000 count=100; sync`, `nc` flood (here UDP over loopback),
/// `cat /proc/interrupts`, `ps w`, `dd if=/dev/zero of=/dev/null` and
/// `ls -lR /` (`ls -RU /` with no-stat).
fn start_dohell(spec: &LoadSpec, ctx: &Ctx, started: &mut Started) -> Result<(), String> {
    let p = &spec.params;
    start_msg(&ctx.prefixed("msg_"), started, 1, 20, 100)?;
    let dir = p.dir.clone().unwrap_or_else(super::spec::default_temp_base);
    start_io(
        &ctx.prefixed("io_"),
        started,
        &dir,
        1,
        100 * 1_024_000,
        1_024_000,
    )?;
    start_net(&ctx.prefixed("net_"), started, 1, 1024)?;
    let c = ctx.prefixed("procfs_");
    started.spawn(ctx, "procfs-irq".into(), move || {
        procfs_loop(&c, true, false)
    })?;
    let c = ctx.prefixed("procfs_");
    started.spawn(ctx, "procfs-ps".into(), move || {
        procfs_loop(&c, false, true)
    })?;
    let c = ctx.prefixed("zero_");
    started.spawn(ctx, "dd-zero".into(), move || zero_copy(&c))?;
    let root = p.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    start_fswalk(&ctx.prefixed("fswalk_"), started, &root, 1, !p.no_stat)
}

// ---------------------------------------------------------------- cpu

fn start_cpu(ctx: &Ctx, started: &mut Started, workers: u32) -> Result<(), String> {
    for i in 0..workers {
        let c = ctx.clone();
        started.spawn(ctx, format!("cpu-{i}"), move || cpu_loop(&c, u64::from(i)))?;
    }
    Ok(())
}

/// Square roots of pseudo-random numbers, as `stress --cpu` computes.
fn cpu_loop(ctx: &Ctx, seed: u64) {
    const BATCH: u64 = 50_000;
    let ops = ctx.counters.get("ops");
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (seed + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    while !ctx.stopping() {
        let mut acc = 0.0f64;
        for _ in 0..BATCH {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            acc += ((x >> 11) as f64).sqrt();
        }
        std::hint::black_box(acc);
        ops.fetch_add(BATCH, Ordering::Relaxed);
    }
}

// ----------------------------------------------------------------- vm

fn start_vm(ctx: &Ctx, started: &mut Started, workers: u32, bytes: u64) -> Result<(), String> {
    for i in 0..workers {
        let c = ctx.clone();
        started.spawn(ctx, format!("vm-{i}"), move || {
            vm_loop(&c, bytes as usize, u64::from(i))
        })?;
    }
    Ok(())
}

/// Allocate (mmap), touch every page with a pattern, verify it, free
/// (munmap); again and again, as `stress --vm`.
fn vm_loop(ctx: &Ctx, bytes: usize, seed: u64) {
    let page = super::sys::page_size();
    let pages = bytes.div_ceil(page);
    let allocations = ctx.counters.get("allocations");
    let touched = ctx.counters.get("bytes_touched");
    let freed = ctx.counters.get("bytes_freed");
    let verify_errors = ctx.counters.get("verify_errors");
    let alloc_failures = ctx.counters.get("alloc_failures");
    let mut round = seed << 32;
    const CHUNK: usize = 256; // pages between counter updates and stop checks
    while !ctx.stopping() {
        // SAFETY: anonymous private mapping; checked for MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                pages * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            alloc_failures.fetch_add(1, Ordering::Relaxed);
            ctx.nap(Duration::from_millis(100));
            continue;
        }
        allocations.fetch_add(1, Ordering::Relaxed);
        round += 1;
        let base = ptr as *mut u8;
        let mut done = 0;
        while done < pages && !ctx.stopping() {
            let end = (done + CHUNK).min(pages);
            for i in done..end {
                // SAFETY: i < pages, so the word lies inside the mapping.
                unsafe {
                    std::ptr::write_volatile(base.add(i * page) as *mut u64, round ^ i as u64)
                };
            }
            touched.fetch_add(((end - done) * page) as u64, Ordering::Relaxed);
            done = end;
        }
        let mut errors = 0;
        for i in 0..done {
            // SAFETY: as above; only pages written are read.
            let v = unsafe { std::ptr::read_volatile(base.add(i * page) as *const u64) };
            if v != round ^ i as u64 {
                errors += 1;
            }
        }
        verify_errors.fetch_add(errors, Ordering::Relaxed);
        // SAFETY: the mapping made above, unmapped once.
        unsafe { libc::munmap(ptr, pages * page) };
        freed.fetch_add((pages * page) as u64, Ordering::Relaxed);
    }
}

// ----------------------------------------------------------------- io

/// Makes the load's private directory `rtlab-load-<pid>.<n>` under `base`
/// (mode 0700), first removing empty ones left by dead workers.
fn make_private_dir(base: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    if let Ok(entries) = std::fs::read_dir(base) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.strip_prefix(super::cgroup::NAME_PREFIX))
                .and_then(|n| n.split('.').next())
                .and_then(|p| p.parse::<i32>().ok());
            if let Some(pid) = pid {
                if !super::sys::pid_alive(pid) {
                    // rmdir: only when empty, never anything else.
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
        }
    }
    let pid = std::process::id();
    for n in 0..1000 {
        let dir = base.join(format!("{}{pid}.{n}", super::cgroup::NAME_PREFIX));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "cannot create a directory in {}: {e}",
                    base.display()
                ))
            }
        }
    }
    Err(format!("cannot create a directory in {}", base.display()))
}

fn start_io(
    ctx: &Ctx,
    started: &mut Started,
    base: &Path,
    workers: u32,
    file_bytes: u64,
    block: u64,
) -> Result<(), String> {
    let dir = make_private_dir(base).map_err(|e| format!("io: {e}"))?;
    started.temp_dirs.push(dir.clone());
    if super::sys::is_tmpfs(&dir) {
        started.notes.push(format!(
            "io: {} is on tmpfs: writes stay in memory and never reach a disk (give dir= on a disk)",
            base.display()
        ));
    }
    // One file first, to fail before "ready" when the directory is unusable.
    let probe = open_unnamed(&dir, 0)
        .map_err(|e| format!("io: cannot create files in {}: {e}", dir.display()))?;
    if !probe.1 {
        started.notes.push(format!(
            "io: O_TMPFILE not supported in {}: files are created and unlinked at once",
            dir.display()
        ));
    }
    drop(probe);
    for i in 0..workers {
        let c = ctx.clone();
        let d = dir.clone();
        started.spawn(ctx, format!("io-{i}"), move || {
            io_loop(&c, &d, i, file_bytes, block as usize)
        })?;
    }
    Ok(())
}

/// A file in `dir` that has no name: O_TMPFILE, or else created and
/// unlinked at once. (fd, whether O_TMPFILE was used)
fn open_unnamed(dir: &Path, n: u64) -> std::io::Result<(OwnedFd, bool)> {
    use std::os::unix::ffi::OsStrExt;
    let c_dir = std::ffi::CString::new(dir.as_os_str().as_bytes())?;
    // SAFETY: c_dir is NUL-terminated; the fd is checked and owned.
    let fd = unsafe {
        libc::open(
            c_dir.as_ptr(),
            libc::O_TMPFILE | libc::O_WRONLY | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd >= 0 {
        // SAFETY: fd is a fresh descriptor we own.
        return Ok((unsafe { OwnedFd::from_raw_fd(fd) }, true));
    }
    let path = dir.join(format!("io-{}-{n}", rtlab_core::sched::gettid()));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok((file.into(), false))
}

/// `dd if=/dev/zero of=FILE bs=BLOCK count=N; sync`, with a file that
/// has no name, again and again.
fn io_loop(ctx: &Ctx, dir: &Path, worker: u32, file_bytes: u64, block: usize) {
    let written = ctx.counters.get("bytes_written");
    let fsyncs = ctx.counters.get("fsyncs");
    let files = ctx.counters.get("files");
    let mut buffer = vec![0u8; block];
    let mut x = 0x2545_f491_4f6c_dd1du64 ^ u64::from(worker);
    for chunk in buffer.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = x.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    let mut n = 0u64;
    while !ctx.stopping() {
        n += 1;
        let (fd, _) = match open_unnamed(dir, n) {
            Ok(f) => f,
            Err(e) => {
                return ctx.fail(format!(
                    "io: cannot create a file in {}: {e}",
                    dir.display()
                ))
            }
        };
        let mut file = std::fs::File::from(fd);
        let mut left = file_bytes;
        while left > 0 && !ctx.stopping() {
            let len = (left as usize).min(block);
            // Every block differs, so nothing can dedupe or compress it away.
            buffer[..8].copy_from_slice(&n.wrapping_mul(1 << 20).wrapping_add(left).to_le_bytes());
            if let Err(e) = file.write_all(&buffer[..len]) {
                return ctx.fail(format!("io: writing in {}: {e}", dir.display()));
            }
            written.fetch_add(len as u64, Ordering::Relaxed);
            left -= len as u64;
        }
        if ctx.stopping() {
            break;
        }
        if let Err(e) = file.sync_all() {
            return ctx.fail(format!("io: fsync in {}: {e}", dir.display()));
        }
        fsyncs.fetch_add(1, Ordering::Relaxed);
        files.fetch_add(1, Ordering::Relaxed);
    }
}

// ------------------------------------------------------------- fswalk

/// Filesystems a walk never enters: kernel pseudo filesystems (whose
/// files are not files) and network filesystems (not ours to hammer).
const SKIPPED_FS: &[&str] = &[
    "proc",
    "sysfs",
    "devtmpfs",
    "devpts",
    "cgroup",
    "cgroup2",
    "debugfs",
    "tracefs",
    "securityfs",
    "pstore",
    "bpf",
    "configfs",
    "fusectl",
    "mqueue",
    "hugetlbfs",
    "autofs",
    "binfmt_misc",
    "efivarfs",
    "selinuxfs",
    "nsfs",
    "rpc_pipefs",
    "nfsd",
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "ceph",
    "glusterfs",
    "9p",
    "afs",
    "sshfs",
];

fn skipped_mounts(root: &Path) -> Vec<PathBuf> {
    let mut skip: Vec<PathBuf> = super::sys::mounts()
        .into_iter()
        .filter(|m| SKIPPED_FS.contains(&m.fs_type.as_str()) || m.fs_type.starts_with("fuse."))
        .map(|m| m.mount_point)
        .collect();
    for pseudo in ["/proc", "/sys", "/dev"] {
        skip.push(PathBuf::from(pseudo));
    }
    // The root itself is walked when asked for explicitly.
    skip.retain(|m| m != root);
    skip.sort();
    skip.dedup();
    skip
}

fn start_fswalk(
    ctx: &Ctx,
    started: &mut Started,
    root: &Path,
    workers: u32,
    stat: bool,
) -> Result<(), String> {
    let meta = std::fs::metadata(root)
        .map_err(|e| format!("fswalk: cannot walk {}: {e}", root.display()))?;
    if !meta.is_dir() {
        return Err(format!("fswalk: {} is not a directory", root.display()));
    }
    let skip = Arc::new(skipped_mounts(root));
    for i in 0..workers {
        let c = ctx.clone();
        let r = root.to_path_buf();
        let s = Arc::clone(&skip);
        started.spawn(ctx, format!("fswalk-{i}"), move || {
            fswalk_loop(&c, &r, &s, stat)
        })?;
    }
    Ok(())
}

/// `ls -lR ROOT` (lstat of every entry, symlinks not followed) or, with
/// no-stat, `ls -RU ROOT` (names and d_type only), again and again.
fn fswalk_loop(ctx: &Ctx, root: &Path, skip: &[PathBuf], stat: bool) {
    let entries = ctx.counters.get("entries");
    let stats = ctx.counters.get("lstats");
    let dirs = ctx.counters.get("dirs");
    let walks = ctx.counters.get("walks");
    let errors = ctx.counters.get("errors");
    while !ctx.stopping() {
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            if ctx.stopping() {
                return;
            }
            let Ok(list) = std::fs::read_dir(&dir) else {
                errors.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            dirs.fetch_add(1, Ordering::Relaxed);
            for entry in list {
                if ctx.stopping() {
                    return;
                }
                let Ok(entry) = entry else {
                    errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                entries.fetch_add(1, Ordering::Relaxed);
                let path = entry.path();
                let is_dir = if stat {
                    // lstat: a symlink is reported as a symlink, never followed.
                    match std::fs::symlink_metadata(&path) {
                        Ok(m) => {
                            stats.fetch_add(1, Ordering::Relaxed);
                            m.file_type().is_dir()
                        }
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            false
                        }
                    }
                } else {
                    entry.file_type().is_ok_and(|t| t.is_dir())
                };
                if is_dir && !skip.contains(&path) {
                    stack.push(path);
                }
            }
        }
        walks.fetch_add(1, Ordering::Relaxed);
    }
}

// ---------------------------------------------------------------- net

fn start_net(ctx: &Ctx, started: &mut Started, senders: u32, size: usize) -> Result<(), String> {
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0")
        .map_err(|e| format!("net: cannot bind a UDP socket on 127.0.0.1: {e}"))?;
    receiver
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| format!("net: {e}"))?;
    let addr = receiver.local_addr().map_err(|e| format!("net: {e}"))?;
    let mut sockets = Vec::new();
    for _ in 0..senders {
        let s = std::net::UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.connect(addr).map(|_| s))
            .map_err(|e| format!("net: cannot open a sender socket: {e}"))?;
        sockets.push(s);
    }
    let c = ctx.clone();
    started.spawn(ctx, "net-rx".into(), move || {
        let packets = c.counters.get("packets_received");
        let bytes = c.counters.get("bytes_received");
        let mut buffer = vec![0u8; 65_536];
        while !c.stopping() {
            match receiver.recv(&mut buffer) {
                Ok(n) => {
                    packets.fetch_add(1, Ordering::Relaxed);
                    bytes.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(_) => continue, // timeout: look at the stop flag
            }
        }
    })?;
    for (i, socket) in sockets.into_iter().enumerate() {
        let c = ctx.clone();
        started.spawn(ctx, format!("net-tx-{i}"), move || {
            let packets = c.counters.get("packets_sent");
            let bytes = c.counters.get("bytes_sent");
            let errors = c.counters.get("send_errors");
            let payload = vec![0x5au8; size];
            while !c.stopping() {
                for _ in 0..64 {
                    match socket.send(&payload) {
                        Ok(n) => {
                            packets.fetch_add(1, Ordering::Relaxed);
                            bytes.fetch_add(n as u64, Ordering::Relaxed);
                        }
                        Err(_) => {
                            // ENOBUFS/ECONNREFUSED under flood: count, go on.
                            errors.fetch_add(1, Ordering::Relaxed);
                            std::thread::yield_now();
                        }
                    }
                }
            }
        })?;
    }
    Ok(())
}

// ------------------------------------------------------------- timers

fn start_timers(
    ctx: &Ctx,
    started: &mut Started,
    workers: u32,
    timers: u32,
    interval_ns: u64,
) -> Result<(), String> {
    for w in 0..workers {
        // Made here so that a lack of descriptors fails before "ready".
        let mut fds = Vec::new();
        for k in 0..timers {
            fds.push(arm_timerfd(
                interval_ns,
                interval_ns * u64::from(k + 1) / u64::from(timers),
            )?);
        }
        // SAFETY: plain syscall; checked below.
        let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epoll < 0 {
            return Err(format!(
                "timers: epoll_create1: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: fresh descriptor we own.
        let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
        for (i, fd) in fds.iter().enumerate() {
            let mut event = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: i as u64,
            };
            // SAFETY: valid descriptors and event.
            if unsafe {
                libc::epoll_ctl(
                    epoll.as_raw_fd(),
                    libc::EPOLL_CTL_ADD,
                    fd.as_raw_fd(),
                    &mut event,
                )
            } != 0
            {
                return Err(format!(
                    "timers: epoll_ctl: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
        let c = ctx.clone();
        started.spawn(ctx, format!("timers-{w}"), move || {
            timers_loop(&c, &epoll, &fds)
        })?;
    }
    Ok(())
}

fn arm_timerfd(interval_ns: u64, first_ns: u64) -> Result<OwnedFd, String> {
    // SAFETY: plain syscalls; the fd is checked and owned.
    unsafe {
        let fd = libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        );
        if fd < 0 {
            return Err(format!(
                "timers: timerfd_create: {} (too many timers for the open-files limit?)",
                std::io::Error::last_os_error()
            ));
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let ts = |ns: u64| libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        };
        let spec = libc::itimerspec {
            it_interval: ts(interval_ns),
            it_value: ts(first_ns.max(1)),
        };
        if libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) != 0 {
            return Err(format!(
                "timers: timerfd_settime: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(fd)
    }
}

/// Waits on many short periodic timers and consumes their expirations.
fn timers_loop(ctx: &Ctx, epoll: &OwnedFd, fds: &[OwnedFd]) {
    let expirations = ctx.counters.get("expirations");
    let wakeups = ctx.counters.get("wakeups");
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; fds.len().max(1)];
    while !ctx.stopping() {
        // SAFETY: events is a valid buffer of the length given.
        let n = unsafe {
            libc::epoll_wait(
                epoll.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                100,
            )
        };
        if n <= 0 {
            continue;
        }
        wakeups.fetch_add(1, Ordering::Relaxed);
        for event in &events[..n as usize] {
            let fd = &fds[event.u64 as usize];
            let mut count = 0u64;
            // SAFETY: reads 8 bytes into count.
            let r = unsafe {
                libc::read(
                    fd.as_raw_fd(),
                    &mut count as *mut u64 as *mut libc::c_void,
                    8,
                )
            };
            if r == 8 {
                expirations.fetch_add(count, Ordering::Relaxed);
            }
        }
    }
}

// ---------------------------------------------------------------- msg

fn start_msg(
    ctx: &Ctx,
    started: &mut Started,
    groups: u32,
    fds: u32,
    size: usize,
) -> Result<(), String> {
    use std::os::unix::net::UnixStream;
    let timeout = Some(Duration::from_millis(100));
    for g in 0..groups {
        let mut write_ends = Vec::new();
        for r in 0..fds {
            let (rx, tx) = UnixStream::pair().map_err(|e| format!("msg: socketpair: {e}"))?;
            rx.set_read_timeout(timeout)
                .map_err(|e| format!("msg: {e}"))?;
            tx.set_write_timeout(timeout)
                .map_err(|e| format!("msg: {e}"))?;
            write_ends.push(tx);
            let c = ctx.clone();
            started.spawn(ctx, format!("msg-rx-{g}-{r}"), move || {
                msg_receiver(&c, rx, size)
            })?;
        }
        let write_ends = Arc::new(write_ends);
        for s in 0..fds {
            let c = ctx.clone();
            let w = Arc::clone(&write_ends);
            started.spawn(ctx, format!("msg-tx-{g}-{s}"), move || {
                msg_sender(&c, &w, size)
            })?;
        }
    }
    Ok(())
}

/// hackbench's sender: one message to every receiver of the group, again
/// and again.
fn msg_sender(ctx: &Ctx, receivers: &[std::os::unix::net::UnixStream], size: usize) {
    let sent = ctx.counters.get("messages_sent");
    let message = vec![0x42u8; size];
    while !ctx.stopping() {
        for mut receiver in receivers {
            let mut off = 0;
            while off < size && !ctx.stopping() {
                match receiver.write(&message[off..]) {
                    Ok(n) => off += n,
                    Err(_) => break, // timeout (full) or closed: look at the stop flag
                }
            }
            if off == size {
                sent.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn msg_receiver(ctx: &Ctx, mut stream: std::os::unix::net::UnixStream, size: usize) {
    let received = ctx.counters.get("messages_received");
    let bytes = ctx.counters.get("bytes_received");
    let mut buffer = vec![0u8; size.max(4096)];
    let mut total = 0u64;
    while !ctx.stopping() {
        match stream.read(&mut buffer) {
            Ok(0) => return,
            Ok(n) => {
                let before = total / size as u64;
                total += n as u64;
                bytes.fetch_add(n as u64, Ordering::Relaxed);
                received.fetch_add(total / size as u64 - before, Ordering::Relaxed);
            }
            Err(_) => continue, // timeout
        }
    }
}

// ------------------------------------------------------------- procfs

/// `cat /proc/interrupts` and `ps w` (every /proc/PID/stat and cmdline).
fn procfs_loop(ctx: &Ctx, interrupts: bool, ps: bool) {
    let reads = ctx.counters.get(if interrupts && !ps {
        "interrupts_reads"
    } else {
        "files_read"
    });
    let processes = ctx.counters.get("processes_listed");
    let bytes = ctx.counters.get("bytes_read");
    let loops = ctx.counters.get("loops");
    let mut buffer = Vec::with_capacity(64 * 1024);
    let read = |path: &Path, buffer: &mut Vec<u8>| -> bool {
        buffer.clear();
        match std::fs::File::open(path).and_then(|mut f| f.read_to_end(buffer)) {
            Ok(n) => {
                reads.fetch_add(1, Ordering::Relaxed);
                bytes.fetch_add(n as u64, Ordering::Relaxed);
                true
            }
            Err(_) => false,
        }
    };
    while !ctx.stopping() {
        if interrupts {
            read(Path::new("/proc/interrupts"), &mut buffer);
        }
        if ps {
            if let Ok(dir) = std::fs::read_dir("/proc") {
                for entry in dir.flatten() {
                    if ctx.stopping() {
                        return;
                    }
                    let name = entry.file_name();
                    if !name
                        .to_str()
                        .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
                    {
                        continue;
                    }
                    let proc_dir = entry.path();
                    // A process may end between listing and reading.
                    if read(&proc_dir.join("stat"), &mut buffer) {
                        processes.fetch_add(1, Ordering::Relaxed);
                        read(&proc_dir.join("cmdline"), &mut buffer);
                    }
                }
            }
        }
        loops.fetch_add(1, Ordering::Relaxed);
    }
}

/// `dd if=/dev/zero of=/dev/null` (512-byte blocks, dd's default).
fn zero_copy(ctx: &Ctx) {
    let copied = ctx.counters.get("bytes_copied");
    let (Ok(mut zero), Ok(mut null)) = (
        std::fs::File::open("/dev/zero"),
        std::fs::OpenOptions::new().write(true).open("/dev/null"),
    ) else {
        return ctx.fail("dohell: cannot open /dev/zero or /dev/null".into());
    };
    let mut block = [0u8; 512];
    while !ctx.stopping() {
        for _ in 0..1024 {
            if zero.read_exact(&mut block).is_err() || null.write_all(&block).is_err() {
                return ctx.fail("dohell: copying /dev/zero to /dev/null failed".into());
            }
        }
        copied.fetch_add(1024 * 512, Ordering::Relaxed);
    }
}

/// Human text for a counter value: bytes for `bytes*` counters.
pub fn counter_text(name: &str, value: u64) -> String {
    if name.contains("bytes") {
        human_bytes(value)
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Runs a resolved spec in this process for `ms` and returns its counters.
    fn run_for(spec: &str, ms: u64) -> (BTreeMap<String, u64>, Vec<String>) {
        let spec: LoadSpec = spec.parse().unwrap();
        let spec = spec.resolved();
        let ctx = Ctx::default();
        let mut started = Started::default();
        start(&spec, &ctx, &mut started).unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        ctx.stop.store(true, Ordering::SeqCst);
        started.join(Duration::from_secs(5));
        started.remove_temp_dirs();
        assert!(ctx.fatal().is_none(), "{:?}", ctx.fatal());
        (ctx.counters.snapshot(), started.notes)
    }

    #[test]
    fn cpu_counts_operations() {
        let (work, _) = run_for("cpu:workers=2", 200);
        assert!(work["ops"] > 0, "{work:?}");
    }

    #[test]
    fn vm_touches_verifies_and_frees() {
        let (work, _) = run_for("vm:workers=1,bytes=8M", 300);
        assert!(work["allocations"] >= 1, "{work:?}");
        assert!(work["bytes_touched"] >= 8 << 20, "{work:?}");
        assert!(work["bytes_freed"] >= 8 << 20, "{work:?}");
        assert_eq!(work["verify_errors"], 0);
    }

    #[test]
    fn io_writes_and_syncs_then_leaves_nothing() {
        let base = tempfile::tempdir().unwrap();
        let spec = format!("io:bytes=1M,block=64K,dir={}", base.path().display());
        let (work, _) = run_for(&spec, 500);
        assert!(work["bytes_written"] >= 1 << 20, "{work:?}");
        assert!(work["fsyncs"] >= 1, "{work:?}");
        assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
    }

    #[test]
    fn fswalk_stats_every_entry_or_none() {
        let root = tempfile::tempdir().unwrap();
        for d in ["a", "a/b", "c"] {
            std::fs::create_dir(root.path().join(d)).unwrap();
        }
        std::fs::write(root.path().join("a/b/file"), "x").unwrap();
        std::os::unix::fs::symlink("/", root.path().join("loop")).unwrap();
        let spec = format!("fswalk:root={}", root.path().display());
        let (work, _) = run_for(&spec, 200);
        assert!(work["walks"] >= 1, "{work:?}");
        // 5 entries per walk (a, a/b, a/b/file, c, loop): the symlink to /
        // is not followed.
        assert!(work["entries"] >= 5 * work["walks"], "{work:?}");
        assert!(work["entries"] <= 5 * (work["walks"] + 1), "{work:?}");
        assert!(work["lstats"] > 0);
        let (work, _) = run_for(&format!("{spec},no-stat"), 200);
        assert_eq!(work["lstats"], 0);
        assert!(work["entries"] > 0);
    }

    #[test]
    fn net_packets_flow() {
        let (work, _) = run_for("net", 200);
        assert!(
            work["packets_sent"] > 0 && work["packets_received"] > 0,
            "{work:?}"
        );
        assert!(work["packets_received"] <= work["packets_sent"]);
    }

    #[test]
    fn timers_expire() {
        let (work, _) = run_for("timers:workers=1,timers=4,interval=1ms", 200);
        assert!(work["expirations"] > 0 && work["wakeups"] > 0, "{work:?}");
    }

    #[test]
    fn msg_groups_exchange_messages() {
        let (work, _) = run_for("msg:fds=4", 200);
        assert!(work["messages_received"] > 0, "{work:?}");
        assert!(work["messages_received"] <= work["messages_sent"] + 4);
    }

    #[test]
    fn procfs_reads() {
        let (work, _) = run_for("procfs", 200);
        assert!(
            work["processes_listed"] > 0 && work["files_read"] > 0,
            "{work:?}"
        );
    }

    #[test]
    fn dohell_runs_every_part() {
        let base = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("d")).unwrap();
        let spec = format!(
            "dohell:dir={},root={}",
            base.path().display(),
            root.path().display()
        );
        let (work, _) = run_for(&spec, 500);
        for key in [
            "msg_messages_received",
            "io_bytes_written",
            "net_packets_received",
            "procfs_interrupts_reads",
            "procfs_processes_listed",
            "zero_bytes_copied",
            "fswalk_lstats",
        ] {
            assert!(work.get(key).copied().unwrap_or(0) > 0, "{key}: {work:?}");
        }
        assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
    }

    #[test]
    fn unusable_directories_fail_before_running() {
        let ctx = Ctx::default();
        let mut started = Started::default();
        let spec: LoadSpec = "io:dir=/nonexistent/rtlab".parse().unwrap();
        let err = start(&spec.resolved(), &ctx, &mut started).unwrap_err();
        assert!(err.contains("/nonexistent/rtlab"), "{err}");
        let spec: LoadSpec = "fswalk:root=/nonexistent/rtlab".parse().unwrap();
        let err = start(&spec.resolved(), &ctx, &mut started).unwrap_err();
        assert!(err.contains("cannot walk"), "{err}");
    }
}
