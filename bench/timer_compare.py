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

import argparse
import json
import os
import statistics
import sys
from fractions import Fraction

SCHEMA = "rtlab.bench.timer-vs-cyclictest/1"
TOLERANCE = Fraction(5, 100)  # the 5 % target for p50 and p99
BUSY_PCT_WARN = 5.0  # whole-machine busy % during a run above which it is flagged
QUANTILES = {"p50": "0.5", "p99": "0.99"}
RATIO_METRICS = ("samples", "p50_us", "p99_us", "max_us")
MANIFEST_COLUMNS = (
    "pair", "seq", "tool", "hist", "json", "log", "started_at", "ended_at",
    "elapsed_s", "rc", "loadavg", "busy", "cpu_busy_pct", "cpu_steal_pct", "command",
)


class BenchError(Exception):
    pass


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

def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise BenchError(f"cannot read JSON {path}: {e}") from e


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

def read_manifest(path):
    runs = []
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                line = line.rstrip("\n")
                if not line or line.startswith("#"):
                    continue
                fields = line.split("\t")
                if len(fields) != len(MANIFEST_COLUMNS):
                    raise BenchError(
                        f"{path}:{lineno}: {len(fields)} columns, expected {len(MANIFEST_COLUMNS)}"
                    )
                run = dict(zip(MANIFEST_COLUMNS, fields))
                base = os.path.dirname(os.path.abspath(path))
                for key in ("hist", "json", "log"):  # relative to the manifest
                    run[key] = os.path.join(base, run[key])
                run["pair"] = int(run["pair"])
                run["seq"] = int(run["seq"])
                run["rc"] = int(run["rc"])
                run["elapsed_s"] = float(run["elapsed_s"])
                run["busy"] = int(run["busy"])
                run["cpu_busy_pct"] = float(run["cpu_busy_pct"])
                run["cpu_steal_pct"] = float(run["cpu_steal_pct"])
                runs.append(run)
    except OSError as e:
        raise BenchError(f"cannot read manifest {path}: {e}") from e
    if not runs:
        raise BenchError(f"{path}: no runs listed")
    return runs


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def within(r, tol=TOLERANCE):
    return r is not None and abs(r - 1) <= float(tol) + 1e-12


def analyse(runs, meta):
    expected = (meta["duration_s"] * 1_000_000) // meta["interval_us"]
    out_runs = []
    for run in runs:
        rec = {k: run[k] for k in ("pair", "seq", "tool", "started_at", "ended_at",
                                   "elapsed_s", "rc", "loadavg", "busy", "cpu_busy_pct",
                                   "cpu_steal_pct", "command")}
        rec["busy_build_processes"] = rec.pop("busy")
        rec["loadavg_before"] = rec.pop("loadavg")
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
    for p in sorted({r["pair"] for r in out_runs}):
        a = [r for r in out_runs if r["pair"] == p and r["tool"] == "rtlab"]
        b = [r for r in out_runs if r["pair"] == p and r["tool"] == "cyclictest"]
        if len(a) != 1 or len(b) != 1:
            raise BenchError(f"pair {p}: expected one rtlab and one cyclictest run")
        a, b = a[0], b[0]
        ratios = {m: ratio(a["hist"][m], b["hist"][m]) for m in RATIO_METRICS}
        pairs.append({
            "pair": p,
            "rtlab_seq": a["seq"],
            "cyclictest_seq": b["seq"],
            "ratios_rtlab_over_cyclictest": ratios,
            "p50_within_5pct": within(ratios["p50_us"]),
            "p99_within_5pct": within(ratios["p99_us"]),
        })

    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

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
        "failed_runs": [r["seq"] for r in out_runs if r["rc"] != 0],
        "runs_with_build_processes": [r["seq"] for r in out_runs if r["busy_build_processes"]],
        "runs_with_busy_machine": [r["seq"] for r in out_runs
                                   if r["cpu_busy_pct"] >= BUSY_PCT_WARN],
    }
    return {
        "schema": SCHEMA,
        **{k: meta[k] for k in ("date", "host", "kernel", "versions", "config",
                                "commands", "environment") if k in meta},
        "method": {
            "histfile": "both tools' --histfile read by the same parser: 1 us bins, "
                        "latency truncated to whole us",
            "percentile": "smallest bin b with cumulative count (incl. b) >= q * total; "
                          "total includes overflows; max if q falls in the overflow region",
            "samples": "histfile in-range rows + '# Histogram Overflows'",
            "expected_periods": "duration / interval",
            "ratios": "rtlab / cyclictest per pair; summary = median over pairs",
            "target": "median p50 and p99 ratios within 5 % of 1",
        },
        "runs": out_runs,
        "pairs": pairs,
        "summary": summary,
    }


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v.is_integer() and digits == 0:
            return str(int(v))
        return f"{v:.{digits}f}"
    return str(v)


