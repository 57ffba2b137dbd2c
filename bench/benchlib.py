"""Shared by the side-by-side benchmark helpers in bench/ (python3 stdlib only).

timer_compare.py, switch_compare.py and noise_compare.py each read one
benchmark's runs and write its report; what they do alike lives here:
reading the manifest the bench script wrote (bench/lib.sh writes its
common columns), medians and ratios, the number formatting and Markdown
tables of the reports, the host table, the notes on runs a busy machine may
have disturbed, and the command line with its all-or-nothing output.
"""

import argparse
import json
import os
import statistics
import sys


class BenchError(Exception):
    """A run's files are missing or not what the helper expects."""


# --------------------------------------------------------------------------
# Input and assembly
# --------------------------------------------------------------------------

def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise BenchError(f"cannot read JSON {path}: {e}") from e


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        raise BenchError(f"cannot read {path}: {e}") from e


# The manifest columns every bench script writes after its own ones
# (bench/lib.sh: start_manifest, append_manifest_row).
RUN_COLUMNS = (
    "started_at", "ended_at", "elapsed_s", "rc", "loadavg", "busy", "cpu_busy_pct",
    "cpu_steal_pct", "command",
)


def read_manifest(path, columns, file_columns):
    """The runs listed in runs.tsv, one dict per run keyed by `columns`;
    the files named in `file_columns` are made absolute (the manifest names
    them relative to its own directory, so a kept raw directory can move)."""
    runs = []
    base = os.path.dirname(os.path.abspath(path))
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                line = line.rstrip("\n")
                if not line or line.startswith("#"):
                    continue
                fields = line.split("\t")
                if len(fields) != len(columns):
                    raise BenchError(f"{path}:{lineno}: {len(fields)} columns, "
                                     f"expected {len(columns)}")
                run = dict(zip(columns, fields))
                for key in file_columns:
                    run[key] = os.path.join(base, run[key])
                for key in ("pair", "seq", "rc", "busy"):
                    run[key] = int(run[key])
                for key in ("elapsed_s", "cpu_busy_pct", "cpu_steal_pct"):
                    run[key] = float(run[key])
                runs.append(run)
    except OSError as e:
        raise BenchError(f"cannot read manifest {path}: {e}") from e
    if not runs:
        raise BenchError(f"{path}: no runs listed")
    return runs


def run_record(run, own_columns):
    """The start of a run's entry in the results: the benchmark's own
    manifest columns, then the common ones, `busy` and `loadavg` renamed to
    say what they hold (the key order is that of the results JSON)."""
    rec = {k: run[k] for k in own_columns + RUN_COLUMNS}
    rec["busy_build_processes"] = rec.pop("busy")
    rec["loadavg_before"] = rec.pop("loadavg")
    return rec


def pairs_of(runs, other_tool, where=""):
    """(pair number, rtlab's run, other_tool's run) for every pair in
    `runs`, in pair order; `where` qualifies the pair in the error."""
    for p in sorted({r["pair"] for r in runs}):
        a = [r for r in runs if r["pair"] == p and r["tool"] == "rtlab"]
        b = [r for r in runs if r["pair"] == p and r["tool"] == other_tool]
        if len(a) != 1 or len(b) != 1:
            raise BenchError(f"pair {p}{where}: expected one rtlab and one {other_tool} run")
        yield p, a[0], b[0]


def results_document(schema, meta, method, runs, pairs, summary):
    """The results JSON: what meta.json says about the host, the tools and
    the settings, then the benchmark's own method, runs, pairs and summary."""
    return {
        "schema": schema,
        **{k: meta[k] for k in ("date", "host", "kernel", "versions", "config",
                                "commands", "environment") if k in meta},
        "method": method,
        "runs": runs,
        "pairs": pairs,
        "summary": summary,
    }


# --------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------

