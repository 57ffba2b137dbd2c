#!/usr/bin/env python3
"""What `rtlab monitor` costs, from the runs bench/monitor-cost.sh made
(python3 stdlib only).

Every run is cyclictest on every CPU (-S) in one arm: alone, beside the
monitor at its default duty, or beside it at --duty 100 %. From each run:
cyclictest's p99 and max per CPU (its --json histogram, read with
timer_compare.py's percentile rule) and, beside the monitor, the monitor's
CPU use over the run as % of one CPU, from the kernel (utime + stime of
/proc/PID/stat) and from its own rtlab_monitor_cpu_seconds_total.

Per arm and CPU the report gives the median over the repeats and their
spread (largest - smallest: what noise is on this machine), and the
difference of each monitor arm's median from the alone arm's; a difference
no larger than the larger spread of the two arms (one 1 us bin at least)
is "within noise".
Run on its own over kept raw files:
    python3 bench/monitor_cost.py --manifest DIR/runs.tsv --meta DIR/meta.json \\
        --md out.md --json out.json
"""

import sys

from benchlib import (
    HOST_LOAD_HEADER, HOST_LOAD_LEGEND, RUN_COLUMNS, BenchError, command_lines, console_table,
    disturbance_notes, disturbed_runs, fmt, host_load_cells, host_rows, load_json, md_table, med,
    note_lines, read_text, results_document, run_cli, run_record,
)
from timer_compare import hist_percentile

SCHEMA = "rtlab.bench.monitor-cost/1"
CPU_TARGET_PCT = 1.0  # the monitor's CPU use at the default duty, % of one CPU
BUSY_PCT_WARN = 60.0  # whole-machine busy % above which a run is flagged (cyclictest + monitor are ~1-5 %)
OWN_COLUMNS = ("pair", "seq", "tool")  # pair = round, tool = arm
FILE_COLUMNS = ("json", "monitor", "log")
MANIFEST_COLUMNS = OWN_COLUMNS + FILE_COLUMNS + RUN_COLUMNS
ALONE = "alone"
DEFAULT_ARM = "monitor-default"


def cyclictest_per_cpu(path):
    """{cpu: {samples, overflows, p99_us, max_us}} from cyclictest's --json,
    one thread per CPU (-S)."""
    doc = load_json(path)
    threads = doc.get("thread") or {}
    if not threads:
        raise BenchError(f"{path}: no threads")
    out = {}
    for t in threads.values():
        bins = {int(b): int(c) for b, c in (t.get("histogram") or {}).items()}
        cycles = t.get("cycles")
        if cycles is None or "cpu" not in t:
            raise BenchError(f"{path}: a thread without cycles or cpu: {t}")
        in_range = sum(bins.values())
        h = {"bins": bins, "in_range": in_range, "overflows": cycles - in_range,
             "max_us_line": t.get("max")}
        out[str(t["cpu"])] = {"samples": cycles, "overflows": cycles - in_range,
                              "p99_us": hist_percentile(h, "0.99"), "max_us": t.get("max")}
    return out


def monitor_cpu(path):
    """The monitor's CPU use over the run, % of one CPU: from the kernel and
    from its own counter (None for a run without the monitor)."""
    fields = read_text(path).split()
    if not fields:
        return None
    if len(fields) != 7:
        raise BenchError(f"{path}: expected 'TICKS WALL COUNTER TICKS WALL COUNTER CLK_TCK'")
    t0, w0, c0, t1, w1, c1 = (float(f) for f in fields[:6])
    clk_tck = int(fields[6])
    wall = w1 - w0
    if wall <= 0:
        raise BenchError(f"{path}: no time between the two readings")
    return {"wall_s": wall,
            "kernel_cpu_s": (t1 - t0) / clk_tck,
            "counter_cpu_s": c1 - c0,
            "kernel_pct": 100 * (t1 - t0) / clk_tck / wall,
            "counter_pct": 100 * (c1 - c0) / wall}


def spread(values):
    values = [v for v in values if v is not None]
    return max(values) - min(values) if len(values) >= 2 else None


