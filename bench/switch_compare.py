#!/usr/bin/env python3
"""Compare `rtlab measure switch` with rt-tests' IPC latency tools, run by run
(python3 stdlib only).

Called by bench/switch-vs-rt-tests.sh with a manifest (runs.tsv) that lists,
for every run, which tool ran for which mechanism, its JSON, its log (the
tool's stdout+stderr) and its exact command. Pairs:

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
        "events": (out["samples"] or 0) + (out["missed"] or 0),
    })
    return out


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
        if run["tool"] == "rtlab":
            f = rtlab_figures(run["json"], mech)
            rec["figures"] = f
            notes = []
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
        per_mechanism[mech] = {
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
        "all_runs_clean": all(r["consistent"] for r in out_runs),
        "flagged_runs": {r["seq"]: r["problems"] for r in out_runs if not r["consistent"]},
        **disturbed_runs(out_runs, BUSY_PCT_WARN),
        "rtlab_warnings": rtlab_warnings(out_runs),
    }
    method = {
        "rtlab": "`<mechanism>.switch` series of the JSON: release stamp -> task running, ns",
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
    return ["mechanism", "rt-tests tool", "metric", "rtlab (median, us)", "tool (median, us)",
            "ratio of medians", "median ratio rtlab/tool", "per-pair ratios"], rows


def render_md(res):
    cfg = res["config"]
    s = res["summary"]
    out = ["# rtlab measure switch vs rt-tests (ptsematest, pmqtest, sigwaittest, svsematest)\n"]
    out.append(f"Generated by `bench/switch-vs-rt-tests.sh` on {res['date']}.\n")
    out.append(md_table(["", ""], host_rows(res, [("clocksource", "clocksource")]) + [
        ["rtlab", res["versions"]["rtlab"]],
        ["rt-tests", res["versions"]["rt_tests"]],
        ["setup", f"{cfg['pairs']} pair(s) per mechanism (rtlab then the rt-tests tool), "
                  f"{cfg['events']} events each, interval {cfg['interval_us']} us, all threads on "
                  f"CPU {cfg['cpu']}, SCHED_FIFO {cfg['priority']}, {cfg['settle_s']} s pause "
                  f"before each run"],
    ], numeric=False))
    out.append("")
    out += command_lines([res["commands"]["rtlab"], res["commands"]["rt_tests"]],
                         extra_legend="; `M` = the mechanism, `TOOL` = its rt-tests tool")

    out.append("## Summary\n")
    out.append("Release-to-running latency of the woken thread, same CPU. rtlab = mean/min/max of "
               "its `M.switch` series (ns, shown in us); tool = the rt-tests tool's receiver "
               "avg/min/max (`--json`). Ratios are rtlab / tool: below 1 means rtlab measured a "
               "shorter delay. `ratio of medians` = median of rtlab's runs / median of the "
               "tool's runs; `median ratio` = median over pairs of the per-pair ratio.\n")
    header, rows = summary_rows(res)
    out.append(md_table(header, rows, text_cols=3))
    out.append("")
    rows = []
    for mech, m in s["per_mechanism"].items():
        r, t = m["median_rtlab"], m["median_tool"]
        rows.append([mech, fmt(r["samples"], 0), fmt(r["missed"], 0), fmt(t["samples"], 0),
                     fmt(r["p50_us"]), fmt(r["p99_us"]),
                     fmt(r["interrupt_mean_us"]), fmt(r["interrupt_max_us"])])
    out.append("Medians of the other figures (rtlab's `samples + missed` = events; the rt-tests "
               "tools count the sender's cycles and have no notion of a missed release; "
               "`interrupt` = rtlab's timer-thread wake-up latency, which the rt-tests tools "
               "do not measure):\n")
    out.append(md_table(["mechanism", "rtlab samples", "rtlab missed", "tool cycles",
                         "rtlab p50 (us)", "rtlab p99 (us)", "rtlab interrupt mean (us)",
                         "rtlab interrupt max (us)"], rows))
    out.append("")

    notes = []
    if not s["all_runs_clean"]:
        for seq, probs in s["flagged_runs"].items():
            notes.append(f"run {seq}: " + "; ".join(probs))
    notes += disturbance_notes(s, BUSY_PCT_WARN)
    notes += [f"rtlab warned: {w}" for w in s["rtlab_warnings"]]
    out += note_lines(notes)

    out.append("## What is compared, and the settings chosen\n")
    out.append(
        "- **Same hand-off.** " + "; ".join(f"`{m}` <-> {TOOL_FOR[m]} ({WHAT[m]})"
                                            for m in s["per_mechanism"]) +
        ". Each rt-tests tool stamps `gettimeofday()` just before the release and again when the "
        "receiver's wait returns; rtlab stamps the release just before the release call and the "
        "task stamps when its wait returns, so both measure release -> woken thread running.")
    out.append(
        f"- **Placement: same CPU.** `-a{cfg['cpu']}` pins both rt-tests threads (sender and "
        f"receiver) to CPU {cfg['cpu']}; rt-tests cannot put the two threads of one pair on "
        f"different CPUs (without `-a` they float). So rtlab runs without `--cross-cpu` "
        f"(`--cpu {cfg['cpu']}`: timer thread and task both on CPU {cfg['cpu']}), which measures a "
        f"real context switch on one CPU, as the rt-tests tools do.")
    out.append(
        f"- **Priority.** `-p {cfg['priority']}` with one pair (`-t1`) gives *both* rt-tests "
        f"threads FIFO {cfg['priority']} (the tools decrement the priority only for the next "
        f"pair); rtlab `--priority {cfg['priority']}` runs its timer thread at FIFO "
        f"{cfg['priority']} and the task at FIFO {cfg['priority'] - 1}. On one CPU both orderings "
        f"behave the same: the woken thread cannot preempt the releasing one (equal or lower "
        f"priority), so it runs when the releaser blocks. Both latencies therefore include the "
        f"releaser's path from its release call to blocking. The rt-tests sender blocks at once "
        f"in its wait for the receiver's next go-ahead (mutex, mq_receive, sigwait, semop: no "
        f"timer is armed). rtlab's timer thread blocks in `read()` of a periodic timerfd whose "
        f"next expiry the kernel re-armed before the release, so it arms no timer either. (Until "
        f"commit 8481cf0 it slept in `clock_nanosleep`, which arms the next deadline after the "
        f"release: a trap to the hypervisor on a VM, which made rtlab's same-CPU mean 1.4-4x the "
        f"tools' here.) What remains different: rtlab's releaser pushes two ring samples and "
        f"loops before blocking, and its task is one priority below.")
    out.append(
        f"- **Interval and count.** rtlab `--interval {cfg['interval_us']}us --events "
        f"{cfg['events']}`; rt-tests `-i {cfg['interval_us']} -l {cfg['events']}`. The pacing "
        f"differs: rtlab's timer thread releases on absolute deadlines (a late wake-up is counted "
        f"as missed events); an rt-tests receiver sleeps a *relative* `-i` after each hand-off "
        f"and then wakes the sender, which releases at once, so a cycle lasts interval + "
        f"overheads and nothing is ever missed or counted late.")
    out.append(
        "- **/dev/cpu_dma_latency.** The rt-tests IPC tools do not touch it; rtlab holds it at 0 "
        "by default, so rtlab runs with " +
        ("`--no-dma-latency` to match." if not cfg.get("dma_latency") else
         "its default (held at 0) because DMA_LATENCY=1 was set: the tools run without it.") +
        " On one CPU the release-to-running path does not go through idle, so this mainly "
        "affects the timer thread's own wake-up (the interrupt series).")
    out.append(
        "- **Resolution.** The rt-tests tools take `gettimeofday()` (CLOCK_REALTIME, whole us) "
        "stamps and subtract them, so each sample is the true delay +-1 us: min and max are "
        "whole us and can be 1 us off (a 0.4 us hand-off reads 0 or 1 us), and only avg (sum / "
        "count, printed rounded to whole us, written to `--json` with two decimals) is close to "
        "unbiased. rtlab stamps CLOCK_MONOTONIC in ns. At a few us per hand-off, 1 us is "
        "20-50 % of the value, so the min and max ratios carry that much resolution error; the "
        "mean ratio is the meaningful one. They also only use `tv_usec` of the difference "
        "(a delay of 1 s or more would wrap), irrelevant here.")
    out.append(
        "- **Max and start-up.** The rt-tests tools stamp from the very first hand-off, right "
        "after creating their two threads, without a warm-up: the first hand-offs of a run "
        "are often its slowest (a run of one loop, `-l 1`, typically reads tens of us), so "
        "their max partly measures start-up. rtlab prefaults its stacks and rings and starts "
        "its deadline grid only after both threads are set up. Compare the max ratios with "
        "that in mind.")
    out.append(
        "- **What the tools do not report.** The rt-tests tools print no percentiles and no "
        "count of the receiver's samples (`Cycles` is the sender's). A stall that falls "
        "outside the stamped hand-off (in the receiver's sleep, or while a higher-priority "
        "thread holds the CPU) only makes the run longer: the figures do not change and "
        "nothing is counted. rtlab's timer thread keeps an absolute deadline grid, so the "
        "same stall shows as missed events in both its series (the `wall (s)` and `missed` "
        "columns below).")
    out.append("")

    out.append("## Per pair\n")
    out.append("us figures; rtlab's come from ns. `events` = rtlab samples + missed, or the "
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
            for seq in (p["rtlab_seq"], p["tool_seq"]):
                r = by_seq[seq]
                f = r["figures"]
                if r["tool"] == "rtlab":
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
