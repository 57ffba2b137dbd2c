#!/usr/bin/env python3
"""Report of bench/plan-dispatch.sh: rtlab's executive (`rtlab plan run`)
against plain absolute clock_nanosleep, a dense plan's throughput, and the
plans' size on disk and resident memory (python3 stdlib only).

Called by bench/plan-dispatch.sh with a manifest (runs.tsv) that lists, for
every run of `rtlab plan run`, its kind (`tool`):

  spin    --guard auto: sleep to the event minus the guard, spin to the ns
  sleep   --guard 0ns: a plain absolute clock_nanosleep to the event's time
  dense   a dense plan (events 1 us / 0.5 us apart), fixed guard
  memory  a shorter plan at the first dense spacing (peak RSS vs length)

its plan, its JSON (series `dispatch`: samples, missed, percentiles_ns,
histogram_ns, min/max/mean; elapsed_ns; warnings) and its /usr/bin/time -v
report (peak resident set size). meta.json holds the plans' sizes and header
lengths (the plans themselves are gone by the time this runs again).

  % within X us   from `histogram_ns` ([value, count], value = the HDR
                  bucket's highest equivalent value, 3 significant digits):
                  the samples of every bucket whose value <= X, over samples
                  + missed. Exact below 2048 ns (1 ns buckets); above, a
                  bucket straddling X is left out, so the figure is a lower
                  bound, short by at most that one bucket (8 ns wide at
                  10 us, 64 ns at 100 us, 512 ns at 1000 us).
  events/s        (samples + missed) / (elapsed_ns / 1e9); fired events/s =
                  samples / (elapsed_ns / 1e9).
  bytes/event     (file size - header length) / events.

Writes a Markdown report (and optionally a JSON file) and prints the summary.
It can also be run on its own over the files a previous run kept:
    python3 bench/plan_compare.py --manifest DIR/runs.tsv --meta DIR/meta.json \\
        --md out.md [--json out.json]
"""

import math
import os
import re
import sys

from benchlib import (
    HOST_LOAD_HEADER, HOST_LOAD_LEGEND, RUN_COLUMNS, BenchError, command_lines, console_table,
    fmt, host_load_cells, host_rows, load_json, md_table, med, note_lines, ratio, read_text,
    run_cli, run_record,
)

SCHEMA = "rtlab.bench.plan-dispatch/1"
OWN_COLUMNS = ("pair", "seq", "tool", "plan")
FILE_COLUMNS = ("json", "log", "time")  # relative to the manifest
MANIFEST_COLUMNS = OWN_COLUMNS + FILE_COLUMNS + RUN_COLUMNS

TARGET_RATE = 1_000_000       # events/s dispatched, dense plan
TARGET_BYTES_PER_EVENT = 24   # on disk
RECORD_BYTES = 24             # what a resident plan costs per event
FLAT_BYTES_PER_EVENT = 1.0    # RSS slope below which memory does not grow with length
PAGER_WINDOW_MIB = 6          # the pager's lock-ahead window (256 Ki events x 24 B)
GUARD_CEILING_NS = 2_000_000  # --guard auto's upper bound
# Whole-machine busy % above which a run is flagged: a sleeping dispatcher
# uses almost nothing; a dense one spins one CPU of 2 (50 %).
BUSY_PCT_WARN = {"spin": 20.0, "sleep": 20.0, "dense": 65.0, "memory": 65.0}
LABELS = {"spin": "sleep+spin (--guard auto)", "sleep": "plain sleep (--guard 0ns)"}
STAT_METRICS = (("p50_us", "p50"), ("p99_us", "p99"), ("p99_9_us", "p99.9"),
                ("max_us", "max"), ("mean_us", "mean"))
# The timing figures this benchmark checks (2-core VMs), as stated at
# GUARD_NS in crates/rtlab-exec/src/periodic/mod.rs.
DESIGN_SLEEP_P50_US = (20.0, 50.0)
DESIGN_SPIN_WITHIN10 = (96.0, 98.0)

GUARD_RE = re.compile(r"guard auto: (\d+) warm-up wake-ups were late by p50 (\d+) ns, "
                      r"p99 (\d+) ns, max (\d+) ns: guard (\d+) ns")
SKIPPED_RE = re.compile(r"^\d+ of \d+ events were reached too late and skipped$")
TIME_FIELDS = {
    "Maximum resident set size (kbytes)": "max_rss_kb",
    "Minor (reclaiming a frame) page faults": "minor_faults",
    "Major (requiring I/O) page faults": "major_faults",
    "Exit status": "exit_status",
    "User time (seconds)": "user_s",
    "System time (seconds)": "system_s",
}


# --------------------------------------------------------------------------
# Input
# --------------------------------------------------------------------------

def parse_time(path):
    """The /usr/bin/time -v report."""
    out = {}
    for line in read_text(path).splitlines():
        key, sep, value = line.strip().rpartition(": ")
        if sep and key in TIME_FIELDS:
            try:
                out[TIME_FIELDS[key]] = float(value) if "." in value else int(value)
            except ValueError as e:
                raise BenchError(f"{path}: {key}: {value!r} is not a number") from e
    if "max_rss_kb" not in out:
        raise BenchError(f"{path}: no 'Maximum resident set size' line: not a time -v report")
    return out


def bucket_width(upper):
    """Width of the HDR bucket (3 significant digits, 1 ns lowest) whose
    highest equivalent value is `upper`: 1 ns below 2048, then doubling at
    every power of two."""
    if upper < 2048:
        return 1
    return 1 << (int(math.log2(upper)) - 10)


def within(hist, limit_ns):
    """(samples surely <= limit, samples possibly <= limit): buckets wholly
    at or below it, and those plus the one straddling it."""
    low = sum(c for v, c in hist if v <= limit_ns)
    high = sum(c for v, c in hist if v - bucket_width(v) + 1 <= limit_ns)
    return low, high


