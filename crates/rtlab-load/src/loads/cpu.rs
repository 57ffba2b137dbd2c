//! The `cpu` load: square roots, as `stress --cpu`.

use super::super::ctx::Ctx;
use super::started::Started;
use std::sync::atomic::Ordering;

pub(super) fn start_cpu(ctx: &Ctx, started: &mut Started, workers: u32) -> Result<(), String> {
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