def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def med(values):
    """The median of the values that are there (None = not measured)."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def disturbed_runs(runs, busy_pct_warn):
    """The runs whose figures a failure or other work on the machine may
    have spoiled, by run number (for the results' summary)."""
    return {
        "failed_runs": [r["seq"] for r in runs if r["rc"] != 0],
        "runs_with_build_processes": [r["seq"] for r in runs if r["busy_build_processes"]],
        "runs_with_busy_machine": [r["seq"] for r in runs if r["cpu_busy_pct"] >= busy_pct_warn],
    }


def rtlab_warnings(runs):
    """Every warning rtlab put in its JSON, once each."""
    return sorted({w for r in runs if r["tool"] == "rtlab" for w in r["figures"]["warnings"]})


# --------------------------------------------------------------------------
# Meta (written by the bench scripts, read back by the helpers)
# --------------------------------------------------------------------------

def write_meta(path, versions, config, commands, extra=None, extra_environment=None):
    """meta.json: when and where the benchmark ran (from the BENCH_*
    variables bench/lib.sh exports), the tools' versions, its settings and
    the command templates. `extra` adds top-level keys after `config`,
    `extra_environment` keys to `environment`."""
    e = os.environ
    meta = {
        "date": e["BENCH_DATE"],
        "host": e["BENCH_HOST"],
        "kernel": e["BENCH_KERNEL"],
        "versions": versions,
        "config": config,
        **(extra or {}),
        "commands": commands,
        "environment": {"uname_v": e["BENCH_UNAME_V"], "cpu_model": e["BENCH_CPU_MODEL"],
                        "online_cpus": e["BENCH_ONLINE"], "clocksource": e["BENCH_CLOCKSOURCE"],
                        **(extra_environment or {})},
    }
    with open(path, "w") as f:
        json.dump(meta, f, indent=2)


# --------------------------------------------------------------------------
# Report
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


def md_table(header, rows, numeric=True, text_cols=1):
    """A Markdown table; with `numeric`, the columns after the first
    `text_cols` are right-aligned."""
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i < text_cols or not numeric else "---:"
                            for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def host_rows(res, extra_environment=()):
    """The first rows of a report's settings table: the machine it ran on.
    `extra_environment`: further (label, key of res["environment"]) rows."""
    env = res.get("environment", {})
    rows = [
        ["host", res.get("host", "-")],
        ["kernel (uname -r)", res["kernel"]],
        ["kernel version (uname -v)", env.get("uname_v", "-")],
        ["CPU model", env.get("cpu_model", "-")],
        ["online CPUs", env.get("online_cpus", "-")],
    ]
    rows += [[label, env.get(key, "-")] for label, key in extra_environment]
    return rows


def command_lines(commands, extra_legend=""):
    """The report's block of command templates (bench/lib.sh: cmd_template)."""
    return [f"Commands (`$TMP` = a temporary directory, removed afterwards; "
            f"`N` = run number{extra_legend}):\n",
            "```sh", *commands, "```\n"]


def disturbance_notes(summary, busy_pct_warn, busy_why="other work"):
    """Notes on the runs disturbed_runs() listed; `busy_why` says what
    the busy % includes besides the measured tool."""
    notes = []
    if summary["failed_runs"]:
        notes.append(f"runs {summary['failed_runs']} exited non-zero")
    if summary["runs_with_build_processes"]:
        notes.append(f"cargo/rustc processes were running at the start of runs "
                     f"{summary['runs_with_build_processes']}: those figures may be disturbed")
    if summary["runs_with_busy_machine"]:
        notes.append(f"the machine was more than {busy_pct_warn:g} % busy during runs "
                     f"{summary['runs_with_busy_machine']} ({busy_why}): those figures may "
                     f"be disturbed")
    return notes


def note_lines(notes):
    """The notes as a list, followed by a blank line if there are any."""
    return [f"- Note: {n}." for n in notes] + ([""] if notes else [])


# The three columns every per-pair table ends with, and what they mean.
HOST_LOAD_HEADER = ["load before", "CPU busy %", "steal %"]
HOST_LOAD_LEGEND = ("`load before` = 1-min load average at the start; `CPU busy %` / `steal %` = "
                    "share of all CPUs' time busy / stolen by the hypervisor during the run")


def host_load_cells(run):
    return [run["loadavg_before"].split()[0] if run["loadavg_before"] else "-",
            fmt(run["cpu_busy_pct"], 1), fmt(run["cpu_steal_pct"], 1)]


def console_table(header, rows):
    """A plain-text table with aligned columns, for the terminal."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths))
    return [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------

def run_cli(prog, description, argv, *, columns, file_columns, analyse, render_md, render_console,
         json_required=False, md_final_newline=True):
    """Reads --manifest and --meta, writes --md (and --json) and prints the
    console summary. The outputs are written to .tmp files first and
    renamed only once all are written, so a failure leaves the previous
    report in place. Returns the exit code."""
    ap = argparse.ArgumentParser(description=description,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", required=True, help="runs.tsv written by the bench script")
    ap.add_argument("--meta", required=True, help="meta.json written by the bench script")
    ap.add_argument("--md", required=True, help="Markdown report to write")
    ap.add_argument("--json", required=json_required,
                    help="JSON results to write" + ("" if json_required else " (optional)"))
    args = ap.parse_args(argv)
    try:
        meta = load_json(args.meta)
        res = analyse(read_manifest(args.manifest, columns, file_columns), meta)
        outputs = [(args.md, render_md(res) + ("\n" if md_final_newline else ""))]
        if json_required or args.json:
            outputs.append((args.json, json.dumps(res, indent=2) + "\n"))
        for path, text in outputs:
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.write(text)
        for path, _ in outputs:
            os.replace(path + ".tmp", path)
    except BenchError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    print(render_console(res))
    return 0


# The machine of a kurt-table bench: (label, the variable its script exports).
KURT_MACHINE = [("host", "BENCH_HOST"), ("kernel (uname -r)", "BENCH_KERNEL"),
                ("CPU model", "BENCH_CPU_MODEL"), ("online CPUs", "BENCH_ONLINE"),
                ("clocksource", "BENCH_CLOCKSOURCE"), ("rtlab", "RTLAB_VERSION"),
                ("cargo/rustc processes at the end", "BENCH_BUSY_BUILDS")]


def machine_head(title, script, setup):
    """A report's first lines: its title, the script and date, and the
    machine (KURT_MACHINE, the load average before and after, `setup`)."""
    env = os.environ.get
    machine = [[label, env(var, "-")] for label, var in KURT_MACHINE]
    machine.append(["load average (1/5/15 min) before, after",
                    f"{env('BENCH_LOADAVG_BEFORE', '-')}; {env('BENCH_LOADAVG_AFTER', '-')}"])
    machine.append(["setup", setup])
    return [f"# {title}", "", f"Generated by `{script}` on {env('BENCH_DATE', '?')}.", "",
            md_table(["", ""], machine, numeric=False)]

