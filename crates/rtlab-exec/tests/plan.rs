//! Plan files: text parsing and its errors, the binary form through mmap,
//! the round trip between them, checks and generators.

use rtlab_exec::plan::check::{check_lines, stats};
use rtlab_exec::plan::gen::{DataGen, GenSpec, Length, Pattern};
use rtlab_exec::plan::text::parse_with_lines;
use rtlab_exec::plan::{
    check, load, parse, write, write_binary, write_binary_iter, Event, EventSource, MappedPlan,
    ModuleDecl, PlanHeader, Severity,
};
use std::io::BufWriter;

const SAMPLE: &str = r#"# a sample plan
rtlab-plan 1                         # magic and version
module tick mark                     # id 0
module tx udp dest=127.0.0.1:7700 size=64
repeat 10ms
events
0us     tick
150us   tx   hex:0102030405          # five bytes, then zeros
1.5ms   tick "a \"b\" # c\\"
2ms     tx   "twelve bytes" flags=0
"#;

fn err_of(text: &str) -> rtlab_exec::plan::PlanError {
    parse(text, "t.plan").expect_err("must be refused")
}

#[test]
fn parses_the_sample() {
    let (header, events) = parse(SAMPLE, "sample.txt").unwrap();
    assert_eq!(header.modules.len(), 2);
    assert_eq!(header.modules[1].name, "tx");
    assert_eq!(header.modules[1].id, 1);
    assert_eq!(header.modules[1].setting("size"), Some("64"));
    assert_eq!(header.repeat_ns, Some(10_000_000));
    assert_eq!(events.len(), 4);
    assert_eq!(events[1].offset_ns, 150_000);
    assert_eq!(events[1].module, 1);
    assert_eq!(&events[1].data[..6], &[1, 2, 3, 4, 5, 0]);
    assert_eq!(events[2].offset_ns, 1_500_000);
    assert_eq!(&events[2].data[..11], b"a \"b\" # c\\\0");
    assert_eq!(&events[3].data, b"twelve bytes");
}

#[test]
fn parse_errors_name_the_line_and_what_was_expected() {
    let cases: &[(&str, usize, &str)] = &[
        ("", 1, "missing header"),
        ("# only a comment\n", 1, "missing header"),
        ("module a mark\n", 1, "missing header"),
        ("rtlab-plan 2\n", 1, "unsupported plan version"),
        ("rtlab-plan 1\nmodule a blink\n", 2, "unknown kind"),
        (
            "rtlab-plan 1\nmodule a mark\nmodule a mark\n",
            3,
            "duplicate module name",
        ),
        ("rtlab-plan 1\nmodule a udp\n", 2, "dest"),
        ("rtlab-plan 1\nmodule a mark x=1\n", 2, "takes no setting"),
        (
            "rtlab-plan 1\nmodule a mark\nevents\n0us b\n",
            4,
            "unknown module 'b'",
        ),
        (
            "rtlab-plan 1\nmodule a mark\nevents\n\n1.5 a\n",
            5,
            "bad offset",
        ),
        (
            "rtlab-plan 1\nmodule a mark\nevents\n1xs a\n",
            4,
            "bad offset",
        ),
        (
            "rtlab-plan 1\nmodule a mark\nevents\n1us a hex:00112233445566778899aabbcc\n",
            4,
            "data too long",
        ),
        (
            "rtlab-plan 1\nmodule a mark\nevents\n1us a \"thirteen byte\"\n",
            4,
            "data too long",
        ),
        (
            "rtlab-plan 1\nmodule a mark\nevents\n1us a hex:123\n",
            4,
            "even number",
        ),
        (
            "rtlab-plan 1\nmodule a mark\nevents\n1us a \"open\n",
            4,
            "unterminated",
        ),
        (
            "rtlab-plan 1\nmodule a mark\nevents\n1us a x y\n",
            4,
            "unexpected 'x'",
        ),
        (
            "rtlab-plan 1\nmodule a mark\nevents\n1us a flags=70000\n",
            4,
            "bad flags",
        ),
        ("rtlab-plan 1\nrepeat 0ms\n", 2, "longer than 0"),
        (
            "rtlab-plan 1\nrepeat 1ms\nrepeat 2ms\n",
            3,
            "second 'repeat'",
        ),
        ("rtlab-plan 1\nbogus\n", 2, "expected 'module"),
        (
            "rtlab-plan 1\nmodule a mark\nevents\n0us\n",
            4,
            "expected a module name",
        ),
    ];
    for (text, line, words) in cases {
        let e = err_of(text);
        assert_eq!(e.line, Some(*line), "{text:?}: {e}");
        assert!(e.message.contains(words), "{text:?}: '{words}' not in {e}");
        assert!(
            e.to_string().starts_with(&format!("t.plan:{line}: ")),
            "{e}"
        );
    }
}

