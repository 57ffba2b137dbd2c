#!/usr/bin/env python3
"""Compare `rtlab measure timer` with cyclictest, run by run (python3 stdlib only).

Called by bench/timer-vs-cyclictest.sh with a manifest (runs.tsv) that lists,
for every run, which tool ran, its histfile, its JSON and its exact command.
Both tools' histfiles are read by the SAME code (parse_histfile, hist_stats),
so the comparison is made at cyclictest's resolution: 1 us bins, latencies
truncated to whole microseconds.

Writes a Markdown report and a JSON file, and prints the summary table.
It can also be run on its own over the files a previous run kept:
    python3 bench/timer_compare.py --manifest DIR/runs.tsv --meta DIR/meta.json \
        --md out.md --json out.json
"""

import sys
from fractions import Fraction

from benchlib import (
    HOST_LOAD_HEADER, HOST_LOAD_LEGEND, RUN_COLUMNS, BenchError, command_lines, console_table,
    disturbance_notes, disturbed_runs, fmt, host_load_cells, host_rows, load_json, md_table,
    med, note_lines, pairs_of, ratio, results_document, run_cli, run_record,
)

SCHEMA = "rtlab.bench.timer-vs-cyclictest/1"
TOLERANCE = Fraction(5, 100)  # the 5 % target for p50 and p99
BUSY_PCT_WARN = 5.0  # whole-machine busy % during a run above which it is flagged
QUANTILES = {"p50": "0.5", "p99": "0.99"}
RATIO_METRICS = ("samples", "p50_us", "p99_us", "max_us")
OWN_COLUMNS = ("pair", "seq", "tool")
FILE_COLUMNS = ("hist", "json", "log")  # relative to the manifest
MANIFEST_COLUMNS = OWN_COLUMNS + FILE_COLUMNS + RUN_COLUMNS


# --------------------------------------------------------------------------
# Histfile: shared by both tools
# --------------------------------------------------------------------------

def parse_histfile(path):
    """Read a cyclictest --histfile (rtlab writes the same layout).

    Rows are "BIN COUNT [COUNT...]" with one count column per thread (plus a
    summary column with -H); only the first thread's column is used here,
    the benchmark runs one thread. The trailer gives Total (in-range samples
    only), Min/Avg/Max latencies in us and the number of Histogram Overflows
    (samples >= the histogram range).
    """
    bins = {}
    trailer = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise BenchError(f"cannot read histfile {path}: {e}") from e
    for lineno, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            body = line.lstrip("#").strip()
            if ":" not in body:
                continue
            key, _, rest = body.partition(":")
            values = rest.split()
            if values and values[0].isdigit():
                trailer[key.strip()] = int(values[0])
            continue
        fields = line.split()
        if len(fields) < 2:
            raise BenchError(f"{path}:{lineno}: expected 'BIN COUNT', got {line!r}")
        try:
            b, count = int(fields[0]), int(fields[1])
        except ValueError as e:
            raise BenchError(f"{path}:{lineno}: not a histogram row: {line!r}") from e
        bins[b] = bins.get(b, 0) + count
    if not bins and "Total" not in trailer:
        raise BenchError(f"{path}: no histogram rows and no '# Total' line: not a histfile")
    in_range = sum(bins.values())
    if "Total" in trailer and trailer["Total"] != in_range:
        raise BenchError(
            f"{path}: '# Total: {trailer['Total']}' disagrees with the sum of the rows ({in_range})"
        )
    return {
        "bins": bins,
        "hist_range_us": (max(bins) + 1) if bins else None,
        "in_range": in_range,
        "overflows": trailer.get("Histogram Overflows", 0),
        "min_us": trailer.get("Min Latencies"),
        "avg_us": trailer.get("Avg Latencies"),
        "max_us_line": trailer.get("Max Latencies"),
    }


def hist_max_us(h):
    """The largest latency in us: the trailer's Max line (it also covers
    overflows), else the highest non-empty bin."""
    if h["max_us_line"] is not None:
        return h["max_us_line"]
    nonzero = [b for b, c in h["bins"].items() if c]
    return max(nonzero) if nonzero else None


def hist_percentile(h, q):
    """Smallest bin b whose cumulative count (up to and including b) is
    >= q * total, total including overflows; the max when the quantile falls
    in the overflow region. q is exact (a Fraction or a decimal string)."""
    q = Fraction(q)
    total = h["in_range"] + h["overflows"]
    if total == 0:
        return None
    need = q * total
    cumulative = 0
    for b in sorted(h["bins"]):
        cumulative += h["bins"][b]
        if cumulative > 0 and cumulative >= need:
            return b
    return hist_max_us(h)


