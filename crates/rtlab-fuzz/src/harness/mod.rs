//! Runs one target: its regression seeds, its corpus, then mutated
//! inputs, each under catch_unwind with the allocation guard armed.

mod catch;
mod child;
mod files;
mod in_process;
mod settings;
mod target;

use crate::rng::fnv1a;
use catch::install_panic_hook;
use child::{replay, supervise, CHILD_ENV, REPLAY_ENV};
use files::repo_root;
use in_process::run_here;
use settings::env_number;
use std::panic;
use std::path::Path;

pub use files::out_dir;
pub use in_process::MAX_INPUT;
pub use target::{Derive, Failure, Oracle, Summary, Target, Verdict};

/// The seed when `RTLAB_FUZZ_SEED` is not set: CI runs the same inputs
/// every time, so a failure there is a change's, not chance's.
const DEFAULT_SEED: u64 = 0x7274_6c61_6266_757a;

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
