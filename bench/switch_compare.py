#!/usr/bin/env python3
"""Compare `rtlab measure switch` with rt-tests' IPC latency tools, run by run
(python3 stdlib only).

Called by bench/switch-vs-rt-tests.sh with a manifest (runs.tsv) that lists,
for every run, which tool ran for which mechanism, its JSON, its log (the
tool's stdout+stderr) and its exact command. `rtlab` is rtlab with
`--pacing rt-tests` (the tool's hand-off step for step: the comparison),
`rtlab-grid` rtlab with its default pacing (a second line). Pairs:

    rtlab --mechanism pthread-mutex  <->  ptsematest   (POSIX mutex, threads)
    rtlab --mechanism mq             <->  pmqtest      (POSIX message queue)
    rtlab --mechanism signal         <->  sigwaittest  (signal + sigwait)
    rtlab --mechanism sysv-sem       <->  svsematest   (SysV semaphore)

Both sides measure the delay from the sender's release (a stamp taken just
before the unlock / send / kill / semop) to the receiver running after its
wait returned. rtlab's figures come from its `<mechanism>.switch` series
(ns); the rt-tests figures from the tool's --json file (min/max in whole us,
avg with two decimals), cross-checked against the summary line it prints
("#1 -> #0, Min .., Cur .., Avg .., Max ..").

Writes a Markdown report (and optionally a JSON file) and prints the summary.
It can also be run on its own over the files a previous run kept:
    python3 bench/switch_compare.py --manifest DIR/runs.tsv --meta DIR/meta.json \
        --md out.md [--json out.json]
"""

import json
import re
import sys

from benchlib import (
    HOST_LOAD_HEADER, HOST_LOAD_LEGEND, RUN_COLUMNS, BenchError, command_lines, console_table,
    disturbance_notes, disturbed_runs, fmt, host_load_cells, host_rows, load_json, md_table,
    med, note_lines, pairs_of, ratio, read_text, results_document, run_cli, run_record,
    rtlab_warnings,
)

SCHEMA = "rtlab.bench.switch-vs-rt-tests/1"
BUSY_PCT_WARN = 5.0  # whole-machine busy % during a run above which it is flagged
# rtlab mechanism -> the rt-tests tool that measures the same hand-off.
TOOL_FOR = {
    "pthread-mutex": "ptsematest",
    "mq": "pmqtest",
    "signal": "sigwaittest",
    "sysv-sem": "svsematest",
}
WHAT = {
    "pthread-mutex": "pthread_mutex_unlock -> pthread_mutex_lock returns",
    "mq": "mq_send -> mq_receive returns",
    "signal": "pthread_kill -> sigwait returns",
    "sysv-sem": "semop(+1) -> semop(-1) returns",
}
RATIO_METRICS = ("mean_us", "min_us", "max_us")
GRID = "rtlab-grid"  # the manifest's name of rtlab's grid-paced runs
MEAN_RATIO_GOAL = 1.05  # rtlab/tool mean ratio the paced runs must stay within
OWN_COLUMNS = ("pair", "seq", "tool", "mechanism")
FILE_COLUMNS = ("json", "log")  # relative to the manifest
MANIFEST_COLUMNS = OWN_COLUMNS + FILE_COLUMNS + RUN_COLUMNS


# --------------------------------------------------------------------------
# rt-tests (ptsematest, pmqtest, sigwaittest, svsematest)
# --------------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# "#0: ID26548, P90, CPU1, I1000; #1: ID26549, P90, CPU1, [TO 0, ]Cycles 500"
THREADS_LINE = re.compile(
    r"#0:\s*ID(?P<rid>\d+),\s*P(?P<rprio>-?\d+),\s*CPU(?P<rcpu>-?\d+),\s*I(?P<interval>\d+);\s*"
    r"#1:\s*ID(?P<sid>\d+),\s*P(?P<sprio>-?\d+),\s*CPU(?P<scpu>-?\d+),\s*"
    r"(?:TO\s*(?P<timeouts>\d+),\s*)?Cycles\s*(?P<cycles>\d+)")
# "#1 -> #0, Min    2, Cur   59, Avg    3, Max   59"
RESULT_LINE = re.compile(
    r"#1\s*->\s*#0,\s*Min\s*(?P<min>-?\d+),\s*Cur\s*(?P<cur>-?\d+),\s*"
    r"Avg\s*(?P<avg>-?\d+),\s*Max\s*(?P<max>-?\d+)")


