//! A seeded mutation fuzzer for rtlab's parsers, run by `cargo test` on
//! stable Rust (cargo-fuzz needs nightly). Each target (tests/fuzz.rs)
//! is a parser's entry point and an oracle; this crate mutates real seed
//! inputs (`fuzz/corpus/TARGET/`), replays the crashing inputs kept as
//! regression seeds (`fuzz/regressions/TARGET/`), and reports every input
//! that panics, breaks a property, or asks for an absurd allocation.
//! docs/fuzz.md says how to run it longer and how to add a seed.
//!
//! ```text
//! seeds ─► Mutator (bit flips, inserts, splices, huge numbers, years 10000,
//!          64 Ki-char runs, control bytes, invalid UTF-8, deep nesting)
//!       ─► oracle under catch_unwind + AllocGuard ─► Ok / Err / failure
//!       ─► failure: minimized, written to target/fuzz/TARGET/, test fails
//! ```
//!
//! Deterministic: the same seed (`RTLAB_FUZZ_SEED`) and iteration count
//! (`RTLAB_FUZZ_ITERS`) run the same inputs.

mod alloc;
mod harness;
mod mutate;
mod rng;

pub use alloc::{AllocGuard, ALLOC_LIMIT};
pub use harness::{
    fuzz, out_dir, run, run_in, Derive, Failure, Oracle, Summary, Target, Verdict, MAX_INPUT,
};
pub use mutate::Mutator;
pub use rng::Rng;
