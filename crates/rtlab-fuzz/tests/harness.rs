//! The harness finds what it is meant to find: oracles with a planted
//! panic, an absurd allocation and a broken property, and seeds in the
//! regression and pending folders, on a corpus of its own.

use rtlab_fuzz::{run_in, AllocGuard, Summary, Target, Verdict};
use std::path::Path;

#[global_allocator]
static GUARD: AllocGuard = AllocGuard;

/// A corpus under a temporary directory: `corpus/NAME/seed` and any
/// `(folder, file, content)` given.
fn corpus(name: &str, seed: &str, more: &[(&str, &str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |folder: &str, file: &str, content: &str| {
        let d = dir.path().join(folder).join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(file), content).unwrap();
    };
    write("corpus", "seed", seed);
    for (folder, file, content) in more {
        write(folder, file, content);
    }
    dir
}

fn target(name: &'static str, oracle: fn(&[u8]) -> Result<Verdict, String>) -> Target {
    Target {
        name,
        oracle,
        derive: None,
        fixup: None,
        iterations: 0,
    }
}

/// The first number in the input, if any.
fn number(input: &[u8]) -> Option<u64> {
    let text = String::from_utf8_lossy(input);
    let digits: String = text
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Panics on a number of 2^32 or more (as a parser converting to u32
/// with `as` and then indexing would).
fn panics_on_big_numbers(input: &[u8]) -> Result<Verdict, String> {
    match number(input) {
        Some(n) if n >= 1 << 32 => panic!("planted: {n} does not fit"),
        Some(_) => Ok(Verdict::Accepted),
        None => Ok(Verdict::Rejected),
    }
}

fn run(target: &Target, dir: &Path, iterations: u64) -> Summary {
    run_in(target, dir, 42, iterations)
}

#[test]
fn a_planted_panic_is_found_minimized_and_saved() {
    let t = target("selftest-panic", panics_on_big_numbers);
    let dir = corpus(t.name, "value = 7 # a comment long enough to be cut\n", &[]);
    let summary = run(&t, dir.path(), 2000);
    assert_eq!(summary.failures.len(), 1, "{summary}");
    let failure = &summary.failures[0];
    assert_eq!(failure.kind, "panic");
    assert!(failure.message.starts_with("planted:"), "{failure}");
    assert!(
        failure
            .location
            .as_deref()
            .unwrap()
            .contains("tests/harness.rs"),
        "{failure}"
    );
    // The saved input still fails, and the comment was cut away.
    let saved = std::fs::read(&failure.file).unwrap();
    assert!(number(&saved).unwrap() >= 1 << 32);
    assert!(
        !String::from_utf8_lossy(&saved).contains("comment"),
        "{saved:?}"
    );
}

#[test]
fn the_same_seed_runs_the_same_inputs() {
    let t = target("selftest-determinism", panics_on_big_numbers);
    let dir = corpus(t.name, "value = 7\n", &[]);
    let a = run(&t, dir.path(), 300);
    let b = run(&t, dir.path(), 300);
    assert_eq!((a.accepted, a.rejected), (b.accepted, b.rejected));
    let c = run_in(&t, dir.path(), 43, 300);
    assert_ne!((a.accepted, a.rejected), (c.accepted, c.rejected));
}

/// Reserves as many bytes as the input's number says, fallibly (as a
/// parser sizing a buffer by its input would, with `try_reserve`).
fn reserves_what_the_input_says(input: &[u8]) -> Result<Verdict, String> {
    let Some(n) = number(input) else {
        return Ok(Verdict::Rejected);
    };
    let mut buffer: Vec<u8> = Vec::new();
    let _ = buffer.try_reserve(n.min(1 << 40) as usize);
    Ok(Verdict::Accepted)
}

#[test]
fn an_absurd_allocation_is_refused_and_reported() {
    let t = target("selftest-allocation", reserves_what_the_input_says);
    let dir = corpus(t.name, "size 4096\n", &[]);
    let summary = run(&t, dir.path(), 2000);
    assert_eq!(summary.failures.len(), 1, "{summary}");
    assert_eq!(summary.failures[0].kind, "allocation");
    assert!(summary.failures[0].message.contains("bytes at once"));
}

/// A round trip that loses control characters.
fn drops_control_characters(input: &[u8]) -> Result<Verdict, String> {
    let shown: Vec<u8> = input.iter().copied().filter(|b| *b >= 0x20).collect();
    if shown != input {
        return Err("the text read back differs".into());
    }
    Ok(Verdict::Accepted)
}

#[test]
fn a_broken_property_is_reported() {
    let t = target("selftest-property", drops_control_characters);
    let dir = corpus(t.name, "plain text", &[]);
    let summary = run(&t, dir.path(), 500);
    assert_eq!(summary.failures.len(), 1, "{summary}");
    assert_eq!(summary.failures[0].kind, "property");
    assert!(
        std::fs::read(&summary.failures[0].file).unwrap().len() <= 2,
        "minimized to a control character or two"
    );
}

#[test]
fn regression_seeds_are_asserted_pending_seeds_only_listed() {
    let big = "n = 99999999999";
    let t = target("selftest-seeds", panics_on_big_numbers);

    let pending = corpus(t.name, "n = 1", &[("pending", "known-bug", big)]);
    let summary = run(&t, pending.path(), 0);
    assert!(summary.failures.is_empty(), "{summary}");
    assert_eq!(summary.pending.len(), 1);
    assert!(
        summary.pending[0].1.is_some(),
        "a pending seed still failing"
    );
    assert!(summary.to_string().contains("still fails"), "{summary}");
    // Mutants failing where the pending seed does are not news.
    let summary = run(&t, pending.path(), 2000);
    assert!(summary.failures.is_empty(), "{summary}");
    assert!(summary.known_hits > 0, "{summary}");

    let fixed = corpus(t.name, "n = 1", &[("pending", "fixed-bug", "n = 2")]);
    let summary = run(&t, fixed.path(), 0);
    assert!(summary.to_string().contains("passes now"), "{summary}");

    let regression = corpus(t.name, "n = 1", &[("regressions", "old-bug", big)]);
    let summary = run(&t, regression.path(), 0);
    assert_eq!(summary.failures.len(), 1, "{summary}");
    assert!(summary.failures[0].origin.starts_with("regression "));
}