def parse_rt_tests_stdout(path):
    """The last thread line and result line the tool printed (with -q it
    prints them once, at the end). Values are whole microseconds; Avg is
    rounded (int(avg + 0.5))."""
    text = ANSI.sub("\n", read_text(path))
    threads = list(THREADS_LINE.finditer(text))
    results = list(RESULT_LINE.finditer(text))
    if not threads or not results:
        raise BenchError(f"{path}: no '#0: ID.. Cycles ..' / '#1 -> #0, Min .. Max ..' summary "
                         f"lines in the tool's output")
    t, r = threads[-1], results[-1]
    return {
        "receiver_prio": int(t["rprio"]), "receiver_cpu": int(t["rcpu"]),
        "interval_us": int(t["interval"]),
        "sender_prio": int(t["sprio"]), "sender_cpu": int(t["scpu"]),
        "timeouts": None if t["timeouts"] is None else int(t["timeouts"]),
        "cycles": int(t["cycles"]),
        "min_us": int(r["min"]), "cur_us": int(r["cur"]),
        "avg_us_rounded": int(r["avg"]), "max_us": int(r["max"]),
    }


def parse_rt_tests_json(path):
    """The tool's --json file: thread "0" with sender {cpu, priority,
    samples, interval} and receiver {cpu, priority, min, avg, max}."""
    doc = load_json(path)
    threads = doc.get("thread") or {}
    if len(threads) != 1:
        raise BenchError(f"{path}: expected one thread pair, found {len(threads)}")
    t = next(iter(threads.values()))
    snd, rcv = t.get("sender") or {}, t.get("receiver") or {}
    for key in ("min", "avg", "max"):
        if not isinstance(rcv.get(key), (int, float)):
            raise BenchError(f"{path}: receiver.{key} missing or not a number")
    return {
        "return_code": doc.get("return_code"),
        "version": doc.get("rt_test_version:", doc.get("rt_test_version")),
        "cmdline": doc.get("cmdline:", doc.get("cmdline")),
        "sender_cpu": snd.get("cpu"), "sender_prio": snd.get("priority"),
        "samples": snd.get("samples"), "interval_us": snd.get("interval"),
        "receiver_cpu": rcv.get("cpu"), "receiver_prio": rcv.get("priority"),
        "min_us": rcv["min"], "avg_us": float(rcv["avg"]), "max_us": rcv["max"],
        "timeouts": rcv.get("timeoutcount"),
    }


def rt_tests_figures(json_path, log_path):
    j = parse_rt_tests_json(json_path)
    s = parse_rt_tests_stdout(log_path)
    problems = []
    if s["min_us"] != j["min_us"]:
        problems.append(f"printed Min {s['min_us']} != JSON min {j['min_us']}")
    if s["max_us"] != j["max_us"]:
        problems.append(f"printed Max {s['max_us']} != JSON max {j['max_us']}")
    if abs(s["avg_us_rounded"] - j["avg_us"]) > 0.51:
        problems.append(f"printed Avg {s['avg_us_rounded']} is not JSON avg {j['avg_us']} rounded")
    if j["samples"] is not None and s["cycles"] != j["samples"]:
        problems.append(f"printed Cycles {s['cycles']} != JSON samples {j['samples']}")
    return {
        "samples": j["samples"],
        "mean_us": j["avg_us"],
        "min_us": float(j["min_us"]),
        "max_us": float(j["max_us"]),
        "avg_printed_us": s["avg_us_rounded"],
        "sender_cpu": j["sender_cpu"], "receiver_cpu": j["receiver_cpu"],
        "sender_prio": j["sender_prio"], "receiver_prio": j["receiver_prio"],
        "interval_us": j["interval_us"],
        "timeouts": j["timeouts"],
        "return_code": j["return_code"],
        "version": j["version"],
        "consistent": not problems,
        "problems": problems,
    }


# --------------------------------------------------------------------------
# rtlab
# --------------------------------------------------------------------------