#[test]
fn more_than_65535_modules_are_refused() {
    let mut text = String::from("rtlab-plan 1\n");
    for i in 0..65_536 {
        text.push_str(&format!("module m{i} mark\n"));
    }
    let e = err_of(&text);
    assert_eq!(e.line, Some(65_537), "{e}");
    assert!(e.message.contains("more than 65535 modules"), "{e}");
}

#[test]
fn unsorted_offsets_parse_and_check_reports_them_with_lines() {
    let text = "rtlab-plan 1\nmodule a mark\nmodule b mark\nevents\n2ms a\n1ms a\n";
    let (header, events, lines) = parse_with_lines(text, "u.txt").unwrap();
    assert_eq!(lines, vec![5, 6]);
    let report = check_lines(&header, &events, Some(&lines));
    assert_eq!(report.errors, 1);
    let f = &report.findings[0];
    assert_eq!((f.code, f.index, f.line), ("unsorted", Some(1), Some(6)));
    assert!(report
        .findings
        .iter()
        .any(|f| f.code == "unused-module" && f.severity == Severity::Warning));
}

#[test]
fn never_panics_on_prefixes_and_mutations() {
    let bytes = SAMPLE.as_bytes();
    for end in 0..=bytes.len() {
        if let Ok(prefix) = std::str::from_utf8(&bytes[..end]) {
            let _ = parse(prefix, "p");
        }
    }
    let inserts = [
        "\"",
        "\\",
        "#",
        " ",
        "\n",
        "hex:",
        "=",
        "9",
        "ms",
        "é",
        "\0",
        "99999999999999999999s",
    ];
    for at in 0..bytes.len() {
        for insert in inserts {
            let mut text = SAMPLE[..at].to_string();
            if !SAMPLE.is_char_boundary(at) {
                continue;
            }
            text.push_str(insert);
            text.push_str(&SAMPLE[at..]);
            let _ = parse(&text, "m");
            // and with the byte at `at` removed
            let mut cut = SAMPLE[..at].to_string();
            cut.push_str(&SAMPLE[at + 1..]);
            let _ = parse(&cut, "m");
        }
    }
}

#[test]
fn text_binary_mapped_text_round_trip() {
    let (header, events) = parse(SAMPLE, "sample.txt").unwrap();
    let text = write(&header, &events);
    assert_eq!(parse(&text, "w").unwrap(), (header.clone(), events.clone()));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.plan");
    let mut bytes = Vec::new();
    write_binary(&header, &events, &mut bytes).unwrap();
    let table_len = bytes.len() - 64 - 24 * events.len();
    assert_eq!(table_len % 8, 0);
    assert_eq!(&bytes[..8], b"RTLPLAN\0");
    std::fs::write(&path, &bytes).unwrap();

    let mapped = MappedPlan::open(&path).unwrap();
    assert_eq!(mapped.header(), &header);
    assert_eq!(mapped.len(), events.len() as u64);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(&mapped.event(i as u64), e);
    }
    let again = write(mapped.header(), &mapped);
    assert_eq!(again, text);

    let loaded = load(&path).unwrap();
    assert!(loaded.binary);
    let txt = dir.path().join("s.txt");
    std::fs::write(&txt, &text).unwrap();
    let loaded_text = load(&txt).unwrap();
    assert!(!loaded_text.binary);
    assert_eq!(loaded_text.header, loaded.header);
    assert_eq!(loaded_text.events.event(3), loaded.events.event(3));
}