def analyse(runs, meta):
    arms = meta["config"]["arms"]
    out_runs = []
    for run in runs:
        if run["tool"] not in arms:
            raise BenchError(f"run {run['seq']}: unknown arm {run['tool']!r}")
        rec = run_record(run, OWN_COLUMNS)
        rec["cyclictest"] = cyclictest_per_cpu(run["json"])
        rec["monitor_cpu"] = monitor_cpu(run["monitor"])
        if (rec["monitor_cpu"] is None) != (run["tool"] == ALONE):
            raise BenchError(f"run {run['seq']} ({run['tool']}): monitor readings "
                             f"{'missing' if rec['monitor_cpu'] is None else 'unexpected'}")
        out_runs.append(rec)
    cpus = sorted({c for r in out_runs for c in r["cyclictest"]}, key=int)
    per_arm = {}
    for arm in arms:
        rs = [r for r in out_runs if r["tool"] == arm]
        cell = {"runs": [r["seq"] for r in rs], "cpus": {}}
        for cpu in cpus:
            figs = [r["cyclictest"].get(cpu, {}) for r in rs]
            p99s = [f.get("p99_us") for f in figs]
            maxes = [f.get("max_us") for f in figs]
            cell["cpus"][cpu] = {"p99_us": p99s, "p99_median_us": med(p99s),
                                 "p99_spread_us": spread(p99s), "max_us": maxes,
                                 "max_median_us": med(maxes), "max_spread_us": spread(maxes)}
        if arm != ALONE:
            for source in ("kernel_pct", "counter_pct"):
                values = [r["monitor_cpu"][source] for r in rs]
                cell[f"monitor_{source}"] = values
                cell[f"monitor_{source}_median"] = med(values)
        per_arm[arm] = cell
    differences = {}
    for arm in arms:
        if arm == ALONE:
            continue
        differences[arm] = {}
        for cpu in cpus:
            a, b = per_arm[ALONE]["cpus"][cpu], per_arm[arm]["cpus"][cpu]
            diff = (None if a["p99_median_us"] is None or b["p99_median_us"] is None
                    else b["p99_median_us"] - a["p99_median_us"])
            spreads = [s for s in (a["p99_spread_us"], b["p99_spread_us"]) if s is not None]
            # Never finer than one 1 us bin of cyclictest's histogram.
            noise = max(spreads + [1]) if len(spreads) == 2 else None
            differences[arm][cpu] = {
                "p99_difference_us": diff, "noise_us": noise,
                "within_noise": None if diff is None or noise is None else abs(diff) <= noise}
    default_cpu = per_arm.get(DEFAULT_ARM, {}).get("monitor_kernel_pct_median")
    within = [d["within_noise"] for d in differences.get(DEFAULT_ARM, {}).values()]
    summary = {
        "cpus": cpus,
        "per_arm": per_arm,
        "p99_differences_from_alone": differences,
        "default_duty_cpu_pct": default_cpu,
        "cpu_target_pct": CPU_TARGET_PCT,
        "cpu_target_met": None if default_cpu is None else default_cpu <= CPU_TARGET_PCT,
        "p99_within_noise_at_default_duty": (None if not within or None in within
                                             else all(within)),
        **disturbed_runs(out_runs, BUSY_PCT_WARN),
    }
    method = {
        "p99": "cyclictest --json histogram per thread (1 us bins); smallest bin b with "
               "cumulative count (incl. b) >= 0.99 * cycles; the max if it falls in the overflows",
        "monitor_cpu": "(utime + stime of /proc/PID/stat) / CLK_TCK over the wall time between "
                       "two readings taken just before and just after the cyclictest run; the "
                       "same from the monitor's rtlab_monitor_cpu_seconds_total",
        "noise": "spread = largest - smallest p99 among the repeats of one arm; a difference "
                 "of medians no larger than the larger spread of the two arms (1 us, one bin, "
                 "at least) is within noise",
    }
    return results_document(SCHEMA, meta, method, out_runs, [], summary)


def verdict(value, yes, no):
    return "n/a" if value is None else (yes if value else no)


def summary_rows(res):
    s = res["summary"]
    rows = []
    for arm, cell in s["per_arm"].items():
        for cpu in s["cpus"]:
            c = cell["cpus"][cpu]
            d = s["p99_differences_from_alone"].get(arm, {}).get(cpu, {})
            rows.append([arm, cpu, fmt(c["p99_median_us"], 1),
                         " ".join(fmt(v, 0) for v in c["p99_us"]), fmt(c["p99_spread_us"], 0),
                         fmt(d.get("p99_difference_us"), 1), fmt(d.get("noise_us"), 0),
                         verdict(d.get("within_noise"), "yes", "NO") if d else "",
                         fmt(c["max_median_us"], 1), " ".join(fmt(v, 0) for v in c["max_us"]),
                         fmt(cell.get("monitor_kernel_pct_median"), 3),
                         fmt(cell.get("monitor_counter_pct_median"), 3)])
    return ["arm", "CPU", "p99 median", "p99 per repeat", "p99 spread", "p99 - alone",
            "noise", "within noise", "max median", "max per repeat", "monitor CPU % (kernel)",
            "monitor CPU % (own counter)"], rows


