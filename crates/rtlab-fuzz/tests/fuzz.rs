//! The fuzz targets: each parser an attacker or a typo can feed, from
//! its entry point, with an oracle that says Ok or Err but never panics,
//! never asks for an absurd allocation, and keeps the round trips that
//! are cheap to check. docs/fuzz.md: running longer, adding seeds.
//!
//! Iterations per target are sized so that the whole file runs in about
//! half a minute in a debug build on two cores.

use rtlab_core::result::RunResult;
use rtlab_exec::plan::binary::{decode_event, decode_header, encode_header, EVENT_BYTES};
use rtlab_exec::plan::{self, check, Event, EventSource, MappedPlan, PlanHeader};
use rtlab_fuzz::{fuzz, AllocGuard, Target, Verdict};
use rtlab_report::budget::{self, Budget, Clause};
use rtlab_report::export::{
    CsvExporter, Exporter, HistfileExporter, JsonExporter, MarkdownExporter,
};
use rtlab_report::import::{self, cyclictest_histfile, cyclictest_json, ImportError};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

#[global_allocator]
static GUARD: AllocGuard = AllocGuard;

type Outcome = Result<Verdict, String>;

/// Text as the parsers get it: the CLI reads files with
/// `read_to_string` (invalid UTF-8 refused) or lossily (imports).
fn utf8(input: &[u8]) -> Option<&str> {
    std::str::from_utf8(input).ok()
}

fn verdict<T, E>(result: &Result<T, E>) -> Verdict {
    match result {
        Ok(_) => Verdict::Accepted,
        Err(_) => Verdict::Rejected,
    }
}

// ---------------------------------------------------------------------------
// Plans (crates/rtlab-exec/src/plan): text, binary, check
// ---------------------------------------------------------------------------

fn events_of(source: &dyn EventSource) -> Vec<Event> {
    (0..source.len()).map(|i| source.event(i)).collect()
}

/// A plan in the binary form, as `rtlab plan compile` writes it.
fn compile(header: &PlanHeader, events: &Vec<Event>) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    plan::write_binary(header, events, &mut bytes).map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// Decodes a whole binary plan in memory (what MappedPlan does over a mapping).
fn decode(bytes: &[u8]) -> Result<(PlanHeader, Vec<Event>), String> {
    let layout = decode_header(bytes, bytes.len() as u64)?;
    let events = bytes[layout.header_len as usize..]
        .chunks_exact(EVENT_BYTES)
        .map(|r| decode_event(r.try_into().expect("24-byte chunk")))
        .collect::<Vec<_>>();
    if events.len() as u64 != layout.count {
        return Err(format!(
            "decode_header accepted {} events, the file holds {}",
            layout.count,
            events.len()
        ));
    }
    Ok((layout.header, events))
}

/// The text form of a plan read back: the same header and events.
fn text_round_trip(header: &PlanHeader, events: &Vec<Event>) -> Result<(), String> {
    let text = plan::write(header, events);
    let (h, e) = plan::parse(&text, "written.plan")
        .map_err(|e| format!("plan::write wrote a plan plan::parse refuses: {e}\n{text}"))?;
    if &h != header || &e != events {
        return Err(format!("text round trip differs:\n{text}"));
    }
    Ok(())
}

fn plan_text(input: &[u8]) -> Outcome {
    let Some(text) = utf8(input) else {
        return Ok(Verdict::Rejected);
    };
    let Ok((header, events, lines)) = plan::text::parse_with_lines(text, "fuzz.plan") else {
        return Ok(Verdict::Rejected);
    };
    let report = check::check_lines(&header, &events, Some(&lines));
    serde_json::to_string(&report).map_err(|e| e.to_string())?;
    let _ = check::stats(&events);
    // Compile, read back: the same plan (`rtlab plan compile`).
    let bytes = compile(&header, &events)
        .map_err(|e| format!("a text plan that parses does not compile: {e}"))?;
    let (h, e) = decode(&bytes).map_err(|e| format!("a compiled plan does not decode: {e}"))?;
    if h != header || e != events {
        return Err("compile then decode gives another plan".into());
    }
    text_round_trip(&header, &events)?;
    Ok(Verdict::Accepted)
}