#[test]
fn every_data_byte_survives_the_text_form() {
    let header = PlanHeader {
        modules: vec![ModuleDecl {
            id: 0,
            name: "m".into(),
            kind: "mark".into(),
            settings: vec![],
        }],
        repeat_ns: None,
    };
    let mut events = Vec::new();
    for b in 0..=255u8 {
        let mut data = [0; 12];
        data[0] = b;
        data[5] = b.wrapping_mul(7);
        data[11] = b'"';
        events.push(Event {
            offset_ns: u64::from(b) * 1_234_567,
            module: 0,
            flags: u16::from(b) * 3,
            data,
        });
    }
    let text = write(&header, &events);
    assert_eq!(parse(&text, "d").unwrap().1, events);
}

#[test]
fn corrupt_binary_plans_are_refused_not_panicked_on() {
    let (header, events) = parse(SAMPLE, "sample.txt").unwrap();
    let mut good = Vec::new();
    write_binary(&header, &events, &mut good).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.plan");
    // Every truncation, and every single byte of the header and table flipped.
    for end in 0..good.len() {
        std::fs::write(&path, &good[..end]).unwrap();
        assert!(load(&path).is_err(), "truncated to {end} bytes accepted");
    }
    let header_len = good.len() - 24 * events.len();
    for at in 0..header_len {
        let mut bad = good.clone();
        bad[at] ^= 0x41;
        std::fs::write(&path, &bad).unwrap();
        let _ = load(&path);
    }
    bad_field(&good, 8, 2, &path, "version");
    bad_field(&good, 16, 99, &path, "size mismatch");
}

