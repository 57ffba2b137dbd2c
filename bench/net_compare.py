#!/usr/bin/env python3
"""Compare `rtlab net probe --mode sockperf` with `sockperf ping-pong`, run by
run (python3 stdlib only).

Called by bench/net-vs-sockperf.sh with a manifest (runs.tsv) that lists, for
every client run, the tool, the transport, the server it talked to (sockperf's
`sockperf sr` or `rtlab net serve --mode sockperf`, one server process per
pair), its files and its exact command. Both clients send PAYLOAD-byte
sockperf pings at MPS messages per second to the same server and time each
full round trip:

  rtlab     open loop: message i leaves at start + i/MPS whatever happened to
            the earlier ones. Its JSON has three series (ns): `response_from_send`
            (reply - actual send: what a closed-loop client measures),
            `response` (reply - scheduled send) and `send_lag` (actual -
            scheduled send), and `net.messages` (sent, completed, lost, ...).
            --samples writes every message (index, t_ns, send_lag_ns,
            response_ns, response_from_send_ns, lost).
  sockperf  closed loop: it sends, waits for the reply, then waits for the
            next send time (catching up at once when it is late). With
            --full-rtt it prints the round trip (without it, half of it) in
            us: avg-rtt, percentiles, <MAX>/<MIN>, over its "Valid Duration"
            only (the first 400 ms of warm-up and the last ~50 ms are left
            out), and --full-log writes every valid message (packet,
            txTime, rxTime, rtt).

The report takes each tool's own figures (rtlab's JSON, sockperf's printout)
for the headline, and recomputes both from the per-message files with one
rule (sockperf's percentile rule, over sockperf's valid window) as a
cross-check. sockperf's schedule is rebuilt from its txTime column to show
how late it sent and what an open-loop client would have seen.

Writes a Markdown report (and optionally a JSON file) and prints the summary.
It can also be run on its own over the files a previous run kept:
    python3 bench/net_compare.py --manifest DIR/runs.tsv --meta DIR/meta.json \\
        --md out.md [--json out.json]
"""

import csv
import json
import math
import re
import statistics
import sys

from benchlib import (
    HOST_LOAD_HEADER, HOST_LOAD_LEGEND, RUN_COLUMNS, BenchError, command_lines, console_table,
    disturbance_notes, disturbed_runs, fmt, host_load_cells, host_rows, load_json, md_table,
    med, note_lines, pairs_of, ratio, read_text, results_document, run_cli, run_record,
)

SCHEMA = "rtlab.bench.net-vs-sockperf/1"
BUSY_PCT_WARN = 60.0  # whole-machine busy % above which a run is flagged (sockperf spins one CPU of 2)
OWN_COLUMNS = ("pair", "seq", "tool", "transport", "server")
FILE_COLUMNS = ("result", "data", "log", "server_out", "server_err")  # relative to the manifest
EXTRA_COLUMNS = ("server_counters", "client_cpu_busy_pct", "server_cpu_busy_pct")
MANIFEST_COLUMNS = OWN_COLUMNS + FILE_COLUMNS + EXTRA_COLUMNS + RUN_COLUMNS
# The figures compared, rtlab's JSON key and sockperf's printed percentile.
METRICS = (
    ("p50", "p50", "50.000"),
    ("p90", "p90", "90.000"),
    ("p99", "p99", "99.000"),
    ("p99_9", "p99.9", "99.900"),
    ("max", "max", None),
    ("mean", "mean", None),
)
EXACT_METRICS = ("p50", "p99", "p99_9", "max", "over_1ms")  # recomputed from the per-message files
SERVER_NAMES = {"sockperf": "sockperf sr", "rtlab": "rtlab net serve --mode sockperf"}
SECTION_ORDER = [(t, s) for t in ("udp", "tcp") for s in ("sockperf", "rtlab")]
# How far sockperf's printed figures (3 decimals, us) may be from the ones
# recomputed from its --full-log (3 decimals, rounded differently).
SOCKPERF_PRINT_TOLERANCE_US = 0.0015


# --------------------------------------------------------------------------
# Per-message data: one percentile rule for both tools
# --------------------------------------------------------------------------

def rank_percentile(sorted_values, p):
    """sockperf's rule: the value at rank round-half-up(p/100 x n) (1-based),
    clamped to [1, n]. Checked against sockperf 3.7's printout."""
    n = len(sorted_values)
    if not n:
        return None
    rank = min(max(int(math.floor(p / 100.0 * n + 0.5)), 1), n)
    return sorted_values[rank - 1]


STALL_US = 1000.0  # a round trip above this counts as a stall


def exact_figures(values):
    """p50/p99/p99.9/max/mean/count of a list of us values, sockperf's rule,
    and how many are above STALL_US."""
    v = sorted(values)
    return {
        "samples": len(v),
        "over_1ms": sum(1 for x in v if x > STALL_US),
        "p50": rank_percentile(v, 50), "p90": rank_percentile(v, 90),
        "p99": rank_percentile(v, 99), "p99_9": rank_percentile(v, 99.9),
        "max": v[-1] if v else None, "min": v[0] if v else None,
        "mean": statistics.fmean(v) if v else None,
    }


def stall_summary(times_s, min_gap_s=0.02):
    """Stall events from the send times (s) of round trips above STALL_US:
    samples closer than min_gap_s are one event. Their count and the
    median spacing between them."""
    events, last = [], None
    for t in sorted(times_s):
        if last is None or t - last > min_gap_s:
            events.append(t)
        last = t
    gaps = [b - a for a, b in zip(events, events[1:])]
    return {"events": len(events), "median_spacing_s": statistics.median(gaps) if gaps else None}


def read_csv_rows(path, what):
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            return list(csv.reader(f))
    except OSError as e:
        raise BenchError(f"cannot read {what} {path}: {e}") from e


# --------------------------------------------------------------------------
# sockperf
# --------------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*m")
TOTAL_RUN = re.compile(r"\[Total Run\] RunTime=(?P<run>[\d.]+) sec; Warm up time=(?P<warm>\d+) msec; "
                       r"SentMessages=(?P<sent>\d+); ReceivedMessages=(?P<recv>\d+)")