def render_md(res):
    cfg = res["config"]
    s = res["summary"]
    out = ["# rtlab monitor: what it costs\n",
           f"Generated by `bench/monitor-cost.sh` on {res['date']}.\n"]
    out.append(md_table(["", ""], host_rows(res, [("cpuidle", "cpuidle"),
                                                  ("RT throttling", "rt_bandwidth")]) + [
        ["rtlab", res["versions"]["rtlab"]],
        ["cyclictest", res["versions"]["cyclictest"]],
        ["setup", f"{cfg['repeats']} round(s) of the arms {', '.join(cfg['arms'])} in turn; "
                  f"cyclictest {cfg['duration_s']} s on every CPU, interval "
                  f"{cfg['interval_us']} us, SCHED_FIFO {cfg['priority']}, histogram range "
                  f"{cfg['hist_max_us']} us; the monitor at its defaults (SCHED_FIFO 90, 1 ms, "
                  f"10 % duty) or --duty 100 %, scraped every {cfg['scrape_s']} s (protobuf); "
                  f"{cfg['settle_s']} s pause before each run"],
    ], numeric=False))
    out.append("")
    out += command_lines([res["commands"]["cyclictest"], *res["commands"]["monitor"]],
                         extra_legend="; the monitor runs during the cyclictest run of its arm")
    out.append("## Summary\n")
    cpu = s["default_duty_cpu_pct"]
    out.append(f"- Monitor CPU use at the default duty (10 %): **{fmt(cpu, 3)} % of one CPU** "
               f"(median, from /proc/PID/stat), target <= {s['cpu_target_pct']:g} %: "
               f"**{verdict(s['cpu_target_met'], 'met', 'not met')}**.")
    full = s["per_arm"].get("monitor-duty-100", {}).get("monitor_kernel_pct_median")
    out.append(f"- At --duty 100 % (continuous): {fmt(full, 3)} % of one CPU.")
    out.append(f"- cyclictest's p99 beside the monitor at the default duty, every CPU within "
               f"noise of the p99 without it: "
               f"**{verdict(s['p99_within_noise_at_default_duty'], 'yes', 'no')}** "
               f"(noise = the larger spread between repeats of the two arms).\n")
    header, rows = summary_rows(res)
    out.append(md_table(header, rows, text_cols=2))
    out.append("")
    out.append("All latencies in us. `p99 - alone`: the arm's median p99 minus the alone arm's; "
               "`noise`: the larger of the two arms' spreads (largest - smallest p99 of their "
               "repeats); `within noise`: the difference is no larger than the noise.\n")
    out += note_lines(disturbance_notes(s, BUSY_PCT_WARN,
                                        "other work: cyclictest and the monitor use a few %"))
    out.append("## Per run\n")
    out.append(HOST_LOAD_LEGEND + ".\n")
    rows = []
    for r in res["runs"]:
        m = r["monitor_cpu"] or {}
        for cpu, c in sorted(r["cyclictest"].items(), key=lambda kv: int(kv[0])):
            rows.append([r["seq"], r["tool"], cpu, c["samples"], c["overflows"], c["p99_us"],
                         c["max_us"], fmt(m.get("kernel_pct"), 3), fmt(m.get("counter_pct"), 3),
                         *host_load_cells(r)])
    out.append(md_table(["run", "arm", "CPU", "samples", "overflows", "p99", "max",
                         "monitor CPU % (kernel)", "monitor CPU % (own counter)",
                         *HOST_LOAD_HEADER], rows, text_cols=2))
    out.append("")
    out.append("Raw figures per run: `bench/results/monitor-cost.json`.\n")
    return "\n".join(out)


def render_console(res):
    s = res["summary"]
    out = console_table(*summary_rows(res))
    out.append("")
    out.append(f"monitor CPU at the default duty: {fmt(s['default_duty_cpu_pct'], 3)} % of one CPU "
               f"(target <= {s['cpu_target_pct']:g} %: "
               f"{verdict(s['cpu_target_met'], 'met', 'not met')})")
    return "\n".join(out)


def main(argv):
    return run_cli("monitor_cost.py", __doc__, argv, columns=MANIFEST_COLUMNS,
                   file_columns=FILE_COLUMNS, analyse=analyse, render_md=render_md,
                   render_console=render_console, json_required=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