/// Where a binary input is written to be mapped: in the target's own
/// directory under target/ (nothing left in /tmp), made once.
fn scratch_file() -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = rtlab_fuzz::out_dir("plan_binary");
        std::fs::create_dir_all(&dir).expect("creating the target's directory");
        dir.join("mapped.rtlplan")
    })
}

fn plan_binary(input: &[u8]) -> Outcome {
    let decoded = decode(input);
    // The real entry point: `plan::load` maps the file.
    let path = scratch_file();
    std::fs::write(path, input).map_err(|e| format!("scratch file: {e}"))?;
    let loaded = plan::load(path);
    match (&decoded, &loaded) {
        (Ok((header, events)), Ok(loaded)) => {
            if !loaded.binary || &loaded.header != header || &events_of(&*loaded.events) != events {
                return Err("plan::load and decode_header read the plan differently".into());
            }
        }
        (Ok(_), Err(e)) => return Err(format!("decodes in memory but plan::load refuses: {e}")),
        // A text plan read by load: not the binary parser's business.
        (Err(_), Ok(loaded)) if !loaded.binary => {}
        (Err(e), Ok(_)) => return Err(format!("plan::load maps what decode refuses ({e})")),
        (Err(_), Err(_)) => {}
    }
    if let Ok(mapped) = MappedPlan::open(path) {
        let report = check::check(mapped.header(), &mapped);
        serde_json::to_string(&report).map_err(|e| e.to_string())?;
    }
    let Ok((header, events)) = decoded else {
        return Ok(Verdict::Rejected);
    };
    let report = check::check(&header, &events);
    // Encoded again and decoded: the same plan.
    let again = encode_header(&header, events.len() as u64)
        .map_err(|e| format!("a decoded header does not encode: {e}"))?;
    let mut bytes = again;
    for event in &events {
        bytes.extend_from_slice(&plan::binary::encode_event(event));
    }
    let (h, e) = decode(&bytes).map_err(|e| format!("a re-encoded plan does not decode: {e}"))?;
    if h != header || e != events {
        return Err("decode, encode, decode gives another plan".into());
    }
    // A plan without errors shows as text (`rtlab plan show`) and reads back.
    if report.is_clean() {
        text_round_trip(&header, &events)?;
    }
    Ok(Verdict::Accepted)
}

/// Binary seeds: every text seed that parses, compiled.
fn compile_text_seeds(_: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/plan_text");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if let Ok((header, events)) = plan::parse(&text, "seed") {
            if let Ok(bytes) = compile(&header, &events) {
                out.push(bytes);
            }
        }
    }
    assert!(
        !out.is_empty(),
        "no text seed in {} compiles",
        dir.display()
    );
    out
}

/// Sets a binary plan's event count to what its size holds (cutting a
/// partial record), when its header length is sane: most mutants then get
/// past the size check to the module table and the events.
fn fix_event_count(bytes: &mut Vec<u8>) {
    if bytes.len() < 64 {
        return;
    }
    let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    if header_len < 64 || header_len > bytes.len() || !header_len.is_multiple_of(8) {
        return;
    }
    let count = (bytes.len() - header_len) / EVENT_BYTES;
    bytes.truncate(header_len + count * EVENT_BYTES);
    bytes[16..24].copy_from_slice(&(count as u64).to_le_bytes());
}

#[test]
fn fuzz_plan_text() {
    fuzz(&Target {
        name: "plan_text",
        oracle: plan_text,
        derive: None,
        fixup: None,
        iterations: 4000,
    });
}