def us(ns):
    return "-" if ns is None else f"{ns / 1000:.3f}"


def md_table(header, rows, numeric=True):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 or not numeric else "---:"
                            for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


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
    out.append(md_table(["", ""], [
        ["host", res.get("host", "-")],
        ["kernel (uname -r)", res["kernel"]],
        ["kernel version (uname -v)", res.get("environment", {}).get("uname_v", "-")],
        ["CPU model", res.get("environment", {}).get("cpu_model", "-")],
        ["online CPUs", res.get("environment", {}).get("online_cpus", "-")],
        ["rtlab", res["versions"]["rtlab"]],
        ["cyclictest", res["versions"]["cyclictest"]],
        ["setup", f"{cfg['pairs']} pair(s) (rtlab then cyclictest), {cfg['duration_s']} s each, "
                  f"CPU {cfg['cpu']}, interval {cfg['interval_us']} us, SCHED_FIFO {cfg['priority']}, "
                  f"histogram range {cfg['hist_max_us']} us, {cfg['settle_s']} s pause before each run"],
    ], numeric=False))
    out.append("")
    out.append("Commands (`$TMP` = a temporary directory, removed afterwards; `N` = run number):\n")
    out.append("```sh")
    out.append(res["commands"]["rtlab"])
    out.append(res["commands"]["cyclictest"])
    out.append("```\n")

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
    if s["failed_runs"]:
        notes.append(f"runs {s['failed_runs']} exited non-zero")
    if s["runs_with_build_processes"]:
        notes.append(f"cargo/rustc processes were running at the start of runs "
                     f"{s['runs_with_build_processes']}: those figures may be disturbed")
    if s["runs_with_busy_machine"]:
        notes.append(f"the machine was more than {BUSY_PCT_WARN:g} % busy during runs "
                     f"{s['runs_with_busy_machine']} (other work): those figures may be disturbed")
    for n in notes:
        out.append(f"- Note: {n}.")
    if notes:
        out.append("")

    out.append("## Per pair\n")
    out.append("All us figures come from each tool's histfile, parsed by the same code (1 us bins, "
               "truncated); rtlab's ns columns come from its JSON. `periods` = duration / interval; "
               "for rtlab `missed` = deadlines it counted as missed, for cyclictest "
               "`missed` = periods minus reported samples (cyclictest skips late periods silently). "
               "`load before` = 1-min load average at the start; `CPU busy %` / `steal %` = share of "
               "all CPUs' time busy / stolen by the hypervisor during the run (the measured tool "
               "itself uses about 1 % of one CPU), to spot runs disturbed by other work.\n")
    header = ["run", "tool", "samples", "periods", "missed", "overflows", "min", "p50", "p99", "max",
              "p50 ns", "p99 ns", "max ns", "load before", "CPU busy %", "steal %"]
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
                         *extra, r["loadavg_before"].split()[0] if r["loadavg_before"] else "-",
                         fmt(r["cpu_busy_pct"], 1), fmt(r["cpu_steal_pct"], 1)])
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
    header, rows = summary_rows(res)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths))
    s = res["summary"]
    med = s["median_per_tool"]
    out = [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]
    out.append("")
    out.append(f"periods per run: {s['expected_periods_per_run']}; rtlab median missed: "
               f"{fmt(med['rtlab']['missed'], 0)}; cyclictest median unreported periods: "
               f"{fmt(med['cyclictest']['unreported_periods'], 0)}")
    out.append(f"rtlab ns (median): p50 {us(med['rtlab']['p50_ns'])} us, p99 "
               f"{us(med['rtlab']['p99_ns'])} us, max {us(med['rtlab']['max_ns'])} us")
    out.append("5 % target for p50 and p99: " + ("MET" if s["target_met"] else "NOT MET"))
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", required=True, help="runs.tsv written by the bench script")
    ap.add_argument("--meta", required=True, help="meta.json written by the bench script")
    ap.add_argument("--md", required=True, help="Markdown report to write")
    ap.add_argument("--json", required=True, help="JSON results to write")
    args = ap.parse_args(argv)
    try:
        meta = load_json(args.meta)
        res = analyse(read_manifest(args.manifest), meta)
        with open(args.json + ".tmp", "w", encoding="utf-8") as f:
            json.dump(res, f, indent=2)
            f.write("\n")
        with open(args.md + ".tmp", "w", encoding="utf-8") as f:
            f.write(render_md(res))
        os.replace(args.json + ".tmp", args.json)
        os.replace(args.md + ".tmp", args.md)
    except BenchError as e:
        print(f"timer_compare: {e}", file=sys.stderr)
        return 1
    print(render_console(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