def hist_stats(path):
    h = parse_histfile(path)
    out = {
        "samples": h["in_range"] + h["overflows"],
        "in_range": h["in_range"],
        "overflows": h["overflows"],
        "min_us": h["min_us"],
        "avg_us": h["avg_us"],
        "max_us": hist_max_us(h),
        "hist_range_us": h["hist_range_us"],
    }
    for name, q in QUANTILES.items():
        out[f"{name}_us"] = hist_percentile(h, q)
    return out


# --------------------------------------------------------------------------
# Each tool's own JSON: only for figures the histfile cannot give
# --------------------------------------------------------------------------

def rtlab_json_figures(path):
    doc = load_json(path)
    if doc.get("schema") != "rtlab.run/1":
        raise BenchError(f"{path}: schema {doc.get('schema')!r}, expected 'rtlab.run/1'")
    series = doc.get("series") or []
    if len(series) != 1:
        raise BenchError(f"{path}: expected one series (one CPU), found {len(series)}")
    s = series[0]
    pct = s.get("percentiles_ns") or {}
    return {
        "status": doc.get("status"),
        "samples": s.get("samples"),
        "missed": s.get("missed"),
        "dropped": s.get("dropped"),
        "min_ns": s.get("min_ns"),
        "mean_ns": s.get("mean_ns"),
        "p50_ns": pct.get("p50"),
        "p99_ns": pct.get("p99"),
        "max_ns": s.get("max_ns"),
        "actual_sched": (s.get("thread") or {}).get("actual"),
        "timer_slack_ns": (s.get("thread") or {}).get("timer_slack_ns"),
        "warnings": doc.get("warnings") or [],
        "effective": doc.get("effective"),
    }


def cyclictest_json_figures(path):
    doc = load_json(path)
    threads = doc.get("thread") or {}
    if len(threads) != 1:
        raise BenchError(f"{path}: expected one thread, found {len(threads)}")
    t = next(iter(threads.values()))
    return {
        "return_code": doc.get("return_code"),
        "cycles": t.get("cycles"),
        "min_us": t.get("min"),
        "avg_us": t.get("avg"),
        "max_us": t.get("max"),
        "cpu": t.get("cpu"),
        "version": doc.get("rt_test_version:", doc.get("rt_test_version")),
    }


# --------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------

def within(r, tol=TOLERANCE):
    return r is not None and abs(r - 1) <= float(tol) + 1e-12


