#!/usr/bin/env python3
"""What the witness costs, from the runs bench/witness-cost.sh made
(python3 stdlib only).

Every run is `rtlab measure timer --witness-alternate`: the witness
watches in even seconds of the run and sleeps in odd ones. Each sample
(the samples CSV: cpu,t_ns,latency_ns, t_ns since the run's first
deadline) belongs to the arm of the second its deadline fell in; second 0
(start-up) is left out of both. Per run, period and CPU: p50, p99, p99.9
and max of each arm (exact, from the samples), and the witness's CPU time
(witness.cpu_ns of the result) as % of one CPU over the seconds it
watched. A difference between the arms no larger than the spread between
runs of one arm is noise.
Run on its own over kept raw files:
    python3 bench/witness_cost.py --dir DIR --md out.md
"""

import argparse
import csv
import json
import os
import statistics
import sys

ARMS = ("with", "without")


def percentile(sorted_values, q):
    """The q-quantile by the nearest-rank rule (q in 0..1)."""
    if not sorted_values:
        return None
    rank = max(1, -(-len(sorted_values) * q // 1))
    return sorted_values[int(rank) - 1]


def arms_of(samples_path):
    """{cpu: {arm: sorted latencies ns}} of one samples file."""
    out = {}
    with open(samples_path, newline="") as f:
        for row in csv.reader(f):
            if not row or not row[0].isdigit():
                continue  # the header
            cpu, t_ns, latency = int(row[0]), int(row[1]), int(row[2])
            second = t_ns // 1_000_000_000
            if second == 0:
                continue
            arm = "with" if second % 2 == 0 else "without"
            out.setdefault(cpu, {a: [] for a in ARMS})[arm].append(latency)
    for arms in out.values():
        for values in arms.values():
            values.sort()
    return out


def us(ns):
    return "-" if ns is None else f"{ns / 1000:.1f}"


def analyse(directory):
    runs = []
    with open(os.path.join(directory, "runs.tsv")) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            with open(os.path.join(directory, row["json"])) as j:
                result = json.load(j)
            witness = result.get("witness") or {}
            watched_s = result["elapsed_ns"] / 1e9 / 2
            runs.append({
                "period": row["period"],
                "repeat": int(row["repeat"]),
                "builds": int(row["builds"] or 0),
                "cpu_pct": 100 * witness.get("cpu_ns", 0) / 1e9 / watched_s if watched_s else None,
                "windows": witness.get("windows"),
                "arms": arms_of(os.path.join(directory, row["samples"])),
            })
    return runs


def render(runs, rtlab, command):
    lines = ["# The witness's cost: timer p50/p99 with and without it, in one run", ""]
    lines += [
        "`bench/witness-cost.sh`: each run is `rtlab measure timer --witness-alternate`, the "
        "witness watching in even seconds of the run and asleep in odd ones, so both arms share "
        "the run's conditions second by second. Each sample belongs to the arm of the second its "
        "deadline fell in (second 0, the start-up, to neither); figures are exact, from the "
        "samples file, in µs. `cpu %` is the witness thread's CPU time (witness.cpu_ns) over the "
        "seconds it watched, as % of one CPU.",
        "",
        f"- rtlab: {rtlab}",
        f"- command: `{command}`",
        f"- host: {os.uname().nodename}, kernel {os.uname().release}, {os.cpu_count()} CPUs",
        "",
        "| period | run | cpu | arm | samples | p50 | p99 | p99.9 | max | witness cpu % | windows |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    summary = {}
    for run in runs:
        for cpu, arms in sorted(run["arms"].items()):
            for arm in ARMS:
                values = arms[arm]
                figures = [percentile(values, q) for q in (0.5, 0.99, 0.999)] + [values[-1] if values else None]
                summary.setdefault((run["period"], cpu, arm), []).append(figures)
                cpu_pct = f"{run['cpu_pct']:.2f}" if arm == "with" and run["cpu_pct"] is not None else ""
                windows = str(run["windows"]) if arm == "with" else ""
                lines.append(
                    f"| {run['period']} | {run['repeat']} | {cpu} | {arm} | {len(values)} | "
                    + " | ".join(us(v) for v in figures)
                    + f" | {cpu_pct} | {windows} |"
                )
    lines += ["", "## Median over the runs, and the difference with - without", "",
              "| period | cpu | p50 with | p50 without | Δp50 | p99 with | p99 without | Δp99 | spread of p99 between runs (with / without) |",
              "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for (period, cpu, arm), rows in sorted(summary.items()):
        if arm != "with":
            continue
        other = summary.get((period, cpu, "without"), [])
        med = lambda rs, k: statistics.median(r[k] for r in rs if r[k] is not None)
        p50w, p50o, p99w, p99o = med(rows, 0), med(other, 0), med(rows, 1), med(other, 1)
        spread = lambda rs: max(r[1] for r in rs) - min(r[1] for r in rs)
        lines.append(
            f"| {period} | {cpu} | {us(p50w)} | {us(p50o)} | {(p50w - p50o) / 1000:+.1f} | {us(p99w)} | "
            f"{us(p99o)} | {(p99w - p99o) / 1000:+.1f} | {us(spread(rows))} / {us(spread(other))} |"
        )
    cpu = [r["cpu_pct"] for r in runs if r["cpu_pct"] is not None]
    by_period = {}
    for r in runs:
        if r["cpu_pct"] is not None:
            by_period.setdefault(r["period"], []).append(r["cpu_pct"])
    lines += ["", "Witness CPU use, median per period: " + ", ".join(
        f"{p}: {statistics.median(v):.2f} % of one CPU" for p, v in by_period.items()) + "."]
    busy = [r for r in runs if r["builds"]]
    if busy:
        lines.append(f"{len(busy)} of {len(runs)} runs had cargo/rustc running beside them "
                     "(other work on this shared machine): both arms saw it alike.")
    return "\n".join(lines) + "\n"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--md", required=True)
    p.add_argument("--rtlab", default="rtlab ?")
    p.add_argument("--command", default="")
    a = p.parse_args(argv)
    runs = analyse(a.dir)
    if not runs:
        print("no runs", file=sys.stderr)
        return 1
    text = render(runs, a.rtlab, a.command)
    with open(a.md, "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