fn bad_field(good: &[u8], at: usize, value: u32, path: &std::path::Path, words: &str) {
    let mut bad = good.to_vec();
    bad[at..at + 4].copy_from_slice(&value.to_le_bytes());
    std::fs::write(path, &bad).unwrap();
    let e = MappedPlan::open(path).err().expect("refused");
    assert!(e.message.contains(words), "{e}");
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_large_mapped_plan_is_not_read_into_memory() {
    const N: u64 = 2_000_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.plan");
    let spec = GenSpec {
        pattern: Pattern::Periodic { period_ns: 1_000 },
        length: Length::Count(N),
        module: 0,
        start_ns: 0,
        seed: 1,
        data: DataGen::Sequence,
    };
    let header = PlanHeader {
        modules: vec![ModuleDecl {
            id: 0,
            name: "tick".into(),
            kind: "mark".into(),
            settings: vec![],
        }],
        repeat_ns: None,
    };
    let file = std::fs::File::create(&path).unwrap();
    write_binary_iter(
        &header,
        spec.count(),
        spec.events(),
        BufWriter::new(file),
        |_| {},
    )
    .unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    assert_eq!(size, 64 + 16 + 24 * N);

    let before = rss_kib();
    let plan = MappedPlan::open(&path).unwrap();
    assert_eq!(plan.len(), N);
    for i in [0, 1, N / 2, N - 1] {
        let e = plan.event(i);
        assert_eq!(e.offset_ns, i * 1_000);
        assert_eq!(&e.data[..4], &(i as u32).to_le_bytes());
    }
    let grown_kib = rss_kib().saturating_sub(before);
    // The file is ~46 MiB; a few pages (plus readahead) may be touched.
    assert!(
        grown_kib * 1024 < size / 8,
        "RSS grew by {grown_kib} KiB for a {size}-byte plan"
    );
    let s = stats(&plan);
    assert_eq!(s.min_spacing_ns, Some(1_000));
    assert!(check(plan.header(), &plan).is_clean());
}

#[test]
fn check_findings() {
    let header = PlanHeader {
        modules: vec![
            ModuleDecl {
                id: 0,
                name: "a".into(),
                kind: "mark".into(),
                settings: vec![],
            },
            ModuleDecl {
                id: 1,
                name: "unused".into(),
                kind: "mark".into(),
                settings: vec![],
            },
        ],
        repeat_ns: Some(1_000),
    };
    let ev = |offset_ns, module, flags| Event {
        offset_ns,
        module,
        flags,
        data: [0; 12],
    };
    let events = vec![ev(0, 0, 0), ev(500, 0, 0), ev(400, 7, 1), ev(2_000, 0, 0)];
    let report = check(&header, &events);
    let codes: Vec<(&str, Option<u64>)> =
        report.findings.iter().map(|f| (f.code, f.index)).collect();
    for expected in [
        ("too-close", Some(1)),
        ("unsorted", Some(2)),
        ("unknown-module", Some(2)),
        ("flags", Some(2)),
        ("repeat-too-short", None),
        ("unused-module", None),
    ] {
        assert!(codes.contains(&expected), "{expected:?} not in {codes:?}");
    }
    assert_eq!(report.errors, 4);
    assert_eq!(report.warnings, 2);
    // Errors first.
    assert_eq!(report.findings[0].severity, Severity::Error);

    let empty = check(&header, &Vec::<Event>::new());
    assert!(empty.is_clean());
    assert!(empty.findings.iter().any(|f| f.code == "empty"));
}

#[test]
fn generators_are_deterministic_sorted_and_lazy() {
    let jittered = GenSpec {
        pattern: Pattern::Jittered {
            period_ns: 1_000_000,
            jitter_ns: 500_000,
        },
        length: Length::Duration(1_000_000_000),
        module: 3,
        start_ns: 0,
        seed: 42,
        data: DataGen::Fixed(*b"abcdefghijkl"),
    };
    jittered.validate().unwrap();
    let a: Vec<Event> = jittered.events().collect();
    let b: Vec<Event> = jittered.events().collect();
    assert_eq!(a, b);
    assert_eq!(a.len() as u64, jittered.count());
    assert_eq!(a.len(), 1_000);
    assert!(a.windows(2).all(|w| w[0].offset_ns <= w[1].offset_ns));
    assert!(a
        .iter()
        .enumerate()
        .all(|(i, e)| e.offset_ns.abs_diff(i as u64 * 1_000_000) <= 500_000));
    assert!(
        a.iter().any(|e| e.offset_ns % 1_000_000 != 0),
        "no jitter at all"
    );
    let other_seed = GenSpec {
        seed: 43,
        ..jittered.clone()
    };
    assert_ne!(other_seed.events().collect::<Vec<_>>(), a);

    let too_much = GenSpec {
        pattern: Pattern::Jittered {
            period_ns: 1_000,
            jitter_ns: 501,
        },
        ..jittered.clone()
    };
    assert!(too_much.validate().is_err());

    let periodic = GenSpec {
        pattern: Pattern::Periodic { period_ns: 3 },
        length: Length::Duration(10),
        start_ns: 5,
        data: DataGen::Sequence,
        ..jittered
    };
    let p: Vec<u64> = periodic.events().map(|e| e.offset_ns).collect();
    assert_eq!(p, vec![5, 8, 11, 14]);
    assert_eq!(periodic.count(), 4);
}

#[test]
fn poisson_mean_spacing_is_near_the_asked_mean() {
    let spec = GenSpec {
        pattern: Pattern::Poisson {
            mean_gap_ns: 1_000_000.0,
        },
        length: Length::Count(20_000),
        module: 0,
        start_ns: 0,
        seed: 7,
        data: DataGen::Sequence,
    };
    spec.validate().unwrap();
    let events: Vec<Event> = spec.events().collect();
    assert_eq!(events.len(), 20_000);
    assert!(events.windows(2).all(|w| w[0].offset_ns <= w[1].offset_ns));
    let mean = events.last().unwrap().offset_ns as f64 / events.len() as f64;
    assert!((500_000.0..2_000_000.0).contains(&mean), "mean gap {mean}");
    let by_duration = GenSpec {
        length: Length::Duration(1_000_000_000),
        ..spec
    };
    let n = by_duration.count();
    assert_eq!(n, by_duration.events().count() as u64);
    assert!((500..2_000).contains(&n), "{n} events in 1 s at 1000/s");
}