VALID = re.compile(r"\[Valid Duration\] RunTime=(?P<run>[\d.]+) sec; SentMessages=(?P<sent>\d+); "
                   r"ReceivedMessages=(?P<recv>\d+)")
AVG = re.compile(r"avg-(?P<kind>rtt|latency)=(?P<avg>[\d.]+) \(std-dev=(?P<std>[\d.]+)")
DROPS = re.compile(r"# dropped messages = (?P<dropped>\d+); # duplicated messages = (?P<dup>\d+); "
                   r"# out-of-order messages = (?P<ooo>\d+)")
OBSERVATIONS = re.compile(r"Total (?P<n>\d+) observations")
EXTREME = re.compile(r"<(?P<which>MAX|MIN)> observation = *(?P<v>[\d.]+)")
PERCENTILE = re.compile(r"percentile (?P<p>[\d.]+) = *(?P<v>[\d.]+)")
SERVER_TOTAL = re.compile(r"Total (?P<n>\d+) messages received and handled")


def parse_sockperf_log(path):
    """The summary `sockperf ping-pong` prints (us, 3 decimals)."""
    text = ANSI.sub("", read_text(path))
    found = {name: rx.search(text) for name, rx in
             (("total", TOTAL_RUN), ("valid", VALID), ("avg", AVG), ("drops", DROPS),
              ("obs", OBSERVATIONS))}
    missing = [k for k, m in found.items() if m is None]
    if missing:
        raise BenchError(f"{path}: sockperf's summary lacks {', '.join(missing)} "
                         f"('[Total Run]', '[Valid Duration]', 'avg-rtt', '# dropped', 'observations')")
    t, v, a, d = found["total"], found["valid"], found["avg"], found["drops"]
    pct = {m["p"]: float(m["v"]) for m in PERCENTILE.finditer(text)}
    ext = {m["which"]: float(m["v"]) for m in EXTREME.finditer(text)}
    return {
        "full_rtt": a["kind"] == "rtt",
        "run_s": float(t["run"]), "warmup_ms": int(t["warm"]),
        "total_sent": int(t["sent"]), "total_received": int(t["recv"]),
        "valid_s": float(v["run"]), "valid_sent": int(v["sent"]), "valid_received": int(v["recv"]),
        "dropped": int(d["dropped"]), "duplicated": int(d["dup"]), "out_of_order": int(d["ooo"]),
        "observations": int(found["obs"]["n"]),
        "mean": float(a["avg"]), "stdev": float(a["std"]),
        "max": ext.get("MAX"), "min": ext.get("MIN"),
        "percentiles": pct,
    }


def parse_sockperf_full_log(path):
    """--full-log: (packet, txTime s, rxTime s, rtt us) of every valid message."""
    out = []
    for row in read_csv_rows(path, "sockperf --full-log"):
        if len(row) != 4 or not row[0].strip().isdigit():
            continue
        try:
            out.append((int(row[0]), float(row[1]), float(row[2]), float(row[3])))
        except ValueError as e:
            raise BenchError(f"{path}: not a full-log row: {row!r}") from e
    if not out:
        raise BenchError(f"{path}: no 'packet, txTime, rxTime, rtt' rows")
    return out


def sockperf_schedule(rows, interval_s):
    """sockperf's send grid rebuilt from its send times: origin = the
    earliest tx_i - i x interval, so the most punctual send is on time.
    Returns (send lag, reply - grid time) per message, us."""
    origin = min(tx - i * interval_s for i, (_, tx, _, _) in enumerate(rows))
    lag, from_grid = [], []
    for i, (_, tx, rx, _) in enumerate(rows):
        grid = origin + i * interval_s
        lag.append((tx - grid) * 1e6)
        from_grid.append((rx - grid) * 1e6)
    return lag, from_grid


def sockperf_figures(log_path, full_log_path, interval_s):
    s = parse_sockperf_log(log_path)
    problems = []
    if not s["full_rtt"]:
        problems.append("sockperf printed avg-latency (half round trips), not avg-rtt: was "
                        "--full-rtt given?")
    figures = {"samples": s["observations"], "mean": s["mean"], "max": s["max"], "min": s["min"]}
    for key, _, printed in METRICS:
        if printed:
            figures[key] = s["percentiles"].get(printed)
    rows = parse_sockperf_full_log(full_log_path)
    exact = exact_figures([r[3] for r in rows])
    if exact["samples"] != s["observations"]:
        problems.append(f"--full-log has {exact['samples']} messages, the summary "
                        f"{s['observations']} observations")
    for key in EXACT_METRICS:
        if figures.get(key) is not None and abs(exact[key] - figures[key]) > SOCKPERF_PRINT_TOLERANCE_US:
            problems.append(f"printed {key} {figures[key]} us != {exact[key]} us from --full-log")
    lag, from_grid = sockperf_schedule(rows, interval_s)
    late = sum(1 for x in lag if x > interval_s * 1e6)
    tx0 = rows[0][1]
    return {
        "stalls": stall_summary([tx - tx0 for _, tx, _, rtt in rows if rtt > STALL_US]),
        **figures,
        "summary": s,
        "exact_valid": exact,
        "send_lag": exact_figures(lag),
        "response_from_grid": exact_figures(from_grid),
        "sent_late_by_an_interval": late,
        "problems": problems,
    }


# --------------------------------------------------------------------------
# rtlab
# --------------------------------------------------------------------------

def rtlab_series(doc, name, path):
    by_name = {s.get("name"): s for s in doc.get("series") or []}
    s = by_name.get(name)
    if s is None:
        raise BenchError(f"{path}: no series {name!r} (series: {sorted(by_name)})")
    pct = s.get("percentiles_ns") or {}
    us = lambda v: None if v is None else v / 1000.0
    out = {key: us(pct.get(key)) for key, _, _ in METRICS if key not in ("max", "mean")}
    out.update({"p99_99": us(pct.get("p99_99")), "max": us(s.get("max_ns")),
                "min": us(s.get("min_ns")), "mean": us(s.get("mean_ns")),
                "samples": s.get("samples"), "missed": s.get("missed"),
                "dropped": s.get("dropped")})
    return out


