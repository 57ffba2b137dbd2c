#!/usr/bin/env python3
"""Compare `rtlab tune` with `pgrep | xargs chrt` and tuna, run by run
(python3 stdlib only).

Called by bench/tune-vs-chrt.sh with a manifest (runs.tsv) that lists, for
every run, its section, its contender, the JSON the probe wrote and its log.
Sections:

  restarts  time from the start of a process to SCHED_FIFO, per restart:
            rtlab-events (tune watch, process events), rtlab-poll (tune watch
            --poll --interval 500ms), chrt-loop (pgrep | xargs chrt every 0.5 s)
  cost      CPU time of the same watchers over an idle window and a fork storm
            (and `none`: the storm without a watcher)
  oneshot   wall and CPU time of promoting MANY processes once: rtlab (tune
            set), chrt (pgrep | xargs -L1 chrt), tuna; each result checked

Ratios are rtlab / reference: below 1 means rtlab was faster (or cheaper).

Writes a Markdown report (and optionally a JSON file) and prints the summary.
It can also be run on its own over the files a previous run kept:
    python3 bench/tune_compare.py --manifest DIR/runs.tsv --meta DIR/meta.json \\
        --md out.md [--json out.json]
"""

import json
import math
import os
import sys

from benchlib import (
    HOST_LOAD_HEADER, HOST_LOAD_LEGEND, RUN_COLUMNS, BenchError, command_lines, console_table,
    disturbance_notes, disturbed_runs, fmt, host_load_cells, host_rows, load_json, md_table,
    med, note_lines, ratio, read_text, run_cli, run_record,
)

SCHEMA = "rtlab.bench.tune-vs-chrt/1"
BUSY_PCT_WARN = 50.0  # section 1 runs only: whole-machine busy % above which a run is flagged
OWN_COLUMNS = ("pair", "seq", "tool", "section")
FILE_COLUMNS = ("data", "log")  # relative to the manifest
MANIFEST_COLUMNS = OWN_COLUMNS + FILE_COLUMNS + RUN_COLUMNS
WATCHERS = ("rtlab-events", "rtlab-poll", "chrt-loop")
WATCH_REFERENCE = "chrt-loop"
ONESHOT = ("rtlab", "chrt", "tuna")
LABEL = {
    "rtlab-events": "rtlab tune watch (process events)",
    "rtlab-poll": "rtlab tune watch --poll --interval 500ms",
    "chrt-loop": "pgrep | xargs chrt loop, sleep 0.5",
    "none": "no watcher",
    "rtlab": "rtlab tune set",
    "chrt": "pgrep -x | xargs -L1 chrt -f -p",
    "tuna": "tuna --threads --affect_children --priority",
}


# --------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------

def pct(values, q):
    """Nearest-rank percentile (q in 0..1) of the values; None for none."""
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    rank = max(1, math.ceil(q * len(values)))
    return values[rank - 1]


def ms(ns):
    return None if ns is None else ns / 1e6


def side_file(run, suffix):
    """run{seq}-watch.out and the like, next to the run's data file."""
    return os.path.join(os.path.dirname(run["data"]), f"run{run['seq']}{suffix}")


def watch_output(run):
    """What the watcher printed: for rtlab, its --json events; for the shell
    loop, the lines chrt wrote to stderr (a process gone between pgrep and
    chrt)."""
    out_path, err_path = side_file(run, "-watch.out"), side_file(run, "-watch.err")
    out = read_text(out_path) if os.path.exists(out_path) else ""
    err = read_text(err_path) if os.path.exists(err_path) else ""
    info = {"stderr_lines": len([l for l in err.splitlines() if l.strip()]),
            "stderr_sample": err.strip().splitlines()[:2]}
    if run["tool"].startswith("rtlab"):
        changed = failed = 0
        mode = None
        errors = []
        for line in out.splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("event") == "started":
                mode = ev.get("mode")
            elif ev.get("event") == "applied":
                if ev.get("result") == "changed":
                    changed += 1
                elif ev.get("result") == "failed":
                    failed += 1
                    errors.append({"pid": ev.get("pid"), "error": ev.get("error")})
        info.update({"mode": mode, "changed": changed, "failed": failed, "errors": errors})
    return info


def cpu_of(mark):
    """A CPU reading: the cgroup's (every process of the watcher, ns) when
    there is one, else /proc/PID/stat (clock ticks)."""
    if mark.get("cgroup_ns") is not None:
        return mark["cgroup_ns"], "cgroup"
    return mark.get("stat_ns"), "proc-stat"


def restart_figures(run, cfg):
    d = load_json(run["data"])
    samples = d["samples"]
    lat = [ms(s["latency_ns"]) for s in samples if s["promoted"]]
    wrong_prio = [s["i"] for s in samples if s["promoted"] and s["priority"] != cfg["prio"]]
    c0, kind = cpu_of(d["cpu_before"])
    c1, _ = cpu_of(d["cpu_after"])
    cpu_ms = ms(c1 - c0) if c0 is not None and c1 is not None else None
    f = {
        "restarts": len(samples),
        "promoted": len(lat),
        "not_promoted": len(samples) - len(lat),
        "wrong_priority": wrong_prio,
        "starts": [{"pid": s["pid"], "promoted": s["promoted"], "priority": s["priority"],
                    "latency_ms": ms(s["latency_ns"])} for s in samples],
        "latencies_ms": [ms(s["latency_ns"]) for s in samples],
        "io_stall_ms": [ms(s["io_some_us"] * 1000) if s.get("io_some_us") is not None else None
                        for s in samples],
        "p50_ms": pct(lat, 0.5), "p95_ms": pct(lat, 0.95), "max_ms": max(lat) if lat else None,
        "mean_ms": sum(lat) / len(lat) if lat else None,
        "spawn_ms_median": med([ms(s["spawn_ns"]) for s in samples]),
        "observe_step_ms_median": med([ms(s["observe_step_median_ns"]) for s in samples]),
        "cpu_ms": cpu_ms, "cpu_source": kind,
        "cpu_ms_per_restart": cpu_ms / len(samples) if cpu_ms is not None and samples else None,
        "elapsed_s": d["elapsed_ns"] / 1e9,
        "watcher": watch_output(run),
    }
    problems = []
    if f["not_promoted"]:
        problems.append(f"{f['not_promoted']} of {f['restarts']} starts not promoted within "
                        f"{cfg['timeout_ms']} ms")
    if wrong_prio:
        problems.append(f"restarts {wrong_prio} promoted at another priority")
    w = f["watcher"]
    if run["tool"].startswith("rtlab") and w.get("changed") != f["restarts"]:
        problems.append(f"rtlab reported {w.get('changed')} change(s) for {f['restarts']} starts")
    if run["tool"] == "rtlab-events" and w.get("mode") != "process events":
        problems.append(f"rtlab watched by {w.get('mode')!r}, not process events")
    if run["tool"].startswith("rtlab") and w.get("failed"):
        problems.append(f"rtlab reported {w['failed']} failed change(s)")
    return f, problems