def run_figures(run, plan, within_us):
    doc = load_json(run["json"])
    problems = []
    if doc.get("schema") != "rtlab.run/1":
        raise BenchError(f"{run['json']}: schema {doc.get('schema')!r}, expected 'rtlab.run/1'")
    if doc.get("probe") != "plan":
        raise BenchError(f"{run['json']}: probe {doc.get('probe')!r}, expected 'plan'")
    series = [s for s in doc.get("series") or [] if s.get("name") == "dispatch"]
    if len(series) != 1:
        raise BenchError(f"{run['json']}: expected one 'dispatch' series, found {len(series)}")
    s = series[0]
    samples, missed, dropped = s.get("samples", 0), s.get("missed", 0), s.get("dropped", 0)
    events = samples + missed
    hist = [(int(v), int(c)) for v, c in s.get("histogram_ns") or []]
    if sum(c for _, c in hist) != samples:
        problems.append(f"histogram_ns holds {sum(c for _, c in hist)} samples, the series "
                        f"{samples}")
    if doc.get("status") != "complete":
        problems.append(f"status {doc.get('status')}")
    if events != plan["events"]:
        problems.append(f"samples + missed = {events}, the plan has {plan['events']} events")
    if dropped:
        problems.append(f"{dropped} samples dropped (ring full)")
    warnings = doc.get("warnings") or []
    guard = None
    for w in warnings:
        m = GUARD_RE.search(w)
        if m:
            guard = {"warmup_wakeups": int(m[1]), "warmup_p50_ns": int(m[2]),
                     "warmup_p99_ns": int(m[3]), "warmup_max_ns": int(m[4]),
                     "guard_ns": int(m[5])}
    cfg_guard = (doc.get("config") or {}).get("guard")
    if guard is None and isinstance(cfg_guard, dict):
        guard = {"guard_ns": cfg_guard.get("fixed")}
    if run["tool"] == "spin" and (guard is None or "warmup_p50_ns" not in guard):
        problems.append("no 'guard auto:' warning saying which guard was chosen")
    pct = s.get("percentiles_ns") or {}
    elapsed_ns = doc.get("elapsed_ns") or 0
    span_ns = (plan["events"] - 1) * plan["spacing_ns"]
    t = parse_time(run["time"])
    win = {}
    for x in within_us:
        low, high = within(hist, x * 1000)
        win[str(x)] = {"count": low, "count_high": high,
                       "pct": 100.0 * low / events if events else None,
                       "pct_high": 100.0 * high / events if events else None}
    return {
        "status": doc.get("status"),
        "events": events,
        "samples": samples,
        "missed": missed,
        "dropped": dropped,
        "skipped_pct": 100.0 * missed / events if events else None,
        "min_us": s.get("min_ns", 0) / 1000.0,
        "p50_us": pct.get("p50", 0) / 1000.0,
        "p90_us": pct.get("p90", 0) / 1000.0,
        "p99_us": pct.get("p99", 0) / 1000.0,
        "p99_9_us": pct.get("p99_9", 0) / 1000.0,
        "p99_99_us": pct.get("p99_99", 0) / 1000.0,
        "max_us": s.get("max_ns", 0) / 1000.0,
        "mean_us": s.get("mean_ns", 0) / 1000.0,
        "within": win,
        "guard": guard,
        "elapsed_s": elapsed_ns / 1e9,
        "span_s": span_ns / 1e9,
        "tail_ms": (elapsed_ns - span_ns) / 1e6,
        "dispatched_per_s": events / (elapsed_ns / 1e9) if elapsed_ns else None,
        "fired_per_s": samples / (elapsed_ns / 1e9) if elapsed_ns else None,
        "plan_rate_per_s": 1e9 / plan["spacing_ns"],
        "max_rss_kb": t["max_rss_kb"],
        "max_rss_mib": t["max_rss_kb"] / 1024.0,
        "minor_faults": t.get("minor_faults"),
        "major_faults": t.get("major_faults"),
        "cpu_s": float(t.get("user_s", 0.0)) + float(t.get("system_s", 0.0)),
        "warnings": warnings,
        "problems": problems,
    }


def plan_figures(plan, base):
    """A plan's size on disk, and plan gen's own JSON and peak memory."""
    p = dict(plan)
    p["bytes_per_event"] = (p["bytes"] - p["header_len"]) / p["events"]
    p["problems"] = []
    gen = load_json(os.path.join(base, p["gen_json"]))
    if gen.get("events") != p["events"]:
        p["problems"].append(f"plan gen says {gen.get('events')} events, asked {p['events']}")
    if gen.get("bytes") != p["bytes"]:
        p["problems"].append(f"plan gen says {gen.get('bytes')} bytes, the file has {p['bytes']}")
    if gen.get("form") != "binary":
        p["problems"].append(f"plan gen wrote the {gen.get('form')} form")
    t = parse_time(os.path.join(base, p["gen_time"]))
    p["gen_max_rss_mib"] = t["max_rss_kb"] / 1024.0
    p["gen_cpu_s"] = float(t.get("user_s", 0.0)) + float(t.get("system_s", 0.0))
    return p


# --------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------

def medians(runs, keys):
    return {k: med(r["figures"][k] for r in runs) for k in keys}