def rtlab_samples(path):
    """--samples: (t_ns, send_lag_ns, response_ns, response_from_send_ns) of
    every completed message, and the number of lost ones."""
    rows = read_csv_rows(path, "rtlab --samples file")
    if not rows or rows[0][:6] != ["index", "t_ns", "send_lag_ns", "response_ns",
                                   "response_from_send_ns", "lost"]:
        raise BenchError(f"{path}: not rtlab's net samples CSV (header {rows[0] if rows else None})")
    done, lost = [], 0
    for row in rows[1:]:
        try:
            if len(row) == 6 and row[5] == "1":  # no response figures
                int(row[1]), int(row[2])
                lost += 1
                continue
            t, lag, resp, from_send, was_lost = (int(x) for x in row[1:6])
        except ValueError as e:
            raise BenchError(f"{path}: not a samples row: {row!r}") from e
        if was_lost:
            raise BenchError(f"{path}: a lost message with response figures: {row!r}")
        done.append((t, lag, resp, from_send))
    return done, lost


def rtlab_figures(json_path, samples_path, window_s):
    doc = load_json(json_path)
    if doc.get("schema") != "rtlab.run/1":
        raise BenchError(f"{json_path}: schema {doc.get('schema')!r}, expected 'rtlab.run/1'")
    if doc.get("probe") != "net":
        raise BenchError(f"{json_path}: probe {doc.get('probe')!r}, expected 'net'")
    net = doc.get("net") or {}
    msgs = net.get("messages") or {}
    f = rtlab_series(doc, "response_from_send", json_path)
    f["response"] = rtlab_series(doc, "response", json_path)
    f["send_lag"] = rtlab_series(doc, "send_lag", json_path)
    f["messages"] = msgs
    f["status"] = doc.get("status")
    f["warnings"] = doc.get("warnings") or []
    f["elapsed_s"] = (doc.get("elapsed_ns") or 0) / 1e9
    done, lost = rtlab_samples(samples_path)
    problems = []
    if f["status"] != "complete":
        problems.append(f"status {f['status']}")
    if lost != msgs.get("lost"):
        problems.append(f"--samples has {lost} lost messages, the JSON {msgs.get('lost')}")
    if len(done) != f["samples"]:
        problems.append(f"--samples has {len(done)} completed messages, the series {f['samples']} samples")
    if f["dropped"]:
        problems.append(f"{f['dropped']} samples dropped on the way to the recorder")
    for key in ("unsent", "send_errors", "late_replies", "duplicate_replies", "reordered_replies",
                "bad_replies"):
        if msgs.get(key):
            problems.append(f"{msgs[key]} {key.replace('_', ' ')}")
    # Exact figures, sockperf's percentile rule: the whole run, and only the
    # messages scheduled inside sockperf's valid window.
    start_ns, end_ns = (round(x * 1e9) for x in window_s)
    f["exact_all"] = exact_figures([r[3] / 1000.0 for r in done])
    inside = [r for r in done if start_ns <= r[0] <= end_ns]
    f["exact_valid"] = exact_figures([r[3] / 1000.0 for r in inside])
    f["exact_valid_response"] = exact_figures([r[2] / 1000.0 for r in inside])
    f["stalls"] = stall_summary([r[0] / 1e9 for r in inside if r[3] / 1000.0 > STALL_US])
    f["window_s"] = list(window_s)
    # The JSON's percentiles come from an HDR histogram (3 significant digits).
    for key in ("p50", "p99"):
        a, b = f[key], f["exact_all"][key]
        if a is not None and b is not None and abs(a - b) > 0.01 * b + 0.05:
            problems.append(f"JSON {key} {a:.3f} us vs {b:.3f} us from --samples")
    f["problems"] = problems
    return f


# --------------------------------------------------------------------------
# Servers
# --------------------------------------------------------------------------

def rtlab_server_counters(out_path):
    """The JSON counter lines `rtlab net serve --json` printed (cumulative:
    one per SIGUSR1, the last at exit)."""
    lines = []
    for line in read_text(out_path).splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                lines.append(json.loads(line).get("counters") or {})
            except ValueError as e:
                raise BenchError(f"{out_path}: not a JSON line: {line!r}") from e
    return lines


def server_figures(run):
    """What the server saw during this run (rtlab's: its counters' increase
    over the run) or during the whole pair (sockperf's: its total, when it
    printed one), and how it ended."""
    try:
        stopped = read_text(run["server_err"] + ".stopped").split()
    except BenchError:  # the benchmark was interrupted before the server was stopped
        stopped = []
    out = {"stopped_by": stopped[0] if stopped else None,
           "exit_code": int(stopped[1]) if len(stopped) > 1 and stopped[1].isdigit() else None}
    if run["server"] == "rtlab":
        counters = rtlab_server_counters(run["server_out"])
        line = int(run["server_counters"]) if run["server_counters"].isdigit() else 0
        if 1 <= line <= len(counters):
            now = counters[line - 1]
            before = counters[line - 2] if line >= 2 else {}
            out["run"] = {k: v - before.get(k, 0) for k, v in now.items()}
        out["at_exit"] = counters[-1] if counters else None
    else:
        text = ANSI.sub("", read_text(run["server_out"]) + read_text(run["server_err"]))
        m = SERVER_TOTAL.search(text)
        out["pair_total"] = int(m["n"]) if m else None
    return out


# --------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------

def section_key(run):
    return (run["transport"], run["server"])


def section_name(key):
    return f"{key[0].upper()}, server {SERVER_NAMES[key[1]]}"


def failure_problems(run):
    tail = [l for l in read_text(run["log"]).splitlines() if l.strip()][-3:]
    return [f"exited with code {run['rc']}" + (": " + " | ".join(tail) if tail else "")]