def cost_figures(run, cfg):
    d = load_json(run["data"])
    m = {x["mark"]: x for x in d["marks"]}
    f = {"storm": d["storm"], "storm_wall_s": d["storm_wall_ns"] / 1e9,
         "storm_rate_per_s": d["storm"] / (d["storm_wall_ns"] / 1e9) if d["storm_wall_ns"] else None,
         "storm_children_cpu_ms": ms(d["storm_children_cpu_ns"]),
         "idle_s": (m["idle_end"]["t_ns"] - m["start"]["t_ns"]) / 1e9,
         "storm_tail_s": (m["tail_end"]["t_ns"] - m["idle_end"]["t_ns"]) / 1e9,
         "forks_in_idle": None, "forks_in_storm": None}
    if m["start"].get("forks") is not None and m["idle_end"].get("forks") is not None:
        f["forks_in_idle"] = m["idle_end"]["forks"] - m["start"]["forks"]
        f["forks_in_storm"] = m["tail_end"]["forks"] - m["idle_end"]["forks"]
    problems = []
    if run["tool"] == "none":
        f.update({"idle_cpu_ms": None, "idle_ms_per_s": None, "storm_cpu_ms": None,
                  "storm_ms_per_1000": None, "storm_extra_ms_per_1000": None,
                  "cpu_source": None, "kept_promoted": None})
        return f, problems
    c = {k: cpu_of(v)[0] for k, v in m.items()}
    f["cpu_source"] = cpu_of(m["start"])[1]
    f["idle_cpu_ms"] = ms(c["idle_end"] - c["start"])
    f["idle_ms_per_s"] = f["idle_cpu_ms"] / f["idle_s"] if f["idle_s"] else None
    f["storm_cpu_ms"] = ms(c["tail_end"] - c["idle_end"])
    f["storm_ms_per_1000"] = f["storm_cpu_ms"] / d["storm"] * 1000
    # What the starts cost beyond the watcher's own idle rate over the
    # same time (a poller's cost is per period, not per start).
    f["storm_extra_ms_per_1000"] = ((f["storm_cpu_ms"] - f["idle_ms_per_s"] * f["storm_tail_s"])
                                    / d["storm"] * 1000)
    log = read_text(run["log"])
    f["kept_promoted"] = "SCHED_FIFO" in log
    f["watcher"] = watch_output(run)
    if not f["kept_promoted"]:
        problems.append("the process to keep promoted was not SCHED_FIFO at the end")
    return f, problems


def oneshot_figures(run, cfg):
    d = load_json(run["data"])
    n = d["count"]
    after, after_reset = d["after"], d["after_reset"]
    ok = (after["processes"] == n and after["fifo_at_prio"] == after["threads"]
          and after["threads"] >= n)
    reset_ok = after_reset["processes"] == n and after_reset["other"] == after_reset["threads"]
    f = {"count": n, "wall_ms": ms(d["run"]["wall_ns"]), "cpu_ms": ms(d["run"]["cpu_ns"]),
         "rc": d["run"]["rc"], "threads": after["threads"], "fifo_at_prio": after["fifo_at_prio"],
         "correct": ok, "reset_wall_ms": ms(d["reset"]["wall_ns"]),
         "reset_cpu_ms": ms(d["reset"]["cpu_ns"]), "reset_rc": d["reset"]["rc"],
         "reset_correct": reset_ok}
    problems = []
    if not ok:
        problems.append(f"{after['fifo_at_prio']} of {after['threads']} threads at FIFO "
                        f"{cfg['prio']} afterwards ({after['processes']} processes; "
                        f"wrong: {after['wrong']})")
    if f["rc"] != 0:
        problems.append(f"exit code {f['rc']}")
    if not reset_ok or f["reset_rc"] != 0:
        problems.append(f"the reset left {after_reset['threads'] - after_reset['other']} "
                        f"thread(s) not at SCHED_OTHER (exit code {f['reset_rc']})")
    return f, problems


# --------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------

