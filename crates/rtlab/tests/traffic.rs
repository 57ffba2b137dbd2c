//! `rtlab traffic` end to end, through the binary: a generated plan
//! replayed from one network namespace and recorded in another across a
//! veth pair; captures of a replay made by tshark and tcpdump imported and
//! replayed again; broken captures refused; the runs stored, shown,
//! compared, reported and held to budgets; bad input refused.
//!
//! The live tests need root and iproute2 (they skip, saying why, without)
//! and take the machine-wide lock in CI (`flock /tmp/rtlab-host.lock`);
//! inside this file they run one at a time (`LIVE`), as two replays
//! spinning on a 2-core machine at once would measure each other. No
//! timing is asserted absolutely: counts, identities, and relations
//! between what the replay, the receiver and the captures measured.

mod common;

use common::netns::{self, Namespaced, NetnsPair, CLIENT_ADDR, CLIENT_DEVICE, SERVER_ADDR};
use common::{rtlab, run, skip};
use rtlab_exec::traffic::format::TrafficData;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// One live test at a time (see the module's comment).
static LIVE: Mutex<()> = Mutex::new(());

/// How long any one rtlab or capture may run before the test gives up.
const LIMIT: Duration = Duration::from_secs(60);

/// A test's namespaces, its temporary directory and its result store.
struct Lab {
    dir: tempfile::TempDir,
    pair: NetnsPair,
}