#[test]
fn fuzz_plan_binary() {
    fuzz(&Target {
        name: "plan_binary",
        oracle: plan_binary,
        derive: Some(compile_text_seeds),
        fixup: Some(fix_event_count),
        iterations: 3000,
    });
}

// ---------------------------------------------------------------------------
// Campaigns (crates/rtlab-campaign/src/parse/): parse, then plan
// ---------------------------------------------------------------------------

fn campaign(input: &[u8]) -> Outcome {
    let Some(text) = utf8(input) else {
        return Ok(Verdict::Rejected);
    };
    // What `rtlab campaign` checks loads with.
    let check_load = |spec: &str| {
        spec.parse::<rtlab_load::LoadSpec>()
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let Ok(parsed) = rtlab_campaign::parse(text, "fuzz.toml", &check_load) else {
        return Ok(Verdict::Rejected);
    };
    if let Some(budget) = &parsed.budget {
        let _ = Budget::parse(&budget.text);
    }
    let Ok(planned) = rtlab_campaign::plan(parsed) else {
        return Ok(Verdict::Rejected);
    };
    let _ = planned.table();
    let _ = rtlab_campaign::format_eta(planned.eta_ns());
    let _ = serde_json::to_string(&planned).map_err(|e| e.to_string())?;
    Ok(Verdict::Accepted)
}

#[test]
fn fuzz_campaign() {
    fuzz(&Target {
        name: "campaign",
        oracle: campaign,
        derive: None,
        fixup: None,
        iterations: 1500,
    });
}

// ---------------------------------------------------------------------------
// Tune rules (crates/rtlab-tune/src/rules_file.rs, rule.rs): parse, never apply
// ---------------------------------------------------------------------------

fn rules(input: &[u8]) -> Outcome {
    let Some(text) = utf8(input) else {
        return Ok(Verdict::Rejected);
    };
    let parsed = rtlab_tune::rules_file::parse(text, Path::new("fuzz-rules.toml"));
    if let Ok(rules) = &parsed {
        let _ = rtlab_tune::rule::detail_for(rules);
        let _ = format!("{rules:?}");
    }
    Ok(verdict(&parsed))
}

// ---------------------------------------------------------------------------
// exec serve's requests (crates/rtlab-client/src/protocol.rs), judged by
// the server (crates/rtlab-exec/src/serve/config.rs): what any process
// that can connect to the socket sends a root daemon
// ---------------------------------------------------------------------------

fn serve_request(input: &[u8]) -> Outcome {
    if input.len() > rtlab_client::protocol::MAX_MESSAGE {
        return Ok(Verdict::Rejected);
    }
    let parsed: Result<rtlab_client::protocol::Request, _> = serde_json::from_slice(input);
    if let Ok(rtlab_client::protocol::Request::Attach(request)) = &parsed {
        let config = rtlab_exec::serve::ServeConfig {
            cpus: vec![0, 1],
            ..rtlab_exec::serve::ServeConfig::new("/run/rtlab/exec.sock".into())
        };
        if let Ok(granted) = rtlab_exec::serve::config::grant(&config, request, b"fuzz", |_| 0) {
            let in_range = granted.priority <= config.max_priority
                && granted.offset_ns < granted.period_ns
                && granted.deadline_ns <= granted.period_ns
                && config.cpus.contains(&granted.cpu)
                && rtlab_exec::serve::config::valid_name(&granted.name);
            if !in_range {
                return Err(format!("granted out of its limits: {granted:?}"));
            }
        }
    }
    Ok(verdict(&parsed))
}

#[test]
fn fuzz_serve_request() {
    fuzz(&Target {
        name: "serve_request",
        oracle: serve_request,
        derive: None,
        fixup: None,
        iterations: 3000,
    });
}

#[test]
fn fuzz_rules() {
    fuzz(&Target {
        name: "rules",
        oracle: rules,
        derive: None,
        fixup: None,
        iterations: 3000,
    });
}

// ---------------------------------------------------------------------------
// Imports (crates/rtlab-report/src/import): histfile, cyclictest JSON, rtlab JSON
// ---------------------------------------------------------------------------

/// A fixed file time, so that runs do not depend on the clock.
fn file_time() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000)
}

