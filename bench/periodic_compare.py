#!/usr/bin/env python3
"""Compare rt-app with `rtlab exec periodic` (executive and SCHED_FIFO
modes) on the same periodic task set, run by run (python3 stdlib only).

Called by bench/periodic-vs-rt-app.sh with a manifest (runs.tsv) that lists,
for every run, the tool (rt-app, rtlab-executive, rtlab-fifo), the task
count, its result (rt-app: its log directory; rtlab: its JSON), its data
(rt-app: the JSON task set it ran; rtlab: its --samples CSV), its log
(stdout+stderr) and its exact command.

  rt-app  one log per thread (rt-app-<task>-<index>.log), one row per loop
          of [timer, runtime]: `wu_lat` = CLOCK_MONOTONIC read right after
          clock_nanosleep(TIMER_ABSTIME) returned minus the timer's instant,
          `slack` = the instant minus the time the thread reached its timer,
          both rounded to the nearest us (lround), `run` = the work's wall
          time (us), `c_period` = the timer's period (0 in a last row cut by
          the end of the run, which holds no activation). A thread that
          reaches its timer after the instant does not sleep: wu_lat = 0 and
          slack < 0 (its real lateness is -slack); the absolute grid goes on,
          nothing is skipped or counted.
  rtlab   its JSON (rtlab.run/1, probe "periodic"): per task a
          `taskN.lateness` series (samples, missed, percentiles) and a
          `taskN.response` series (missed = deadline misses); its --samples
          CSV: every activation's lateness and response in ns.

Every figure compared is computed here with one rule for all three: per
activation, the lateness in whole us (rt-app: wu_lat as it logs it; rtlab:
its ns rounded to the nearest us the way rt-app rounds), pooled over the
tasks of a run; percentiles by nearest rank; `within X us` = lateness <= X
us over all activations (rtlab's missed ones count as outside). rtlab's
exact ns figures are given beside them.

Writes a Markdown report (and optionally a JSON file) and prints the summary.
It can also be run on its own over the files a previous run kept:
    python3 bench/periodic_compare.py --manifest DIR/runs.tsv --meta DIR/meta.json \\
        --md out.md [--json out.json]
"""

import bisect
import csv
import json
import os
import re
import statistics
import sys

from benchlib import (
    HOST_LOAD_HEADER, HOST_LOAD_LEGEND, RUN_COLUMNS, BenchError, command_lines, console_table,
    disturbance_notes, disturbed_runs, fmt, host_load_cells, host_rows, load_json, md_table,
    med, note_lines, ratio, read_text, results_document, run_cli, run_record,
)

SCHEMA = "rtlab.bench.periodic-vs-rt-app/1"
TOOLS = ("rt-app", "rtlab-executive", "rtlab-fifo")
RTLAB_TOOLS = ("rtlab-executive", "rtlab-fifo")
LABEL = {"rt-app": "rt-app", "rtlab-executive": "rtlab executive", "rtlab-fifo": "rtlab SCHED_FIFO"}
WITHIN_US = (10, 50, 100, 500, 1000)
PERCENTILES = (("p50", 0.50), ("p99", 0.99), ("p99_9", 0.999))
STAT_KEYS = ("p50", "p99", "p99_9", "max", "mean")
STAT_LABEL = {"p50": "p50", "p99": "p99", "p99_9": "p99.9", "max": "max", "mean": "mean"}
BUSY_PCT_WARN = 60.0  # whole-machine busy % above which a run is flagged
FILE_COLUMNS = ("result", "data", "log")  # relative to the manifest
# Other real-time programs seen just before and during the run (bench/lib.sh:
# rt_competitors, start_rt_monitor; "-" for none) and the measured CPU's busy %.
OTHER_COLUMNS = ("rt_others_before", "rt_others_during", "cpu_busy_pct_measured")
MANIFEST_COLUMNS = ("pair", "seq", "tool", "tasks") + FILE_COLUMNS + OTHER_COLUMNS + RUN_COLUMNS
OWN_COLUMNS = ("pair", "seq", "tool", "tasks") + OTHER_COLUMNS
RTAPP_COLUMNS = ("idx", "perf", "run", "period", "start", "end", "rel_st", "slack", "c_duration",
                 "c_period", "wu_lat")


# --------------------------------------------------------------------------
# Figures (one rule for every tool)
# --------------------------------------------------------------------------