def analyse(runs, meta):
    cfg = meta["config"]
    interval_s = cfg["interval_us"] / 1e6
    planned = cfg["duration_s"] * cfg["mps"]
    # sockperf's valid window, in rtlab's schedule: from 400 ms after the
    # first send to 50 ms before the last one.
    window = (0.4, (cfg["duration_s"] * cfg["mps"] - 1) * interval_s - 0.05)
    for run in runs:
        for key in ("client_cpu_busy_pct", "server_cpu_busy_pct"):
            run[key] = float(run[key])
    own = OWN_COLUMNS + EXTRA_COLUMNS
    out_runs = []
    for run in runs:
        rec = run_record(run, own)
        rec["server_seen"] = server_figures(run)
        if run["rc"] != 0:
            rec["figures"] = None
            rec["problems"] = failure_problems(run)
        elif run["tool"] == "sockperf":
            f = sockperf_figures(run["log"], run["data"], interval_s)
            s = f["summary"]
            if s["total_sent"] < planned * 0.99:
                f["problems"].append(f"sent {s['total_sent']} of {planned} planned messages")
            for key in ("dropped", "duplicated", "out_of_order"):
                if s[key]:
                    f["problems"].append(f"{s[key]} {key.replace('_', '-')} messages")
            rec["figures"] = f
            rec["problems"] = f["problems"]
        elif run["tool"] == "rtlab":
            f = rtlab_figures(run["result"], run["data"], window)
            if f["messages"].get("lost"):
                f["problems"].append(f"{f['messages']['lost']} of {f['messages'].get('sent')} "
                                     f"messages lost (no reply within the timeout)")
            rec["figures"] = f
            rec["problems"] = f["problems"]
        else:
            raise BenchError(f"unknown tool {run['tool']!r} in the manifest")
        seen = rec["server_seen"].get("run")
        if seen and rec["figures"] is not None:
            sent = (rec["figures"]["messages"].get("sent") if run["tool"] == "rtlab"
                    else rec["figures"]["summary"]["total_sent"])
            if seen.get("received") != sent or seen.get("replied") != seen.get("received"):
                rec["problems"].append(f"rtlab's server received {seen.get('received')} and "
                                       f"replied {seen.get('replied')} of {sent} sent")
        rec["consistent"] = not rec["problems"]
        out_runs.append(rec)

    sections = [k for k in SECTION_ORDER if any(section_key(r) == k for r in out_runs)]
    pairs, per_section = [], {}
    for key in sections:
        sec_runs = [r for r in out_runs if section_key(r) == key]
        sec_pairs = []
        for p, a, b in pairs_of(sec_runs, "sockperf", where=f", {section_name(key)}"):
            fa, fb = a["figures"], b["figures"]
            sec_pairs.append({
                "pair": p, "transport": key[0], "server": key[1],
                "rtlab_seq": a["seq"], "sockperf_seq": b["seq"],
                "ratios_rtlab_over_sockperf": {
                    m: ratio(fa and fa[m], fb and fb[m]) for m, _, _ in METRICS},
                "exact_ratios_rtlab_over_sockperf": {
                    m: ratio(fa and fa["exact_valid"][m], fb and fb["exact_valid"][m])
                    for m in EXACT_METRICS},
            })
        pairs += sec_pairs
        rt = [r["figures"] for r in sec_runs if r["tool"] == "rtlab" and r["figures"]]
        sp = [r["figures"] for r in sec_runs if r["tool"] == "sockperf" and r["figures"]]
        m_rt = {m: med(f[m] for f in rt) for m, _, _ in METRICS}
        m_sp = {m: med(f[m] for f in sp) for m, _, _ in METRICS}
        per_section["/".join(key)] = {
            "transport": key[0], "server": key[1], "pairs": len(sec_pairs),
            "failed_runs": [r["seq"] for r in sec_runs if r["figures"] is None],
            "median_rtlab_from_send": m_rt,
            "median_rtlab_response": {m: med(f["response"][m] for f in rt) for m, _, _ in METRICS},
            "median_rtlab_send_lag": {m: med(f["send_lag"][m] for f in rt) for m, _, _ in METRICS},
            "median_sockperf": m_sp,
            "median_sockperf_from_grid": {m: med(f["response_from_grid"][m] for f in sp)
                                          for m, _, _ in METRICS},
            "median_sockperf_send_lag": {m: med(f["send_lag"][m] for f in sp) for m, _, _ in METRICS},
            "ratio_of_medians_rtlab_over_sockperf": {m: ratio(m_rt[m], m_sp[m]) for m, _, _ in METRICS},
            "median_ratio_rtlab_over_sockperf": {
                m: med(p["ratios_rtlab_over_sockperf"][m] for p in sec_pairs) for m, _, _ in METRICS},
            "exact_valid_median_rtlab": {m: med(f["exact_valid"][m] for f in rt) for m in EXACT_METRICS},
            "exact_valid_median_sockperf": {m: med(f["exact_valid"][m] for f in sp)
                                            for m in EXACT_METRICS},
            "stall_events_per_run": {"rtlab": med(f["stalls"]["events"] for f in rt),
                                     "sockperf": med(f["stalls"]["events"] for f in sp)},
            "stall_spacing_s": {"rtlab": med(f["stalls"]["median_spacing_s"] for f in rt),
                                "sockperf": med(f["stalls"]["median_spacing_s"] for f in sp)},
            "rtlab_lost": sum(f["messages"].get("lost") or 0 for f in rt),
            "sockperf_dropped": sum(f["summary"]["dropped"] for f in sp),
            "exact_median_ratio_rtlab_over_sockperf": {
                m: med(p["exact_ratios_rtlab_over_sockperf"][m] for p in sec_pairs)
                for m in EXACT_METRICS},
        }

    summary = {
        "per_section": per_section,
        "all_runs_clean": all(r["consistent"] for r in out_runs),
        "flagged_runs": {r["seq"]: r["problems"] for r in out_runs if not r["consistent"]},
        **disturbed_runs(out_runs, BUSY_PCT_WARN),
        "rtlab_warnings": sorted({w for r in out_runs if r["tool"] == "rtlab" and r["figures"]
                                  for w in r["figures"]["warnings"]}),
    }
    method = {
        "rtlab": "JSON series response_from_send (headline), response and send_lag, ns; "
                 "--samples for exact figures over sockperf's valid window",
        "sockperf": "printed avg-rtt / percentiles / <MAX> with --full-rtt (us); --full-log for "
                    "exact figures and its rebuilt send grid",
        "ratios": "rtlab / sockperf per pair; summary = median over pairs, and ratio of medians",
    }
    return results_document(SCHEMA, meta, method, out_runs, pairs, summary)


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def us_cell(v):
    return fmt(v, 1) if v is not None and v >= 100 else fmt(v, 2)