def analyse(runs, meta):
    cfg = dict(meta["config"])
    out_runs = []
    for run in runs:
        rec = run_record(run, OWN_COLUMNS)
        fn = {"restarts": restart_figures, "cost": cost_figures,
              "oneshot": oneshot_figures, "scale": oneshot_figures}.get(run["section"])
        if fn is None:
            raise BenchError(f"run {run['seq']}: unknown section {run['section']!r}")
        rec["figures"], rec["problems"] = fn(run, cfg)
        out_runs.append(rec)

    by = lambda section, tool: [r for r in out_runs
                                if r["section"] == section and r["tool"] == tool]

    # 1. restarts: every start of a contender pooled over its rounds.
    restarts = {}
    for tool in WATCHERS:
        rs = by("restarts", tool)
        if not rs:
            continue
        lat = [x for r in rs for x in r["figures"]["latencies_ms"]]
        got = [x for x in lat if x is not None]
        restarts[tool] = {
            "runs": [r["seq"] for r in rs], "restarts": len(lat), "promoted": len(got),
            "p50_ms": pct(got, 0.5), "p95_ms": pct(got, 0.95),
            "max_ms": max(got) if got else None,
            "mean_ms": sum(got) / len(got) if got else None,
            "min_ms": min(got) if got else None,
            "round_p50_ms": [r["figures"]["p50_ms"] for r in rs],
            "median_round_p50_ms": med([r["figures"]["p50_ms"] for r in rs]),
            "cpu_ms_per_restart": med([r["figures"]["cpu_ms_per_restart"] for r in rs]),
            "spawn_ms_median": med([r["figures"]["spawn_ms_median"] for r in rs]),
            "observe_step_ms_median": med([r["figures"]["observe_step_ms_median"] for r in rs]),
        }
    ref = restarts.get(WATCH_REFERENCE, {})
    for tool, s in restarts.items():
        s["ratio_vs_chrt_loop"] = {k: ratio(s[k], ref.get(k))
                                   for k in ("p50_ms", "p95_ms", "max_ms", "mean_ms")}
        # Per round: the contenders of one round share their pause sequence.
        per_round = []
        for r in by("restarts", tool):
            other = [o for o in by("restarts", WATCH_REFERENCE) if o["pair"] == r["pair"]]
            if other:
                per_round.append(ratio(r["figures"]["p50_ms"], other[0]["figures"]["p50_ms"]))
        s["round_p50_ratios_vs_chrt_loop"] = per_round

    # 2. cost.
    cost = {}
    for tool in ("none",) + WATCHERS:
        rs = by("cost", tool)
        if not rs:
            continue
        f = [r["figures"] for r in rs]
        cost[tool] = {
            "runs": [r["seq"] for r in rs],
            "idle_ms_per_s": med([x["idle_ms_per_s"] for x in f]),
            "idle_cpu_ms": med([x["idle_cpu_ms"] for x in f]),
            "storm_cpu_ms": med([x["storm_cpu_ms"] for x in f]),
            "storm_ms_per_1000": med([x["storm_ms_per_1000"] for x in f]),
            "storm_extra_ms_per_1000": med([x["storm_extra_ms_per_1000"] for x in f]),
            "storm_tail_s": med([x["storm_tail_s"] for x in f]),
            "storm_wall_s": med([x["storm_wall_s"] for x in f]),
            "storm_rate_per_s": med([x["storm_rate_per_s"] for x in f]),
            "forks_in_idle": med([x["forks_in_idle"] for x in f]),
            "forks_in_storm": med([x["forks_in_storm"] for x in f]),
            "kept_promoted": all(x["kept_promoted"] is not False for x in f),
        }
    ref = cost.get(WATCH_REFERENCE, {})
    base = cost.get("none", {})
    for tool, s in cost.items():
        s["ratio_vs_chrt_loop"] = {k: ratio(s[k], ref.get(k)) for k in
                                   ("idle_ms_per_s", "storm_cpu_ms", "storm_ms_per_1000",
                                    "storm_wall_s")}
        s["storm_wall_vs_none"] = ratio(s["storm_wall_s"], base.get("storm_wall_s"))

    # 3. one-shot.
    oneshot = {}
    for tool in ONESHOT:
        rs = by("oneshot", tool)
        if not rs:
            continue
        f = [r["figures"] for r in rs]
        walls = [x["wall_ms"] for x in f]
        oneshot[tool] = {
            "runs": [r["seq"] for r in rs], "rounds": len(rs),
            "wall_ms": med(walls), "wall_min_ms": min(walls), "wall_max_ms": max(walls),
            "cpu_ms": med([x["cpu_ms"] for x in f]),
            "correct_rounds": sum(1 for x in f if x["correct"]),
            "threads": med([x["threads"] for x in f]),
            "reset_wall_ms": med([x["reset_wall_ms"] for x in f]),
            "reset_correct_rounds": sum(1 for x in f if x["reset_correct"]),
        }
    for ref_tool in ("chrt", "tuna"):
        if "rtlab" in oneshot and ref_tool in oneshot:
            r, t = oneshot["rtlab"], oneshot[ref_tool]
            per_round = []
            for a in by("oneshot", "rtlab"):
                b = [x for x in by("oneshot", ref_tool) if x["pair"] == a["pair"]]
                if b:
                    per_round.append(ratio(a["figures"]["wall_ms"], b[0]["figures"]["wall_ms"]))
            r[f"vs_{ref_tool}"] = {"wall": ratio(r["wall_ms"], t["wall_ms"]),
                                   "cpu": ratio(r["cpu_ms"], t["cpu_ms"]),
                                   "median_round_wall": med(per_round),
                                   "round_wall_ratios": per_round}

    # 3b. the same at SCALE_MANY processes (one round): how the cost grows.
    scale = {}
    for tool in ONESHOT:
        rs = by("scale", tool)
        if not rs or tool not in oneshot:
            continue
        f = rs[0]["figures"]
        scale[tool] = {"run": rs[0]["seq"], "count": f["count"], "wall_ms": f["wall_ms"],
                       "cpu_ms": f["cpu_ms"], "correct": f["correct"],
                       "reset_wall_ms": f["reset_wall_ms"],
                       "wall_per_process_ms": f["wall_ms"] / f["count"],
                       "growth": ratio(f["wall_ms"], oneshot[tool]["wall_ms"]),
                       "count_growth": f["count"] / cfg["many"]}
    for ref_tool in ("chrt", "tuna"):
        if "rtlab" in scale and ref_tool in scale:
            scale["rtlab"][f"vs_{ref_tool}"] = ratio(scale["rtlab"]["wall_ms"],
                                                     scale[ref_tool]["wall_ms"])

    # What one durable replace of the record's file costs on its filesystem.
    fsync = None
    fsync_path = os.path.join(os.path.dirname(runs[0]["data"]), "fsync.json")
    if os.path.exists(fsync_path):
        d = load_json(fsync_path)
        t = [ms(x) for x in d["times_ns"]]
        fsync = {"bytes": d["bytes"], "count": d["count"], "p50_ms": pct(t, 0.5),
                 "p95_ms": pct(t, 0.95), "max_ms": max(t) if t else None}

    summary = {
        "restarts": restarts, "cost": cost, "oneshot": oneshot, "scale": scale,
        "durable_write": fsync,
        "flagged_runs": {str(r["seq"]): r["problems"] for r in out_runs if r["problems"]},
        # Sections 2 and 3 keep the CPUs busy themselves (the storm, the
        # tools): only section 1's mostly idle runs say something about
        # other users' load.
        **disturbed_runs(out_runs, BUSY_PCT_WARN),
        "runs_with_busy_machine": [r["seq"] for r in out_runs if r["section"] == "restarts"
                                   and r["cpu_busy_pct"] >= BUSY_PCT_WARN],
    }
    return {
        "schema": SCHEMA,
        **{k: meta[k] for k in ("date", "host", "kernel", "versions", "config", "commands",
                                "environment") if k in meta},
        "runs": out_runs,
        "summary": summary,
    }


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

SLOW_MS = 50


def slow_starts(res, tool="rtlab-events", threshold=SLOW_MS):
    """(run, latency ms, I/O stall ms) of the starts slower than threshold
    (ms), slowest first."""
    out = []
    for r in res["runs"]:
        if r["section"] != "restarts" or r["tool"] != tool:
            continue
        f = r["figures"]
        for x, io in zip(f["latencies_ms"], f.get("io_stall_ms") or [None] * len(f["latencies_ms"])):
            if x is not None and x > threshold:
                out.append((r["seq"], x, io))
    return sorted(out, key=lambda t: -t[1])