def analyse(runs, meta):
    cfg = meta["config"]
    base = os.path.dirname(runs[0]["json"])
    plans = {p["label"]: plan_figures(p, base) for p in meta["plans"]}
    out_runs = []
    for run in runs:
        if run["plan"] not in plans:
            raise BenchError(f"run {run['seq']}: plan {run['plan']!r} is not in meta.json")
        rec = run_record(run, OWN_COLUMNS)
        rec["figures"] = run_figures(run, plans[run["plan"]], cfg["within_us"])
        rec["problems"] = rec["figures"]["problems"]
        out_runs.append(rec)

    # 1. sleep+spin vs plain sleep.
    by_tool = {t: [r for r in out_runs if r["tool"] == t] for t in ("spin", "sleep", "dense",
                                                                     "memory")}
    stat_keys = [k for k, _ in STAT_METRICS]
    pairs = []
    for p in sorted({r["pair"] for r in by_tool["spin"] + by_tool["sleep"]}):
        a = [r for r in by_tool["spin"] if r["pair"] == p]
        b = [r for r in by_tool["sleep"] if r["pair"] == p]
        if len(a) != 1 or len(b) != 1:
            raise BenchError(f"pair {p}: expected one sleep+spin and one plain sleep run")
        pairs.append({"pair": p, "spin_seq": a[0]["seq"], "sleep_seq": b[0]["seq"],
                      "ratios_spin_over_sleep": {k: ratio(a[0]["figures"][k], b[0]["figures"][k])
                                                 for k in stat_keys}})
    dispatch = {}
    for t in ("spin", "sleep"):
        m = medians(by_tool[t], stat_keys + ["min_us", "events", "missed"])
        m["within_pct"] = {x: med(r["figures"]["within"][x]["pct"] for r in by_tool[t])
                           for x in map(str, cfg["within_us"])}
        dispatch[t] = m
    dispatch["ratio_of_medians_spin_over_sleep"] = {
        k: ratio(dispatch["spin"][k], dispatch["sleep"][k]) for k in stat_keys}
    dispatch["median_ratio_spin_over_sleep"] = {
        k: med(p["ratios_spin_over_sleep"][k] for p in pairs) for k in stat_keys}
    guards = [r["figures"]["guard"]["guard_ns"] for r in by_tool["spin"]
              if r["figures"]["guard"] and r["figures"]["guard"].get("guard_ns") is not None]
    dispatch["guard_ns"] = guards

    # 2. dense throughput, per spacing.
    dense = []
    for spacing in cfg["dense_spacings_ns"]:
        rs = [r for r in by_tool["dense"] if plans[r["plan"]]["spacing_ns"] == spacing]
        m = medians(rs, ["dispatched_per_s", "fired_per_s", "skipped_pct", "missed", "samples",
                         "elapsed_s", "tail_ms", "p50_us", "p99_us", "max_us", "max_rss_mib",
                         "dropped"])
        dense.append({"spacing_ns": spacing, "runs": [r["seq"] for r in rs],
                      "plan_rate_per_s": 1e9 / spacing, "medians": m,
                      "meets_rate": (m["dispatched_per_s"] or 0) >= TARGET_RATE,
                      "fired_meets_rate": (m["fired_per_s"] or 0) >= TARGET_RATE})
    rt_runtime, rt_period = (meta.get("environment") or {}).get("sched_rt_runtime_us"), \
        (meta.get("environment") or {}).get("sched_rt_period_us")
    try:
        throttle_pct = (100.0 * (1 - int(rt_runtime) / int(rt_period))
                        if int(rt_runtime) >= 0 else 0.0)
    except (TypeError, ValueError):
        throttle_pct = None

    # 3. memory: peak RSS by plan length at the memory spacing.
    mem_spacing = cfg["mem_spacing_ns"]
    lengths = []
    for length in sorted(set(cfg["mem_events"]) | {cfg["dense_events"]}):
        rs = [r for r in by_tool["memory"] + by_tool["dense"]
              if plans[r["plan"]]["events"] == length
              and plans[r["plan"]]["spacing_ns"] == mem_spacing]
        if not rs:
            continue
        plan = next(plans[r["plan"]] for r in rs)
        rss = [r["figures"]["max_rss_mib"] for r in rs]
        lengths.append({"events": length, "plan": plan["label"], "plan_bytes": plan["bytes"],
                        "runs": [r["seq"] for r in rs], "rss_mib_median": med(rss),
                        "rss_mib_min": min(rss), "rss_mib_max": max(rss),
                        "max_us_median": med(r["figures"]["max_us"] for r in rs),
                        "minor_faults_median": med(r["figures"]["minor_faults"] for r in rs)})
    memory = {"spacing_ns": mem_spacing, "lengths": lengths, "slope_bytes_per_event": None,
              "growth_mib": None, "flat": None}
    if len(lengths) >= 2:
        a, b = lengths[-2], lengths[-1]
        memory["slope_bytes_per_event"] = ((b["rss_mib_median"] - a["rss_mib_median"]) * 1048576
                                           / (b["events"] - a["events"]))
        memory["growth_mib"] = lengths[-1]["rss_mib_median"] - lengths[0]["rss_mib_median"]
        memory["flat"] = memory["slope_bytes_per_event"] < FLAT_BYTES_PER_EVENT
    big = [p for p in plans.values() if p["events"] == cfg["dense_events"]]
    disk = {"bytes_per_event": max((p["bytes_per_event"] for p in big), default=None)}
    disk["meets"] = disk["bytes_per_event"] is not None and \
        disk["bytes_per_event"] <= TARGET_BYTES_PER_EVENT

    flagged = {
        "failed_runs": [r["seq"] for r in out_runs if r["rc"] != 0],
        "runs_with_build_processes": [r["seq"] for r in out_runs if r["busy_build_processes"]],
        "runs_with_busy_machine": [r["seq"] for r in out_runs
                                   if r["cpu_busy_pct"] >= BUSY_PCT_WARN[r["tool"]]],
    }
    other_warnings = sorted({w for r in out_runs for w in r["figures"]["warnings"]
                             if not GUARD_RE.search(w) and not SKIPPED_RE.match(w)})
    summary = {
        "dispatch": dispatch,
        "dense": dense,
        "throttle_pct": throttle_pct,
        "memory": memory,
        "disk": disk,
        "targets": {
            "rate": any(d["meets_rate"] for d in dense),
            "bytes_per_event": disk["meets"],
            "rss_flat": memory["flat"],
        },
        "all_runs_consistent": all(not r["problems"] for r in out_runs)
        and all(not p["problems"] for p in plans.values()),
        "inconsistent_runs": {r["seq"]: r["problems"] for r in out_runs if r["problems"]},
        "plan_problems": {k: p["problems"] for k, p in plans.items() if p["problems"]},
        **flagged,
        "other_rtlab_warnings": other_warnings,
    }
    method = {
        "dispatch_error": "series `dispatch` of each run's JSON: fire - planned, ns",
        "within": "histogram_ns buckets whose value (highest equivalent) <= X, over samples + "
                  "missed; a lower bound by at most the one bucket straddling X",
        "events_per_s": "(samples + missed) / (elapsed_ns / 1e9); fired = samples / elapsed",
        "bytes_per_event": "(file size - header length at offset 12) / events",
        "rss": "/usr/bin/time -v 'Maximum resident set size' of rtlab plan run",
        "rss_flat": f"RSS slope between the two longest plans < {FLAT_BYTES_PER_EVENT} B/event "
                    f"(a plan read into memory costs {RECORD_BYTES})",
        "ratios": "sleep+spin / plain sleep per pair; ratio of medians and median of ratios",
    }
    return {
        "schema": SCHEMA,
        **{k: meta[k] for k in ("date", "host", "kernel", "versions", "config", "commands",
                                "environment") if k in meta},
        "method": method,
        "plans": list(plans.values()),
        "runs": out_runs,
        "pairs": pairs,
        "summary": summary,
    }


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def mib(v):
    return fmt(v, 1)