def count_cell(v):
    return fmt(float(v), 0 if v is None or float(v).is_integer() else 1)


EXACT_LABELS = {"p50": "p50 (us)", "p99": "p99 (us)", "p99_9": "p99.9 (us)", "max": "max (us)",
                "over_1ms": "round trips > 1 ms"}


def summary_rows(res):
    rows = []
    for key, s in res["summary"]["per_section"].items():
        for m, label, _ in METRICS:
            per_pair = ", ".join(fmt(p["ratios_rtlab_over_sockperf"][m], 2) for p in res["pairs"]
                                 if f"{p['transport']}/{p['server']}" == key)
            rows.append([s["transport"].upper(), s["server"], label,
                         us_cell(s["median_rtlab_from_send"][m]), us_cell(s["median_sockperf"][m]),
                         fmt(s["ratio_of_medians_rtlab_over_sockperf"][m], 2),
                         fmt(s["median_ratio_rtlab_over_sockperf"][m], 2), per_pair,
                         us_cell(s["median_rtlab_response"][m]),
                         us_cell(s["median_sockperf_from_grid"][m])])
    return ["transport", "server", "metric", "rtlab from send (us)", "sockperf (us)",
            "ratio of medians", "median ratio rtlab/sockperf", "per-pair ratios",
            "rtlab from schedule (us)", "sockperf from its grid (us, derived)"], rows


def headline_rows(res):
    rows = []
    for s in res["summary"]["per_section"].values():
        r, p, q = (s["median_rtlab_from_send"], s["median_sockperf"],
                   s["ratio_of_medians_rtlab_over_sockperf"])
        rows.append([s["transport"].upper(), SERVER_NAMES[s["server"]],
                     us_cell(r["p50"]), us_cell(p["p50"]), fmt(q["p50"], 2),
                     us_cell(r["p99"]), us_cell(p["p99"]), fmt(q["p99"], 2),
                     us_cell(s["median_rtlab_response"]["p50"]),
                     us_cell(s["median_rtlab_response"]["p99"])])
    return ["transport", "server", "rtlab p50", "sockperf p50", "ratio", "rtlab p99",
            "sockperf p99", "ratio", "rtlab from schedule p50", "rtlab from schedule p99"], rows


def message_cells(r, planned):
    """planned/sent/answered/lost-or-dropped/counted/other for one run
    (`planned`: what the settings ask of sockperf, which does not say)."""
    f = r["figures"]
    if f is None:
        return ["-"] * 6
    if r["tool"] == "rtlab":
        m = f["messages"]
        other = ", ".join(f"{k.replace('_replies', '')} {v}" for k, v in m.items()
                          if k.endswith("_replies") and v) or "-"
        return [m.get("planned"), m.get("sent"), m.get("completed"), f"lost {m.get('lost')}",
                f["samples"], other]
    s = f["summary"]
    return [planned, f"{s['total_sent']} ({s['valid_sent']} valid)",
            f"{s['total_received']} ({s['valid_received']} valid)", f"dropped {s['dropped']}",
            s["observations"], f"dup {s['duplicated']}, out-of-order {s['out_of_order']}"]


def server_cell(r):
    seen = r["server_seen"]
    if r["server"] == "rtlab":
        c = seen.get("run")
        if not c:
            return "-"
        drops = sum(c.get(k, 0) for k in ("malformed", "truncated", "oversized", "bad_auth",
                                            "rate_limited", "unanswered"))
        return f"rx {c.get('received')}, tx {c.get('replied')}, dropped {drops}"
    total = seen.get("pair_total")
    if total is None:
        return f"(no total: stopped by SIG{seen.get('stopped_by') or '?'})"
    return f"{total} in the pair"