def poll_slow_text(res, po):
    """The end of the change-record paragraph: rtlab --poll's starts that
    took longer than a period plus a scan, with the I/O stall meanwhile."""
    limit = res["config"]["poll_ms"] + 100
    slow = slow_starts(res, "rtlab-poll", limit)
    if not slow:
        return ", mostly hidden in its period."
    ios = [io for _, _, io in slow if io is not None]
    return (f": its {len(slow)} start(s) slower than one {res['config']['poll_ms']} ms period "
            f"plus a scan ({', '.join(fmt(x, 0) for _, x, _ in slow)} ms)"
            + (f" came with {', '.join(fmt(io, 0) for io in ios)} ms of I/O stall in the same "
               f"interval (its own fsync waiting counts there), where the loop's starts saw "
               f"next to none" if ios else "") + ".")


def r3(v):
    return fmt(v, 3)


def label(tool):
    """A contender's name and what it runs, for a Markdown table cell."""
    return f"{tool} ({LABEL[tool]})".replace("|", "\\|")


def summary_rows(res):
    s = res["summary"]
    rows = []
    rs, cs, os_ = s["restarts"], s["cost"], s["oneshot"]
    if "rtlab-events" in rs and WATCH_REFERENCE in rs:
        for tool in ("rtlab-events", "rtlab-poll"):
            if tool in rs:
                rows.append([f"promotion after a restart, p50 (ms): {tool} vs chrt-loop",
                             fmt(rs[tool]["p50_ms"], 1), fmt(rs[WATCH_REFERENCE]["p50_ms"], 1),
                             r3(rs[tool]["ratio_vs_chrt_loop"]["p50_ms"])])
                rows.append([f"promotion after a restart, max (ms): {tool} vs chrt-loop",
                             fmt(rs[tool]["max_ms"], 1), fmt(rs[WATCH_REFERENCE]["max_ms"], 1),
                             r3(rs[tool]["ratio_vs_chrt_loop"]["max_ms"])])
    if WATCH_REFERENCE in cs:
        for tool in ("rtlab-events", "rtlab-poll"):
            if tool in cs:
                rows.append([f"CPU while idle (ms per s): {tool} vs chrt-loop",
                             fmt(cs[tool]["idle_ms_per_s"], 2),
                             fmt(cs[WATCH_REFERENCE]["idle_ms_per_s"], 2),
                             r3(cs[tool]["ratio_vs_chrt_loop"]["idle_ms_per_s"])])
                rows.append([f"CPU during a storm of {res['config']['storm']} starts + 1 s (ms): "
                             f"{tool} vs chrt-loop",
                             fmt(cs[tool]["storm_cpu_ms"], 1),
                             fmt(cs[WATCH_REFERENCE]["storm_cpu_ms"], 1),
                             r3(cs[tool]["ratio_vs_chrt_loop"]["storm_cpu_ms"])])
    n = res["config"]["many"]
    for ref_tool in ("chrt", "tuna"):
        if "rtlab" in os_ and ref_tool in os_:
            rows.append([f"promote {n} processes once, wall (ms): rtlab vs {ref_tool}",
                         fmt(os_["rtlab"]["wall_ms"], 1), fmt(os_[ref_tool]["wall_ms"], 1),
                         r3(os_["rtlab"][f"vs_{ref_tool}"]["wall"])])
    sc = s.get("scale") or {}
    for ref_tool in ("chrt", "tuna"):
        if "rtlab" in sc and ref_tool in sc:
            rows.append([f"promote {sc['rtlab']['count']} processes once (one round), wall (ms): "
                         f"rtlab vs {ref_tool}",
                         fmt(sc["rtlab"]["wall_ms"], 1), fmt(sc[ref_tool]["wall_ms"], 1),
                         r3(sc["rtlab"][f"vs_{ref_tool}"])])
    return ["what (median)", "rtlab", "reference", "ratio rtlab / reference"], rows