def rate(v):
    return "-" if v is None else f"{v / 1e6:.3f} M/s"


def yes_no(ok):
    return "-" if ok is None else ("**met**" if ok else "**NOT met**")


def targets_rows(res):
    s = res["summary"]
    cfg = res["config"]
    rows = []
    for d in s["dense"]:
        m = d["medians"]
        rows.append([f">= 1 M events/s dispatched, events {fmt(d['spacing_ns'] / 1000, 1)} us apart",
                     f"{rate(m['dispatched_per_s'])} dispatched, {rate(m['fired_per_s'])} fired, "
                     f"{fmt(m['skipped_pct'], 2)} % skipped (plan's own rate "
                     f"{rate(d['plan_rate_per_s'])})",
                     yes_no(d["meets_rate"])])
    rows.append([f"<= {TARGET_BYTES_PER_EVENT} bytes per event on disk "
                 f"({cfg['dense_events']:,} events)",
                 f"{fmt(s['disk']['bytes_per_event'], 3)} bytes/event",
                 yes_no(s["disk"]["meets"])])
    mem = s["memory"]
    ls = mem["lengths"]
    rows.append(["no growth of resident memory with plan length",
                 ", ".join(f"{l['events']:,} events: {mib(l['rss_mib_median'])} MiB"
                           for l in ls)
                 + (f"; slope {fmt(mem['slope_bytes_per_event'], 3)} B/event between the two "
                    f"longest" if mem["slope_bytes_per_event"] is not None else ""),
                 yes_no(mem["flat"])])
    return rows


def design_check(res):
    s = res["summary"]["dispatch"]
    sleep_p50 = s["sleep"]["p50_us"]
    sleep10 = s["sleep"]["within_pct"].get("10")
    sleep100 = s["sleep"]["within_pct"].get("100")
    spin10 = s["spin"]["within_pct"].get("10")
    lines = []
    if sleep_p50 is not None:
        lo, hi = DESIGN_SLEEP_P50_US
        verdict = "as stated" if lo <= sleep_p50 <= hi else (
            "earlier than stated" if sleep_p50 < lo else "later than stated")
        lines.append(f"plain sleep wakes {fmt(sleep_p50, 1)} us late at the median "
                     f"(expected: 20-50 us): {verdict}")
    if sleep10 is not None:
        line = f"plain sleep: {fmt(sleep10, 2)} % within 10 us (expected: 0 %)"
        if sleep100 is not None:
            verdict = "as stated" if 90.0 <= sleep100 <= 98.0 else (
                "better than stated" if sleep100 > 98.0 else "worse than stated")
            line += f", {fmt(sleep100, 2)} % within 100 us (expected: 90-98 %): {verdict}"
        lines.append(line)
    if spin10 is not None:
        lo, hi = DESIGN_SPIN_WITHIN10
        verdict = "as stated" if lo <= spin10 <= hi else (
            "better than stated" if spin10 > hi else "worse than stated")
        lines.append(f"sleep+spin: {fmt(spin10, 2)} % within 10 us (expected: 96-98 %): "
                     f"{verdict}")
    return lines


