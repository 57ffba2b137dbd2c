#!/usr/bin/env python3
"""Compare `rtlab measure noise` with oslat (rt-tests), run by run (python3
stdlib only).

Called by bench/noise-vs-oslat.sh with a manifest (runs.tsv) that lists, for
every run, which tool ran, its JSON, its log (stdout+stderr) and its exact
command. Both tools spin on one CPU at SCHED_FIFO reading a clock and look at
the gaps between consecutive reads:

  rtlab  a gap above --threshold is a noise event; the JSON gives, per CPU,
         measured_ns, noise_ns (sum of the events), noise_percent,
         max_single_ns and events (ns resolution).
  oslat  every gap goes into a histogram of 1 us buckets labelled 1..B
         (label L = gaps in [L-1, L) us; the last bucket also holds every
         longer gap, whose excess is kept in an internal overflow sum), and
         it prints Minimum / Average / Maximum / Max-Min / Duration. It has
         no "total noise" figure. Here it is rebuilt from its --json:
           events  = samples in buckets with label >= threshold_us + 1
                     (gaps >= threshold), the same events rtlab counts;
           noise   = sum over those buckets of count * (label - 0.5) us
                     (bucket midpoints) + the overflow excess, which is
                     recovered exactly enough from the JSON's avg (six
                     decimals): excess = avg * N - sum(label * count);
           noise % = noise / oslat's measured Duration.
         Lower/upper bounds (bucket edges, +- the avg rounding) are kept.
         oslat's Maximum is the upper edge of the longest gap's bucket.

Writes a Markdown report (and optionally a JSON file) and prints the summary.
It can also be run on its own over the files a previous run kept:
    python3 bench/noise_compare.py --manifest DIR/runs.tsv --meta DIR/meta.json \
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

SCHEMA = "rtlab.bench.noise-vs-oslat/1"
BUSY_PCT_WARN = 60.0  # whole-machine busy % above which a run is flagged (one spinning CPU of 2 = 50 %)
AVG_DECIMALS = 6      # oslat writes "avg" to its JSON with %lf
METRICS = (
    ("max_single_us", "longest single gap (us)"),
    ("noise_us", "total noise (us)"),
    ("noise_percent", "noise % of measured time"),
    ("events", "noise events (gaps >= threshold)"),
    ("long_gaps", "gaps >= LONG us (RT throttling, host stalls)"),
    ("short_noise_us", "noise in the shorter gaps (us)"),
    ("measured_s", "measured time (s)"),
)
OWN_COLUMNS = ("pair", "seq", "tool")
FILE_COLUMNS = ("json", "log")  # relative to the manifest
MANIFEST_COLUMNS = OWN_COLUMNS + FILE_COLUMNS + RUN_COLUMNS


# --------------------------------------------------------------------------
# oslat
# --------------------------------------------------------------------------

FIELD = re.compile(r"^\s*(?P<key>Core|Counter Freq|CPU Freq|Minimum|Average|Maximum|Max-Min|Duration)"
                   r":\s*(?P<value>[-0-9.]+)", re.M)
BUCKET = re.compile(r"^\s*(?P<label>\d+) \(us\):\s*(?P<count>\d+)", re.M)


def parse_oslat_stdout(path):
    """The summary oslat prints at the end (one measured CPU)."""
    text = read_text(path)
    fields = {m["key"]: m["value"] for m in FIELD.finditer(text)}
    for key in ("Minimum", "Average", "Maximum", "Duration"):
        if key not in fields:
            raise BenchError(f"{path}: no '{key}:' line in oslat's output")
    return {
        "core": int(fields["Core"]) if "Core" in fields else None,
        "min_us": int(fields["Minimum"]),
        "avg_us": float(fields["Average"]),
        "max_us": int(fields["Maximum"]),
        "duration_s": float(fields["Duration"]),
        "buckets_printed": {int(m["label"]): int(m["count"]) for m in BUCKET.finditer(text)},
    }


def oslat_figures(json_path, log_path, threshold_us, buckets):
    doc = load_json(json_path)
    threads = doc.get("thread") or {}
    if len(threads) != 1:
        raise BenchError(f"{json_path}: expected one measured CPU, found {len(threads)}")
    t = next(iter(threads.values()))
    try:
        hist = {int(k): int(v) for k, v in (t.get("histogram") or {}).items()}
    except ValueError as e:
        raise BenchError(f"{json_path}: histogram keys/values are not integers: {e}") from e
    if not hist:
        raise BenchError(f"{json_path}: empty histogram")
    for key in ("avg", "max", "min", "duration"):
        if not isinstance(t.get(key), (int, float)):
            raise BenchError(f"{json_path}: thread.{key} missing or not a number")
    top = max(hist)
    if top > buckets:
        raise BenchError(f"{json_path}: bucket label {top} above the {buckets} buckets asked for")
    n = sum(hist.values())
    label_sum = sum(label * c for label, c in hist.items())
    avg_err = 0.5 * 10 ** -AVG_DECIMALS * n  # us, from the avg's rounding
    excess = t["avg"] * n - label_sum      # the overflow sum, us
    last = hist.get(buckets, 0)
    problems = []
    if last == 0 and abs(excess) > avg_err + 1:
        problems.append(f"no overflow bucket samples, yet avg*N - sum = {excess:.0f} us")
    excess = max(excess, 0.0)
    first = threshold_us + 1  # label of the first bucket at or above the threshold
    noisy = {label: c for label, c in hist.items() if label >= first and c}
    events = sum(noisy.values())
    mid = sum(c * (label - 0.5) for label, c in noisy.items()) + excess
    low = sum(c * (label - 1) for label, c in noisy.items()) + excess - avg_err
    # Overflowed gaps are counted as the last label + excess: their true
    # value is up to 1 us more each.
    high = sum(c * label for label, c in noisy.items()) + last + excess + avg_err
    duration_s = float(t["duration"])

    s = parse_oslat_stdout(log_path)
    if s["max_us"] != t["max"]:
        problems.append(f"printed Maximum {s['max_us']} != JSON max {t['max']}")
    if s["min_us"] != t["min"]:
        problems.append(f"printed Minimum {s['min_us']} != JSON min {t['min']}")
    if abs(s["avg_us"] - t["avg"]) > 0.0006:
        problems.append(f"printed Average {s['avg_us']} != JSON avg {t['avg']}")
    for label, c in s["buckets_printed"].items():
        if hist.get(label, 0) != c:
            problems.append(f"printed bucket {label} = {c} != JSON {hist.get(label, 0)}")
            break
    return {
        "cpu": t.get("cpu"),
        "counter_mhz": t.get("freq"),
        "loops": n,
        "loop_ns": duration_s * 1e9 / n if n else None,
        "min_us": t["min"],
        "avg_us": t["avg"],
        "max_single_us": float(t["max"]),
        # Same split as rtlab's: gaps >= buckets-1 us (the last bucket) vs shorter ones.
        "long_gaps": last,
        "short_noise_us": sum(c * (label - 0.5) for label, c in noisy.items() if label < buckets),
        "events": events,
        "noise_us": mid,
        "noise_low_us": max(low, 0.0),
        "noise_high_us": high,
        "overflow_samples_max": last,
        "overflow_excess_us": excess,
        "avg_rounding_us": avg_err,
        "measured_s": duration_s,
        "noise_percent": 100.0 * mid / (duration_s * 1e6) if duration_s else None,
        "return_code": doc.get("return_code"),
        "version": doc.get("rt_test_version:", doc.get("rt_test_version")),
        "consistent": not problems,
        "problems": problems,
    }


# --------------------------------------------------------------------------
# rtlab
# --------------------------------------------------------------------------

def rtlab_figures(path, cpu, buckets):
    doc = load_json(path)
    if doc.get("schema") != "rtlab.run/1":
        raise BenchError(f"{path}: schema {doc.get('schema')!r}, expected 'rtlab.run/1'")
    if doc.get("probe") != "noise":
        raise BenchError(f"{path}: probe {doc.get('probe')!r}, expected 'noise'")
    noise = doc.get("noise")
    if not isinstance(noise, dict):
        raise BenchError(f"{path}: no 'noise' report")
    cpus = [c for c in noise.get("cpus") or [] if c.get("cpu") == cpu]
    if len(cpus) != 1:
        raise BenchError(f"{path}: expected one noise.cpus entry for CPU {cpu}, "
                         f"found {len(cpus)}")
    c = cpus[0]
    by_name = {s.get("name"): s for s in doc.get("series") or []}
    series = by_name.get(c.get("series") or f"cpu{cpu}") or {}
    problems = []
    if doc.get("status") != "complete":
        problems.append(f"status {doc.get('status')}")
    if series and series.get("samples") != c.get("events"):
        problems.append(f"series has {series.get('samples')} samples, noise report "
                        f"{c.get('events')} events")
    if series.get("dropped"):
        problems.append(f"{series['dropped']} events dropped")
    measured_s = c["measured_ns"] / 1e9
    hist_us = series.get("histogram_us") or []
    if series and sum(n for _, n in hist_us) != series.get("samples"):
        problems.append("the series' histogram_us does not hold every event")
    return {
        "cpu": cpu,
        "measured_s": measured_s,
        "noise_us": c["noise_ns"] / 1000.0,
        "noise_percent": c["noise_percent"],
        "max_single_us": c["max_single_ns"] / 1000.0,
        "events": c["events"],
        "windows": c.get("windows"),
        "sources": [{k: s.get(k) for k in ("source", "events", "total_ns", "max_ns", "counted")}
                    for s in c.get("sources") or []],
        # From the series' exact 1 us histogram ([bin_us, count], bin b = gaps in
        # [b, b+1) us = oslat's label b+1), split like oslat's buckets.
        "long_gaps": sum(c for b, c in hist_us if b >= buckets - 1),
        "short_noise_us": sum(c * (b + 0.5) for b, c in hist_us if b < buckets - 1),
        "series_min_us": None if not series else series.get("min_ns", 0) / 1000.0,
        "series_p50_us": None if not series else
        ((series.get("percentiles_ns") or {}).get("p50") or 0) / 1000.0,
        "runtime_ns": noise.get("runtime_ns"),
        "period_ns": noise.get("period_ns"),
        "threshold_ns": noise.get("threshold_ns"),
        "window_ns": noise.get("window_ns"),
        "status": doc.get("status"),
        "elapsed_s": (doc.get("elapsed_ns") or 0) / 1e9,
        "warnings": doc.get("warnings") or [],
        "consistent": not problems,
        "problems": problems,
    }


# --------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------

def analyse(runs, meta):
    cfg = meta["config"]
    out_runs = []
    for run in runs:
        rec = run_record(run, OWN_COLUMNS)
        if run["tool"] == "rtlab":
            f = rtlab_figures(run["json"], cfg["cpu"], cfg["oslat_buckets"])
        elif run["tool"] == "oslat":
            f = oslat_figures(run["json"], run["log"], cfg["threshold_us"], cfg["oslat_buckets"])
            if f["cpu"] != cfg["cpu"]:
                f["problems"].append(f"measured CPU {f['cpu']}, not {cfg['cpu']}")
        else:
            raise BenchError(f"unknown tool {run['tool']!r} in the manifest")
        rec["figures"] = f
        rec["consistent"] = not f["problems"]
        rec["problems"] = f["problems"]
        out_runs.append(rec)

    pairs = []
    for p, a, b in pairs_of(out_runs, "oslat"):
        pairs.append({
            "pair": p, "rtlab_seq": a["seq"], "oslat_seq": b["seq"],
            "ratios_rtlab_over_oslat": {m: ratio(a["figures"][m], b["figures"][m])
                                        for m, _ in METRICS},
        })
    medians = {tool: {m: med(r["figures"][m] for r in out_runs if r["tool"] == tool)
                      for m, _ in METRICS}
               for tool in ("rtlab", "oslat")}
    os_runs = [r for r in out_runs if r["tool"] == "oslat"]
    medians["oslat"].update({
        "noise_low_us": med(r["figures"]["noise_low_us"] for r in os_runs),
        "noise_high_us": med(r["figures"]["noise_high_us"] for r in os_runs),
        "loop_ns": med(r["figures"]["loop_ns"] for r in os_runs),
    })
    summary = {
        "median_per_tool": medians,
        "median_ratios_rtlab_over_oslat": {m: med(p["ratios_rtlab_over_oslat"][m] for p in pairs)
                                           for m, _ in METRICS},
        "ratio_of_medians_rtlab_over_oslat": {m: ratio(medians["rtlab"][m], medians["oslat"][m])
                                              for m, _ in METRICS},
        "all_runs_consistent": all(r["consistent"] for r in out_runs),
        "inconsistent_runs": {r["seq"]: r["problems"] for r in out_runs if not r["consistent"]},
        **disturbed_runs(out_runs, BUSY_PCT_WARN),
        "rtlab_warnings": rtlab_warnings(out_runs),
    }
    method = {
        "rtlab": "noise.cpus[CPU]: measured_ns, noise_ns, noise_percent, max_single_ns, events",
        "oslat": "--json histogram: events = buckets with label >= threshold+1; noise = "
                 "sum(count * (label - 0.5)) + overflow excess (avg * N - sum(label * count)); "
                 "noise % = noise / Duration; max = its Maximum",
        "ratios": "rtlab / oslat per pair; summary = median over pairs, and ratio of medians",
    }
    return results_document(SCHEMA, meta, method, out_runs, pairs, summary)


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

DIGITS = {"max_single_us": 1, "noise_us": 0, "noise_percent": 3, "events": 0, "measured_s": 3,
          "long_gaps": 0, "short_noise_us": 0}


def summary_rows(res):
    s = res["summary"]
    med_ = s["median_per_tool"]
    rows = []
    for m, label in METRICS:
        label = label.replace("LONG", str(res["config"]["oslat_buckets"] - 1))
        per_pair = ", ".join(fmt(p["ratios_rtlab_over_oslat"][m]) for p in res["pairs"])
        rows.append([label, fmt(med_["rtlab"][m], DIGITS[m]), fmt(med_["oslat"][m], DIGITS[m]),
                     fmt(s["ratio_of_medians_rtlab_over_oslat"][m]),
                     fmt(s["median_ratios_rtlab_over_oslat"][m]), per_pair])
    return ["metric", "rtlab (median)", "oslat (median)", "ratio of medians",
            "median ratio rtlab/oslat", "per-pair ratios"], rows


def render_md(res):
    cfg = res["config"]
    s = res["summary"]
    env = res.get("environment", {})
    med_ = s["median_per_tool"]
    thr = cfg["threshold_us"]
    out = ["# rtlab measure noise vs oslat\n"]
    out.append(f"Generated by `bench/noise-vs-oslat.sh` on {res['date']}.\n")
    out.append(md_table(["", ""], host_rows(res, [("clocksource", "clocksource"),
                                                  ("RT throttling", "rt_throttling")]) + [
        ["rtlab", res["versions"]["rtlab"]],
        ["oslat", res["versions"]["oslat"]],
        ["setup", f"{cfg['pairs']} pair(s) (rtlab then oslat), {cfg['duration_s']} s each, "
                  f"CPU {cfg['cpu']}, SCHED_FIFO {cfg['priority']}, threshold {thr} us, "
                  f"rtlab runtime = period = {cfg['period_ms']} ms (no duty cycle), rtlab window "
                  f"{cfg['window_ms']} ms, oslat "
                  f"{cfg['oslat_buckets']} buckets, main thread on CPU {cfg['main_cpu']}, "
                  f"{cfg['settle_s']} s pause before each run"],
    ], numeric=False))
    out.append("")
    out += command_lines([res["commands"]["rtlab"], res["commands"]["oslat"]])

    out.append("## Summary\n")
    out.append("Ratios are rtlab / oslat: 1 = both saw the same. `ratio of medians` = median of "
               "rtlab's runs / median of oslat's runs; `median ratio` = median over pairs of the "
               "per-pair ratio (the two tools never run at the same time, so a pair's ratio also "
               "holds whatever the host did differently in those two runs).\n")
    header, rows = summary_rows(res)
    out.append(md_table(header, rows))
    out.append("")
    out.append(f"oslat's total noise is rebuilt from its histogram (see below); over its runs the "
               f"median bounds are {fmt(med_['oslat']['noise_low_us'], 0)} - "
               f"{fmt(med_['oslat']['noise_high_us'], 0)} us (estimate "
               f"{fmt(med_['oslat']['noise_us'], 0)} us). oslat's loop: "
               f"{fmt(med_['oslat']['loop_ns'], 1)} ns per clock read (median).\n")
    src_rows = []
    for r in [r for r in res["runs"] if r["tool"] == "rtlab"]:
        top = [x for x in r["figures"]["sources"] if x.get("events")][:4]
        src_rows.append([r["seq"], ", ".join(
            f"{x['source']}: {x['events']} ev, {fmt((x['total_ns'] or 0) / 1000, 0)} us"
            for x in top) or "-"])
    if src_rows:
        out.append("rtlab's attribution of the noise, per run (largest sources first; oslat "
                   "attributes nothing):\n")
        out.append(md_table(["run", "sources"], src_rows, numeric=False))
        out.append("")

    notes = []
    for seq, probs in s["inconsistent_runs"].items():
        notes.append(f"run {seq}: " + "; ".join(probs))
    notes += disturbance_notes(s, BUSY_PCT_WARN, busy_why="the spinner alone is one CPU")
    notes += [f"rtlab warned: {w}" for w in s["rtlab_warnings"]]
    out += note_lines(notes)

    out.append("## What is compared, and the settings chosen\n")
    out.append(
        f"- **Same loop.** Both pin one SCHED_FIFO {cfg['priority']} thread to CPU {cfg['cpu']} "
        f"that reads a clock in a tight loop (oslat: `lfence; rdtsc`, converted with the TSC rate it measured; rtlab: "
        f"`clock_gettime(CLOCK_MONOTONIC)` through the vDSO) and looks at the gap between consecutive reads. oslat `--cpu-list {cfg['cpu']} "
        f"-f {cfg['priority']} -D {cfg['duration_s']}`; rtlab `--cpus {cfg['cpu']} --priority "
        f"{cfg['priority']} --duration {cfg['duration_s']}s --threshold {thr}us`.")
    out.append(
        f"- **No duty cycle.** oslat spins for the whole `-D` (after a 1 s pre-heat that it does "
        f"not count), so rtlab runs with `--runtime {cfg['period_ms']}ms --period "
        f"{cfg['period_ms']}ms` (its default is 900 ms of every 1 s): both measure 100 % of the "
        f"time. With the kernel's RT throttling ({env.get('rt_throttling', '?')}) a FIFO thread "
        f"that never sleeps loses the CPU for the rest of each period once its budget is used, "
        f"when anything else wants the CPU; both tools are exposed to it alike, and it shows as "
        f"one gap of about (period - runtime) = tens of ms per second, which dominates both "
        f"totals. How many such gaps fall in a run depends on when the spinning started: the "
        f"first comes about one budget (~0.95 s) after a FIFO thread starts hogging the CPU. "
        f"oslat spins at FIFO through its 1 s pre-heat (and its TSC calibration) before it "
        f"measures, so throttling is already under way and its `-D` s can hold `-D` gaps; "
        f"rtlab measures from the moment its spinner starts, so its first gap comes ~0.95 s "
        f"in and the same duration can hold one gap fewer. That alone moves the total by one "
        f"gap (about 1/{cfg['duration_s']} of it). So the total is also split: gaps >= {cfg['oslat_buckets'] - 1} us (oslat's "
        f"last bucket; rtlab's exact `histogram_us` bins from {cfg['oslat_buckets'] - 1} us "
        f"up) are counted, and the noise of the shorter gaps is summed the same way for both, "
        f"at 1 us bin midpoints (rtlab bin b = [b, b+1) us = oslat label b+1). The shorter-gap "
        f"noise is the like-for-like figure.")
    out.append(
        f"- **Total noise.** rtlab: `noise_ns` = sum of the gaps above {thr} us. oslat prints "
        f"no total; from its `--json` histogram (1 us buckets, `-b {cfg['oslat_buckets']}`, "
        f"label L = gaps in [L-1, L) us) the gaps >= {thr} us are the buckets labelled "
        f">= {thr + 1}; their sum is taken at bucket midpoints (count x (L - 0.5)), plus the "
        f"excess of the gaps longer than the last bucket, which oslat keeps internally and "
        f"which is recovered from its JSON `avg` (avg x N - sum of labels; N = every loop, one "
        f"per {fmt(med_['oslat']['loop_ns'], 0)} ns here, so the avg's 6 decimals leave "
        f"+-0.5e-6 x N us, about {fmt(5e-7 * 1e9 / med_['oslat']['loop_ns'] * cfg['duration_s'], 0) if med_['oslat']['loop_ns'] else '?'} us per run). The "
        f"per-pair tables show in brackets the bounds given by the bucket edges. oslat's "
        f"noise % = that / its measured `Duration`; rtlab's = `noise_ns` / `measured_ns`. Both "
        f"totals include the clock read itself in each gap (tens of ns).")
    out.append(
        f"- **Events and threshold.** rtlab counts a gap *above* {thr} us; oslat's buckets "
        f"put a gap of exactly {thr} us in the first counted bucket: the same events up "
        f"to gaps within a few ns of {thr} us.")
    out.append(
        "- **Longest gap.** rtlab: `max_single_ns` (ns). oslat: `Maximum`, the *upper* edge of "
        "the longest gap's 1 us bucket (truncated us + 1), so up to 1 us above the gap.")
    out.append(
        f"- **Measured time.** oslat's clock-read loop never stops, so its `Duration` is the "
        f"whole `-D` and every gap is in its histogram. rtlab's spinner stops at the edge of "
        f"every attribution window (`--window {cfg['window_ms']}ms`) to read /proc/interrupts, "
        f"/proc/softirqs and getrusage (tens of us each time) for its attribution; that time is "
        f"left out of `measured_ns`, and a gap that falls inside such a read is not seen. So "
        f"rtlab measures slightly less than 100 % of the time (the `measured (s)` column), and "
        f"its total noise can be lower for that reason alone; noise % is relative to each "
        f"tool's own measured time. oslat's main thread sleeps on CPU {cfg['main_cpu']} "
        f"(`-C {cfg['main_cpu']}`); oslat attributes nothing.")
    out.append(
        "- **/dev/cpu_dma_latency.** oslat does not hold it; rtlab runs with `--no-dma-latency` "
        "to match (a spinning CPU never idles, so it matters little). `--no-osnoise`: rtlab "
        "does not also run the kernel's osnoise tracer (absent on this kernel anyway).")
    out.append("")

    out.append("## Per pair\n")
    out.append(HOST_LOAD_LEGEND + " (the spinner alone keeps one CPU busy).\n")
    long_label = f"gaps >= {cfg['oslat_buckets'] - 1} us"
    header = ["run", "tool", "measured (s)", "events", "total noise (us)", "noise %",
              "longest gap (us)", long_label, "shorter-gap noise (us)", *HOST_LOAD_HEADER]
    by_seq = {r["seq"]: r for r in res["runs"]}
    for p in res["pairs"]:
        rows = []
        for seq in (p["rtlab_seq"], p["oslat_seq"]):
            r = by_seq[seq]
            f = r["figures"]
            noise = fmt(f["noise_us"], 0)
            if r["tool"] == "oslat":
                noise += f" ({fmt(f['noise_low_us'], 0)}-{fmt(f['noise_high_us'], 0)})"
            rows.append([r["seq"], r["tool"], fmt(f["measured_s"]), f["events"], noise,
                         fmt(f["noise_percent"]), fmt(f["max_single_us"], 1), f["long_gaps"],
                         fmt(f["short_noise_us"], 0), *host_load_cells(r)])
        ra = p["ratios_rtlab_over_oslat"]
        rows.append(["", "**ratio**", fmt(ra["measured_s"]), fmt(ra["events"]), fmt(ra["noise_us"]),
                     fmt(ra["noise_percent"]), fmt(ra["max_single_us"]), fmt(ra["long_gaps"]),
                     fmt(ra["short_noise_us"]), "", "", ""])
        out.append(f"### Pair {p['pair']}\n")
        out.append(md_table(header, rows, text_cols=2))
        out.append("")
    return "\n".join(out)


def render_console(res):
    out = console_table(*summary_rows(res))
    s = res["summary"]
    m = s["median_per_tool"]["oslat"]
    out.append("")
    out.append(f"oslat total noise bounds (median): {fmt(m['noise_low_us'], 0)} - "
               f"{fmt(m['noise_high_us'], 0)} us")
    if not s["all_runs_consistent"]:
        out.append("inconsistent runs: " + json.dumps(s["inconsistent_runs"]))
    return "\n".join(out)


def main(argv=None):
    return run_cli("noise_compare", __doc__, argv,
                   columns=MANIFEST_COLUMNS, file_columns=FILE_COLUMNS,
                   analyse=analyse, render_md=render_md, render_console=render_console)


if __name__ == "__main__":
    sys.exit(main())