def render_md(res):
    cfg = res["config"]
    env = res.get("environment", {})
    s = res["summary"]
    rs, cs, os_ = s["restarts"], s["cost"], s["oneshot"]
    v = res["versions"]
    out = ["# rtlab tune vs `pgrep | xargs chrt` and tuna\n"]
    out.append(f"Generated by `bench/tune-vs-chrt.sh` on {res['date']}.\n")
    tuna = v.get("tuna") or f"not compared: {cfg.get('tuna_missing_why') or 'not available'}"
    rt_seen = env.get("rt_programs_seen") or "none"
    out.append(md_table(["", ""], host_rows(res, [("clocksource", "clocksource")]) + [
        ["RT throttling", env.get("rt_bandwidth", "-")],
        ["threads on the machine (at the end)", fmt(env.get("threads"))],
        ["filesystem of rtlab's change record ($RTLAB_STATE_DIR)", env.get("state_fs", "-")],
        ["rtlab", v["rtlab"]],
        ["chrt / pgrep", f"{v['chrt']} / {v['pgrep']}"],
        ["tuna", tuna],
        ["probe", f"{v['python']} (the bench's observer and clock)"],
        ["CPU time from", {"v1-cpuacct": "a cgroup v1 cpuacct group per watcher run "
                           "(cpuacct.usage: the watcher and every process it started)",
                           "v2": "a cgroup v2 group per watcher run (cpu.stat usage_usec)",
                           "proc-stat": "/proc/PID/stat utime+stime+cutime+cstime of the "
                           "watcher (clock ticks)"}.get(cfg["cpu_accounting"],
                                                        cfg["cpu_accounting"])],
        ["setup", f"FIFO {cfg['prio']} everywhere; 1. {cfg['rounds']} round(s) x "
                  f"{cfg['restarts']} restarts per watcher, {cfg['pause_min_ms']}-"
                  f"{cfg['pause_max_ms']} ms apart (random, the same sequence for every "
                  f"watcher of a round), observer step {cfg['observe_us']} us, timeout "
                  f"{cfg['timeout_ms']} ms; 2. {cfg['cost_rounds']} round(s), {cfg['idle_s']} s "
                  f"idle + {cfg['storm']} `/bin/true` + 1 s; 3. {cfg['many']} processes x "
                  f"{cfg['oneshot_rounds']} round(s); order rotated each round; "
                  f"{cfg['settle']} s pause before each run"],
        ["other real-time programs", f"at the start: {env.get('rt_programs_at_start') or 'none'}; "
                                     f"seen before the runs: {rt_seen}"],
    ], numeric=False))
    out.append("")
    c = res["commands"]
    lines = [f"# 1-2. watchers ({cfg['name_restarted']} = the restarted process, a symlink to "
             f"/bin/sleep; $TMP/rules.toml: match = \"{cfg['name_restarted']}\", exact, fifo "
             f"{cfg['prio']})",
             c["rtlab-events"], c["rtlab-poll"], c["chrt-loop"],
             f"# 3. one-shot ({cfg['name_many']} = {cfg['many']} sleeping processes), each "
             f"followed by its reset"]
    for t in ONESHOT:
        if f"oneshot-{t}" in c:
            lines += [c[f"oneshot-{t}"], "  " + c[f"reset-{t}"]]
    out += command_lines(lines, extra_legend="; the watchers run in their own cgroup, through "
                         "`bash -c 'echo $$ >CG/cgroup.procs && exec ...'`")

    out.append("## Summary\n")
    out.append("Medians. Ratios are rtlab / reference: below 1 = rtlab promoted sooner, used "
               "less CPU or finished sooner.\n")
    out.append(md_table(*summary_rows(res)))
    out.append("")
    notes = [f"run {seq}: " + "; ".join(p) for seq, p in s["flagged_runs"].items()]
    notes += disturbance_notes(s, BUSY_PCT_WARN, busy_why="section 1 only; other users' work")
    out += note_lines(notes)

    # ---- 1
    out.append("## 1. Time to promotion after a (re)start\n")
    out.append(
        f"Each start: the bench reads CLOCK_MONOTONIC, starts `{cfg['name_restarted']} 3600` with "
        f"`posix_spawn` (vfork + exec: when it returns, the process has its name), then polls "
        f"`sched_getscheduler(pid)` every {cfg['observe_us']} us until it reads SCHED_FIFO, "
        f"reads the priority, kills the process and waits a random pause. Latency = the "
        f"moment SCHED_FIFO is seen - the clock before the spawn, so it includes the spawn "
        f"itself (median "
        f"{fmt(med([x['spawn_ms_median'] for x in rs.values()]), 2)} ms) and up to one "
        f"observer step (median step {fmt(med([x['observe_step_ms_median'] for x in rs.values()]), 2)} "
        f"ms). All starts of a watcher pooled over its rounds; percentiles are nearest-rank "
        f"(p95 of {next(iter(rs.values()))['restarts'] if rs else 0} starts = the "
        f"{math.ceil(0.95 * (next(iter(rs.values()))['restarts'] if rs else 0))}th fastest). "
        f"Ratios vs chrt-loop.\n")
    header = ["watcher", "starts", "promoted", "min (ms)", "p50 (ms)", "p95 (ms)", "max (ms)",
              "mean (ms)", "ratio p50", "ratio p95", "ratio max", "median of round p50 ratios",
              "watcher CPU per start (ms)"]
    rows = []
    for tool, x in rs.items():
        ra = x["ratio_vs_chrt_loop"]
        rows.append([label(tool), x["restarts"], x["promoted"],
                     fmt(x["min_ms"], 2), fmt(x["p50_ms"], 2), fmt(x["p95_ms"], 2),
                     fmt(x["max_ms"], 2), fmt(x["mean_ms"], 2), r3(ra["p50_ms"]),
                     r3(ra["p95_ms"]), r3(ra["max_ms"]),
                     r3(med(x["round_p50_ratios_vs_chrt_loop"])),
                     fmt(x["cpu_ms_per_restart"], 2)])
    out.append(md_table(header, rows))
    out.append("")
    out.append("Per run (a round's watchers waited the same pauses):\n")
    header = ["run", "round", "watcher", "promoted", "p50 (ms)", "p95 (ms)", "max (ms)",
              "rtlab's changes", "watcher CPU (ms)", *HOST_LOAD_HEADER]
    rows = []
    for r in [r for r in res["runs"] if r["section"] == "restarts"]:
        f = r["figures"]
        rows.append([r["seq"], r["pair"], r["tool"], f"{f['promoted']}/{f['restarts']}",
                     fmt(f["p50_ms"], 2), fmt(f["p95_ms"], 2), fmt(f["max_ms"], 2),
                     fmt(f["watcher"].get("changed")), fmt(f["cpu_ms"], 1),
                     *host_load_cells(r)])
    out.append(md_table(header, rows, text_cols=3))
    out.append("")
    for tool, limit in (("rtlab-events", SLOW_MS), ("rtlab-poll", cfg["poll_ms"] + 100),
                        (WATCH_REFERENCE, cfg["poll_ms"] + 100)):
        slow = slow_starts(res, tool, limit)
        if slow:
            out.append(f"{tool}: starts slower than {limit} ms, with the machine's I/O stall "
                       f"while each waited (/proc/pressure/io `some`: time in which some task, "
                       f"the watcher's own fsync included, waited for the disk): " + ", ".join(
                           f"{fmt(x, 1)} ms (run {seq}, I/O stall {fmt(io, 1)} ms)"
                           for seq, x, io in slow) + ".\n")

    # ---- 2
    out.append("## 2. Cost of keeping watch\n")
    out.append(
        f"Each watcher keeps one matching process promoted through {cfg['idle_s']} s of an "
        f"otherwise idle benchmark, then through a fork storm: the probe starts "
        f"{cfg['storm']} `/bin/true` one after another (`posix_spawn` + `waitpid`), plus 1 s "
        f"for what is still queued. CPU time = the watcher's cgroup (rtlab with all its "
        f"threads; the shell loop with every pgrep, xargs, chrt and sleep it started, "
        f"exited ones included). `forks` = the machine's process starts in that phase "
        f"(/proc/stat `processes`: other users' too, which the event watcher also has to "
        f"look at). `beyond its idle rate` = (storm + 1 s CPU - idle CPU per s x the same time) "
        f"per 1000 starts: what the starts themselves cost it. `none` = the storm without a "
        f"watcher. Medians over "
        f"{cfg['cost_rounds']} round(s); ratios vs chrt-loop.\n")
    header = ["watcher", "idle CPU (ms per s)", "ratio", "forks while idle",
              "storm + 1 s CPU (ms)", "ratio", "beyond its idle rate, per 1000 starts (ms)",
              "storm wall (s)", "storm starts/s", "storm wall vs none", "kept process promoted"]
    rows = []
    for tool, x in cs.items():
        ra = x["ratio_vs_chrt_loop"]
        rows.append([label(tool), fmt(x["idle_ms_per_s"], 2),
                     r3(ra["idle_ms_per_s"]) if tool != "none" else "-",
                     fmt(x["forks_in_idle"], 0), fmt(x["storm_cpu_ms"], 1),
                     r3(ra["storm_cpu_ms"]) if tool != "none" else "-",
                     fmt(x["storm_extra_ms_per_1000"], 1),
                     fmt(x["storm_wall_s"], 2), fmt(x["storm_rate_per_s"], 0),
                     r3(x["storm_wall_vs_none"]),
                     "-" if tool == "none" else fmt(x["kept_promoted"])])
    out.append(md_table(header, rows))
    out.append("")
    header = ["run", "round", "watcher", "idle (s)", "idle CPU (ms)", "forks while idle",
              "storm + 1 s CPU (ms)", "forks in storm + 1 s", "storm wall (s)",
              *HOST_LOAD_HEADER]
    rows = []
    for r in [r for r in res["runs"] if r["section"] == "cost"]:
        f = r["figures"]
        rows.append([r["seq"], r["pair"], r["tool"], fmt(f["idle_s"], 1),
                     fmt(f["idle_cpu_ms"], 1), fmt(f["forks_in_idle"]),
                     fmt(f["storm_cpu_ms"], 1), fmt(f["forks_in_storm"]),
                     fmt(f["storm_wall_s"], 2), *host_load_cells(r)])
    out.append("Per run:\n")
    out.append(md_table(header, rows, text_cols=3))
    out.append("")

    # ---- 3
    n = cfg["many"]
    out.append(f"## 3. One-shot promotion of {n} processes\n")
    out.append(
        f"{n} single-threaded sleeps named `{cfg['name_many']}`; each tool promotes them all "
        f"once to FIFO {cfg['prio']}. Wall = from the start of `bash -c CMD` to its end "
        f"(the same shell start-up for all three); CPU = the children's user+sys "
        f"(getrusage). Before each run every thread was checked to be SCHED_OTHER, after it "
        f"every thread to be FIFO {cfg['prio']} (`correct`), then reset (rtlab: "
        f"`rtlab tune undo --all`; chrt and tuna: `pgrep -x | xargs -L1 chrt -o -p 0`) and "
        f"checked again. Medians over {cfg['oneshot_rounds']} round(s).\n")
    header = ["tool", "wall (ms)", "min-max (ms)", "CPU (ms)", "correct rounds",
              "ratio wall rtlab / tool", "median of round ratios", "ratio CPU rtlab / tool",
              "reset wall (ms)", "reset correct"]
    rows = []
    for tool, x in os_.items():
        vs = {} if tool == "rtlab" else os_["rtlab"].get(f"vs_{tool}", {}) if "rtlab" in os_ else {}
        rows.append([label(tool), fmt(x["wall_ms"], 1),
                     f"{fmt(x['wall_min_ms'], 1)}-{fmt(x['wall_max_ms'], 1)}",
                     fmt(x["cpu_ms"], 1), f"{x['correct_rounds']}/{x['rounds']}",
                     "-" if tool == "rtlab" else r3(vs.get("wall")),
                     "-" if tool == "rtlab" else r3(vs.get("median_round_wall")),
                     "-" if tool == "rtlab" else r3(vs.get("cpu")),
                     fmt(x["reset_wall_ms"], 1), f"{x['reset_correct_rounds']}/{x['rounds']}"])
    out.append(md_table(header, rows))
    out.append("")
    header = ["run", "round", "tool", "wall (ms)", "CPU (ms)", "threads FIFO "
              f"{cfg['prio']}", "reset wall (ms)", *HOST_LOAD_HEADER]
    rows = []
    for r in [r for r in res["runs"] if r["section"] == "oneshot"]:
        f = r["figures"]
        rows.append([r["seq"], r["pair"], r["tool"], fmt(f["wall_ms"], 1), fmt(f["cpu_ms"], 1),
                     f"{f['fifo_at_prio']}/{f['threads']}", fmt(f["reset_wall_ms"], 1),
                     *host_load_cells(r)])
    out.append("Per run (" + HOST_LOAD_LEGEND + "):\n")
    out.append(md_table(header, rows, text_cols=3))
    out.append("")
    sc = s["scale"]
    if sc:
        big = next(iter(sc.values()))["count"]
        out.append(f"### The same with {big} processes (one round)\n")
        out.append(f"How each tool's time grows with the number of processes: `growth` = wall "
                   f"at {big} / median wall at {n} ({big / n:g}x the processes: a tool whose "
                   f"cost is linear in them shows about {big / n:g}).\n")
        header = ["tool", "wall (ms)", "CPU (ms)", "per process (ms)", f"growth vs {n}",
                  "ratio wall rtlab / tool", "correct", "reset wall (ms)"]
        rows = []
        for tool, x in sc.items():
            rows.append([label(tool), fmt(x["wall_ms"], 1), fmt(x["cpu_ms"], 1),
                         fmt(x["wall_per_process_ms"], 3), fmt(x["growth"], 2),
                         "-" if tool == "rtlab" else r3(sc.get("rtlab", {}).get(f"vs_{tool}")),
                         fmt(x["correct"]), fmt(x["reset_wall_ms"], 1)])
        out.append(md_table(header, rows))
        out.append("")
    out += interpretation(res)
    return "\n".join(out)