def series_figures(s):
    pct = s.get("percentiles_ns") or {}
    ns = lambda v: None if v is None else v / 1000.0
    return {
        "samples": s.get("samples"),
        "missed": s.get("missed"),
        "dropped": s.get("dropped"),
        "mean_us": ns(s.get("mean_ns")),
        "min_us": ns(s.get("min_ns")),
        "max_us": ns(s.get("max_ns")),
        "stdev_us": ns(s.get("stdev_ns")),
        "p50_us": ns(pct.get("p50")),
        "p99_us": ns(pct.get("p99")),
        "cpu": s.get("cpu"),
        "thread": s.get("thread"),
    }


def rtlab_figures(path, mechanism):
    doc = load_json(path)
    if doc.get("schema") != "rtlab.run/1":
        raise BenchError(f"{path}: schema {doc.get('schema')!r}, expected 'rtlab.run/1'")
    if doc.get("probe") != "switch":
        raise BenchError(f"{path}: probe {doc.get('probe')!r}, expected 'switch'")
    by_name = {s.get("name"): s for s in doc.get("series") or []}
    sw, irq = by_name.get(f"{mechanism}.switch"), by_name.get(f"{mechanism}.interrupt")
    if sw is None:
        raise BenchError(f"{path}: no series '{mechanism}.switch' (series: {sorted(by_name)})")
    if sw.get("metric") != "switch_latency":
        raise BenchError(f"{path}: series '{mechanism}.switch' has metric {sw.get('metric')!r}")
    out = series_figures(sw)
    out["interrupt"] = series_figures(irq) if irq else None
    cfg = doc.get("config") or {}
    out.update({
        "status": doc.get("status"),
        "warnings": doc.get("warnings") or [],
        "timer_cpu": cfg.get("cpu"),
        "task_cpu": cfg.get("task_cpu"),
        "process": cfg.get("process"),
        "sched": cfg.get("sched"),
        "interval_ns": cfg.get("interval_ns"),
        "pacing": cfg.get("pacing", "grid"),
        "events": (out["samples"] or 0) + (out["missed"] or 0),
    })
    return out