def render_md(res):
    cfg = res["config"]
    s = res["summary"]
    env = res.get("environment", {})
    d = s["dispatch"]
    out = ["# rtlab plan run: dispatch error, dense throughput, memory\n"]
    out.append(f"Generated by `bench/plan-dispatch.sh` on {res['date']}.\n")
    spacings = ", ".join(f"{fmt(x / 1000, 1)} us" for x in cfg["dense_spacings_ns"])
    out.append(md_table(["", ""], host_rows(res, [("clocksource", "clocksource"),
                                                  ("RT throttling", "rt_throttling")]) + [
        ["rtlab", res["versions"]["rtlab"]],
        ["time", res["versions"]["time"]],
        ["setup", f"dispatcher pinned to CPU {cfg['cpu']}, SCHED_FIFO {cfg['priority']}, memory "
                  f"locked, /dev/cpu_dma_latency held at 0 (rtlab's defaults); "
                  f"{cfg['settle_s']} s pause before each run"],
        ["1. sleep+spin vs plain sleep", f"{cfg['pairs']} pair(s), `--guard auto` then "
                  f"`--guard 0ns`, one plan of {cfg['dispatch_events']} events "
                  f"{cfg['dispatch_period_ms']} ms apart, `--skip-after 1s`"],
        ["2. dense", f"{cfg['dense_events']:,} events {spacings} apart, {cfg['dense_runs']} "
                     f"run(s) each, `--guard {cfg['dense_guard_us']}us --skip-after "
                     f"{cfg['dense_skip_us']}us`"],
        ["3. memory", "plans of " + ", ".join(f"{n:,}" for n in cfg["mem_events"])
                      + f" and {cfg['dense_events']:,} events {fmt(cfg['mem_spacing_ns'] / 1000, 1)} us "
                      f"apart, same flags as the dense runs (the longest are the dense runs "
                      f"themselves), peak RSS from `/usr/bin/time -v`"],
    ], numeric=False))
    out.append("")
    out.append("The machine: a 2-core VM (KVM guest) shared with other work. The host takes the "
               "CPUs away for milliseconds at times, so maxima and the far tail move from run to "
               "run by far more than the settings under test; medians over runs are reported, "
               "and every run is listed.\n")
    out += command_lines([res["commands"]["gen"], res["commands"]["spin"],
                          res["commands"]["sleep"], res["commands"]["dense"]],
                         extra_legend="; `$PLANS` = a scratch directory for the plans, removed "
                                      "afterwards. The plan gen line is the section 1 plan's; "
                                      "the dense and memory plans differ in `--period` and "
                                      "`--count`, and their runs only in the plan")

    # ---------------------------------------------------------- targets
    out.append("## Targets\n")
    out.append(md_table(["target", "measured (median over runs)", ""], targets_rows(res),
                        numeric=False))
    out.append("")
    misses = []
    for dd in s["dense"]:
        if not dd["meets_rate"]:
            m = dd["medians"]
            misses.append(
                f"at {fmt(dd['spacing_ns'] / 1000, 1)} us spacing the dispatched rate is "
                f"{rate(m['dispatched_per_s'])}, below 1 M/s: the plan itself only asks for "
                f"{rate(dd['plan_rate_per_s'])}, and `elapsed_ns` runs {fmt(m['tail_ms'], 0)} ms "
                f"past the last event (see section 2), so this spacing cannot show 1 M/s even "
                f"when every event is dispatched on time")
    if s["memory"]["flat"] is False:
        misses.append("resident memory grows with the plan's length (section 3)")
    if s["disk"]["meets"] is False:
        misses.append(f"the plan takes {fmt(s['disk']['bytes_per_event'], 3)} bytes per event")
    if misses:
        out.append("Not met, plainly:\n")
        out += [f"- {m}." for m in misses]
        out.append("")
    out.append("Checked against the expected figures (2-core VMs; GUARD_NS in crates/rtlab-exec/src/periodic/mod.rs):\n")
    out += [f"- {line}." for line in design_check(res)]
    out.append("")

    # ---------------------------------------------------------- section 1
    out.append("## 1. Sleep+spin vs plain sleep\n")
    out.append(f"The same plan ({cfg['dispatch_events']} `mark` events, "
               f"{cfg['dispatch_period_ms']} ms apart), the same binary, CPU and priority; "
               f"only `--guard` differs. `--guard 0ns` sleeps on an absolute `clock_nanosleep` to "
               f"the event's time and fires when it wakes: plain sleeping, no spin. "
               f"`--guard auto` measures 200 wake-ups first and sleeps to the event minus "
               f"1.5 x their p99 + 10 us, then spins to the ns (guards chosen: "
               f"{', '.join(fmt(g / 1000, 1) + ' us' for g in d['guard_ns']) or '-'}). "
               f"Dispatch error = fire - planned, us. Ratios are sleep+spin / plain sleep: below "
               f"1 = the executive is closer to the planned time.\n")
    rows = []
    for key, label in STAT_METRICS:
        per_pair = ", ".join(fmt(p["ratios_spin_over_sleep"][key]) for p in res["pairs"])
        rows.append([f"{label} (us)", fmt(d["spin"][key], 3), fmt(d["sleep"][key], 3),
                     fmt(d["ratio_of_medians_spin_over_sleep"][key]),
                     fmt(d["median_ratio_spin_over_sleep"][key]), per_pair])
    out.append(md_table(["dispatch error", "sleep+spin (median)", "plain sleep (median)",
                         "ratio of medians", "median ratio", "per-pair ratios"], rows))
    out.append("")
    out.append("Share of the events dispatched within x us of the planned time (paper 002's "
               "Table 4.1 layout; median over runs, each run's figure in brackets):\n")
    header = ["scheduler"] + [f"{x} us" for x in cfg["within_us"]]
    rows = []
    for t in ("spin", "sleep"):
        runs = [r for r in res["runs"] if r["tool"] == t]
        cells = []
        for x in map(str, cfg["within_us"]):
            per = ", ".join(fmt(r["figures"]["within"][x]["pct"], 1) for r in runs)
            cells.append(f"{fmt(d[t]['within_pct'][x], 2)} % ({per})")
        rows.append([LABELS[t]] + cells)
    out.append(md_table(header, rows))
    out.append("")
    widths = ", ".join(f"{x} us: {bucket_width(x * 1000)} ns" for x in cfg["within_us"])
    straddle = sum(1 for r in res["runs"] if r["tool"] in ("spin", "sleep")
                   for w in r["figures"]["within"].values() if w["count_high"] != w["count"])
    out.append(f"From each run's `histogram_ns` (HDR, 3 significant digits): the samples of the "
               f"buckets whose value (the bucket's highest value) is <= x, over the events. "
               f"A bucket that straddles x is left out, so a figure can be short by that one "
               f"bucket; bucket widths at the thresholds: {widths}. Cells where a bucket "
               f"straddled x: {straddle}.\n")
    out.append("### Per pair\n")
    header = ["run", "scheduler", "events", "missed", "guard (us)", "min", "p50", "p99", "p99.9",
              "max", "mean", *[f"<= {x} us %" for x in cfg["within_us"]], "peak RSS (MiB)",
              *HOST_LOAD_HEADER]
    rows = []
    by_seq = {r["seq"]: r for r in res["runs"]}
    for p in res["pairs"]:
        for seq in (p["spin_seq"], p["sleep_seq"]):
            r = by_seq[seq]
            f = r["figures"]
            g = f["guard"] or {}
            rows.append([r["seq"], LABELS[r["tool"]].split(" (")[0], f["events"], f["missed"],
                         fmt((g.get("guard_ns") or 0) / 1000, 1),
                         fmt(f["min_us"]), fmt(f["p50_us"]), fmt(f["p99_us"]),
                         fmt(f["p99_9_us"]), fmt(f["max_us"]), fmt(f["mean_us"]),
                         *[fmt(f["within"][str(x)]["pct"], 2) for x in cfg["within_us"]],
                         mib(f["max_rss_mib"]), *host_load_cells(r)])
        ra = p["ratios_spin_over_sleep"]
        rows.append(["", f"**ratio (pair {p['pair']})**", "", "", "", "", fmt(ra["p50_us"]),
                     fmt(ra["p99_us"]), fmt(ra["p99_9_us"]), fmt(ra["max_us"]),
                     fmt(ra["mean_us"]), *["" for _ in cfg["within_us"]], "", "", "", ""])
    out.append("dispatch error in us; " + HOST_LOAD_LEGEND + ".\n")
    out.append(md_table(header, rows, text_cols=2))
    out.append("")
    warm = [r["figures"]["guard"] for r in res["runs"] if r["tool"] == "spin"
            and r["figures"]["guard"] and "warmup_p50_ns" in r["figures"]["guard"]]
    if warm:
        out.append("`--guard auto`'s warm-up (200 absolute sleeps 1 ms apart on the promoted "
                   "thread), per sleep+spin run: "
                   + "; ".join(f"p50 {fmt(g['warmup_p50_ns'] / 1000, 1)}, p99 "
                               f"{fmt(g['warmup_p99_ns'] / 1000, 1)}, max "
                               f"{fmt(g['warmup_max_ns'] / 1000, 1)} us -> guard "
                               f"{fmt(g['guard_ns'] / 1000, 1)} us" for g in warm) + ".\n")
        capped = [g for g in warm if g["guard_ns"] >= GUARD_CEILING_NS]
        if capped:
            period_ns = cfg["dispatch_period_ms"] * 1_000_000
            out.append(f"In {len(capped)} of {len(warm)} sleep+spin runs the guard hit its "
                       f"{GUARD_CEILING_NS // 1000} us ceiling: the warm-up's p99 (the 3rd "
                       f"largest of 200 wake-ups) was itself a host stall of milliseconds, so "
                       f"that run spun for up to {GUARD_CEILING_NS // 1000} us before every "
                       f"event ({fmt(100 * GUARD_CEILING_NS / period_ns, 0)} % of a CPU at "
                       f"{cfg['dispatch_period_ms']} ms spacing) for the same accuracy.\n")

    # ---------------------------------------------------------- section 2
    out.append("## 2. Dense throughput\n")
    out.append(f"{cfg['dense_events']:,} `mark` events per plan, `--guard "
               f"{cfg['dense_guard_us']}us` (longer than the spacing: the dispatcher never "
               f"sleeps, it spins from event to event) and `--skip-after "
               f"{cfg['dense_skip_us']}us` (an event reached later than that is skipped and "
               f"counted missed). `dispatched/s` = (samples + missed) / elapsed; `fired/s` = "
               f"samples / elapsed; `elapsed` = the run's `elapsed_ns` (from the plan's start "
               f"until rtlab noticed the end), `tail` = elapsed - the plan's span (last offset). "
               f"A plan asks for at most 1 / spacing events per second, so a rate near the "
               f"plan's own means the dispatcher kept up.\n")
    rows = []
    for dd in s["dense"]:
        m = dd["medians"]
        rows.append([f"{fmt(dd['spacing_ns'] / 1000, 1)} us", rate(dd["plan_rate_per_s"]),
                     rate(m["dispatched_per_s"]), rate(m["fired_per_s"]),
                     fmt(m["skipped_pct"], 2), fmt(m["elapsed_s"], 3), fmt(m["tail_ms"], 1),
                     fmt(m["p50_us"]), fmt(m["p99_us"]), fmt(m["max_us"], 0),
                     fmt(m["dropped"], 0), mib(m["max_rss_mib"])])
    out.append(md_table(["spacing", "plan's rate", "dispatched/s", "fired/s", "skipped %",
                         "elapsed (s)", "tail (ms)", "p50 (us)", "p99 (us)", "max (us)",
                         "dropped", "peak RSS (MiB)"], rows))
    out.append("")
    out.append("Per run:\n")
    rows = []
    for r in [r for r in res["runs"] if r["tool"] == "dense"]:
        f = r["figures"]
        rows.append([r["seq"], r["plan"], f["events"], f["samples"], f["missed"],
                     fmt(f["skipped_pct"], 2), fmt(f["elapsed_s"], 3), fmt(f["tail_ms"], 1),
                     rate(f["dispatched_per_s"]), rate(f["fired_per_s"]), fmt(f["p50_us"]),
                     fmt(f["p99_us"]), fmt(f["p99_9_us"], 1), fmt(f["max_us"], 0), f["dropped"],
                     mib(f["max_rss_mib"]), fmt(f["cpu_s"], 2), *host_load_cells(r)])
    out.append(md_table(["run", "plan", "events", "fired", "skipped", "skipped %", "elapsed (s)",
                         "tail (ms)", "dispatched/s", "fired/s", "p50 (us)", "p99 (us)",
                         "p99.9 (us)", "max (us)", "dropped", "peak RSS (MiB)", "CPU time (s)",
                         *HOST_LOAD_HEADER], rows, text_cols=2))
    out.append("")

    # ---------------------------------------------------------- section 3
    out.append("## 3. Memory and disk\n")
    out.append("The plans, as generated (binary form: a 64-byte header, the module table padded "
               "to 8 bytes, then one 24-byte record per event); `plan gen peak RSS` = "
               "`/usr/bin/time -v` of the generator, which streams the events to the file:\n")
    rows = []
    for p in res["plans"]:
        rows.append([p["label"], f"{p['events']:,}", fmt(p["spacing_ns"] / 1000, 1),
                     f"{p['bytes']:,}", p["header_len"], fmt(p["bytes_per_event"], 3),
                     mib(p["gen_max_rss_mib"]), fmt(p["gen_cpu_s"], 2)])
    out.append(md_table(["plan", "events", "spacing (us)", "file (bytes)", "header (bytes)",
                         "bytes/event", "plan gen peak RSS (MiB)", "plan gen CPU (s)"], rows))
    out.append("")
    mem = s["memory"]
    out.append(f"Peak resident memory of `rtlab plan run` by plan length, all "
               f"{fmt(mem['spacing_ns'] / 1000, 1)} us apart with the same flags (median, "
               f"min-max over runs). A plan read into memory would add "
               f"{RECORD_BYTES} B per event (the `if resident` column); the binary plan is "
               f"mapped, and a side thread locks a {PAGER_WINDOW_MIB} MiB window ahead of the "
               f"dispatcher and drops the pages behind it:\n")
    rows = []
    first = mem["lengths"][0]["rss_mib_median"] if mem["lengths"] else None
    for l in mem["lengths"]:
        rows.append([f"{l['events']:,}", mib(l["plan_bytes"] / 1048576),
                     f"{mib(l['rss_mib_median'])} ({mib(l['rss_mib_min'])}-"
                     f"{mib(l['rss_mib_max'])})",
                     fmt(l["rss_mib_median"] - first if first is not None else None, 1),
                     mib(first + (l["plan_bytes"] - mem["lengths"][0]["plan_bytes"]) / 1048576),
                     fmt(l["minor_faults_median"], 0), fmt(l["max_us_median"], 0),
                     ", ".join(str(x) for x in l["runs"])])
    out.append(md_table(["events", "plan (MiB)", "peak RSS (MiB)", "vs shortest (MiB)",
                         "if resident (MiB)", "minor faults", "max dispatch error (us)", "runs"],
                        rows))
    out.append("")
    if mem["slope_bytes_per_event"] is not None:
        out.append(f"Between the two longest plans the peak RSS grows by "
                   f"{fmt(mem['slope_bytes_per_event'], 3)} B per added event (flat = below "
                   f"{FLAT_BYTES_PER_EVENT:g} B/event, against {RECORD_BYTES} for a resident "
                   f"plan); from the shortest to the longest by {fmt(mem['growth_mib'], 1)} "
                   f"MiB.\n")
    rows = []
    for r in [r for r in res["runs"] if r["tool"] == "memory"]:
        f = r["figures"]
        rows.append([r["seq"], r["plan"], f["events"], f["missed"], fmt(f["elapsed_s"], 3),
                     fmt(f["p50_us"]), fmt(f["max_us"], 0), mib(f["max_rss_mib"]),
                     f["minor_faults"], *host_load_cells(r)])
    if rows:
        out.append("The shorter plans' runs (the longest plan's are the dense runs of section 2):\n")
        out.append(md_table(["run", "plan", "events", "skipped", "elapsed (s)", "p50 (us)",
                             "max (us)", "peak RSS (MiB)", "minor faults", *HOST_LOAD_HEADER],
                            rows, text_cols=2))
        out.append("")

    # ---------------------------------------------------------- interpretation
    out.append("## Interpretation\n")
    out += interpretation(res)
    out.append("")
    notes = []
    for seq, probs in s["inconsistent_runs"].items():
        notes.append(f"run {seq}: " + "; ".join(probs))
    for label, probs in s["plan_problems"].items():
        notes.append(f"plan {label}: " + "; ".join(probs))
    if s["failed_runs"]:
        notes.append(f"runs {s['failed_runs']} exited non-zero")
    if s["runs_with_build_processes"]:
        notes.append(f"cargo/rustc processes were running at the start of runs "
                     f"{s['runs_with_build_processes']}: those figures may be disturbed")
    if s["runs_with_busy_machine"]:
        notes.append(f"the machine was busier than expected during runs "
                     f"{s['runs_with_busy_machine']} (a sleeping dispatcher uses ~0 %, a dense "
                     f"one 50 % of 2 CPUs): those figures may be disturbed")
    notes += [f"rtlab warned: {w}" for w in s["other_rtlab_warnings"]]
    if notes:
        out.append("## Notes\n")
        out += note_lines(notes)
    return "\n".join(out).rstrip("\n")


