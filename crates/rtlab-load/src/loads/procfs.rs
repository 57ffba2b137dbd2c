//! The `procfs` load, and dohell's copy of /dev/zero: `cat
//! /proc/interrupts`, `ps w`, `dd if=/dev/zero of=/dev/null`.

use super::super::ctx::Ctx;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::Ordering;

/// `cat /proc/interrupts` and `ps w` (every /proc/PID/stat and cmdline).
pub(super) fn procfs_loop(ctx: &Ctx, interrupts: bool, ps: bool) {
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
pub(super) fn zero_copy(ctx: &Ctx) {
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