def resolution_check(csv_path, mechanism):
    """What the rt-tests tools' whole-us stamps would make of rtlab's own
    samples: each sample L (ns) released at t (ns) reads
    floor((t + L) / 1000) - floor(t / 1000) us when both stamps are cut to
    whole us, as `gettimeofday` does. The sub-us phase of t is that of the
    run's own release stamps. None without the samples file."""
    try:
        text = read_text(csv_path)
    except BenchError:
        return None
    name = f"{mechanism}.switch"
    exact, cut = [], []
    for line in text.splitlines()[1:]:
        parts = line.split(",")
        if len(parts) != 3 or parts[0] != name:
            continue
        t, lat = int(parts[1]), int(parts[2])
        exact.append(lat / 1000.0)
        cut.append(float((t + lat) // 1000 - t // 1000))
    if not exact:
        return None
    stats = lambda v: {"mean_us": sum(v) / len(v), "min_us": min(v), "max_us": max(v)}
    return {"samples": len(exact), "ns": stats(exact), "whole_us": stats(cut)}


# --------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------

def analyse(runs, meta):
    cfg = meta["config"]
    out_runs = []
    for run in runs:
        rec = run_record(run, OWN_COLUMNS)
        mech = run["mechanism"]
        if mech not in TOOL_FOR:
            raise BenchError(f"unknown mechanism {mech!r} in the manifest")
        if run["tool"] in ("rtlab", GRID):
            f = rtlab_figures(run["json"], mech)
            rec["figures"] = f
            notes = []
            want = "rt-tests" if run["tool"] == "rtlab" else "grid"
            if f["pacing"] != want:
                notes.append(f"pacing {f['pacing']}, expected {want}")
            if want == "rt-tests":
                f["resolution"] = resolution_check(run["json"][:-len(".json")] + ".csv", mech)
            if f["status"] != "complete":
                notes.append(f"status {f['status']}")
            if f["events"] != cfg["events"]:
                notes.append(f"samples + missed = {f['events']}, expected {cfg['events']}")
            if f["dropped"]:
                notes.append(f"{f['dropped']} samples dropped")
            if f["task_cpu"] is not None and f["task_cpu"] != cfg["cpu"]:
                notes.append(f"task on CPU {f['task_cpu']}, not {cfg['cpu']}")
            if (f["missed"] or 0) > 0.01 * cfg["events"]:
                irq = f["interrupt"] or {}
                notes.append(f"rtlab counted {f['missed']} of {f['events']} events as missed "
                             f"(longest timer wake-up {fmt((irq.get('max_us') or 0) / 1000, 1)} ms): "
                             f"the CPU was taken from it")
            rec["consistent"] = not notes
            rec["problems"] = notes
        elif run["tool"] == TOOL_FOR[mech]:
            f = rt_tests_figures(run["json"], run["log"])
            rec["figures"] = f
            # The tool paces itself (relative sleeps) and has no deadlines: a
            # stall only makes the run longer. Its wall time shows what its
            # figures do not.
            planned_s = cfg["events"] * cfg["interval_us"] / 1e6
            if run["elapsed_s"] > planned_s * 1.2 + 1.0:
                f["problems"].append(
                    f"{run['tool']} took {run['elapsed_s']:.1f} s for {cfg['events']} cycles of "
                    f"{cfg['interval_us']} us (at least {planned_s:.1f} s): about "
                    f"{run['elapsed_s'] - planned_s - 0.3:.1f} s of stalls its figures do not show")
            if f["samples"] != cfg["events"]:
                f["problems"].append(f"{f['samples']} cycles, expected {cfg['events']}")
            if f["sender_cpu"] != cfg["cpu"] or f["receiver_cpu"] != cfg["cpu"]:
                f["problems"].append(f"threads on CPUs {f['sender_cpu']}/{f['receiver_cpu']}, "
                                     f"not {cfg['cpu']}")
            rec["consistent"] = not f["problems"]
            rec["problems"] = f["problems"]
        else:
            raise BenchError(f"run {run['seq']}: tool {run['tool']!r} does not go with "
                             f"mechanism {mech!r}")
        out_runs.append(rec)

    mechanisms = [m for m in TOOL_FOR if any(r["mechanism"] == m for r in out_runs)]
    pairs = []
    for mech in mechanisms:
        tool = TOOL_FOR[mech]
        for p, a, b in pairs_of([r for r in out_runs if r["mechanism"] == mech], tool,
                                where=f", {mech}"):
            pairs.append({
                "pair": p, "mechanism": mech, "tool": tool,
                "rtlab_seq": a["seq"], "tool_seq": b["seq"],
                "ratios_rtlab_over_tool": {m: ratio(a["figures"][m], b["figures"][m])
                                           for m in RATIO_METRICS},
            })

    per_mechanism = {}
    for mech in mechanisms:
        tool = TOOL_FOR[mech]
        rt = [r for r in out_runs if r["mechanism"] == mech and r["tool"] == "rtlab"]
        tt = [r for r in out_runs if r["mechanism"] == mech and r["tool"] == tool]
        ps = [p for p in pairs if p["mechanism"] == mech]
        m_rt = {m: med(r["figures"][m] for r in rt)
                for m in ("samples", "missed", "mean_us", "min_us", "max_us", "p50_us", "p99_us")}
        m_rt["interrupt_mean_us"] = med((r["figures"]["interrupt"] or {}).get("mean_us") for r in rt)
        m_rt["interrupt_max_us"] = med((r["figures"]["interrupt"] or {}).get("max_us") for r in rt)
        m_tt = {m: med(r["figures"][m] for r in tt) for m in ("samples", "mean_us", "min_us", "max_us")}
        gr = [r for r in out_runs if r["mechanism"] == mech and r["tool"] == GRID]
        m_gr = {m: med(r["figures"][m] for r in gr)
                for m in ("samples", "missed", "mean_us", "min_us", "max_us")}
        grid_ratios = [ratio(g["figures"]["mean_us"], t["figures"]["mean_us"])
                       for g in gr for t in tt if t["pair"] == g["pair"]]
        res_runs = [r["figures"].get("resolution") for r in rt if r["figures"].get("resolution")]
        resolution = {
            side: {m: med(x[side][m] for x in res_runs) for m in RATIO_METRICS}
            for side in ("ns", "whole_us")
        } if res_runs else None
        per_mechanism[mech] = {
            "median_grid": m_gr,
            "grid_median_mean_ratio": med(grid_ratios),
            "grid_mean_ratios": grid_ratios,
            "resolution": resolution,
            "tool": tool,
            "pairs": len(ps),
            "median_rtlab": m_rt,
            "median_tool": m_tt,
            "median_ratio_rtlab_over_tool": {m: med(p["ratios_rtlab_over_tool"][m] for p in ps)
                                             for m in RATIO_METRICS},
            "ratio_of_medians_rtlab_over_tool": {m: ratio(m_rt[m], m_tt[m]) for m in RATIO_METRICS},
        }

    summary = {
        "per_mechanism": per_mechanism,
        "mean_ratio_goal": MEAN_RATIO_GOAL,
        "within_goal": {m: (v["median_ratio_rtlab_over_tool"]["mean_us"] or 99) <= MEAN_RATIO_GOAL
                        for m, v in per_mechanism.items()},
        "all_runs_clean": all(r["consistent"] for r in out_runs),
        "flagged_runs": {r["seq"]: r["problems"] for r in out_runs if not r["consistent"]},
        **disturbed_runs(out_runs, BUSY_PCT_WARN),
        "rtlab_warnings": rtlab_warnings(out_runs),
    }
    method = {
        "rtlab": "`<mechanism>.switch` series of the JSON (--pacing rt-tests): release stamp -> "
                 "task running, ns",
        "rtlab-grid": "the same series with the default grid pacing",
        "rt-tests": "--json receiver min/avg/max (us; avg to 0.01 us), cross-checked with the "
                    "printed '#1 -> #0' line",
        "ratios": "rtlab / tool per pair; summary = median over pairs, and ratio of medians",
    }
    return results_document(SCHEMA, meta, method, out_runs, pairs, summary)


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def summary_rows(res):
    rows = []
    for mech, s in res["summary"]["per_mechanism"].items():
        for m, label in (("mean_us", "mean"), ("min_us", "min"), ("max_us", "max")):
            per_pair = ", ".join(fmt(p["ratios_rtlab_over_tool"][m]) for p in res["pairs"]
                                 if p["mechanism"] == mech)
            rows.append([mech, s["tool"], label,
                         fmt(s["median_rtlab"][m], 3), fmt(s["median_tool"][m], 2 if m == "mean_us" else 0),
                         fmt(s["ratio_of_medians_rtlab_over_tool"][m]),
                         fmt(s["median_ratio_rtlab_over_tool"][m]), per_pair])
        g = s["median_grid"]["mean_us"]
        rows.append([mech, s["tool"], "mean, grid pacing", fmt(g, 3),
                     fmt(s["median_tool"]["mean_us"], 2), fmt(ratio(g, s["median_tool"]["mean_us"])),
                     fmt(s["grid_median_mean_ratio"]),
                     ", ".join(fmt(r) for r in s["grid_mean_ratios"])])
    return ["mechanism", "rt-tests tool", "metric", "rtlab (median, us)", "tool (median, us)",
            "ratio of medians", "median ratio rtlab/tool", "per-pair ratios"], rows


# The hand-off of each tool as `--pacing rt-tests` copies it (rt-tests 2.x
# sources): sender's steps from its stamp; receiver's from its wait.
STRUCTURE = {
    "pthread-mutex": "sender: stamp, unlock the test mutex, relock its own sync mutex (blocks); "
                     "receiver: relock the test mutex it holds (blocks), stamp, sleep, unlock "
                     "the sync mutex",
    "mq": "sender: stamp, mq_send on the test queue, mq_receive on the sync queue (blocks); "
          "receiver: mq_receive (blocks), stamp, sleep, mq_send on the sync queue",
    "signal": "sender: stamp, pthread_kill, sigwait for the go-ahead signal (blocks); receiver: "
              "sigwait (blocks), stamp, sleep, pthread_kill of the sender",
    "sysv-sem": "sender: stamp, semop(S, +1), semop(R, -1) (blocks), semop(S, -1); receiver: "
                "semop(S, -1) (blocks), stamp, semop(R, +1), sleep, semop(S, +1)",
}


def what_is_compared(res):
    """The settings chosen and what still differs, as Markdown lines."""
    cfg = res["config"]
    s = res["summary"]
    prio = cfg["priority"]
    out = ["## What is compared, and the settings chosen\n"]
    out.append(
        "- **Same hand-off, same structure.** " + "; ".join(
            f"`{m}` <-> {TOOL_FOR[m]} ({WHAT[m]}: {STRUCTURE[m]})" for m in s["per_mechanism"]) +
        ". rtlab's `--pacing rt-tests` runs these steps in the same order, the sender's "
        "blocking call straight after the release (its samples are pushed after it wakes, "
        "before its next stamp), so both measure the release call, the sender's path into "
        "its blocking call and the switch to the receiver.")
    out.append(
        f"- **Placement: same CPU.** `-a{cfg['cpu']}` pins both rt-tests threads to CPU "
        f"{cfg['cpu']} (rt-tests cannot put the two threads of one pair on different CPUs); "
        f"rtlab runs with `--cpu {cfg['cpu']}` and without `--cross-cpu`: a real context "
        f"switch on one CPU.")
    out.append(
        f"- **Priority.** `-p {prio}` with one pair (`-t1`) gives both rt-tests threads FIFO "
        f"{prio}; so does `--pacing rt-tests`. The grid pacing runs its task one below (FIFO "
        f"{prio - 1}); on one CPU the woken thread cannot preempt the releaser either way, and "
        f"measured same-vs-below grid runs differ by less than their spread (see "
        f"docs/measure-switch.md).")
    out.append(
        f"- **Interval and count.** `--interval {cfg['interval_us']}us --events {cfg['events']}` "
        f"and `-i {cfg['interval_us']} -l {cfg['events']}`. With `--pacing rt-tests` the "
        f"receiver sleeps a relative interval after each hand-off, as the tools: a cycle lasts "
        f"interval + two hand-offs and nothing is missed. The grid pacing releases on absolute "
        f"deadlines from a timerfd and counts a late wake-up as missed events.")
    out.append(
        "- **/dev/cpu_dma_latency.** The rt-tests IPC tools do not touch it; rtlab runs " +
        ("with `--no-dma-latency` to match." if not cfg.get("dma_latency") else
         "with it held at 0 (DMA_LATENCY=1): the tools run without it."))
    out.append(
        "- **Clock and resolution.** The tools stamp `gettimeofday()` (CLOCK_REALTIME, whole "
        "us) and subtract; rtlab stamps CLOCK_MONOTONIC in ns (both read through the vDSO, "
        "no system call). The table above applies the tools' cut to rtlab's own samples: the "
        "mean stays (the cut is unbiased), min and max move to whole us. So the mean ratio is "
        "the meaningful one; a min or max ratio is off by up to 1 us / the value.")
    out.append(
        "- **Max and start-up.** The rt-tests tools stamp from the very first hand-off, right "
        "after creating their threads; rtlab starts both sides 50 ms after they are set up, "
        "stacks and rings prefaulted. Their max partly measures start-up.")
    out.append(
        "- **What the tools do not report.** No percentiles, no count of the receiver's "
        "samples (`Cycles` is the sender's), no lateness of the receiver's sleep: a stall in "
        "the sleep only makes the run longer. rtlab's paced interrupt series holds the "
        "receiver's sleep lateness, so the same stall shows there.")
    out.append(
        "- **What still differs in the paced runs.** The `signal` go-ahead and release use "
        "SIGRTMIN+7/+8 (real-time signals, which rtlab keeps to itself) instead of "
        "SIGUSR2/SIGUSR1; `mq` messages are 8 bytes at priority 0 (pmqtest: 7 bytes, "
        "priority 1) in a queue of 4 (pmqtest: 1); rtlab's objects live in one anonymous "
        "mapping (the pthread ones process-private, as the tools'). rtlab's release call is "
        "reached through one `match` on the mechanism.")
    out.append("")
    return out


def render_md(res):
    cfg = res["config"]
    s = res["summary"]
    out = ["# rtlab measure switch vs rt-tests (ptsematest, pmqtest, sigwaittest, svsematest)\n"]
    out.append(f"Generated by `bench/switch-vs-rt-tests.sh` on {res['date']}.\n")
    out.append(md_table(["", ""], host_rows(res, [("clocksource", "clocksource")]) + [
        ["rtlab", res["versions"]["rtlab"]],
        ["rt-tests", res["versions"]["rt_tests"]],
        ["setup", f"{cfg['pairs']} round(s) per mechanism (rtlab paced as rt-tests, the "
                  f"rt-tests tool, rtlab grid-paced; the order rotates each round), "
                  f"{cfg['events']} events each, interval {cfg['interval_us']} us, all threads on "
                  f"CPU {cfg['cpu']}, SCHED_FIFO {cfg['priority']}, {cfg['settle_s']} s pause "
                  f"before each run"],
    ], numeric=False))
    out.append("")
    out += command_lines([res["commands"]["rtlab"], res["commands"].get("rtlab_grid", ""),
                          res["commands"]["rt_tests"]],
                         extra_legend="; `M` = the mechanism, `TOOL` = its rt-tests tool")

    out.append("## Summary\n")
    goal = s["mean_ratio_goal"]
    met = [m for m, ok in s["within_goal"].items() if ok]
    out.append("Release-to-running latency of the woken thread, same CPU. rtlab = mean/min/max of "
               "its `M.switch` series with `--pacing rt-tests`, the tool's hand-off step for step "
               "(ns, shown in us); tool = the rt-tests tool's receiver avg/min/max (`--json`). "
               "`mean, grid pacing` = rtlab's default pacing (timer thread on absolute deadlines, "
               "task one priority below) against the same tool runs. Ratios are rtlab / tool: "
               "below 1 means rtlab measured a shorter delay. `ratio of medians` = median of "
               "rtlab's runs / median of the tool's runs; `median ratio` = median over pairs of "
               "the per-pair ratio.\n")
    each = ", ".join(f"{m} {fmt(v['median_ratio_rtlab_over_tool']['mean_us'])}"
                     for m, v in s["per_mechanism"].items())
    out.append(f"**Mean ratio (median over pairs) within {goal}: {len(met)} of "
               f"{len(s['within_goal'])} mechanisms** ({each}).\n")
    header, rows = summary_rows(res)
    out.append(md_table(header, rows, text_cols=3))
    out.append("")
    rows = []
    for mech, m in s["per_mechanism"].items():
        r, t, g = m["median_rtlab"], m["median_tool"], m["median_grid"]
        rows.append([mech, fmt(r["samples"], 0), fmt(r["missed"], 0), fmt(t["samples"], 0),
                     fmt(g["samples"], 0), fmt(g["missed"], 0),
                     fmt(r["p50_us"]), fmt(r["p99_us"]),
                     fmt(r["interrupt_mean_us"]), fmt(r["interrupt_max_us"])])
    out.append("Medians of the other figures (rtlab's `samples + missed` = events; the rt-tests "
               "tools count the sender's cycles and have no notion of a missed release; with "
               "`--pacing rt-tests` nothing is late, so nothing is missed; `sleep` = the "
               "receiver's wake-up lateness from its relative sleep, rtlab's interrupt series in "
               "that pacing, which the tools do not measure):\n")
    out.append(md_table(["mechanism", "rtlab samples", "rtlab missed", "tool cycles",
                         "grid samples", "grid missed", "rtlab p50 (us)", "rtlab p99 (us)",
                         "sleep lateness mean (us)", "sleep lateness max (us)"], rows))
    out.append("")
    rows = []
    for mech, m in s["per_mechanism"].items():
        x = m["resolution"]
        if not x:
            continue
        ns, us = x["ns"], x["whole_us"]
        rows.append([mech, fmt(ns["mean_us"]), fmt(us["mean_us"]), fmt(ns["min_us"]),
                     fmt(us["min_us"], 0), fmt(ns["max_us"]), fmt(us["max_us"], 0),
                     fmt(m["median_tool"]["mean_us"], 2), fmt(m["median_tool"]["min_us"], 0)])
    if rows:
        out.append("### What whole-us stamps do to the same samples\n")
        out.append("rtlab's paced runs' own samples (`--samples` CSV), once as measured (ns) and "
                   "once as the tools would read them: both stamps cut to whole us as "
                   "`gettimeofday` does, `floor((t + L) / 1 us) - floor(t / 1 us)`, with `t` the "
                   "release stamp as recorded (its sub-us phase is the run's own). Medians over "
                   "the runs, us. The mean moves by a few hundredths at most (the cut is "
                   "unbiased when the phase is spread); min and max move to whole us, by up to "
                   "1 us: compare min and max ratios with that in mind.\n")
        out.append(md_table(["mechanism", "mean, ns stamps", "mean, whole-us stamps",
                             "min, ns", "min, whole us", "max, ns", "max, whole us",
                             "tool mean", "tool min"], rows))
        out.append("")

    rows = []
    for mech, m in s["per_mechanism"].items():
        sides = {}
        for tool in ("rtlab", m["tool"]):
            means = [r["figures"]["mean_us"] for r in res["runs"]
                     if r["mechanism"] == mech and r["tool"] == tool]
            sides[tool] = means
        rt, tt = sides["rtlab"], sides[m["tool"]]
        rows.append([mech, ", ".join(fmt(v) for v in rt), fmt(ratio(max(rt), min(rt))),
                     ", ".join(fmt(v, 2) for v in tt), fmt(ratio(max(tt), min(tt))),
                     fmt(m["median_ratio_rtlab_over_tool"]["mean_us"])])
    out.append("### Run-to-run spread of the means\n")
    out.append("Each side's own runs, us, in run order, and their largest / smallest: how far "
               "a side differs from itself between runs minutes apart on this machine. A "
               "median ratio rtlab/tool inside those spreads is not a difference these runs "
               "can resolve; one outside them is.\n")
    out.append(md_table(["mechanism", "rtlab paced means", "rtlab max/min", "tool means",
                         "tool max/min", "median ratio rtlab/tool"], rows))
    out.append("")

    notes = []
    if not s["all_runs_clean"]:
        for seq, probs in s["flagged_runs"].items():
            notes.append(f"run {seq}: " + "; ".join(probs))
    notes += disturbance_notes(s, BUSY_PCT_WARN)
    notes += [f"rtlab warned: {w}" for w in s["rtlab_warnings"]]
    out += note_lines(notes)
    out += what_is_compared(res)
    out.append("## Per pair\n")
    out.append("us figures; rtlab's come from ns; `rtlab` = `--pacing rt-tests`, `rtlab-grid` = "
               "the default pacing; ratios are the paced run's. `events` = rtlab samples + missed, or the "
               "sender's cycles for the rt-tests tool. `wall (s)` = the run's wall-clock time "
               f"(both plan {cfg['events']} x {cfg['interval_us']} us = "
               f"{cfg['events'] * cfg['interval_us'] / 1e6:g} s, plus start-up): an rt-tests run "
               "that took much longer was stalled without its figures showing it, while rtlab "
               "counts the stalled periods as missed. " + HOST_LOAD_LEGEND + ".\n")
    header = ["run", "tool", "events", "samples", "missed", "mean", "min", "max",
              "wall (s)", *HOST_LOAD_HEADER]
    by_seq = {r["seq"]: r for r in res["runs"]}
    for mech in s["per_mechanism"]:
        out.append(f"### {mech} vs {TOOL_FOR[mech]}\n")
        rows = []
        for p in [p for p in res["pairs"] if p["mechanism"] == mech]:
            grid = [r["seq"] for r in res["runs"] if r["mechanism"] == mech
                    and r["pair"] == p["pair"] and r["tool"] == GRID]
            for seq in sorted([p["rtlab_seq"], p["tool_seq"], *grid]):
                r = by_seq[seq]
                f = r["figures"]
                if r["tool"] in ("rtlab", GRID):
                    row = [f["events"], f["samples"], f["missed"], fmt(f["mean_us"]),
                           fmt(f["min_us"]), fmt(f["max_us"])]
                else:
                    row = [f["samples"], "-", "-", fmt(f["mean_us"], 2), fmt(f["min_us"], 0),
                           fmt(f["max_us"], 0)]
                rows.append([r["seq"], r["tool"], *row, fmt(r["elapsed_s"], 1),
                             *host_load_cells(r)])
            ra = p["ratios_rtlab_over_tool"]
            rows.append(["", f"**ratio (pair {p['pair']})**", "", "", "", fmt(ra["mean_us"]),
                         fmt(ra["min_us"]), fmt(ra["max_us"]), "", "", "", ""])
        out.append(md_table(header, rows, text_cols=2))
        out.append("")
    return "\n".join(out)


def render_console(res):
    out = console_table(*summary_rows(res))
    s = res["summary"]
    out.append("")
    for mech, m in s["per_mechanism"].items():
        out.append(f"{mech}: rtlab median missed {fmt(m['median_rtlab']['missed'], 0)}, "
                   f"interrupt mean {fmt(m['median_rtlab']['interrupt_mean_us'])} us")
    if not s["all_runs_clean"]:
        out.append("flagged runs: " + json.dumps(s["flagged_runs"]))
    return "\n".join(out)


def main(argv=None):
    return run_cli("switch_compare", __doc__, argv,
                   columns=MANIFEST_COLUMNS, file_columns=FILE_COLUMNS,
                   analyse=analyse, render_md=render_md, render_console=render_console)


if __name__ == "__main__":
    sys.exit(main())