def interpretation(res):
    s = res["summary"]
    d = s["dispatch"]
    cfg = res["config"]
    lines = []
    r50 = d["ratio_of_medians_spin_over_sleep"]["p50_us"]
    w10 = (d["spin"]["within_pct"].get("10"), d["sleep"]["within_pct"].get("10"))
    if r50 is not None:
        lines.append(
            f"- **Sleep+spin vs plain sleep.** The executive fires at a median "
            f"{fmt(d['spin']['p50_us'], 3)} us after the planned instant against "
            f"{fmt(d['sleep']['p50_us'], 1)} us for plain sleeping (ratio {fmt(r50, 4)})"
            + (f"; {fmt(w10[0], 1)} % vs {fmt(w10[1], 1)} % of the events within 10 us"
               if None not in w10 else "")
            + ". The spin absorbs the wake-up latency whenever the thread wakes within the "
              "guard; what is left in the tail (p99.9, max) are wake-ups later than the guard "
              "(host stalls, which both schedulers suffer alike) and the price is the CPU "
              "spent spinning for about one guard per event.")
    for dd in s["dense"]:
        m = dd["medians"]
        thr = s["throttle_pct"]
        line = (f"- **Dense, {fmt(dd['spacing_ns'] / 1000, 1)} us apart.** "
                f"{rate(m['dispatched_per_s'])} dispatched ({rate(m['fired_per_s'])} fired) "
                f"against the plan's {rate(dd['plan_rate_per_s'])}; {fmt(m['skipped_pct'], 2)} % "
                f"skipped.")
        if thr and m["elapsed_s"] and m["elapsed_s"] > 1:
            line += f" RT throttling alone would skip about {fmt(thr, 1)} % (below)."
        if (m["fired_per_s"] or 0) >= 0.9 * dd["plan_rate_per_s"] * (1 - (thr or 0) / 100):
            line += (" Apart from the throttled gaps the dispatcher kept up with the plan, so "
                     "this rate is the plan's, not the dispatcher's ceiling.")
        line += (f" `elapsed_ns` ends {fmt(m['tail_ms'], 0)} ms after the last event: rtlab "
                 f"notices the end of a run on its status tick (100 ms), so the rate over "
                 f"`elapsed_ns` understates what the dispatcher did by tail / span.")
        lines.append(line)
    if s["throttle_pct"] and s["dense"]:
        worst = max((dd["medians"]["max_us"] or 0) for dd in s["dense"])
        try:
            env = res.get("environment", {})
            gap_ms = (int(env["sched_rt_period_us"]) - int(env["sched_rt_runtime_us"])) / 1000
        except (KeyError, TypeError, ValueError):
            gap_ms = None
        lines.append(
            f"- **Throttling, skipped events and the largest errors.** A SCHED_FIFO thread that "
            f"never sleeps meets the kernel's RT throttling "
            f"({res['environment'].get('rt_throttling', '?')}): it loses the CPU for "
            f"{fmt(s['throttle_pct'], 1)} % of every period once its budget is spent, the "
            f"events of that gap are reached more than {cfg['dense_skip_us']} us late and "
            f"skipped, so about {fmt(s['throttle_pct'], 1)} % skipped is expected from "
            f"throttling alone in a run of several seconds (a run of a second or less may or "
            f"may not meet a gap, depending on where the period's boundary falls). The events "
            f"after a gap are fired up to {cfg['dense_skip_us']} us late (p99.9). "
            f"`--skip-after` is checked before the spin: an event that passes the check just "
            f"before the CPU is taken away is fired after the gap and recorded that late (up "
            f"to one gap{', ' + fmt(gap_ms, 0) + ' ms' if gap_ms else ''}). The largest "
            f"dispatch error of the dense runs here: {fmt(worst / 1000, 1)} ms (median over "
            f"runs)"
            + (", about one throttling gap: such an event"
               if gap_ms and 0.8 * gap_ms <= worst / 1000 <= 1.5 * gap_ms else "")
            + ". Rerun the dense command with `--sysctl kernel.sched_rt_runtime_us=-1` to "
              "see the skipped share fall to what the host's own stalls cost.")
    mem = s["memory"]
    if mem["lengths"]:
        ls = mem["lengths"]
        ring = ring_bytes(mem["spacing_ns"])
        sparse_rss = med(r["figures"]["max_rss_mib"] for r in res["runs"]
                         if r["tool"] in ("spin", "sleep"))
        line = (f"- **Memory.** Peak RSS {mib(ls[0]['rss_mib_median'])} MiB for "
                f"{ls[0]['events']:,} events and {mib(ls[-1]['rss_mib_median'])} MiB for "
                f"{ls[-1]['events']:,} ({mib(ls[-1]['plan_bytes'] / 1048576)} MiB on disk): the "
                f"plan is not held in memory. Most of the RSS does not depend on the plan's "
                f"length but on its rate: rtlab's sample ring holds two seconds of events at "
                f"the plan's mean rate (at most 2 Mi samples of 24 B), "
                f"{mib(ring / 1048576)} MiB at {fmt(mem['spacing_ns'] / 1000, 1)} us spacing")
        if sparse_rss is not None:
            line += (f", against {mib(ring_bytes(cfg['dispatch_period_ms'] * 1_000_000) / 1048576)}"
                     f" MiB for section 1's plan, whose runs peak at {mib(sparse_rss)} MiB")
        line += (f". The shortest plan fits whole in the pager's {PAGER_WINDOW_MIB} MiB window; "
                 f"the longer ones keep about that window resident.")
        if len(ls) >= 2:
            a, b = ls[-2], ls[-1]
            grew = (b["rss_mib_median"] - a["rss_mib_median"]) * 1048576
            bins = max(0.0, ((b["max_us_median"] or 0) - (a["max_us_median"] or 0)) * 8)
            line += (f" From {a['events']:,} to {b['events']:,} events the peak grows by "
                     f"{fmt(grew / 1024, 0)} KiB, where a resident plan would add "
                     f"{fmt((b['plan_bytes'] - a['plan_bytes']) / 1048576, 0)} MiB; the recorder's "
                     f"exact 1 us histogram (one 8-byte bin per us up to the largest dispatch "
                     f"error) accounts for about {fmt(bins / 1024, 0)} KiB of that, the rest "
                     f"is not attributed here.")
        lines.append(line)
    disk = s["disk"]
    if disk["bytes_per_event"] is not None:
        big = [p for p in res["plans"] if p["events"] == cfg["dense_events"]]
        header = big[0]["header_len"] if big else None
        lines.append(f"- **Disk.** {fmt(disk['bytes_per_event'], 3)} bytes per event: exactly the "
                     f"24-byte record, plus a {header}-byte header with the module table once per "
                     f"file. `plan gen` streams the events: its own peak RSS does not depend on "
                     f"the count either.")
    return lines