def analyse(runs, meta):
    expected = (meta["duration_s"] * 1_000_000) // meta["interval_us"]
    out_runs = []
    for run in runs:
        rec = run_record(run, OWN_COLUMNS)
        rec["expected_periods"] = expected
        rec["hist"] = hist_stats(run["hist"])
        if run["tool"] == "rtlab":
            j = rtlab_json_figures(run["json"])
            rec["rtlab_json"] = j
            rec["missed"] = j["missed"]
            # Cross-check: the histfile and the JSON come from the same samples.
            rec["consistent"] = (j["samples"] == rec["hist"]["samples"])
            rec["samples_plus_missed"] = (j["samples"] or 0) + (j["missed"] or 0)
            # rtlab's ns figures truncated to us, to set beside the histfile's.
            rec["json_ns_truncated_us"] = {
                k.replace("_ns", "_us"): (None if j[k] is None else int(j[k]) // 1000)
                for k in ("p50_ns", "p99_ns", "max_ns")}
        elif run["tool"] == "cyclictest":
            j = cyclictest_json_figures(run["json"])
            rec["cyclictest_json"] = j
            rec["reported_samples"] = j["cycles"]
            rec["consistent"] = (j["cycles"] == rec["hist"]["samples"])
            # cyclictest skips periods it woke up too late for without saying
            # so; the shortfall also includes start-up/shut-down slack.
            rec["unreported_periods"] = expected - (j["cycles"] or 0)
        else:
            raise BenchError(f"unknown tool {run['tool']!r} in the manifest")
        out_runs.append(rec)

    pairs = []
    for p, a, b in pairs_of(out_runs, "cyclictest"):
        ratios = {m: ratio(a["hist"][m], b["hist"][m]) for m in RATIO_METRICS}
        pairs.append({
            "pair": p,
            "rtlab_seq": a["seq"],
            "cyclictest_seq": b["seq"],
            "ratios_rtlab_over_cyclictest": ratios,
            "p50_within_5pct": within(ratios["p50_us"]),
            "p99_within_5pct": within(ratios["p99_us"]),
        })

    median_ratios = {m: med(p["ratios_rtlab_over_cyclictest"][m] for p in pairs)
                     for m in RATIO_METRICS}
    medians = {}
    for tool in ("rtlab", "cyclictest"):
        rs = [r for r in out_runs if r["tool"] == tool]
        medians[tool] = {m: med(r["hist"][m] for r in rs)
                         for m in ("samples", "min_us", "p50_us", "p99_us", "max_us")}
    rt = [r for r in out_runs if r["tool"] == "rtlab"]
    medians["rtlab"].update({
        "missed": med(r["missed"] for r in rt),
        "p50_ns": med(r["rtlab_json"]["p50_ns"] for r in rt),
        "p99_ns": med(r["rtlab_json"]["p99_ns"] for r in rt),
        "max_ns": med(r["rtlab_json"]["max_ns"] for r in rt),
    })
    cy = [r for r in out_runs if r["tool"] == "cyclictest"]
    medians["cyclictest"]["unreported_periods"] = med(r["unreported_periods"] for r in cy)

    # Pairs disturbed by a host episode swing the per-pair ratios; the
    # ratio of each tool's median over all its runs is the steadier figure.
    ratio_of_medians = {
        m: (medians["rtlab"][m] / medians["cyclictest"][m]
            if medians["cyclictest"][m] else None)
        for m in ("samples", "p50_us", "p99_us", "max_us")
    }
    p50_ok = within(median_ratios["p50_us"])
    p99_ok = within(median_ratios["p99_us"])
    summary = {
        "pairs": len(pairs),
        "expected_periods_per_run": expected,
        "median_ratios_rtlab_over_cyclictest": median_ratios,
        "ratio_of_medians_rtlab_over_cyclictest": ratio_of_medians,
        "p50_within_5pct": p50_ok,
        "p99_within_5pct": p99_ok,
        "target_met": p50_ok and p99_ok,
        "median_per_tool": medians,
        "all_runs_consistent": all(r["consistent"] for r in out_runs),
        **disturbed_runs(out_runs, BUSY_PCT_WARN),
    }
    method = {
        "histfile": "both tools' --histfile read by the same parser: 1 us bins, "
                    "latency truncated to whole us",
        "percentile": "smallest bin b with cumulative count (incl. b) >= q * total; "
                      "total includes overflows; max if q falls in the overflow region",
        "samples": "histfile in-range rows + '# Histogram Overflows'",
        "expected_periods": "duration / interval",
        "ratios": "rtlab / cyclictest per pair; summary = median over pairs",
        "target": "median p50 and p99 ratios within 5 % of 1",
    }
    return results_document(SCHEMA, meta, method, out_runs, pairs, summary)


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def us(ns):
    return "-" if ns is None else f"{ns / 1000:.3f}"


def summary_rows(res):
    s = res["summary"]
    mr = s["median_ratios_rtlab_over_cyclictest"]
    med = s["median_per_tool"]
    rows = []
    for m, label in (("samples", "samples"), ("p50_us", "p50 (us)"),
                     ("p99_us", "p99 (us)"), ("max_us", "max (us)")):
        per_pair = ", ".join(fmt(p["ratios_rtlab_over_cyclictest"][m]) for p in res["pairs"])
        if m in ("p50_us", "p99_us"):
            ok = "yes" if s[m.split("_")[0] + "_within_5pct"] else "NO"
        else:
            ok = "n/a"
        rom = s["ratio_of_medians_rtlab_over_cyclictest"][m]
        rows.append([label, fmt(med["rtlab"][m], 1), fmt(med["cyclictest"][m], 1),
                     fmt(rom), fmt(mr[m]), per_pair, ok])
    return ["metric", "rtlab (median)", "cyclictest (median)", "ratio of medians",
            "median ratio rtlab/cyclictest", "per-pair ratios", "within 5 %"], rows


def render_md(res):
    cfg = res["config"]
    s = res["summary"]
    out = []
    out.append("# rtlab measure timer vs cyclictest\n")
    out.append(f"Generated by `bench/timer-vs-cyclictest.sh` on {res['date']}.\n")
    out.append(md_table(["", ""], host_rows(res) + [
        ["rtlab", res["versions"]["rtlab"]],
        ["cyclictest", res["versions"]["cyclictest"]],
        ["setup", f"{cfg['pairs']} pair(s) (rtlab then cyclictest), {cfg['duration_s']} s each, "
                  f"CPU {cfg['cpu']}, interval {cfg['interval_us']} us, SCHED_FIFO {cfg['priority']}, "
                  f"histogram range {cfg['hist_max_us']} us, {cfg['settle_s']} s pause before each run"],
    ], numeric=False))
    out.append("")
    out += command_lines([res["commands"]["rtlab"], res["commands"]["cyclictest"]])

    verdict = "**met**" if s["target_met"] else "**not met**"
    out.append("## Summary\n")
    out.append(f"Target: median rtlab/cyclictest ratio of p50 and p99 within 5 % of 1 - {verdict} "
               f"(p50: {'within' if s['p50_within_5pct'] else 'outside'}, "
               f"p99: {'within' if s['p99_within_5pct'] else 'outside'}).\n")
    header, rows = summary_rows(res)
    out.append(md_table(header, rows))
    out.append("")
    med = s["median_per_tool"]
    for q in ("p50_us", "p99_us"):
        base = med["cyclictest"][q]
        if base:
            out.append(f"- Resolution: at cyclictest's median {q[:3]} of {fmt(base, 0)} us, one 1 us bin "
                       f"is {100 / base:.1f} % of the value"
                       + (" - more than the 5 % tolerance, so only an identical bin counts as within"
                          if 100 / base > 5 else "") + ".")
    out.append("")
    out.append(
        f"Periods in {cfg['duration_s']} s at {cfg['interval_us']} us: {s['expected_periods_per_run']}. "
        f"rtlab median missed deadlines: {fmt(med['rtlab']['missed'], 0)}; "
        f"cyclictest median unreported periods (expected - reported samples): "
        f"{fmt(med['cyclictest']['unreported_periods'], 0)}. "
        f"rtlab's own ns figures (median over runs): p50 {us(med['rtlab']['p50_ns'])} us, "
        f"p99 {us(med['rtlab']['p99_ns'])} us, max {us(med['rtlab']['max_ns'])} us.\n")
    notes = []
    if not s["all_runs_consistent"]:
        notes.append("some run's histfile sample count differs from the count in its own JSON "
                     "(see `consistent` in the JSON file)")
    notes += disturbance_notes(s, BUSY_PCT_WARN)
    out += note_lines(notes)

    out.append("## Per pair\n")
    out.append("All us figures come from each tool's histfile, parsed by the same code (1 us bins, "
               "truncated); rtlab's ns columns come from its JSON. `periods` = duration / interval; "
               "for rtlab `missed` = deadlines it counted as missed, for cyclictest "
               "`missed` = periods minus reported samples (cyclictest skips late periods silently). "
               + HOST_LOAD_LEGEND + " (the measured tool itself uses about 1 % of one CPU), to spot "
               "runs disturbed by other work.\n")
    header = ["run", "tool", "samples", "periods", "missed", "overflows", "min", "p50", "p99", "max",
              "p50 ns", "p99 ns", "max ns", *HOST_LOAD_HEADER]
    by_seq = {r["seq"]: r for r in res["runs"]}
    for p in res["pairs"]:
        rows = []
        for seq in (p["rtlab_seq"], p["cyclictest_seq"]):
            r = by_seq[seq]
            h = r["hist"]
            if r["tool"] == "rtlab":
                j = r["rtlab_json"]
                missed, extra = r["missed"], [j["p50_ns"], j["p99_ns"], j["max_ns"]]
            else:
                missed, extra = r["unreported_periods"], ["-", "-", "-"]
            rows.append([r["seq"], r["tool"], h["samples"], r["expected_periods"], missed,
                         h["overflows"], fmt(h["min_us"]), h["p50_us"], h["p99_us"], h["max_us"],
                         *extra, *host_load_cells(r)])
        ra = p["ratios_rtlab_over_cyclictest"]
        rows.append(["", "**ratio**", fmt(ra["samples"]), "", "", "", "",
                     fmt(ra["p50_us"]), fmt(ra["p99_us"]), fmt(ra["max_us"]), "", "", "", "", "", ""])
        out.append(f"### Pair {p['pair']}\n")
        out.append(md_table(header, rows))
        out.append("")
    out.append("Raw figures per run, ratios and the environment: "
               "`bench/results/timer-vs-cyclictest.json`.\n")
    return "\n".join(out)


def render_console(res):
    s = res["summary"]
    med = s["median_per_tool"]
    out = console_table(*summary_rows(res))
    out.append("")
    out.append(f"periods per run: {s['expected_periods_per_run']}; rtlab median missed: "
               f"{fmt(med['rtlab']['missed'], 0)}; cyclictest median unreported periods: "
               f"{fmt(med['cyclictest']['unreported_periods'], 0)}")
    out.append(f"rtlab ns (median): p50 {us(med['rtlab']['p50_ns'])} us, p99 "
               f"{us(med['rtlab']['p99_ns'])} us, max {us(med['rtlab']['max_ns'])} us")
    out.append("5 % target for p50 and p99: " + ("MET" if s["target_met"] else "NOT MET"))
    return "\n".join(out)


def main(argv=None):
    return run_cli("timer_compare", __doc__, argv,
                   columns=MANIFEST_COLUMNS, file_columns=FILE_COLUMNS,
                   analyse=analyse, render_md=render_md, render_console=render_console,
                   # This report has always been written without a final newline.
                   json_required=True, md_final_newline=False)


if __name__ == "__main__":
    sys.exit(main())
