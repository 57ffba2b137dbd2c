//! The `io` load: writes and syncs to files with no name, in a private
//! directory.

use super::super::ctx::Ctx;
use super::started::Started;
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// Makes the load's private directory `rtlab-load-<pid>.<n>` under `base`
/// (mode 0700), first removing empty ones left by dead workers.
fn make_private_dir(base: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    if let Ok(entries) = std::fs::read_dir(base) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.strip_prefix(super::super::cgroup::NAME_PREFIX))
                .and_then(|n| n.split('.').next())
                .and_then(|p| p.parse::<i32>().ok());
            if let Some(pid) = pid {
                if !super::super::sys::pid_alive(pid) {
                    // rmdir: only when empty, never anything else.
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
        }
    }
    let pid = std::process::id();
    for n in 0..1000 {
        let dir = base.join(format!("{}{pid}.{n}", super::super::cgroup::NAME_PREFIX));
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

pub(super) fn start_io(
    ctx: &Ctx,
    started: &mut Started,
    base: &Path,
    workers: u32,
    file_bytes: u64,
    block: u64,
) -> Result<(), String> {
    let dir = make_private_dir(base).map_err(|e| format!("io: {e}"))?;
    started.temp_dirs.push(dir.clone());
    if super::super::sys::is_tmpfs(&dir) {
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
