#!/usr/bin/env python3
"""The report of bench/kurt-guard.sh: rtlab's executive with its guard
learned online against the fixed 100 us guard, from the `rtlab exec
kurt-table --idle-only --json` documents of each round (DIR/learned-N.json,
DIR/fixed-N.json): per task count and round the % of activations within
10 us (the target: >= 99 %), the whole tables, the guards the executive
learned per idle length and the CPU it spent spinning, and the accounting
of every run (planned = started + missed + not reached); the machine with
its load average, the commands and the date.

Usage: kurt_guard.py DIR ROUNDS OUT_MD COMMAND_TEMPLATE
(the machine from the BENCH_* variables of bench/kurt-guard.sh).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import load_json, machine_head, md_table  # noqa: E402
from kurt_processes import BOUNDS_US, pct, within  # noqa: E402

TARGET_PCT = 99.0
GUARDS = [("learned", "--guard auto (learned online)"),
          ("fixed", "--guard 100us --release-early 50us (fixed)")]



def cell(doc, tasks, mode):
    for c in doc["cells"]:
        if c["tasks"] == tasks and c["mode"] == mode and c["load"] == "idle":
            return c
    return None


def us(ns):
    return "-" if ns is None else f"{ns / 1000:.1f}"


def idle_range(b):
    low = b["idle_from_ns"] / 1e6
    high = b.get("idle_below_ns")
    return f"{low:g}-{high / 1e6:g} ms" if high is not None else f"{low:g} ms+"


def within_10_table(docs, rounds, tasks_list):
    header = ["tasks"] + [f"{g} r{r}" for g, _ in GUARDS for r in range(1, rounds + 1)]
    header += [f"learned >= {TARGET_PCT:g} % in every round"]
    rows = []
    for tasks in tasks_list:
        row, learned = [str(tasks)], []
        for guard, _ in GUARDS:
            for r in range(1, rounds + 1):
                w = within(cell(docs[(guard, r)], tasks, "executive"))
                row.append(pct(w[0] if w else None))
                if guard == "learned":
                    learned.append(w[0] if w else None)
        met = all(v is not None and v >= TARGET_PCT for v in learned)
        row.append("**met**" if met else "**NOT met**")
        rows.append(row)
    return md_table(header, rows)


def full_table(docs, guard, rounds, tasks_list):
    rows = []
    for r in range(1, rounds + 1):
        for tasks in tasks_list:
            for mode, label in (("executive", "executive"), ("fifo", "SCHED_FIFO")):
                w = within(cell(docs[(guard, r)], tasks, mode))
                rows.append([str(r), str(tasks), label] + [pct(v) for v in (w or [None] * 5)])
    return md_table(["round", "tasks", "release"] + [f"{b} µs" for b in BOUNDS_US], rows,
                    text_cols=3)


def guard_rows(docs, guard, rounds, tasks_list):
    rows = []
    for r in range(1, rounds + 1):
        for tasks in tasks_list:
            c = cell(docs[(guard, r)], tasks, "executive")
            report = (c or {}).get("executive") or {}
            for t in report.get("threads", []):
                release = t.get("release_early") or {}
                for b in t["guards"]:
                    rows.append([str(r), str(tasks), idle_range(b), str(b["observations"]),
                                 us(b.get("quantile_ns")), us(b["max_ns"]), us(b["guard_ns"]),
                                 str(b.get("capped", 0)), us(release.get("guard_ns")),
                                 f"{t['spin_percent']:.2f}%"])
    header = ["round", "tasks", "idle length", "wake-ups", "p99.5 late (µs)", "max late (µs)",
              "guard (µs)", "capped", "release early (µs)", "spin (% of the CPU)"]
    return md_table(header, rows, text_cols=3)


def accounting_table(docs, rounds):
    rows = []
    for guard, _ in GUARDS:
        for r in range(1, rounds + 1):
            for c in docs[(guard, r)]["cells"]:
                rows.append([guard, str(r), str(c["tasks"]), c["mode"], str(c["status"]),
                             str(c["activations"]), str(c["started"]),
                             str(c["missed_activations"]), str(c["not_reached"]),
                             str(c["deadline_misses"])])
    header = ["guard", "round", "tasks", "release", "status", "planned", "started", "missed",
              "not reached", "deadline misses"]
    return md_table(header, rows, text_cols=5)


def render(docs, rounds, template):
    first = docs[("learned", 1)]
    tasks_list = first["tasks"]
    out = machine_head("kurt-table: the executive's learned guard against the fixed 100 µs guard",
                       "bench/kurt-guard.sh",
                       f"tasks {tasks_list} every {first['period_ns'] // 1000} µs, "
                       f"{first['work_ns'] // 1000} µs of work, "
                       f"{first['duration_ns'] / 1e9:g} s per run, idle, {rounds} rounds "
                       "of (learned, fixed), alternating")
    out += ["", "Commands (GUARD: `--guard auto` or `--guard 100us --release-early 50us`; "
            "N: the round):", "", "```sh", template, "```", ""]
    out.append("Each cell: % of activations whose work started within x µs of its instant. "
               "The learned guard: per idle length the 99.5 % quantile of the executive's own "
               "wake-up lateness plus a quarter, the release margin and 5 µs, within 20 µs-2 ms "
               "and 25 % of the time since the previous activation (docs/exec.md).")
    out += ["", f"## The target: >= {TARGET_PCT:g} % within 10 µs", "",
            within_10_table(docs, rounds, tasks_list)]
    for guard, title in GUARDS:
        out += ["", f"## {title}: every cell", "", full_table(docs, guard, rounds, tasks_list)]
    for guard, title in GUARDS:
        out += ["", f"## {title}: guards and spin", "",
                "Per executive run and idle length: the wake-ups seen, their 99.5 % quantile "
                "and largest lateness, the guard of the last sleep, the sleeps the spin budget "
                "capped; the release margin; the CPU the executive and its tasks spent spinning "
                "(share of the run on their CPU).", "",
                guard_rows(docs, guard, rounds, tasks_list)]
    out += ["", "## Every activation accounted for", "", accounting_table(docs, rounds), ""]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    directory, rounds = sys.argv[1], int(sys.argv[2])
    docs = {(guard, r): load_json(os.path.join(directory, f"{guard}-{r}.json"))
            for guard, _ in GUARDS for r in range(1, rounds + 1)}
    report = render(docs, rounds, sys.argv[4])
    with open(sys.argv[3], "w", encoding="utf-8") as out:
        out.write(report)
    print(report)