def nearest_rank(sorted_values, p):
    """The value at rank ceil(p x n) (1-based) of the sorted values."""
    if not sorted_values:
        return None
    n = len(sorted_values)
    rank = max(1, -(-int(round(p * n * 1000)) // 1000))  # ceil without float noise
    return sorted_values[min(rank, n) - 1]


def round_us(ns):
    """ns to whole us, rounded to nearest, halves away from zero (rt-app's
    lround(ns / 1000.0))."""
    return (ns + 500) // 1000 if ns >= 0 else -((-ns + 500) // 1000)


def lateness_figures(values, activations, missed):
    """p50/p99/p99.9/max/mean and the % within each of WITHIN_US of a run's
    lateness values (whole us), over `activations` (missed ones count as
    outside)."""
    v = sorted(values)
    f = {"samples": len(v), "activations": activations, "missed": missed}
    for key, p in PERCENTILES:
        f[key] = nearest_rank(v, p)
    f["max"] = v[-1] if v else None
    f["min"] = v[0] if v else None
    f["mean"] = statistics.fmean(v) if v else None
    f["within_percent"] = {str(x): (100.0 * bisect.bisect_right(v, x) / activations
                                    if activations else None) for x in WITHIN_US}
    return f


def exact_figures_us(ns_values):
    """Exact figures from ns values, in us (rtlab only)."""
    v = sorted(ns_values)
    if not v:
        return {k: None for k in STAT_KEYS}
    out = {key: nearest_rank(v, p) / 1000.0 for key, p in PERCENTILES}
    out["max"] = v[-1] / 1000.0
    out["mean"] = statistics.fmean(v) / 1000.0
    return out


# --------------------------------------------------------------------------
# rt-app
# --------------------------------------------------------------------------

POLICY_LINE = re.compile(r"^#\s*Policy\s*:\s*(?P<policy>\S+)\s+priority\s*:\s*(?P<prio>-?\d+)", re.M)


def parse_rtapp_log(path):
    """The rows of one thread's log as dicts of ints, and its policy line."""
    text = read_text(path)
    m = POLICY_LINE.search(text)
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split()
        if len(fields) != len(RTAPP_COLUMNS):
            raise BenchError(f"{path}:{lineno}: {len(fields)} columns, expected "
                             f"{len(RTAPP_COLUMNS)} ({' '.join(RTAPP_COLUMNS)})")
        try:
            rows.append(dict(zip(RTAPP_COLUMNS, (int(x) for x in fields))))
        except ValueError as e:
            raise BenchError(f"{path}:{lineno}: not an integer: {e}") from e
    return rows, (m["policy"], int(m["prio"])) if m else (None, None)


def rtapp_figures(logdir, config_path, cfg, tasks):
    conf = load_json(config_path)
    names = list((conf.get("tasks") or {}).keys())
    if len(names) != tasks:
        raise BenchError(f"{config_path}: {len(names)} tasks, expected {tasks}")
    period_us = cfg["period_us"]
    problems = []
    reported, corrected, work = [], [], []
    rows_total = no_timer = late_at_timer = late_by_period = 0
    max_overrun = 0
    per_task_rows = []
    grids = []  # per task: (anchor = its first instant, its delay, rows), us
    for index, name in enumerate(names):
        path = os.path.join(logdir, f"rt-app-{name}-{index}.log")
        if not os.path.exists(path):
            raise BenchError(f"{path}: missing (rt-app writes one log per thread)")
        rows, (policy, prio) = parse_rtapp_log(path)
        if policy != "SCHED_FIFO" or prio != cfg["task_priority"]:
            problems.append(f"{name}: log says policy {policy} priority {prio}")
        n = 0
        offsets = []
        for r in rows:
            if r["c_period"] == 0:
                no_timer += 1  # the run ended before this loop's timer
                continue
            if r["c_period"] != period_us:
                problems.append(f"{name}: a row with c_period {r['c_period']} us")
            reported.append(r["wu_lat"])
            if r["slack"] < 0:
                # Reached its timer after the instant: no sleep, wu_lat 0,
                # late by -slack (the previous activation overran its period).
                late_at_timer += 1
                lateness = -r["slack"]
                max_overrun = max(max_overrun, lateness)
                if r["wu_lat"] != 0:
                    problems.append(f"{name}: slack {r['slack']} with wu_lat {r['wu_lat']}")
            else:
                lateness = r["wu_lat"]
            corrected.append(lateness)
            # This row's instant: start of its work (end - run) - its lateness;
            # row k of the absolute grid is instant k (anchor + k x period).
            offsets.append(r["end"] - r["run"] - lateness - n * period_us)
            n += 1
            if lateness >= period_us:
                late_by_period += 1
            if r["c_duration"] > 0:
                work.append(r["run"])
        rows_total += n
        per_task_rows.append(n)
        if n:
            grids.append((statistics.median(offsets), int(conf["tasks"][name].get("delay", 0)), n))
    # Activations of the grid rt-app never ran: every task's instants up to
    # the last instant any task reached (the run's end: the threads run
    # until the first instant after rt-app's stop), minus its rows. A
    # thread stalled or catching up when the run ended leaves them unrun,
    # and rt-app says nothing about them.
    # rt-app stops at t_zero + "duration" at the earliest (t_zero = the
    # grid's origin = a task's first instant - its delay - one period; its
    # main thread starts that sleep a little after), and its threads run
    # until their first instant after the stop: a thread whose last row is
    # earlier was stalled or catching up. Counted up to one period before
    # that earliest stop, so that a late start of the main thread's sleep
    # cannot add unrun activations that were not due.
    not_run = 0
    if grids:
        duration_us = int((conf.get("global") or {}).get("duration", 0)) * 1_000_000
        t_zero = min(anchor - delay - period_us for anchor, delay, _ in grids)
        t_end = max(max(anchor + (n - 1) * period_us for anchor, _, n in grids),
                    t_zero + duration_us - period_us)
        for anchor, _, n in grids:
            not_run += max(0, int((t_end - anchor + 5) // period_us) + 1 - n)
    f = lateness_figures(reported, rows_total + not_run, not_run)
    corr = lateness_figures(corrected, rows_total + not_run, not_run)
    f.update({
        "planned": cfg["activations_per_task"] * tasks,
        "rows": rows_total,
        "not_run": not_run,
        "rows_per_task_min": min(per_task_rows),
        "rows_per_task_max": max(per_task_rows),
        "rows_without_timer": no_timer,
        "late_at_timer": late_at_timer,
        "late_by_a_period": late_by_period,
        "max_overrun_us": max_overrun,
        "corrected": {k: corr[k] for k in (*STAT_KEYS, "within_percent")},
        "deadline_misses": late_at_timer,  # the previous activation ended after this instant
        "work_p50_us": statistics.median(work) if work else None,
        "work_max_us": max(work) if work else None,
        "exact": None,
        "status": None,
        "warnings": [],
        "problems": problems,
    })
    return f


# --------------------------------------------------------------------------
# rtlab
# --------------------------------------------------------------------------

def rtlab_figures(json_path, csv_path, cfg, tasks, mode):
    doc = load_json(json_path)
    if doc.get("schema") != "rtlab.run/1":
        raise BenchError(f"{json_path}: schema {doc.get('schema')!r}, expected 'rtlab.run/1'")
    if doc.get("probe") != "periodic":
        raise BenchError(f"{json_path}: probe {doc.get('probe')!r}, expected 'periodic'")
    c = doc.get("config") or {}
    problems = []
    expect = {"mode": mode, "tasks": tasks, "period_ns": cfg["period_us"] * 1000,
              "work_ns": cfg["work_us"] * 1000, "cpu": cfg["cpu"],
              "task_priority": cfg["task_priority"], "phasing": "staggered"}
    if mode == "executive":
        expect["executive_priority"] = cfg["executive_priority"]
    for key, want in expect.items():
        if c.get(key) != want:
            problems.append(f"config.{key} = {c.get(key)!r}, expected {want!r}")
    if doc.get("status") != "complete":
        problems.append(f"status {doc.get('status')}")
    lat = [s for s in doc.get("series") or [] if s.get("metric") == "activation_lateness"]
    resp = [s for s in doc.get("series") or [] if s.get("metric") == "response_time"]
    if len(lat) != tasks or len(resp) != tasks:
        raise BenchError(f"{json_path}: {len(lat)} lateness and {len(resp)} response series, "
                         f"expected {tasks} of each")
    for s in lat + resp:
        actual = (s.get("thread") or {}).get("actual") or {}
        if (actual.get("policy"), actual.get("priority")) != ("fifo", cfg["task_priority"]):
            problems.append(f"{s['name']}: thread ran {actual.get('policy')} "
                            f"{actual.get('priority')}")
            break
    samples = sum(s["samples"] for s in lat)
    missed = sum(s["missed"] for s in lat)
    dropped = sum(s.get("dropped", 0) for s in lat + resp)
    if dropped:
        problems.append(f"{dropped} samples dropped")
    planned = cfg["activations_per_task"] * tasks
    if c.get("activations") is not None and c["activations"] != cfg["activations_per_task"]:
        problems.append(f"config.activations = {c['activations']}, expected "
                        f"{cfg['activations_per_task']}")
    if samples + missed != planned:
        problems.append(f"samples + missed = {samples + missed}, planned {planned}")

    lateness_ns, response_ns = {}, {}
    try:
        with open(csv_path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                series = row["series"]
                key = (series.rsplit(".", 1)[0], int(row["t_ns"]))
                if series.endswith(".lateness"):
                    lateness_ns[key] = int(row["latency_ns"])
                elif series.endswith(".response"):
                    response_ns[key] = int(row["latency_ns"])
    except (OSError, KeyError, ValueError) as e:
        raise BenchError(f"cannot read samples {csv_path}: {e}") from e
    if len(lateness_ns) != samples:
        problems.append(f"the samples CSV holds {len(lateness_ns)} lateness rows, the JSON "
                        f"{samples} samples")
    ns = list(lateness_ns.values())
    json_max = max((s.get("max_ns") or 0) for s in lat)
    if ns and max(ns) != json_max:
        problems.append(f"CSV max {max(ns)} ns != JSON max {json_max} ns")
    work_ns = sorted(response_ns[k] - v for k, v in lateness_ns.items() if k in response_ns)
    f = lateness_figures([round_us(x) for x in ns], samples + missed, missed)
    f.update({
        "planned": planned,
        "deadline_misses": sum(s["missed"] for s in resp),
        "late_by_a_period": None,
        "exact": exact_figures_us(ns),
        "work_p50_us": statistics.median(work_ns) / 1000.0 if work_ns else None,
        "work_max_us": work_ns[-1] / 1000.0 if work_ns else None,
        "status": doc.get("status"),
        "elapsed_s": (doc.get("elapsed_ns") or 0) / 1e9,
        "dma_latency_us": (doc.get("effective") or {}).get("dma_latency_us"),
        "guard_ns": c.get("guard_ns") if mode == "executive" else None,
        "release_early_ns": c.get("release_early_ns") if mode == "executive" else None,
        "warnings": doc.get("warnings") or [],
        "problems": problems,
    })
    return f


# --------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------

def analyse(runs, meta):
    cfg = meta["config"]
    out_runs = []
    for run in runs:
        run["tasks"] = int(run["tasks"])
        for key in ("rt_others_before", "rt_others_during"):
            run[key] = "" if run[key] == "-" else run[key]
        run["cpu_busy_pct_measured"] = float(run["cpu_busy_pct_measured"])
        rec = run_record(run, OWN_COLUMNS)
        if run["tool"] == "rt-app":
            f = rtapp_figures(run["result"], run["data"], cfg, run["tasks"])
        elif run["tool"] in RTLAB_TOOLS:
            f = rtlab_figures(run["result"], run["data"], cfg, run["tasks"],
                              run["tool"].split("-", 1)[1])
        else:
            raise BenchError(f"unknown tool {run['tool']!r} in the manifest")
        rec["figures"] = f
        rec["consistent"] = not f["problems"]
        rec["problems"] = f["problems"]
        out_runs.append(rec)

    task_counts = sorted({r["tasks"] for r in out_runs})
    groups = {(n, t): [r for r in out_runs if r["tasks"] == n and r["tool"] == t]
              for n in task_counts for t in TOOLS}
    medians = {}
    for (n, t), rs in groups.items():
        figs = [r["figures"] for r in rs]
        m = {k: med(f[k] for f in figs) for k in (*STAT_KEYS, "activations", "samples")}
        m["missed"] = med(f["missed"] for f in figs)
        m["within_percent"] = {x: med(f["within_percent"][x] for f in figs)
                               for x in map(str, WITHIN_US)}
        m["deadline_misses"] = med(f["deadline_misses"] for f in figs)
        m["work_p50_us"] = med(f["work_p50_us"] for f in figs)
        m["work_max_us"] = med(f["work_max_us"] for f in figs)
        if t == "rt-app":
            m["late_at_timer"] = med(f["late_at_timer"] for f in figs)
            m["late_by_a_period"] = med(f["late_by_a_period"] for f in figs)
            m["max_overrun_us"] = med(f["max_overrun_us"] for f in figs)
            m["corrected"] = {k: med(f["corrected"][k] for f in figs) for k in STAT_KEYS}
        else:
            m["exact"] = {k: med(f["exact"][k] for f in figs) for k in STAT_KEYS}
        m["runs"] = len(rs)
        medians[f"{n}/{t}"] = m

    # Ratios rtlab / rt-app: of the medians, and per round.
    ratios = {}
    rounds = []
    for n in task_counts:
        for t in RTLAB_TOOLS:
            a, b = medians[f"{n}/{t}"], medians[f"{n}/rt-app"]
            per_round = {}
            for p in sorted({r["pair"] for r in groups[(n, t)]}):
                ra = [r for r in groups[(n, t)] if r["pair"] == p]
                rb = [r for r in groups[(n, "rt-app")] if r["pair"] == p]
                if len(ra) == 1 and len(rb) == 1:
                    per_round[p] = {k: ratio(ra[0]["figures"][k], rb[0]["figures"][k])
                                    for k in STAT_KEYS}
                    rounds.append({"tasks": n, "round": p, "rtlab": t, "rtlab_seq": ra[0]["seq"],
                                   "rt_app_seq": rb[0]["seq"], "ratios": per_round[p]})
            ratios[f"{n}/{t}"] = {
                "ratio_of_medians": {k: ratio(a[k], b[k]) for k in STAT_KEYS},
                "median_ratio": {k: med(v[k] for v in per_round.values()) for k in STAT_KEYS},
                "per_round": {str(p): v for p, v in per_round.items()},
            }
    summary = {
        "task_counts": task_counts,
        "median_per_config": medians,
        "ratios_rtlab_over_rt_app": ratios,
        "all_runs_consistent": all(r["consistent"] for r in out_runs),
        "inconsistent_runs": {r["seq"]: r["problems"] for r in out_runs if not r["consistent"]},
        **disturbed_runs(out_runs, BUSY_PCT_WARN),
        "runs_with_other_rt_programs": {
            r["seq"]: sorted({w for k in ("rt_others_before", "rt_others_during")
                              for w in r[k].split()})
            for r in out_runs if r["rt_others_before"] or r["rt_others_during"]},
        "rtlab_warnings": sorted({w for r in out_runs if r["tool"] != "rt-app"
                                  for w in r["figures"]["warnings"]}),
    }
    method = {
        "lateness": "per activation, whole us: rt-app wu_lat (its lround of ns/1000); rtlab "
                    "--samples lateness ns rounded the same way; pooled over a run's tasks",
        "percentiles": "nearest rank (rank ceil(p x n)); mean of the whole-us values",
        "within": "% of activations (rtlab: samples + missed) with lateness <= X us",
        "rt-app corrected": "wu_lat, or -slack where the thread reached its timer late (no "
                            "sleep, wu_lat 0)",
        "ratios": "rtlab / rt-app, per task count: ratio of the medians over rounds, and median "
                  "of the per-round ratios",
    }
    return results_document(SCHEMA, meta, method, out_runs, rounds, summary)


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def fus(v, digits=0):
    """A us figure: whole us by default (the common rule)."""
    if v is None:
        return "-"
    if digits == 0 and float(v).is_integer():
        return str(int(v))
    return f"{v:.{digits if digits else 1}f}"


def fpct(v):
    return "-" if v is None else f"{v:.2f}"


def summary_rows(res):
    s = res["summary"]
    rows = []
    for n in s["task_counts"]:
        for t in TOOLS:
            m = s["median_per_config"][f"{n}/{t}"]
            rows.append([n, LABEL[t], fus(m["activations"]), fus(m["missed"]),
                         *(fus(m[k], 1 if k == "mean" else 0) for k in STAT_KEYS),
                         *(fpct(m["within_percent"][str(x)]) for x in WITHIN_US)])
    header = ["tasks", "tool", "activations", "missed", "p50", "p99", "p99.9", "max", "mean",
              *(f"<= {x} us %" for x in WITHIN_US)]
    return header, rows


def ratio_rows(res):
    s = res["summary"]
    rows = []
    for n in s["task_counts"]:
        for t in RTLAB_TOOLS:
            r = s["ratios_rtlab_over_rt_app"][f"{n}/{t}"]
            per = ", ".join(fmt(v["p50"], 2) for v in r["per_round"].values())
            rows.append([n, LABEL[t], *(fmt(r["ratio_of_medians"][k], 2) for k in STAT_KEYS),
                         fmt(r["median_ratio"]["p50"], 2), per or "-"])
    header = ["tasks", "rtlab", *(f"{STAT_LABEL[k]} ratio" for k in STAT_KEYS),
              "p50 median ratio", "p50 per-round ratios"]
    return header, rows


def spread(values, digits=0):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    if lo == hi:
        return fus(lo, digits)
    return f"{fus(lo, digits)}-{fus(hi, digits)}"


def tasks_label(n):
    return f"{n} task" if n == 1 else f"{n} tasks"


def per_round(res, n, tool, key):
    """The figure `key` of every run of `tool` with `n` tasks, in round order."""
    return [r["figures"][key] for r in sorted(res["runs"], key=lambda r: r["pair"])
            if r["tasks"] == n and r["tool"] == tool]


def interpretation(res):
    s = res["summary"]
    cfg = res["config"]
    ns = s["task_counts"]
    m = s["median_per_config"]
    r = s["ratios_rtlab_over_rt_app"]
    get = lambda t, k: [m[f"{n}/{t}"][k] for n in ns]
    w = lambda t, x: [m[f"{n}/{t}"]["within_percent"][str(x)] for n in ns]
    guard_us, release_us = executive_margins(res)
    out = []

    parts, apart = [], []
    for n in ns:
        ra = r[f"{n}/rtlab-fifo"]
        a_p50 = [v for v in per_round(res, n, "rt-app", "p50") if v is not None]
        b_p50 = [v for v in per_round(res, n, "rtlab-fifo", "p50") if v is not None]
        parts.append(
            f"{tasks_label(n)}: rt-app {fus(m[f'{n}/rt-app']['p50'])} us, rtlab "
            f"{fus(m[f'{n}/rtlab-fifo']['p50'])} us (ratio {fmt(ra['ratio_of_medians']['p50'], 2)}; "
            f"per round {', '.join(fmt(v['p50'], 2) for v in ra['per_round'].values())}; "
            f"the rounds' p50 rt-app {spread(a_p50)}, rtlab {spread(b_p50)} us)")
        if a_p50 and b_p50 and (max(b_p50) < min(a_p50) or max(a_p50) < min(b_p50)):
            apart.append((n, "lower" if max(b_p50) < min(a_p50) else "higher"))
    p99 = "; ".join(f"{tasks_label(n)} {fus(m[f'{n}/rt-app']['p99'])} / "
                    f"{fus(m[f'{n}/rtlab-fifo']['p99'])} us" for n in ns)
    together = [n for n in ns if n not in {x for x, _ in apart}]
    verdict = []
    if together:
        verdict.append(
            f"With {' and '.join(tasks_label(n) for n in together)} the rounds' p50 ranges of "
            f"the two tools overlap: they agree within the run-to-run variation (and rt-app's "
            f"1 us rounding).")
    for n, way in apart:
        verdict.append(
            f"With {tasks_label(n)} rtlab's p50 was {way} than rt-app's in every round, by "
            f"more than the spread of either tool's rounds. The measurement is the same "
            f"(a CLOCK_MONOTONIC read when `clock_nanosleep` returns); what differs is the "
            f"rest of each program and the moment each ran, and a wake-up from a long idle "
            f"on this VM swings widely between runs a minute apart, so more rounds, or "
            f"DMA_LATENCY=1, would show whether it holds.")
    out.append(
        f"- **Like for like: rt-app vs rtlab's SCHED_FIFO mode.** Both are self-timed "
        f"SCHED_FIFO {cfg['task_priority']} threads sleeping with an absolute "
        f"`clock_nanosleep` to each activation and stamping CLOCK_MONOTONIC when it returns, so "
        f"they measure the same wake-up path. p50: " + "; ".join(parts) + f". p99 rt-app / "
        f"rtlab: {p99}. Within 10 us: rt-app {spread(w('rt-app', 10), 2)} %, rtlab "
        f"{spread(w('rtlab-fifo', 10), 2)} %: no self-timed wake-up on this machine is that "
        f"fast. " + " ".join(verdict))

    gaps = ", ".join(f"{fus(cfg['period_us'] / n - cfg['work_us'], 0)} us with {tasks_label(n)}"
                     for n in ns)
    out.append(
        f"- **Idle.** The self-timed wake-up gets faster as tasks are added (rt-app p50 "
        f"{' -> '.join(fus(v) for v in get('rt-app', 'p50'))} us, rtlab SCHED_FIFO "
        f"{' -> '.join(fus(v) for v in get('rtlab-fifo', 'p50'))} us for {', '.join(map(str, ns))} "
        f"tasks): the CPU's idle time between two activations shrinks ({gaps}), and "
        f"a CPU that idled longer wakes from a deeper state "
        f"({res.get('environment', {}).get('cpuidle', '?')}; on a VM a halted vCPU is woken "
        f"through the host). " + (
            "Both tools run here with /dev/cpu_dma_latency held at 0, which keeps the CPU "
            "polling." if cfg["dma_latency"] else
            "Neither tool holds /dev/cpu_dma_latency here (rtlab would by default); "
            "DMA_LATENCY=1 runs both with it held at 0."))

    ex10 = w("rtlab-executive", 10)
    lines = [f"{fpct(x)} % with {tasks_label(n)}" for n, x in zip(ns, ex10)]
    out.append(
        f"- **rtlab's executive** starts the work {spread(get('rtlab-executive', 'p50'))} us "
        f"after the activation at p50 (exact: "
        f"{spread([m[f'{n}/rtlab-executive']['exact']['p50'] for n in ns], 3)} us) and "
        f"{spread(get('rtlab-executive', 'p99'))} us at p99; within 10 us: "
        f"{', '.join(lines)}, against {spread(w('rt-app', 10), 2)} % for "
        f"rt-app. It does not wake faster: it sleeps to {guard_us} us (`--guard`) before each "
        f"activation and spins, and releases the task {release_us} us (`--release-early`) "
        f"early, so that the task's own wake-up happens before the instant and is not in the "
        f"figure. Its lateness shows when its own wake-up is later than the guard, or the CPU "
        f"is taken from it: where the self-timed wake-up p50 comes close to the {guard_us} us "
        f"guard (rt-app {spread(get('rt-app', 'p50'))}, rtlab SCHED_FIFO "
        f"{spread(get('rtlab-fifo', 'p50'))} us), a large share of the executive's own "
        f"wake-ups miss it, which is what the lowest within-10-us figure above shows. A larger "
        f"`--guard`, or rtlab's default of holding /dev/cpu_dma_latency at 0"
        f"{' (on here)' if cfg['dma_latency'] else ' (off here, to match rt-app)'}, keeps it "
        f"punctual.")

    tails = "; ".join(
        f"{tasks_label(n)}: " + ", ".join(f"{LABEL[t]} {fus(m[f'{n}/{t}']['p99_9'])} / "
                             f"{fus(m[f'{n}/{t}']['max'])}" for t in TOOLS) for n in ns)
    big = {t: sum(1 for x in res["runs"] if x["tool"] == t and (x["figures"]["max"] or 0) >=
                  1000) for t in TOOLS}
    runs_per_tool = {t: sum(1 for x in res["runs"] if x["tool"] == t) for t in TOOLS}
    out.append(
        f"- **Tails** (median p99.9 / max, us): {tails}. Runs with a lateness of 1 ms or more: "
        + ", ".join(f"{LABEL[t]} {big[t]} of {runs_per_tool[t]}" for t in TOOLS) +
        ". Millisecond lateness on this kind of machine comes in isolated events (the host "
        "taking the vCPU, interrupts, other work) that hit whichever tool is running at the "
        "time, and a single one sets the max (and with few activations the p99.9) of its run: "
        "compare the per-run tables before reading a tail ratio as a property of a tool.")

    late = [m[f"{n}/rt-app"]["late_at_timer"] for n in ns]
    per = [m[f"{n}/rt-app"]["late_by_a_period"] for n in ns]
    missed = {t: get(t, "missed") for t in TOOLS}
    total = lambda t, k: sum((x["figures"][k] or 0) for x in res["runs"] if x["tool"] == t)
    out.append(
        f"- **Missed activations.** rt-app counts none: it has no such counter. A thread that "
        f"reaches its timer after the instant (its previous activation ended late) does not "
        f"sleep, logs `wu_lat` 0 and a negative `slack`, and runs at once; with the absolute "
        f"grid used here it then runs the activations it owes back to back, and those it has "
        f"not caught up with when the run ends are simply not in its logs. Over all rt-app "
        f"runs, {total('rt-app', 'late_at_timer')} activation(s) reached their timer late "
        f"(median per run {spread(late)}; their true lateness, -slack, is in the `corrected` "
        f"figures), {total('rt-app', 'late_by_a_period')} were run a period or more late "
        f"(median {spread(per)}) and {total('rt-app', 'missed')} were never run (derived from "
        f"the logs). rtlab counted {total('rtlab-executive', 'missed')} (executive) and "
        f"{total('rtlab-fifo', 'missed')} (SCHED_FIFO) missed activations over all its runs "
        f"(median per run {spread(missed['rtlab-executive'])} and "
        f"{spread(missed['rtlab-fifo'])}); it runs no activation a period or more late.")
    wk = {t: get(t, "work_p50_us") for t in TOOLS}
    out.append(
        f"- **Work.** Asked for {cfg['work_us']} us per activation, rt-app's `runtime` ran "
        f"{spread(wk['rt-app'])} us (median of its `run` column; it spins in chunks of 32 us "
        f"until the time is reached), rtlab {spread(wk['rtlab-fifo'], 1)} us (response - "
        f"lateness)." + (
            f" With {max(ns)} tasks rt-app's longer work keeps the CPU busier, which can only "
            f"make its later tasks later." if med(wk["rt-app"]) and med(wk["rtlab-fifo"]) and
            med(wk["rt-app"]) > 1.02 * med(wk["rtlab-fifo"]) else ""))
    return out


def executive_margins(res):
    """The executive's --guard and --release-early in us, as its runs'
    configs say ("?" without an executive run)."""
    for r in res["runs"]:
        f = r["figures"]
        if r["tool"] == "rtlab-executive" and f.get("guard_ns") is not None:
            return fus(f["guard_ns"] / 1000), fus(f["release_early_ns"] / 1000)
    return "?", "?"


def render_md(res):
    cfg = res["config"]
    s = res["summary"]
    m = s["median_per_config"]
    env = res.get("environment", {})
    guard_us, release_us = executive_margins(res)
    out = ["# rt-app vs rtlab exec periodic (executive and SCHED_FIFO)\n"]
    out.append(f"Generated by `bench/periodic-vs-rt-app.sh` on {res['date']}.\n")
    tasks = ", ".join(map(str, cfg["tasks"]))
    out.append(md_table(["", ""], host_rows(res, [("clocksource", "clocksource"),
                                                  ("cpuidle", "cpuidle"),
                                                  ("RT bandwidth", "rt_bandwidth")]) + [
        ["rtlab", res["versions"]["rtlab"]],
        ["rt-app", res["versions"]["rt-app"]],
        ["setup", f"{cfg['pairs']} round(s) per task count ({tasks}), each rt-app then rtlab "
                  f"executive then rtlab SCHED_FIFO; every task activated every "
                  f"{cfg['period_us']} us with {cfg['work_us']} us of work, task i offset by "
                  f"i x period / tasks, {cfg['duration_s']} s per run "
                  f"({cfg['activations_per_task']} activations per task planned); every task "
                  f"(and rtlab's executive) on CPU {cfg['cpu']}, tasks SCHED_FIFO "
                  f"{cfg['task_priority']}, executive SCHED_FIFO {cfg['executive_priority']}; "
                  f"/dev/cpu_dma_latency {'held at 0 by both' if cfg['dma_latency'] else 'held by neither'}; "
                  f"{cfg['settle_s']} s pause before each run"],
        ["rt-app settings", f"timer mode {cfg['rtapp_timer_mode']}, `lock_pages`, log in a "
                            f"{cfg['rtapp_log_size_mb']} MB buffer per thread, calibration "
                            f"{cfg['rtapp_calibration_ns_per_loop']} ns per loop "
                            f"({cfg['rtapp_calibration_source']}), grid started "
                            f"{cfg['rtapp_start_s']} s after the threads"],
    ], numeric=False))
    out.append("")
    c = res["commands"]
    out += command_lines([c["rt-app"], c["rtlab-executive"], c["rtlab-fifo"]],
                         extra_legend="; `T` = the task count")
    first = cfg["tasks"][0]
    out.append(f"rt-app's task set for {tasks_label(first)} (`$TMP/runN-rt-app.json`; one "
               f"`taskI` object per task):\n")
    out += ["```json", cfg.get("rtapp_config_example", "").rstrip(), "```\n"]

    out.append("## Summary\n")
    out.append(
        "Wake-up lateness of every activation of every task, pooled per run, whole us, median "
        f"over the {cfg['pairs']} round(s). One rule for all three: rt-app's `wu_lat` as it "
        "logs it (rounded to the nearest us); rtlab's per-activation ns (`--samples`) rounded "
        "the same way; pN = nearest rank; `<= X us %` = share of all activations late by at "
        "most X us (paper 002's Table 4.1 columns; rtlab's missed activations count as "
        "outside). `activations` = rt-app's log rows + `missed`, or rtlab's samples + "
        "`missed`. `missed` = activations that were never run: rtlab counts them (a task still "
        "working, or woken a period or more late); rt-app counts none, so for rt-app it is "
        "derived here from its logs (the instants of each task's grid up to the last one any "
        "task reached, minus the task's rows).\n")
    header, rows = summary_rows(res)
    out.append(md_table(header, rows, text_cols=2))
    out.append("")
    out.append(
        "Ratios rtlab / rt-app (below 1: rtlab's tasks started their work earlier after their "
        "instant). `ratio` = ratio of the medians above; `p50 median ratio` = median over "
        "rounds of the per-round ratio. A whole-us 0 makes a ratio 0.\n")
    header, rows = ratio_rows(res)
    out.append(md_table(header, rows, text_cols=2))
    out.append("")
    out.append(
        "rtlab's exact figures (ns samples, shown in us) and the work and deadlines of every "
        "tool, medians over rounds. rt-app `corrected` = its lateness with the activations it "
        "reached late counted as -slack instead of its `wu_lat` 0; `late at timer` = "
        "activations whose thread reached its timer after the instant (= the previous "
        "activation ran past it: a deadline miss); `deadline misses` for rtlab = responses "
        "later than the next activation.\n")
    rows = []
    for n in s["task_counts"]:
        for t in TOOLS:
            mm = m[f"{n}/{t}"]
            exact = mm["corrected"] if t == "rt-app" else mm["exact"]
            digits = 0 if t == "rt-app" else 3
            rows.append([n, LABEL[t] + (" corrected" if t == "rt-app" else " (ns)"),
                         *(fus(exact[k], digits if k != "mean" or digits else 1)
                           for k in STAT_KEYS),
                         fus(mm["work_p50_us"], 0 if t == "rt-app" else 1),
                         fus(mm["work_max_us"], 0 if t == "rt-app" else 1),
                         fus(mm["deadline_misses"]),
                         fus(mm.get("late_at_timer")) if t == "rt-app" else "-",
                         fus(mm.get("max_overrun_us")) if t == "rt-app" else "-"])
    out.append(md_table(["tasks", "figures", "p50", "p99", "p99.9", "max", "mean",
                         "work p50 (us)", "work max (us)", "deadline misses", "late at timer",
                         "max -slack (us)"], rows, text_cols=2))
    out.append("")
    notes = []
    for seq, probs in s["inconsistent_runs"].items():
        notes.append(f"run {seq}: " + "; ".join(probs))
    notes += disturbance_notes(s, BUSY_PCT_WARN, busy_why="the task sets themselves keep "
                               "at most one CPU partly busy")
    if s["runs_with_other_rt_programs"]:
        notes.append("other real-time programs (SCHED_FIFO/RR user threads, `PID:NAME:policy "
                     "priorities`) were running at the start of, or were seen during, runs " + "; ".join(
                         f"{seq} ({', '.join(w)})"
                         for seq, w in s["runs_with_other_rt_programs"].items()) +
                     ": one on CPU " + str(cfg["cpu"]) + " at a higher priority stops the tasks "
                     "for as long as it runs, so those runs' tails (and more) may be its doing")
    notes += [f"rtlab warned: {w}" for w in s["rtlab_warnings"]]
    out += note_lines(notes)

    out.append("## Interpretation\n")
    out += interpretation(res)
    out.append("")

    out.append("## What is compared, and the settings chosen\n")
    out.append(
        f"- **Same task set.** For each task count, every task is activated every "
        f"{cfg['period_us']} us and spins {cfg['work_us']} us of wall-clock work per "
        f"activation; task i is offset by i x period / tasks (rtlab's default staggering, in "
        f"ns; rt-app: its `delay` in whole us, so up to 1 us earlier); every thread is pinned "
        f"to CPU {cfg['cpu']} at SCHED_FIFO {cfg['task_priority']}; memory locked (rt-app "
        f"`lock_pages`, rtlab `mlockall` and prefaulted stacks). rtlab's executive runs on the "
        f"same CPU at SCHED_FIFO {cfg['executive_priority']}. Timer slack plays no part: the "
        f"kernel gives SCHED_FIFO threads none (rt-app's task threads show `timerslack_ns` 0; "
        f"rtlab sets 1 ns and its JSON reports 0).")
    out.append(
        "- **rt-app's figure: `wu_lat`.** Each task is a loop of a `timer` event (`\"ref\": "
        "\"unique\"`: one timer per thread; `\"mode\": \"absolute\"`: the next instant is "
        "always the previous instant + period, from the grid's start) then a `runtime` event. "
        "The timer event sleeps with `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to the "
        "instant, reads CLOCK_MONOTONIC when it returns and logs the difference, rounded to the "
        "nearest us (`lround(ns / 1000.0)`), as `wu_lat`; the work starts right after. So "
        "`wu_lat` is the wake-up latency of a self-timed thread, the same thing rtlab's "
        "SCHED_FIFO mode measures. One log row per activation (a row cut by the end of the "
        "run, `c_period` 0, holds none and is left out). rt-app's default `relative` timer "
        "mode would restart the grid from the moment a late thread reaches its timer, silently "
        "dropping the time it lost; `absolute` keeps the grid, which is what rtlab does.")
    out.append(
        "- **What rt-app does not count.** When a thread reaches its timer after the instant "
        "(the previous activation, delayed or preempted, ended after it), rt-app does not "
        "sleep: `wu_lat` is 0 for that activation and `slack` (instant - arrival at the timer) "
        "is negative. The activation is late by -slack, but `wu_lat` says 0, and no missed "
        "activation is counted anywhere: rt-app has no missed-period counter. The figures "
        "labelled rt-app use `wu_lat` as rt-app reports it; `rt-app corrected` uses -slack "
        "for those activations.")
    out.append(
        "- **rtlab SCHED_FIFO mode** (`--mode fifo`): each task sleeps with an absolute "
        "`clock_nanosleep` to each activation and stamps CLOCK_MONOTONIC at wake-up (ns): "
        "lateness = wake-up - activation. A wake-up k periods late counts k missed "
        "activations (they are not run late). Like for like with rt-app.")
    out.append(
        "- **rtlab executive** (`--mode executive`, the default): one executive thread "
        f"(SCHED_FIFO {cfg['executive_priority']}) sleeps until {guard_us} us (`--guard`) "
        "before the next activation of any task, spins, and wakes that task's futex "
        f"{release_us} us (`--release-early`) before its instant; the task spins to the "
        "instant and stamps the "
        "start of its work: lateness = start of the work - activation (`activation_lateness`). "
        "The task's own wake-up happens inside that margin, so this is not a wake-up "
        "latency but the punctuality of the work's start that the executive achieves. An "
        "activation that comes while its task still works on the previous one is missed "
        "(not released) and counted.")
    out.append(
        "- **Resolution.** rt-app logs whole us (rounded to nearest), so each value is the "
        "true lateness +-0.5 us; rtlab's values are exact ns, rounded here the same way for "
        "the common tables. At a p50 of tens of us this is a few %; for the executive's "
        "sub-us lateness the rounded figures read 0 and only the ns table is meaningful.")
    out.append(
        f"- **Start.** rt-app starts its grid when its first thread is ready; its other "
        f"threads then lock memory (each `mlockall` also faults in every other thread's stack) "
        f"before they join, which took hundreds of ms with 30 threads here, so their first "
        f"activations ran late and back to back with `wu_lat` 0. Each rt-app task therefore "
        f"waits {cfg['rtapp_start_s']} s (added to its `delay`, and to `duration`) before its "
        f"grid starts; rtlab starts its grid 50 ms after its threads are set up. Both run "
        f"about {cfg['duration_s']} s of activations (rt-app's count depends on how long its "
        f"threads took to start: the `activations` column).")
    out.append(
        "- **Work.** rt-app's `runtime` spins in chunks of 32 us (its calibrated loop) until "
        "the elapsed wall time reaches the value, so each activation works up to ~32 us "
        "longer than asked; rtlab spins on the clock to exactly `--work`. Both are wall-clock "
        "work: time a task loses to preemption is not made up.")
    out.append(
        f"- **Idle.** {'Both runs hold /dev/cpu_dma_latency at 0.' if cfg['dma_latency'] else 'Neither tool holds /dev/cpu_dma_latency here (rt-app never does; rtlab runs with `--no-dma-latency`), so the CPU may enter idle states between activations and its wake-up cost is in every figure.'} "
        f"cpuidle here: {env.get('cpuidle', '?')}. With few tasks the CPU idles for most of "
        f"each period; with many it rarely does.")
    out.append(
        "- **Logging.** rt-app keeps its rows in a memory buffer per thread and writes them "
        "at the end (`log_size` in MB: no file I/O during the run); rtlab's samples go "
        "through preallocated rings to a recorder thread that writes the CSV.")
    out.append("")

    out.append("## Per run\n")
    out.append("Whole-us lateness figures (the common rule). `activations` and `missed` as in "
               "the summary (rt-app's `missed`: derived, not counted by rt-app). `late >= "
               "period` = rt-app activations run a period or more late (from -slack); rtlab "
               "does not run those, it counts them as missed. "
               "`other RT` = other real-time programs were running at its start or were seen "
               "during it (sampled every 0.5 s; see the notes). " + HOST_LOAD_LEGEND +
               " (sampled by the kernel's tick: a task set whose period is a multiple of the "
               "tick aliases with it, so these can be far from the real load of the run).\n")
    header = ["run", "round", "tool", "activations", "missed", "late >= period", "p50", "p99",
              "p99.9", "max", "mean", "<= 10 us %", "<= 100 us %", "work p50 (us)", "wall (s)",
              "other RT", *HOST_LOAD_HEADER]
    for n in s["task_counts"]:
        rows = []
        for r in sorted((x for x in res["runs"] if x["tasks"] == n), key=lambda x: x["seq"]):
            f = r["figures"]
            rows.append([r["seq"], r["pair"], LABEL[r["tool"]], f["activations"], f["missed"],
                         fus(f["late_by_a_period"]) if r["tool"] == "rt-app" else "-",
                         *(fus(f[k], 1 if k == "mean" else 0) for k in STAT_KEYS),
                         fpct(f["within_percent"]["10"]), fpct(f["within_percent"]["100"]),
                         fus(f["work_p50_us"], 0 if r["tool"] == "rt-app" else 1),
                         fmt(r["elapsed_s"], 1),
                         "yes" if r["rt_others_before"] or r["rt_others_during"] else "-",
                         *host_load_cells(r)])
        out.append(f"### {tasks_label(n)}\n")
        out.append(md_table(header, rows, text_cols=3))
        out.append("")
    return "\n".join(out)


def render_console(res):
    out = console_table(*summary_rows(res))
    out.append("")
    out += console_table(*ratio_rows(res))
    s = res["summary"]
    if not s["all_runs_consistent"]:
        out.append("inconsistent runs: " + json.dumps(s["inconsistent_runs"]))
    return "\n".join(out)


def main(argv=None):
    return run_cli("periodic_compare", __doc__, argv,
                   columns=MANIFEST_COLUMNS, file_columns=FILE_COLUMNS,
                   analyse=analyse, render_md=render_md, render_console=render_console)


if __name__ == "__main__":
    sys.exit(main())