def interpretation(res):
    """What the numbers mean, with this run's figures."""
    cfg, env, s = res["config"], res.get("environment", {}), res["summary"]
    rs, cs, os_, fs = s["restarts"], s["cost"], s["oneshot"], s["durable_write"]
    out = ["## What the numbers mean\n"]
    ev, po, lp = rs.get("rtlab-events"), rs.get("rtlab-poll"), rs.get(WATCH_REFERENCE)
    if ev and lp and po:
        r = ev["ratio_vs_chrt_loop"]["p50_ms"]
        out.append(
            f"- **Process events vs polling.** `rtlab tune watch` promoted a restarted process "
            f"{fmt(ev['p50_ms'], 1)} ms after its start at the median"
            + (f" ({fmt(1 / r, 0)}x sooner than the `pgrep | chrt` loop's "
               f"{fmt(lp['p50_ms'], 1)} ms, ratio {r3(r)})" if r else "")
            + f", p95 {fmt(ev['p95_ms'], 1)} ms, max {fmt(ev['max_ms'], 1)} ms. The pollers "
            f"are bound by their period: a start lands at a random phase of the "
            f"{cfg['poll_ms']} ms cycle, so they promote about half a period after it on "
            f"average and at worst a period plus one scan later (rtlab --poll p50 "
            f"{fmt(po['p50_ms'], 1)} / max {fmt(po['max_ms'], 1)} ms, the loop "
            f"{fmt(lp['p50_ms'], 1)} / {fmt(lp['max_ms'], 1)} ms). `--poll` gains nothing in "
            f"latency over the loop (p50 ratio {r3(po['ratio_vs_chrt_loop']['p50_ms'])}), "
            f"only in CPU (section 2). Neither chrt nor tuna can do this at all without such "
            f"a loop.")
        slow = slow_starts(res)
        fs_txt = (f"on this filesystem ({env.get('state_fs', '?')}) a durable replace of a "
                  f"{fs['bytes'] // 1000} kB file took {fmt(fs['p50_ms'], 2)} ms at the median, "
                  f"{fmt(fs['p95_ms'], 2)} ms p95, {fmt(fs['max_ms'], 1)} ms max ({fs['count']} "
                  f"tries after the runs, on a quiet disk)") if fs else \
            "the durable-write probe did not run"
        slow_txt = ""
        if slow:
            ios = [io for _, _, io in slow if io is not None]
            slow_txt = (f"The {len(slow)} event-driven start(s) slower than {SLOW_MS} ms in this "
                        f"run ({', '.join(fmt(x, 0) for _, x, _ in slow)} ms) are far above "
                        f"that")
            if ios:
                slow_txt += (f", and the machine's disk was busy while they waited: "
                             f"{', '.join(fmt(io, 0) for io in ios)} ms of I/O stall "
                             f"(/proc/pressure/io `some`) in the same intervals, against a "
                             f"median of {fmt(med(x for r_ in res['runs'] if r_['section'] == 'restarts' for x in (r_['figures'].get('io_stall_ms') or [])), 1)} "
                             f"ms over all starts")
            slow_txt += (". A busy disk (other users' builds on this shared machine) makes "
                         "single fsyncs take tens to hundreds of ms, and the process runs at "
                         "SCHED_OTHER meanwhile. ")
        out.append(
            f"- **Where the event path's time goes: the change record.** Before a change "
            f"rtlab writes its change record durably (temp file, fsync, rename, fsync of the "
            f"directory, under an flock): one write for all the threads of one batch of "
            f"events, and a second only when the kernel set something other than asked. A "
            f"promotion waits for this disk I/O. "
            f"{fs_txt[0].upper() + fs_txt[1:]}. " + slow_txt
            + (f"No event-driven start of this run took longer than {SLOW_MS} ms. "
               if not slow else "")
            + "What a busy disk costs: while this bench was written (with the earlier "
            "record code, two writes per thread), strace of the watcher showed fsyncs of 83 "
            "ms, and of 200 + 107 ms, in front of the `sched_setattr`, while a `cargo build` "
            "linked; those starts took 89 and 171 ms instead of 5-15 ms. Other development "
            "runs, during a build's link and a 3 GB `dd`, saw single starts of 0.95, 1.6 and "
            "2.0 s. The `pgrep "
            "| chrt` loop never touches the disk; rtlab --poll pays the same writes"
            + poll_slow_text(res, po))
    ce, cp, cl = cs.get("rtlab-events"), cs.get("rtlab-poll"), cs.get(WATCH_REFERENCE)
    if ce and cp and cl:
        idle_s = cfg["idle_s"]
        fps = ce["forks_in_idle"] / idle_s if ce["forks_in_idle"] is not None else None
        out.append(
            f"- **Idle cost.** With nothing to do but keep one process promoted, rtlab's event "
            f"watcher used {fmt(ce['idle_ms_per_s'], 2)} ms of CPU per second (ratio "
            f"{r3(ce['ratio_vs_chrt_loop']['idle_ms_per_s'])} vs the loop): it wakes for every "
            f"process start on the machine ("
            + (f"{fmt(fps, 1)} per second here, other users' included" if fps else
               "none happened on the machine during these windows")
            + f") and reads each new thread from /proc, checks its stop flag every 200 ms "
            f"and rescans all of /proc every 10 s. rtlab --poll used {fmt(cp['idle_ms_per_s'], 2)} "
            f"ms/s: about {fmt(cp['idle_ms_per_s'] * cfg['poll_ms'] / 1000, 1)} ms per full "
            f"scan of the machine's ~{env.get('threads', '?')} threads every {cfg['poll_ms']} ms "
            f"(ratio {r3(cp['ratio_vs_chrt_loop']['idle_ms_per_s'])}). The loop: "
            f"{fmt(cl['idle_ms_per_s'], 2)} ms/s for four process starts (pgrep, xargs, chrt, "
            f"sleep) and pgrep's read of every process every {cfg['poll_ms']} ms.")
        per_start = ce["storm_extra_ms_per_1000"]
        out.append(
            f"- **Fork storm.** Watching by events costs CPU per process start anywhere on the "
            f"machine: during {cfg['storm']} starts (+1 s) rtlab's event watcher used "
            f"{fmt(ce['storm_cpu_ms'], 1)} ms, the loop {fmt(cl['storm_cpu_ms'], 1)} ms (ratio "
            f"{r3(ce['ratio_vs_chrt_loop']['storm_cpu_ms'])}), rtlab --poll "
            f"{fmt(cp['storm_cpu_ms'], 1)} ms. Beyond its idle rate that is "
            f"{fmt(per_start / 1000 if per_start is not None else None, 3)} ms per process "
            f"start for the event watcher (for each fork and exec event it reads the "
            f"process's name from /proc and stops there when no rule names it; the stat of "
            f"its threads, and the command line, only when a rule may match), about nothing "
            f"for the pollers, whose cost is per period ({fmt(cp['storm_extra_ms_per_1000'], 1)} "
            f"and {fmt(cl['storm_extra_ms_per_1000'], 1)} ms per 1000 starts: noise). The storm "
            f"itself ran at {fmt(ce['storm_rate_per_s'], 0)} starts/s with the event watcher "
            f"and {fmt(cs['none']['storm_rate_per_s'], 0) if 'none' in cs else '-'} without a "
            f"watcher (ratio of wall times {r3(ce['storm_wall_vs_none'])}"
            + ("; on 2 CPUs the watcher's /proc reads compete with the forking process)"
               if (ce["storm_wall_vs_none"] or 0) > 1.1
               and (ce["storm_wall_vs_none"] or 0) > (cl["storm_wall_vs_none"] or 0) + 0.1 else
               f"; the loop, which does nothing per start, shows "
               f"{r3(cl['storm_wall_vs_none'])}: no slowdown stands out from the noise)"
               if (ce["storm_wall_vs_none"] or 0) > 1.1 else
               "; no slowdown stands out from the noise of the no-watcher runs: "
               + ", ".join(fmt(r_["figures"]["storm_wall_s"], 2) for r_ in res["runs"]
                           if r_["section"] == "cost" and r_["tool"] == "none") + " s)")
            + f". Per second the event watcher spent "
            f"{fmt(ce['storm_cpu_ms'] / ce['storm_tail_s'] if ce['storm_tail_s'] else None, 0)} "
            f"ms of CPU in the storm: at a few thousand starts per second it would need a "
            f"large share of a CPU, where the pollers' cost stays fixed; its --rescan still "
            f"catches what an event overrun loses.")
    fails = []
    for r_ in res["runs"]:
        if r_["section"] != "restarts" or not r_["tool"].startswith("rtlab"):
            continue
        f = r_["figures"]
        seen = {x["pid"]: x for x in f["starts"]}
        for e in f["watcher"].get("errors") or []:
            smp = seen.get(e["pid"])
            fails.append((r_["seq"], e, smp))
    if fails:
        lines = []
        for seq, e, smp in fails:
            view = ("the observer saw it at FIFO " + str(smp["priority"]) + " "
                    + fmt(smp["latency_ms"], 1) + " ms after its start and then killed it"
                    if smp and smp["promoted"] else "the observer did not see it promoted")
            lines.append(f"run {seq}, pid {e['pid']}: \"{e['error']}\"; {view}")
        out.append(
            "- **rtlab reported failures** (flagged above): " + "; ".join(lines) + ". The "
            "probe kills each start as soon as it sees SCHED_FIFO; when that falls between "
            "rtlab's `sched_setattr` and its re-check of the thread's start time, rtlab finds "
            "no thread and reports the change as failed, with a warning that the id \"now "
            "names another thread\": in fact the id named no thread at all and the change had "
            "succeeded. A process that exits right after its promotion (a crash loop) gets "
            "the same alarming message.")
    n = cfg["many"]
    if "rtlab" in os_:
        r = os_["rtlab"]
        parts = []
        for t in ("chrt", "tuna"):
            if t in os_:
                parts.append(f"{fmt(os_[t]['wall_ms'], 1)} ms for {t} (ratio "
                             f"{r3(r[f'vs_{t}']['wall'])})")
        sc = s["scale"]
        txt = (
            f"- **One-shot.** `rtlab tune set` promoted {n} processes in {fmt(r['wall_ms'], 1)} "
            f"ms against " + " and ".join(parts) + ". "
            f"Correct rounds: " + ", ".join(f"{t} {x['correct_rounds']}/{x['rounds']}"
                                            for t, x in os_.items()) + ". "
            f"rtlab spent {fmt(r['cpu_ms'], 1)} ms of CPU for it, {fmt(r['cpu_ms'] / n, 2)} ms "
            f"per thread: it reads every matching thread's settings, records all {n} changes "
            f"in one durable write of its change record "
            f"({fmt(fs['p50_ms'] if fs else None, 2)} ms at the probe's median), then makes "
            f"them with one sched_setattr (and sched_getattr to check) each. chrt starts one "
            f"process per pid "
            f"(`xargs -L1`) after pgrep; tuna starts one python interpreter, reads /proc once "
            f"and calls sched_setscheduler per thread.")
        if "rtlab" in sc:
            x = sc["rtlab"]
            txt += (f" With {x['count']} processes ({fmt(x['count_growth'], 0)}x) rtlab took "
                    f"{fmt(x['wall_ms'], 0)} ms, {fmt(x['growth'], 1)}x its time for {n}"
                    + "".join(f"; {t} {fmt(sc[t]['wall_ms'], 0)} ms ({fmt(sc[t]['growth'], 1)}x)"
                              for t in ("chrt", "tuna") if t in sc)
                    + (": rtlab's cost grows faster than the number of processes."
                       if (x["growth"] or 0) > (x["count_growth"] or 0) * 1.2 else
                       ": rtlab's cost grows no faster than the number of processes."))
        txt += (f" The reset shows the other side: `rtlab tune undo --all` took back the {n} "
                f"changes in {fmt(r['reset_wall_ms'], 1)} ms (one record rewrite), the chrt "
                f"reset loop took {fmt(os_.get('chrt', {}).get('reset_wall_ms'), 1)} ms.")
        out.append(txt)
    out.append(
        "- **All threads or the main one.** Plain `chrt -p PID` (the paper's command) changes "
        "only the thread PID, the main thread: a multi-threaded process keeps its other "
        "threads at SCHED_OTHER (`chrt -a -p` changes all). tuna changes all with "
        "`--affect_children` (given here), rtlab all by default (`--threads` narrows). The "
        "processes here are single-threaded sleeps, so all three do the same work; "
        "`correct` counts every thread.")
    out.append(
        "- **TuneD is not compared.** Its scheduler plugin is the one other tool that keeps "
        "promoting processes as they start (it listens to perf events), but it runs only as "
        "the tuned daemon, configured through a profile and driven over D-Bus (tuned-adm): "
        "it cannot be started side by side as a command in the same invocation without "
        "installing and starting a system service.")
    if not res["versions"].get("tuna"):
        out.append(f"- **tuna is not compared:** {cfg.get('tuna_missing_why') or 'not available'}.")
    out.append(
        f"- **How the start is timed.** The bench's CLOCK_MONOTONIC just before `posix_spawn` "
        f"is the start; /proc/PID/stat's start time (field 22, also recorded per start) "
        f"counts in clock ticks of 1/{env.get('clk_tck', 100)} s, too coarse for the event "
        f"path. The observer is a SCHED_OTHER python loop calling `sched_getscheduler(pid)` "
        f"(a syscall, no /proc read) every {cfg['observe_us']} us; it neither matches the "
        f"rule nor competes at real-time priority. The restarted process is SCHED_FIFO "
        f"{cfg['prio']} once promoted and is killed at once, so no real-time process runs "
        f"between starts.")
    out.append("")
    return out


def render_console(res):
    out = console_table(*summary_rows(res))
    s = res["summary"]
    if s["flagged_runs"]:
        out.append("")
        out.append("flagged runs: " + json.dumps(s["flagged_runs"]))
    return "\n".join(out)


def main(argv=None):
    return run_cli("tune_compare", __doc__, argv,
                   columns=MANIFEST_COLUMNS, file_columns=FILE_COLUMNS,
                   analyse=analyse, render_md=render_md, render_console=render_console)


if __name__ == "__main__":
    sys.exit(main())