/// What rtlab does with an imported run: shows its table, exports it in
/// every format; its rtlab JSON imports again as the same run.
fn use_imported(run: &RunResult) -> Result<(), String> {
    let _ = rtlab_report::run_summary::summary_table(run);
    for exporter in [
        &CsvExporter as &dyn Exporter,
        &HistfileExporter {
            hist_max_us: 1000,
            all_threads_column: true,
        },
        &MarkdownExporter,
    ] {
        let _ = exporter.write(run, &mut Vec::new());
    }
    let mut json = Vec::new();
    JsonExporter
        .write(run, &mut json)
        .map_err(|e| format!("an imported run does not export as JSON: {e}"))?;
    let json = String::from_utf8(json).map_err(|e| e.to_string())?;
    let back = import::import_text(&json, "exported.json", None)
        .map_err(|e| format!("an imported run, exported as JSON, does not import: {e}"))?;
    if back.id != run.id || back.series.len() != run.series.len() {
        return Err("an imported run, exported as JSON and imported, is another run".into());
    }
    Ok(())
}

fn import_with(input: &[u8], direct: fn(&str) -> Result<RunResult, ImportError>) -> Outcome {
    // As import_file reads a file.
    let text = String::from_utf8_lossy(input);
    let detected = import::import_text(&text, "fuzz-input", Some(file_time()));
    if let Ok(run) = &detected {
        use_imported(run)?;
    }
    // The format's own parser, whatever the detection says.
    let direct = direct(&text);
    if let Ok(run) = &direct {
        use_imported(run)?;
    }
    Ok(if detected.is_ok() || direct.is_ok() {
        Verdict::Accepted
    } else {
        Verdict::Rejected
    })
}

fn import_histfile(input: &[u8]) -> Outcome {
    import_with(input, |text| {
        cyclictest_histfile::parse(text, "fuzz-input", Some(file_time()))
    })
}

fn import_cyclictest_json(input: &[u8]) -> Outcome {
    import_with(input, |text| cyclictest_json::parse(text, "fuzz-input"))
}

fn import_rtlab_json(input: &[u8]) -> Outcome {
    import_with(input, |text| import::import_text(text, "fuzz-input", None))
}

#[test]
fn fuzz_import_histfile() {
    fuzz(&Target {
        name: "import_histfile",
        oracle: import_histfile,
        derive: None,
        fixup: None,
        iterations: 2000,
    });
}

#[test]
fn fuzz_import_cyclictest_json() {
    fuzz(&Target {
        name: "import_cyclictest_json",
        oracle: import_cyclictest_json,
        derive: None,
        fixup: None,
        iterations: 2000,
    });
}

#[test]
fn fuzz_import_rtlab_json() {
    fuzz(&Target {
        name: "import_rtlab_json",
        oracle: import_rtlab_json,
        derive: None,
        fixup: None,
        iterations: 1000,
    });
}

// ---------------------------------------------------------------------------
// Budgets (crates/rtlab-report/src/budget): parse, evaluate, show
// ---------------------------------------------------------------------------

/// Runs to evaluate budgets on: the first import seed of each kind that
/// imports (a timer, a net run, cyclictest's), few enough to evaluate
/// thousands of budgets in seconds.
fn runs() -> &'static [RunResult] {
    static RUNS: OnceLock<Vec<RunResult>> = OnceLock::new();
    RUNS.get_or_init(|| {
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
        let mut runs = Vec::new();
        for dir in [
            "import_rtlab_json",
            "import_cyclictest_json",
            "import_histfile",
        ] {
            let mut files: Vec<_> = std::fs::read_dir(corpus.join(dir))
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|e| e.path())
                .collect();
            files.sort();
            for path in files {
                let text =
                    String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned();
                if let Ok(run) = import::import_text(&text, "seed", Some(file_time())) {
                    if !runs.iter().any(|r: &RunResult| r.probe == run.probe) {
                        runs.push(run);
                    }
                }
            }
        }
        assert!(
            runs.iter().any(|r| r.net.is_some()),
            "no net run among the seeds"
        );
        runs
    })
}