def ring_bytes(spacing_ns):
    """rtlab's sample ring for a plan of this mean spacing (rtlab-probe's
    ring_capacity: two seconds of samples, 4096 to 2 Mi, 24 bytes each)."""
    return min(max(2_000_000_000 // max(spacing_ns, 1), 4096), 1 << 21) * 24


def render_console(res):
    s = res["summary"]
    d = s["dispatch"]
    out = console_table(["target", "measured", "met"],
                        [[a, b, c.replace("*", "")] for a, b, c in targets_rows(res)])
    out.append("")
    rows = [[f"{label} (us)", fmt(d["spin"][k]), fmt(d["sleep"][k]),
             fmt(d["ratio_of_medians_spin_over_sleep"][k])] for k, label in STAT_METRICS]
    rows += [[f"within {x} us (%)", fmt(d["spin"]["within_pct"][x], 2),
              fmt(d["sleep"]["within_pct"][x], 2), ""] for x in d["spin"]["within_pct"]]
    out += console_table(["dispatch error", "sleep+spin", "plain sleep", "ratio"], rows)
    if not s["all_runs_consistent"]:
        out.append("")
        out.append(f"inconsistent: {s['inconsistent_runs']} {s['plan_problems']}")
    return "\n".join(out)


def main(argv=None):
    return run_cli("plan_compare", __doc__, argv,
                   columns=MANIFEST_COLUMNS, file_columns=FILE_COLUMNS,
                   analyse=analyse, render_md=render_md, render_console=render_console)


if __name__ == "__main__":
    sys.exit(main())