def span(values, cell=lambda v: fmt(v, 2)):
    """'a' or 'a-b' for the values that are there."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return cell(lo) if cell(lo) == cell(hi) else f"{cell(lo)}-{cell(hi)}"


def spread_pct(values):
    """(max - min) / median of the values, in %."""
    values = [v for v in values if v is not None]
    if len(values) < 2 or not statistics.median(values):
        return None
    return 100.0 * (max(values) - min(values)) / statistics.median(values)


def interpretation_lines(res):
    """What the figures say, computed from them (the report is rewritten by
    every run, so nothing here is typed in by hand)."""
    secs = list(res["summary"]["per_section"].values())
    if not secs:
        return []
    runs = [r for r in res["runs"] if r["figures"] is not None]
    q = lambda m: [x["ratio_of_medians_rtlab_over_sockperf"][m] for x in secs]
    p50s = ", ".join(f"{x['transport'].upper()}/{x['server']} "
                     f"{fmt(x['ratio_of_medians_rtlab_over_sockperf']['p50'], 2)}" for x in secs)
    # How much one tool's figure moves from run to run within a section.
    def spreads(tool, m):
        return [spread_pct([r["figures"][m] for r in runs if r["tool"] == tool
                            and (r["transport"], r["server"]) == (x["transport"], x["server"])])
                for x in secs]
    pct = lambda v: fmt(v, 0)
    noise = [v for tool in ("rtlab", "sockperf") for m in ("p50", "p99") for v in spreads(tool, m)
             if v is not None]
    devs = [100.0 * abs(v - 1) for v in q("p50") + q("p99") if v is not None]
    if devs and noise:
        verdict = ("within the run-to-run noise" if max(devs) <= statistics.median(noise)
                   else "beyond the run-to-run noise in places")
        verdict = (f"At most {pct(max(devs))} % apart at p50 and p99, {verdict}: one tool's "
                   f"figure moves by {span(noise, pct)} % (median {pct(statistics.median(noise))} %) "
                   f"from run to run within a section.")
    else:
        verdict = "Too few runs to compare with the run-to-run noise."
    out = ["## Interpretation\n"]
    out.append(
        f"- **Typical round trip.** Across the {len(secs)} section(s) the ratio of medians "
        f"rtlab / sockperf is {span(q('p50'))} at p50, {span(q('p90'))} at p90 and "
        f"{span(q('p99'))} at p99 ({p50s} at p50). {verdict} The cross-check table (one "
        f"percentile rule, one window) shows whether a difference comes from how the figures "
        f"are computed.")
    mx = lambda key: [x[key]["max"] for x in secs]
    ev = lambda who: [x["stall_events_per_run"][who] for x in secs]
    sp = lambda who: [x["stall_spacing_s"][who] for x in secs]
    ms = lambda v: fmt(v / 1000.0, 1)
    busy = [r["client_cpu_busy_pct"] for r in runs if r["tool"] == "sockperf"]
    sockperf_worse = all((x["median_sockperf"]["max"] or 0) > (x["median_rtlab_from_send"]["max"] or 0)
                         for x in secs)
    out.append(
        ("- **Tails: sockperf's stalls are longer.** " if sockperf_worse else "- **Tails.** ") +
        f"Median max per section: sockperf {span(mx('median_sockperf'), ms)} ms, rtlab "
        f"{span(mx('median_rtlab_from_send'), ms)} ms; p99.9 ratio {span(q('p99_9'))}. Round "
        f"trips above 1 ms (inside sockperf's valid window) come in "
        f"{span(ev('sockperf'), count_cell)} events per sockperf run, {span(sp('sockperf'))} s "
        f"apart (median spacing), and {span(ev('rtlab'), count_cell)} per rtlab run, "
        f"{span(sp('rtlab'))} s apart. sockperf busy-waits at SCHED_FIFO between messages: its "
        f"CPU was {span(busy, pct)} % busy during its runs (2 s of those runs are its idle "
        f"start-up pause), close to the kernel's RT bandwidth limit "
        f"({res.get('environment', {}).get('rt_bandwidth', '?')}), and normal tasks that "
        f"wake on that CPU get it only when the limit or a higher-priority thread preempts "
        f"the spinner: a stall about once a second is what that predicts, and it is "
        f"sockperf's own, not the network's. rtlab sleeps between messages and leaves the "
        f"CPU to others in its gaps.")
    lag = [x["median_rtlab_response"]["p50"] - x["median_rtlab_from_send"]["p50"] for x in secs
           if x["median_rtlab_response"]["p50"] is not None
           and x["median_rtlab_from_send"]["p50"] is not None]
    own = [x["median_sockperf"]["p99"] for x in secs]
    grid = [x["median_sockperf_from_grid"]["p99"] for x in secs]
    slag = [x["median_sockperf_send_lag"]["p50"] for x in secs]
    out.append(
        f"- **Open loop.** rtlab's `response` (from the scheduled send) is {span(lag, us_cell)} us "
        f"above its `response_from_send` at p50: its send lag, the wake-up from `ppoll()`. "
        f"sockperf, spinning, sends {span(slag, us_cell)} us after its grid time at p50, but a "
        f"stalled reply holds its next pings back: timed from its own grid, its p99 would read "
        f"{span(grid, us_cell)} us instead of the {span(own, us_cell)} us it prints "
        f"(coordinated omission; the `sockperf from its grid` column). rtlab keeps sending "
        f"and times every message from its schedule, so a stall shows in every message it "
        f"delayed.")
    by = {(x["transport"], x["server"]): x for x in secs}
    cmp_ = []
    for t in ("udp", "tcp"):
        a, b = by.get((t, "rtlab")), by.get((t, "sockperf"))
        if a and b:
            cmp_.append(f"{t.upper()} p50 {us_cell(a['median_sockperf']['p50'])} us against "
                        f"rtlab's server vs {us_cell(b['median_sockperf']['p50'])} us against "
                        f"its own, p99 {us_cell(a['median_sockperf']['p99'])} vs "
                        f"{us_cell(b['median_sockperf']['p99'])} us")
    on_rtlab = [r for r in runs if r["tool"] == "sockperf" and r["server"] == "rtlab"]
    if on_rtlab:
        unmatched = [r["seq"] for r in on_rtlab
                     if any("rtlab's server received" in p for p in r["problems"])]
        answered = (f"the server's counters match sockperf's sent count in every run"
                    if not unmatched else f"the server's counters do not match sockperf's "
                    f"sent count in runs {unmatched}")
        out.append(
            f"- **sockperf's client against rtlab's server** ran in {len(on_rtlab)} run(s) over "
            f"{', '.join(sorted({r['transport'].upper() for r in on_rtlab}))}; {answered}"
            + ("; " + "; ".join(cmp_) if cmp_ else "") + ".")
    lost = sum(x["rtlab_lost"] for x in secs)
    dropped = sum(x["sockperf_dropped"] for x in secs)
    failed = [seq for x in secs for seq in x["failed_runs"]]
    out.append(
        f"- **Losses.** rtlab lost {lost} message(s), sockperf reported {dropped} dropped"
        + (f"; runs {failed} failed (see the notes)." if failed else "; no run failed."))
    out.append("")
    return out


def render_md(res):
    cfg = res["config"]
    s = res["summary"]
    env = res.get("environment", {})
    out = ["# rtlab net probe vs sockperf ping-pong\n"]
    out.append(f"Generated by `bench/net-vs-sockperf.sh` on {res['date']}.\n")
    server_sched = (f"SCHED_FIFO {cfg['server_priority']}" if cfg["server_priority"]
                    else "SCHED_OTHER")
    out.append(md_table(["", ""], host_rows(res, [("clocksource", "clocksource"),
                                                  ("cpuidle", "cpuidle"),
                                                  ("RT bandwidth", "rt_bandwidth")]) + [
        ["rtlab", res["versions"]["rtlab"]],
        ["sockperf", res["versions"]["sockperf"]],
        ["setup", f"per transport ({', '.join(t.upper() for t in cfg['transports'])}) and server "
                  f"({', '.join(SERVER_NAMES[x] for x in cfg['servers'])}): {cfg['pairs']} pair(s), "
                  f"one server process per pair, rtlab then sockperf against it; "
                  f"{cfg['duration_s']} s per run at {cfg['mps']} msg/s ({cfg['interval_us']} us), "
                  f"{cfg['payload']} B; clients on CPU {cfg['client_cpu']} at SCHED_FIFO "
                  f"{cfg['priority']}, server on CPU {cfg['server_cpu']} at {server_sched}, "
                  f"{cfg['address']}; {cfg['settle_s']} s pause before each run"],
    ], numeric=False))
    out.append("")
    out.append("The machine: a 2-core VM (KVM guest) shared with other work; the host takes the "
               "CPUs away for milliseconds at times, so the tails (p99.9, max) move from run to run "
               "by far more than the tools differ. Client and server talk over loopback.\n")
    c = res["commands"]
    servers = [c[f"{x}_server"] for x in ("sockperf", "rtlab") if x in cfg["servers"]]
    out += command_lines([*servers, c["rtlab"], c["sockperf"]],
                         extra_legend="; shown for UDP against sockperf's server: for TCP "
                         "`--udp` becomes `--tcp` and sockperf gets `--tcp`; against rtlab's "
                         f"server the clients use port {cfg['port'] + 1}"
                         + ("; `HOLD_DMA_LATENCY_0` = `python3 -c` code that writes 0 to "
                            "/dev/cpu_dma_latency and execs the rest with the file open"
                            if cfg.get("dma_latency") else ""))

    out.append("## Summary\n")
    out.append("Full round trips, us, median over the runs of each section. `rtlab` = its "
               "`response_from_send` series (reply - actual send: what a closed-loop client "
               "like sockperf measures); `sockperf` = its own printout (`--full-rtt`). "
               "Ratios are rtlab / sockperf: above 1 means rtlab measured a longer round trip. "
               "`rtlab from schedule` = its open-loop `response` series (reply - scheduled "
               "send), which adds its send lag.\n")
    out.append(md_table(*headline_rows(res), text_cols=2))
    out.append("")
    out.append("All figures (`ratio of medians` = median of rtlab's runs / median of sockperf's; "
               "`median ratio` = median over pairs of the per-pair ratio; `sockperf from its "
               "grid` = reply - the send time sockperf's schedule planned, rebuilt by this "
               "benchmark from `--full-log`'s send times, not a sockperf figure):\n")
    out.append(md_table(*summary_rows(res), text_cols=3))
    out.append("")

    out.append("Cross-check with one rule for both: exact figures from the per-message files "
               "(rtlab `--samples`, sockperf `--full-log`), sockperf's percentile rule (the value "
               "at rank round(p x n)), rtlab's messages restricted to sockperf's valid window "
               "(sent from 400 ms after the first send to 50 ms before the last). "
               "Medians over runs; ratio = median over pairs.\n")
    rows = []
    for sec in s["per_section"].values():
        for m in EXACT_METRICS:
            cell = count_cell if m == "over_1ms" else us_cell
            rows.append([sec["transport"].upper(), sec["server"], EXACT_LABELS[m],
                         cell(sec["exact_valid_median_rtlab"][m]),
                         cell(sec["exact_valid_median_sockperf"][m]),
                         fmt(sec["exact_median_ratio_rtlab_over_sockperf"][m], 2)])
    out.append(md_table(["transport", "server", "metric", "rtlab (valid window)",
                         "sockperf (full-log)", "median ratio"], rows, text_cols=3))
    out.append("")

    rows = []
    for sec in s["per_section"].values():
        rl, sl = sec["median_rtlab_send_lag"], sec["median_sockperf_send_lag"]
        rows.append([sec["transport"].upper(), sec["server"], us_cell(rl["p50"]), us_cell(rl["p99"]),
                     us_cell(rl["max"]), us_cell(sl["p50"]), us_cell(sl["p99"]), us_cell(sl["max"])])
    out.append("Send lag (actual send - scheduled send), medians over runs, us. rtlab: its "
               "`send_lag` series. sockperf: from its rebuilt grid (valid window only):\n")
    out.append(md_table(["transport", "server", "rtlab p50", "rtlab p99", "rtlab max",
                         "sockperf p50", "sockperf p99", "sockperf max"], rows, text_cols=2))
    out.append("")

    notes = []
    for seq, probs in s["flagged_runs"].items():
        notes.append(f"run {seq}: " + "; ".join(probs))
    notes += disturbance_notes(s, BUSY_PCT_WARN, busy_why="sockperf alone keeps one CPU busy")
    notes += [f"rtlab warned: {w}" for w in s["rtlab_warnings"]]
    out += note_lines(notes)
    out += interpretation_lines(res)

    out.append("## What is compared, and the settings chosen\n")
    out.append(
        f"- **Same server, same traffic.** In each pair one server process answers both "
        f"clients, one after the other: sockperf's own `sockperf sr` (the reference), then, as "
        f"a second set, `rtlab net serve --mode sockperf` (which also shows that sockperf's "
        f"client works against rtlab's server: the sockperf figures in those sections are "
        f"sockperf's own). Both clients send {cfg['payload']}-byte sockperf pings "
        f"(`--mode sockperf --round-trips 1` for rtlab) at {cfg['mps']} msg/s for "
        f"{cfg['duration_s']} s (rtlab `--interval {cfg['interval_us']}us --count "
        f"{cfg['duration_s'] * cfg['mps']}`, sockperf `--mps {cfg['mps']} -t "
        f"{cfg['duration_s']}`), pinned to CPU {cfg['client_cpu']} at SCHED_FIFO "
        f"{cfg['priority']} (rtlab `--cpu --policy fifo --priority`, sockperf under `chrt -f "
        f"{cfg['priority']} taskset -c {cfg['client_cpu']}`); the server runs on CPU "
        f"{cfg['server_cpu']} at {server_sched}.")
    out.append(
        "- **Full round trips on both sides.** sockperf prints half the round trip as "
        "\"latency\" by default; `--full-rtt` makes it print the round trip (`avg-rtt`), which "
        "is what rtlab reports. No figure here is doubled or halved.")
    out.append(
        "- **Closed loop vs open loop.** sockperf sends a ping, blocks in `recvfrom()` for the "
        "pong, then busy-waits for the next send time of its grid; a late reply delays the "
        "next sends, which then go out back to back until it has caught up. Its round trips "
        "are timed from the actual send, so a stall appears as one long sample and the "
        "messages it held back are timed as if nothing happened (coordinated omission). "
        "rtlab sends on its schedule whether or not replies came, and records each message "
        "from the scheduled send (`response`) and from the actual send "
        "(`response_from_send`, the like-for-like figure). Like-for-like up to the tail: a "
        "stall of the server or the path delays every message rtlab sends meanwhile, so even "
        "`response_from_send` holds one sample per message in flight (a 7 ms stall at 1 ms "
        "intervals: about 7 samples, 7, 6, 5, ... ms), where sockperf, waiting, holds one; "
        "at p99.9 and max rtlab's figure is the heavier one for the same stall. The derived "
        "`sockperf from its grid` column shows what sockperf's own messages would read from "
        "their planned send times.")
    out.append(
        "- **Waiting.** sockperf busy-waits between messages (its CPU is busy all the time it "
        "measures; the `client CPU %` column also counts its ~2.5 s of start-up, mostly "
        "asleep) and sends within a fraction of a us of its grid; rtlab sleeps "
        "in `ppoll()` until the next send or reply, so its send lag is a wake-up latency "
        "(tens of us on this VM), and its CPU idles between messages. A CPU that idles pays "
        "the idle exit when the reply arrives. "
        "On a VM a CPU that halts in idle wakes through the hypervisor; both servers and "
        "both clients wait in the kernel during the round trip, so that cost is in both "
        "tools' figures. "
        + ("Here neither client holds `/dev/cpu_dma_latency` (rtlab `--no-dma-latency`; "
           "sockperf never does), so the CPUs may halt: DMA_LATENCY=1 runs both with it "
           "held at 0."
           if not cfg.get("dma_latency") else
           "Here both clients run with `/dev/cpu_dma_latency` held at 0 (DMA_LATENCY=1: rtlab "
           "holds it itself, its default; sockperf runs under `HOLD_DMA_LATENCY_0`), so no "
           "CPU goes deeper than polling idle while either runs.")
        + f" cpuidle here: {env.get('cpuidle', '?')}.")
    out.append(
        "- **What each tool counts.** rtlab: every message of the run, from the first, in "
        "HDR histograms (3 significant digits); a message without its reply within the "
        "timeout (100 ms) is lost and counted. sockperf: only its `Valid Duration` (the first "
        "400 ms of warm-up and the last ~50 ms are left out: about "
        f"{100 * 0.45 / cfg['duration_s']:.0f} % of a {cfg['duration_s']} s run), exact "
        "values at 1 ns resolution printed to 1 ns; it counts dropped, duplicated and "
        "out-of-order messages by sequence number (an out-of-order reply is left out of its "
        "figures). The cross-check table applies one rule "
        "and one window to both.")
    out.append(
        "- **Timestamps.** sockperf reads the TSC (`rdtsc`) just before its `sendto()` and "
        "after `recvfrom()`; rtlab reads CLOCK_MONOTONIC just before its `send()` and after its "
        "`recv()`. Both include the send system call and the wake-up of the client.")
    out.append("")

    out.append("## Per pair\n")
    out.append("Round trips in us: rtlab `response_from_send` / sockperf's printout, then rtlab's "
               "open-loop `response` and send lag (sockperf: from its rebuilt grid). "
               "`client CPU %` / `server CPU %` = busy share of the client's / the server's CPU "
               "during the run. " + HOST_LOAD_LEGEND + ".\n")
    by_seq = {r["seq"]: r for r in res["runs"]}
    planned = cfg["duration_s"] * cfg["mps"]
    header = ["run", "tool", "p50", "p90", "p99", "p99.9", "max", "mean", "from schedule p50 / p99 / max",
              "send lag p50 / p99 / max", "client CPU %", "server CPU %", "wall (s)",
              *HOST_LOAD_HEADER]
    msg_header = ["run", "tool", "planned", "sent", "answered", "lost", "counted", "other",
                  "server saw"]
    for key, sec in s["per_section"].items():
        out.append(f"### {section_name((sec['transport'], sec['server']))}\n")
        rows, msg_rows = [], []
        for p in [p for p in res["pairs"] if f"{p['transport']}/{p['server']}" == key]:
            for seq in (p["rtlab_seq"], p["sockperf_seq"]):
                r = by_seq[seq]
                f = r["figures"]
                if f is None:
                    cells = ["failed"] + ["-"] * 7
                else:
                    grid, lag = ((f["response"], f["send_lag"]) if r["tool"] == "rtlab"
                                 else (f["response_from_grid"], f["send_lag"]))
                    cells = [us_cell(f[m]) for m, _, _ in METRICS] + [
                        " / ".join(us_cell(grid[m]) for m in ("p50", "p99", "max")),
                        " / ".join(us_cell(lag[m]) for m in ("p50", "p99", "max"))]
                rows.append([r["seq"], r["tool"], *cells, fmt(r["client_cpu_busy_pct"], 1),
                             fmt(r["server_cpu_busy_pct"], 1), fmt(r["elapsed_s"], 1),
                             *host_load_cells(r)])
                msg_rows.append([r["seq"], r["tool"], *message_cells(r, planned), server_cell(r)])
            ra = p["ratios_rtlab_over_sockperf"]
            rows.append(["", f"**ratio (pair {p['pair']})**", *[fmt(ra[m], 2) for m, _, _ in METRICS],
                         "", "", "", "", "", "", "", ""])
        out.append(md_table(header, rows, text_cols=2))
        out.append("")
        out.append("Messages (rtlab: `net.messages`; sockperf: `[Total Run]` with the `[Valid "
                   "Duration]` in brackets; `counted` = samples in the figures above; `server "
                   "saw` = rtlab's server's counters over the run, or the total sockperf's "
                   "server printed for the whole pair):\n")
        out.append(md_table(msg_header, msg_rows, text_cols=2))
        out.append("")
    return "\n".join(out)


def render_console(res):
    out = console_table(*headline_rows(res))
    s = res["summary"]
    if not s["all_runs_clean"]:
        out.append("")
        out.append("flagged runs: " + json.dumps(s["flagged_runs"]))
    return "\n".join(out)


def main(argv=None):
    return run_cli("net_compare", __doc__, argv,
                   columns=MANIFEST_COLUMNS, file_columns=FILE_COLUMNS,
                   analyse=analyse, render_md=render_md, render_console=render_console)


if __name__ == "__main__":
    sys.exit(main())