impl Lab {
    /// The lab, or None (the reason printed) where namespaces cannot be made.
    fn new() -> Option<Lab> {
        if let Err(why) = netns::available() {
            skip(&why);
            return None;
        }
        let pair = NetnsPair::create().expect("two network namespaces and a veth pair");
        Some(Lab {
            dir: tempfile::tempdir().unwrap(),
            pair,
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn state(&self) -> PathBuf {
        self.path("state")
    }

    /// rtlab with this lab's journal and store, run in the host's namespace.
    fn rtlab(&self, args: &[&str]) -> std::process::Output {
        run(rtlab(&self.state()).args(args))
    }

    /// `traffic gen ARGS -o NAME`: the plan's path.
    fn gen(&self, name: &str, args: &[&str]) -> PathBuf {
        let plan = self.path(name);
        gen(&self.state(), &plan, args);
        plan
    }

    /// `traffic record --listen SERVER:PORT ARGS --json NAME.json` started in
    /// the receiver's namespace; returns once it listens.
    fn start_record(&self, name: &str, port: u16, args: &[&str]) -> Namespaced {
        let json = self.path(&format!("{name}.json"));
        let listen = format!("{SERVER_ADDR}:{port}");
        let mut command = rtlab(&self.state());
        command
            .args(["traffic", "record", "--listen", &listen, "--idle", "1s"])
            .args(cpu_args(RECEIVER_CPU))
            .args(args)
            .args(["--json", json.to_str().unwrap(), "--quiet"]);
        let log = self.path(&format!("{name}.log"));
        let record = Namespaced::spawn(&mut command, self.pair.server(), "traffic record", &log);
        netns::wait_for_udp_listener(self.pair.server(), port, Duration::from_secs(30));
        record
    }

    /// `traffic replay PLAN --to SERVER:PORT ARGS --json NAME.json` in the
    /// sender's namespace, to its end: its exit code and result.
    fn replay(&self, name: &str, plan: &Path, port: u16, args: &[&str]) -> (Option<i32>, Value) {
        let json = self.path(&format!("{name}.json"));
        let to = format!("{SERVER_ADDR}:{port}");
        let mut command = rtlab(&self.state());
        command
            .args(["traffic", "replay", plan.to_str().unwrap(), "--to", &to])
            .args(["--skip-after", "1s"])
            .args(cpu_args(SENDER_CPU))
            .args(args)
            .args(["--json", json.to_str().unwrap(), "--quiet"]);
        let log = self.path(&format!("{name}.log"));
        let replay = Namespaced::spawn(&mut command, self.pair.client(), "traffic replay", &log);
        let (code, _, _) = replay.finish(LIMIT);
        (code, result(&json))
    }

    /// A replay of `plan` recorded on `port`: both results (the record's
    /// plan written to `got`, when given).
    fn round_trip(
        &self,
        name: &str,
        plan: &Path,
        port: u16,
        got: Option<&Path>,
        replay_args: &[&str],
    ) -> (Value, Value) {
        let mut record_args = vec!["--against", plan.to_str().unwrap()];
        if let Some(got) = got {
            record_args.extend(["-o", got.to_str().unwrap()]);
        }
        let record = self.start_record(&format!("{name}-record"), port, &record_args);
        let (code, replayed) = self.replay(&format!("{name}-replay"), plan, port, replay_args);
        assert_eq!(code, Some(0), "traffic replay");
        let (code, _, _) = record.finish(LIMIT);
        assert_eq!(code, Some(0), "traffic record");
        (replayed, result(&self.path(&format!("{name}-record.json"))))
    }
}

/// The receiver and the sender each on a CPU of its own (both run at
/// SCHED_FIFO 90: on one CPU each would delay the other). Every replay
/// runs with `--skip-after 1s`: this VM's host stalls last milliseconds,
/// and a packet skipped there would be a packet missing from the counts;
/// late, it is still sent and its lateness shows in the errors.
const RECEIVER_CPU: usize = 0;
const SENDER_CPU: usize = 1;

/// `--cpu N` where the machine has that CPU online, else nothing.
fn cpu_args(cpu: usize) -> Vec<String> {
    // SAFETY: sysconf has no side effects.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if online > 1 && (cpu as i64) < online as i64 {
        vec!["--cpu".into(), cpu.to_string()]
    } else {
        Vec::new()
    }
}

/// `traffic gen ARGS -o PLAN`, which must succeed.
fn gen(state: &Path, plan: &Path, args: &[&str]) {
    let out = run(rtlab(state).args(["traffic", "gen"]).args(args).args([
        "-o",
        plan.to_str().unwrap(),
        "--quiet",
    ]));
    assert_eq!(out.status.code(), Some(0), "traffic gen {args:?}");
}

/// `traffic import CAPTURE -o PLAN ARGS`.
fn import(state: &Path, capture: &Path, plan: &Path, args: &[&str]) -> std::process::Output {
    run(rtlab(state)
        .args(["traffic", "import", capture.to_str().unwrap()])
        .args(["-o", plan.to_str().unwrap(), "--quiet"])
        .args(args))
}

fn result(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: no result: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn counts(result: &Value) -> &Value {
    &result["traffic"]["counts"]
}

fn count(result: &Value, field: &str) -> u64 {
    counts(result)[field]
        .as_u64()
        .unwrap_or_else(|| panic!("traffic.counts.{field} in {}", result["traffic"]))
}

/// A series' percentile (`p50`, `p90`, `p99`, `p99_9`), ns.
fn percentile(result: &Value, series: &str, which: &str) -> u64 {
    let all = result["series"].as_array().expect("series");
    let found = all
        .iter()
        .find(|s| s["name"] == series)
        .unwrap_or_else(|| panic!("no series {series} in {all:?}"));
    found["percentiles_ns"][which]
        .as_u64()
        .expect("a percentile")
}

/// A traffic plan's events: (offset ns, size, flow) in time order.
fn plan_events(path: &Path) -> Vec<(u64, u16, u16)> {
    let plan = rtlab_exec::plan::load(path)
        .unwrap_or_else(|e| panic!("{}: not a plan: {e}", path.display()));
    for module in &plan.header.modules {
        assert_eq!(module.kind, "traffic", "{}: {module:?}", path.display());
    }
    (0..plan.events.len())
        .map(|i| {
            let event = plan.events.event(i);
            let data = TrafficData::decode(&event.data).expect("a traffic event");
            (event.offset_ns, data.size, event.module)
        })
        .collect()
}

/// |recorded gap − planned gap| for each packet after the first, sorted
/// (the two plans have the same packets in the same order).
fn gap_errors(recorded: &[(u64, u16, u16)], planned: &[(u64, u16, u16)]) -> Vec<u64> {
    assert_eq!(recorded.len(), planned.len());
    let mut errors: Vec<u64> = recorded
        .windows(2)
        .zip(planned.windows(2))
        .map(|(r, p)| (r[1].0 - r[0].0).abs_diff(p[1].0 - p[0].0))
        .collect();
    errors.sort_unstable();
    errors
}

/// The nearest-rank quantile `q` (0-1) of sorted values.
fn quantile(sorted: &[u64], q: f64) -> u64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// How far apart two stamps of the same packet's passage can be on a veth,
/// ns: the sender's software transmit stamp (veth_xmit), the receiver's
/// receive stamp (netif_rx, taken at enqueue) and a capture's (the tap in
/// dev_queue_xmit) are all taken inside one transmit call with bottom
/// halves off, so a packet's stamps differ by the path's few hundred ns;
/// 2 µs leaves room for a pcap's microsecond resolution (its truncation
/// moves a gap by at most 1 µs).
const SAME_PASSAGE_NS: u64 = 2_000;

/// The replay's departures came from kernel transmit stamps (the relation
/// of recorded and departure gaps holds only then); else says why not.
fn kernel_departures(replayed: &Value) -> bool {
    let source = replayed["traffic"]["timestamps"].as_str().unwrap_or("");
    if source == "kernel-tx-software" && count(replayed, "without_kernel_stamp") == 0 {
        return true;
    }
    skip(&format!(
        "departures from {source:?} ({} without a kernel stamp): the gap relation needs the kernel's transmit stamps",
        counts(replayed)["without_kernel_stamp"]
    ));
    false
}

/// The gaps of `recorded` (arrivals, or a capture's timestamps) reproduce
/// the plan's within the error the replay reported: for every packet,
/// recorded gap error ≤ departure gap error + the spread of the two stamps
/// of one passage (SAME_PASSAGE_NS, twice: a gap has two ends). So for the
/// quantiles, P(Z > x90 + y) ≤ P(X > x90) + P(Y > y) = 10 % + 0: the 80th
/// percentile of the recorded gap errors is at most the replay's own 90th
/// percentile of its departure gap errors plus 2 × SAME_PASSAGE_NS. A
/// recorder or an importer that shifted packets, lost or invented gaps,
/// or a replay whose report flattered its departures, breaks it.
fn assert_gaps_within_the_replays_error(what: &str, errors: &[u64], replayed: &Value) {
    let replay_p90 = percentile(replayed, "gap", "p90");
    let recorded_p80 = quantile(errors, 0.8);
    eprintln!(
        "{what}: gap error p50 {} ns, p80 {recorded_p80} ns, p99 {} ns, max {} ns; replay's gap error p50 {} ns, p90 {replay_p90} ns, p99 {} ns",
        quantile(errors, 0.5),
        quantile(errors, 0.99),
        errors[errors.len() - 1],
        percentile(replayed, "gap", "p50"),
        percentile(replayed, "gap", "p99"),
    );
    assert!(
        recorded_p80 <= replay_p90 + 2 * SAME_PASSAGE_NS,
        "{what}: 80 % of the gaps within {recorded_p80} ns of the plan's, but the replay's 90 % were within {replay_p90} ns"
    );
}

/// The replay sent every planned packet, none skipped or refused.
fn assert_all_sent(replayed: &Value, n: u64) {
    assert_eq!(replayed["status"], "complete", "{}", replayed["traffic"]);
    assert_eq!(replayed["probe"], "traffic-replay");
    assert_eq!(replayed["traffic"]["role"], "replay");
    for (field, want) in [("planned", n), ("sent", n), ("skipped", 0), ("failed", 0)] {
        assert_eq!(count(replayed, field), want, "replay's {field}");
    }
}

/// The receiver got every packet of the replay's stream, once, in order.
fn assert_all_received(recorded: &Value, replayed: &Value, n: u64) {
    assert_eq!(recorded["probe"], "traffic-record");
    assert_eq!(recorded["traffic"]["role"], "record");
    for (field, want) in [
        ("received", n),
        ("lost", 0),
        ("duplicates", 0),
        ("reordered", 0),
        ("unstamped", 0),
    ] {
        assert_eq!(count(recorded, field), want, "record's {field}");
    }
    // The stamps' stream is the replay's (its random id, hex on the
    // receiver's side).
    let sent = replayed["config"]["stream"]
        .as_u64()
        .expect("config.stream");
    let matched = recorded["traffic"]["stream"]
        .as_str()
        .expect("traffic.stream");
    let matched = u64::from_str_radix(matched.trim_start_matches("0x"), 16)
        .unwrap_or_else(|e| panic!("stream {matched:?}: {e}"));
    assert_eq!(matched, sent, "the receiver matched the replay's stream");
}

#[test]
fn a_generated_plan_replayed_across_a_veth_is_recorded_whole_with_its_gaps() {
    let _live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = Lab::new() else { return };
    let plan = lab.gen(
        "cbr.plan",
        &[
            "constant", "--rate", "2k", "--count", "2000", "--size", "200",
        ],
    );
    let got = lab.path("got.plan");
    let (replayed, recorded) = lab.round_trip("cbr", &plan, 7401, Some(&got), &[]);
    assert_all_sent(&replayed, 2000);
    assert_all_received(&recorded, &replayed, 2000);
    assert_eq!(
        recorded["traffic"]["counts"]["sent"], 0,
        "a receiver sends nothing"
    );
    assert!(recorded["traffic"]["accuracy"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["series"] == "arrival_gap" && a["samples"] == 1999));

    // The recorded plan: every datagram at its planned size, one flow (the
    // replay's source address), 2000 gaps' worth of arrivals.
    let planned = plan_events(&plan);
    let arrived = plan_events(&got);
    assert_eq!(arrived.len(), 2000);
    assert!(arrived
        .iter()
        .all(|&(_, size, flow)| size == 200 && flow == 0));
    let header = rtlab_exec::plan::load(&got).unwrap().header;
    assert_eq!(header.modules.len(), 1, "{:?}", header.modules);
    let src = header.modules[0].setting("src").expect("src= of the flow");
    assert!(src.starts_with(&format!("{CLIENT_ADDR}:")), "src={src}");

    let errors = gap_errors(&arrived, &planned);
    // The receiver's own report says what the plan it wrote says.
    let reported = percentile(&recorded, "arrival_gap", "p50");
    let computed = quantile(&errors, 0.5);
    assert!(
        reported.abs_diff(computed) <= 1_000 + computed / 20,
        "record's arrival_gap p50 {reported} ns, its plan's {computed} ns"
    );
    if kernel_departures(&replayed) {
        assert_gaps_within_the_replays_error("recorded", &errors, &replayed);
    }
    // No cumulative drift: the last packets arrived as far from their
    // offsets as the first ones, within what the sender's own departure
    // errors allow. Per packet, arrival offset − planned offset = its
    // departure error − the first's + the difference of their two passages;
    // the median over the first 100 and over the last 100 packets keeps a
    // cold first send or one stalled passage out, so the two medians differ
    // by at most the spread of the signed departure errors the replay
    // reported plus twice SAME_PASSAGE_NS. A schedule that drifted (each
    // wait from the previous packet: tcpreplay loses tens of ms a second)
    // would put the last ones far outside it.
    if kernel_departures(&replayed) {
        let departure = replayed["traffic"]["accuracy"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["series"] == "departure")
            .expect("the replay's departure accuracy");
        let spread = departure["max_ns"].as_i64().unwrap() - departure["min_ns"].as_i64().unwrap();
        let median_error = |range: std::ops::Range<usize>| {
            let mut errors: Vec<i64> = range
                .map(|i| arrived[i].0 as i64 - planned[i].0 as i64)
                .collect();
            errors.sort_unstable();
            errors[errors.len() / 2]
        };
        let moved = median_error(1900..2000).abs_diff(median_error(0..100));
        assert!(
            moved <= spread.unsigned_abs() + 2 * SAME_PASSAGE_NS,
            "the last 100 packets arrived {moved} ns further from their offsets than the first 100; the replay's departures spread over {spread} ns"
        );
    }

    // What was recorded replays in turn: the same count and sizes arrive.
    let (again, recorded_again) = lab.round_trip("recorded", &got, 7411, None, &[]);
    assert_all_sent(&again, 2000);
    assert_all_received(&recorded_again, &again, 2000);
}

/// tshark and tcpdump capturing on the sender's veth while a plan replays;
/// their files (pcapng, pcap) once the replay is done.
fn capture_a_replay(lab: &Lab, plan: &Path, port: u16) -> (Value, Vec<PathBuf>) {
    let filter = format!("udp and dst port {port}");
    let mut captures = Vec::new();
    let mut tools = Vec::new();
    if netns::tool_available("tshark", "--version") {
        let file = lab.path("tshark.pcapng");
        let mut command = Command::new("tshark");
        command.args([
            "-i",
            CLIENT_DEVICE,
            "-f",
            &filter,
            "-w",
            file.to_str().unwrap(),
        ]);
        let log = lab.path("tshark.log");
        let mut tshark = Namespaced::spawn(&mut command, lab.pair.client(), "tshark", &log);
        tshark.wait_for_log("Capturing on", Duration::from_secs(30));
        tools.push(tshark);
        captures.push(file);
    } else {
        skip("tshark is not installed (scripts/setup installs it)");
    }
    if netns::tool_available("tcpdump", "--version") {
        let file = lab.path("tcpdump.pcap");
        let mut command = Command::new("tcpdump");
        command.args([
            "-i",
            CLIENT_DEVICE,
            "-U",
            "-n",
            "-w",
            file.to_str().unwrap(),
            &filter,
        ]);
        let log = lab.path("tcpdump.log");
        let mut tcpdump = Namespaced::spawn(&mut command, lab.pair.client(), "tcpdump", &log);
        tcpdump.wait_for_log("listening on", Duration::from_secs(30));
        tools.push(tcpdump);
        captures.push(file);
    } else {
        skip("tcpdump is not installed (scripts/setup installs it)");
    }
    let (replayed, _) = lab.round_trip("captured", plan, port, None, &[]);
    for tool in tools {
        tool.signal(libc::SIGINT);
        let (code, _, _) = tool.finish(LIMIT);
        assert_eq!(code, Some(0), "the capture tool ended cleanly");
    }
    (replayed, captures)
}

#[test]
fn a_replay_captured_by_tshark_and_tcpdump_imports_with_its_departures_and_replays_again() {
    let _live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = Lab::new() else { return };
    let plan = lab.gen(
        "cbr.plan",
        &[
            "constant", "--rate", "2k", "--count", "1000", "--size", "300",
        ],
    );
    let port = 7402;
    let (replayed, captures) = capture_a_replay(&lab, &plan, port);
    assert_all_sent(&replayed, 1000);
    if captures.is_empty() {
        return;
    }
    let planned = plan_events(&plan);
    for capture in &captures {
        let name = capture.file_name().unwrap().to_str().unwrap();
        let imported = lab.path(&format!("{name}.plan"));
        let filter = format!("udp and dst port {port}");
        let out = import(
            &lab.state(),
            capture,
            &imported,
            &["--filter", &filter, "--json"],
        );
        assert_eq!(out.status.code(), Some(0), "traffic import {name}");
        let said: Value = serde_json::from_slice(&out.stdout).expect("import --json");
        eprintln!("import {name}: {said}");
        let events = plan_events(&imported);
        assert_eq!(events.len(), 1000, "{name}: every replayed datagram");
        assert!(
            events.iter().all(|&(_, size, _)| size == 300),
            "{name}: the planned sizes"
        );
        if kernel_departures(&replayed) {
            assert_gaps_within_the_replays_error(name, &gap_errors(&events, &planned), &replayed);
        }
        // The imported plan replays and records like the one it came from.
        let (again, recorded) =
            lab.round_trip(&format!("{name}-again"), &imported, port + 10, None, &[]);
        assert_all_sent(&again, 1000);
        assert_all_received(&recorded, &again, 1000);
    }
}

#[test]
fn truncated_and_garbage_captures_are_refused_with_the_file_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let plan = dir.path().join("cbr.plan");
    let pcap = dir.path().join("cbr.pcap");
    gen(
        &state,
        &plan,
        &["constant", "--rate", "1k", "--count", "50", "--size", "100"],
    );
    let out = run(rtlab(&state).args([
        "traffic",
        "export",
        plan.to_str().unwrap(),
        "--to",
        "10.0.0.2:7000",
        "-o",
        pcap.to_str().unwrap(),
    ]));
    assert_eq!(out.status.code(), Some(0));
    let whole = std::fs::read(&pcap).unwrap();

    // Cut in the middle of the last record's bytes, then a file of text.
    let truncated = dir.path().join("truncated.pcap");
    std::fs::write(&truncated, &whole[..whole.len() - 40]).unwrap();
    let garbage = dir.path().join("garbage.pcap");
    std::fs::write(&garbage, "this is no capture, only text\n".repeat(20)).unwrap();
    let header_only = dir.path().join("half-header.pcap");
    std::fs::write(&header_only, &whole[..10]).unwrap();

    for bad in [&truncated, &garbage, &header_only] {
        let output = dir.path().join("never.plan");
        let out = import(&state, bad, &output, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", bad.display());
        assert!(
            stderr.contains(bad.to_str().unwrap()),
            "the message names the file: {stderr}"
        );
        assert!(
            stderr.chars().any(|c| c.is_ascii_digit()),
            "the message says where (a byte offset or record): {stderr}"
        );
        assert!(!output.exists(), "{}: no plan is written", bad.display());
    }
    // What stops making sense in the truncated capture is its last record,
    // the one the cut went through; the ones before it are not blamed.
    let out = import(&state, &truncated, &dir.path().join("never.plan"), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(
        stderr.contains("truncat") || stderr.contains("ends") || stderr.contains("short"),
        "{stderr}"
    );
}

#[test]
fn replays_are_stored_shown_compared_reported_and_held_to_budgets() {
    let _live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = Lab::new() else { return };
    let plan = lab.gen(
        "short.plan",
        &["constant", "--rate", "2k", "--count", "200", "--size", "64"],
    );
    let (first, recorded) = lab.round_trip(
        "kept",
        &plan,
        7403,
        None,
        &["--budget", "departure:p50<1s,missed=0"],
    );
    assert_all_sent(&first, 200);
    assert_eq!(first["budget"]["passed"], true, "{}", first["budget"]);
    assert_eq!(count(&recorded, "received"), 200);

    // An impossible budget: the run is kept, the exit code says it failed.
    let record = lab.start_record("strict-record", 7404, &[]);
    let (code, strict) = lab.replay("strict", &plan, 7404, &["--budget", "departure:max<1ns"]);
    record.finish(LIMIT);
    assert_eq!(code, Some(1), "an impossible budget is not kept");
    assert_eq!(strict["budget"]["passed"], false);
    assert_all_sent(&strict, 200);

    let a = first["id"].as_str().unwrap();
    let b = strict["id"].as_str().unwrap();
    let r = recorded["id"].as_str().unwrap();
    let runs = lab.rtlab(&["runs", "--json"]);
    assert_eq!(runs.status.code(), Some(0));
    let listed = String::from_utf8_lossy(&runs.stdout);
    for id in [a, b, r] {
        assert!(listed.contains(id), "{id} is stored: {listed}");
    }
    let show = lab.rtlab(&["show", a]);
    assert_eq!(show.status.code(), Some(0));
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(
        shown.contains("departure") && shown.contains("sent"),
        "show prints the traffic table: {shown}"
    );
    let shown_json: Value =
        serde_json::from_slice(&lab.rtlab(&["show", a, "--json"]).stdout).unwrap();
    assert_eq!(
        shown_json["traffic"], first["traffic"],
        "stored as measured"
    );
    let compare = lab.rtlab(&["compare", a, b]);
    assert_eq!(compare.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&compare.stdout).contains("departure"));
    let html = lab.path("r.html");
    let report = lab.rtlab(&["report", a, "-o", html.to_str().unwrap()]);
    assert_eq!(report.status.code(), Some(0));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("departure"),
        "the report charts the departures"
    );
    assert!(page.contains("<svg"), "with its charts inline");
}

#[test]
fn bad_input_names_the_flag_or_the_file_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let plan = dir.path().join("cbr.plan");
    gen(
        &state,
        &plan,
        &["constant", "--rate", "1k", "--count", "10"],
    );
    let missing = dir.path().join("no-such.plan");
    let never = dir.path().join("never.plan");
    let (plan, missing, never) = (
        plan.to_str().unwrap(),
        missing.to_str().unwrap(),
        never.to_str().unwrap(),
    );
    // Each command line (split at spaces) and what its message must name.
    let cases = [
        (format!("replay {plan} --to nonsense"), "--to"),
        (format!("replay {missing} --to 127.0.0.1:9"), missing),
        ("record --listen 1.2.3.4:99999 --count 1".into(), "--listen"),
        (
            format!("gen constant --rate 0 --count 10 -o {never}"),
            "--rate",
        ),
        (
            format!("replay {plan} --to 127.0.0.1:9 --speed 0"),
            "--speed",
        ),
        (format!("import {missing} -o {never}"), missing),
    ];
    for (line, named) in cases {
        let args: Vec<&str> = ["traffic"].into_iter().chain(line.split(' ')).collect();
        let out = run(rtlab(&state).args(&args));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(named), "{args:?} names {named}: {stderr}");
        assert!(!Path::new(never).exists(), "{args:?} wrote no plan");
    }
}