/// A clause without its place: what the spec says.
fn meaning(c: &Clause) -> impl PartialEq + std::fmt::Debug + '_ {
    (c.index, &c.text, &c.series, c.metric, c.op, c.limit)
}

fn budget(input: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(input);
    let Ok(parsed) = Budget::parse(&text) else {
        return Ok(Verdict::Rejected);
    };
    // The spec it keeps (shown in tables, stored in JSON) reads back the same.
    let again = Budget::parse(parsed.spec()).map_err(|e| {
        format!(
            "Budget::parse refuses its own spec {:?}: {e}",
            parsed.spec()
        )
    })?;
    let a: Vec<_> = parsed.clauses().iter().map(meaning).collect();
    let b: Vec<_> = again.clauses().iter().map(meaning).collect();
    if a != b {
        return Err(format!(
            "the spec read back means another budget: {a:?} vs {b:?}"
        ));
    }
    let mut evaluations: Vec<_> = runs().iter().map(|run| parsed.evaluate(run)).collect();
    budget::reconcile(&mut evaluations);
    for e in &evaluations {
        let _ = e.report();
        serde_json::to_string(e).map_err(|e| format!("an evaluation does not serialize: {e}"))?;
    }
    let _ = budget::summary_line(&evaluations);
    let _ = budget::failures_table(&evaluations);
    // JUnit XML for the CI: XML 1.0 allows no control character but
    // tab, line feed and carriage return, even escaped.
    let xml = rtlab_report::junit::to_xml("fuzz", &evaluations);
    if let Some(c) = xml
        .chars()
        .find(|c| (*c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r'))
    {
        return Err(format!("the JUnit XML holds the control character {c:?}"));
    }
    Ok(Verdict::Accepted)
}

#[test]
fn fuzz_budget() {
    fuzz(&Target {
        name: "budget",
        oracle: budget,
        derive: None,
        fixup: None,
        // Each budget is evaluated on five runs and shown four ways: the
        // costliest input of all targets.
        iterations: 1500,
    });
}

// ---------------------------------------------------------------------------
// Values (crates/rtlab-core/src/units.rs, cpuset.rs, sched.rs)
// ---------------------------------------------------------------------------

fn units(input: &[u8]) -> Outcome {
    use rtlab_core::units::{human_duration, parse_duration_ns, parse_rate_period_ns, Micros};
    let text = String::from_utf8_lossy(input);
    let duration = parse_duration_ns(&text);
    if let Ok(ns) = duration {
        let _ = Micros(ns).to_string();
        // rtlab prints durations so that they read back, to 3 significant
        // decimals of their unit, within any offset a plan may have.
        if ns <= 1 << 62 {
            let shown = human_duration(ns);
            let back = parse_duration_ns(&shown)
                .map_err(|e| format!("human_duration({ns}) = {shown:?} does not read back: {e}"))?;
            if back.abs_diff(ns) > ns / 1000 {
                return Err(format!(
                    "human_duration({ns}) = {shown:?} reads back as {back}"
                ));
            }
        }
    }
    let rate = parse_rate_period_ns(&text);
    if let Ok(period) = rate {
        if period == 0 {
            return Err(format!("rate {text:?} gives a period of 0 ns"));
        }
    }
    let cpus = rtlab_core::cpuset::CpuSelection::parse(&text);
    let policy = text.parse::<rtlab_core::sched::Policy>();
    Ok(
        if duration.is_ok() || rate.is_ok() || cpus.is_ok() || policy.is_ok() {
            Verdict::Accepted
        } else {
            Verdict::Rejected
        },
    )
}

#[test]
fn fuzz_units() {
    fuzz(&Target {
        name: "units",
        oracle: units,
        derive: None,
        fixup: None,
        iterations: 5000,
    });
}

// ---------------------------------------------------------------------------
// Task sets (crates/rtlab-exec/src/taskset): TOML files, rt-app imports
// ---------------------------------------------------------------------------

/// A set that was accepted is written by `to_toml` into a file that reads
/// back to the same tasks.
fn taskset_round_trip(set: &rtlab_exec::taskset::TaskSet) -> Outcome {
    let text = set.to_toml();
    let again = rtlab_exec::taskset::TaskSet::parse(&text, Path::new("again.toml"))
        .map_err(|e| format!("to_toml does not read back: {e}\n{text}"))?;
    if again.tasks != set.tasks {
        return Err(format!("to_toml reads back other tasks:\n{text}"));
    }
    Ok(Verdict::Accepted)
}

fn taskset(input: &[u8]) -> Outcome {
    let Some(text) = utf8(input) else {
        return Ok(Verdict::Rejected);
    };
    match rtlab_exec::taskset::TaskSet::parse(text, Path::new("fuzz.toml")) {
        Ok(set) => taskset_round_trip(&set),
        Err(e) => {
            let _ = e.to_string();
            Ok(Verdict::Rejected)
        }
    }
}

#[test]
fn fuzz_taskset() {
    fuzz(&Target {
        name: "taskset",
        oracle: taskset,
        derive: None,
        fixup: None,
        iterations: 3000,
    });
}

fn rt_app(input: &[u8]) -> Outcome {
    let Some(text) = utf8(input) else {
        return Ok(Verdict::Rejected);
    };
    match rtlab_exec::taskset::parse_rt_app(text, Path::new("fuzz.json")) {
        Ok(imported) => taskset_round_trip(&imported.set),
        Err(e) => {
            let _ = e.to_string();
            Ok(Verdict::Rejected)
        }
    }
}

#[test]
fn fuzz_rt_app() {
    fuzz(&Target {
        name: "rt_app",
        oracle: rt_app,
        derive: None,
        fixup: None,
        iterations: 3000,
    });
}

// ---------------------------------------------------------------------------
// Captures (crates/rtlab-exec/src/traffic/pcap/): `rtlab traffic import`
// ---------------------------------------------------------------------------

/// Reads a pcap or pcapng capture to its end or its first error, and
/// every packet's UDP datagram, as `traffic import` does.
fn pcap(input: &[u8]) -> Outcome {
    use rtlab_exec::traffic::format::MAX_PAYLOAD;
    use rtlab_exec::traffic::pcap::{link, read::CaptureReader};
    let Ok(mut reader) = CaptureReader::open(input) else {
        return Ok(Verdict::Rejected);
    };
    let mut expected_number = 1;
    loop {
        let packet = match reader.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) => {
                if !e.contains("byte ") {
                    return Err(format!("an error that says not where: {e}"));
                }
                return Ok(Verdict::Rejected);
            }
        };
        if packet.number != expected_number {
            return Err(format!(
                "packet {} after packet {}",
                packet.number,
                expected_number - 1
            ));
        }
        expected_number += 1;
        if let Some(d) = link::datagram(packet.link_type, packet.data) {
            if usize::from(d.size) > MAX_PAYLOAD || d.captured.len() > usize::from(d.size) {
                return Err(format!(
                    "datagram of {} bytes, {} captured",
                    d.size,
                    d.captured.len()
                ));
            }
        }
    }
    if reader.position() != input.len() as u64 {
        return Err(format!(
            "the end at byte {} of {}",
            reader.position(),
            input.len()
        ));
    }
    Ok(Verdict::Accepted)
}

#[test]
fn fuzz_pcap() {
    fuzz(&Target {
        name: "pcap",
        oracle: pcap,
        derive: None,
        fixup: None,
        iterations: 3000,
    });
}
