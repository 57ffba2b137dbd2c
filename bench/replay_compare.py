#!/usr/bin/env python3
"""Report of bench/replay-vs-tcpreplay.sh: the same pcap replayed onto a
veth by tcpreplay (once per timer) and by `rtlab traffic replay`, each
measured by the same receiver, `rtlab traffic record --against PLAN`
(python3 stdlib only).

The manifest (runs.tsv) lists, per run: the rate and count of its plan, the
sender (`tool`: tcpreplay or rtlab, and tcpreplay's `timer`), the
receiver's JSON (`record`) and the sender's own output (`sender`: rtlab's
replay JSON, tcpreplay's printed statistics). From the receiver's result:

  departure error        series `arrival`: |arrival - planned instant|, the
                         first packet's arrival aligned on its instant
                         (signed min/max/mean, % within 1 us / 5 us and the
                         drift from traffic.accuracy; p50/p99/p99.9 from the
                         series' percentiles_ns, max from max_ns)
  inter-departure error  series `arrival_gap`: |arrival gap - planned gap|
                         (% within 1 us / 5 us / 1 % of the planned gap)
  lost                   traffic.counts.lost (stamped sequences never seen)

On a veth the receive stamp is taken inside the packet's transmit call, so
the receiver's arrival errors are the sender's departure errors (plus the
path's few hundred ns). rtlab's own report of its departures (kernel
transmit stamps) is kept beside them in the JSON.

Writes a Markdown report and a JSON file and prints the summary. It can
also be run on its own over the files a previous run kept:
    python3 bench/replay_compare.py --manifest DIR/runs.tsv --meta DIR/meta.json \\
        --md out.md --json out.json
"""

import math
import statistics
import struct
import sys

from benchlib import (BenchError, command_lines, console_table, fmt, host_rows, load_json,
                      md_table, read_text, run_cli, RUN_COLUMNS)

OWN_COLUMNS = ["pair", "rate", "count", "seq", "tool", "timer", "record", "got", "plan", "sender",
               "log"]
MANIFEST_COLUMNS = OWN_COLUMNS + list(RUN_COLUMNS)
FILE_COLUMNS = ["record", "got", "plan", "sender", "log"]

# The targets.
TARGET_RATE = 2000
TARGET_WITHIN_5US_PCT = 99.9
# A schedule computed from the previous packet drifts by each wait's
# overshoot (tens of us per packet); an absolute one only by clock noise.
# Below this slope, ns of error per s of replay, there is no cumulative drift.
DRIFT_LIMIT_NS_PER_S = 1000.0


def accuracy(result, series):
    """The receiver's figures for one error series."""
    acc = next((a for a in result["traffic"]["accuracy"] if a["series"] == series), None)
    stats = next((s for s in result["series"] if s["name"] == series), None)
    if acc is None or stats is None:
        raise BenchError(f"{result.get('id', '?')}: no series {series!r} in the receiver's result")
    pct = stats["percentiles_ns"]
    return {
        "samples": acc["samples"],
        "within_1us_pct": acc["within_1us_pct"],
        "within_5us_pct": acc["within_5us_pct"],
        "within_1pct_of_gap_pct": acc.get("within_1pct_of_gap_pct"),
        "drift_ns_per_s": acc.get("drift_ns_per_s"),
        "signed_min_ns": acc["min_ns"],
        "signed_max_ns": acc["max_ns"],
        "mean_ns": acc["mean_ns"],
        "p50_ns": pct["p50"],
        "p99_ns": pct["p99"],
        "p99_9_ns": pct["p99_9"],
        "max_ns": stats["max_ns"],
    }


def plan_offsets(path):
    """The event offsets of a binary plan, ns (docs/plan-format.md: the
    header length at byte 12, the count at 16, 24-byte events whose first
    8 bytes are the offset)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BenchError(f"cannot read plan {path}: {e}") from e
    if data[:8] != b"RTLPLAN\0" or len(data) < 64:
        raise BenchError(f"{path}: not a binary plan")
    header_len, = struct.unpack_from("<I", data, 12)
    count, = struct.unpack_from("<Q", data, 16)
    if header_len + 24 * count > len(data):
        raise BenchError(f"{path}: {count} events announced, the file is shorter")
    return [o for (o,) in struct.iter_unpack("<Q16x", data[header_len:header_len + 24 * count])]


def quantile(sorted_values, q):
    """Nearest rank."""
    rank = min(max(math.ceil(q * len(sorted_values)), 1), len(sorted_values))
    return sorted_values[rank - 1]


def realigned(run, counts):
    """The departure error of every packet from the receiver's recorded
    plan, aligned on the median instead of the first packet: arrival
    offset − planned offset, minus the median of those (a first packet
    that left late or early shifts every error of the receiver's own
    figures by as much; the median does not move with one packet). Drift:
    the median error of the last tenth of the packets minus that of the
    first tenth, over the time between them (ns/s): a least-squares slope
    bends towards a host stall's outliers, this does not. None when some
    packet was lost, duplicated or reordered (the recorded plan's packets
    then no longer pair with the plan's by position)."""
    if counts["lost"] or counts["duplicates"] or counts["reordered"] or counts["unstamped"]:
        return None
    planned = plan_offsets(run["plan"])
    arrived = plan_offsets(run["got"])
    if len(planned) != len(arrived) or len(planned) < 20:
        return None
    errors = [a - p for a, p in zip(arrived, planned)]
    offset = statistics.median(errors)
    absolute = sorted(abs(e - offset) for e in errors)
    tenth = len(errors) // 10
    head, tail = errors[:tenth], errors[-tenth:]
    span_s = (statistics.median(planned[-tenth:]) - statistics.median(planned[:tenth])) / 1e9
    gaps = sorted(abs((arrived[i] - arrived[i - 1]) - (planned[i] - planned[i - 1]))
                  for i in range(1, len(planned)))
    n = len(absolute)
    return {
        "first_packet_offset_ns": -offset,
        "within_1us_pct": 100.0 * sum(1 for e in absolute if e <= 1000) / n,
        "within_5us_pct": 100.0 * sum(1 for e in absolute if e <= 5000) / n,
        "p50_ns": quantile(absolute, 0.5),
        "p99_ns": quantile(absolute, 0.99),
        "p99_9_ns": quantile(absolute, 0.999),
        "max_ns": absolute[-1],
        "drift_ns_per_s": (statistics.median(tail) - statistics.median(head)) / span_s
        if span_s > 0 else None,
        "gap_within_1us_pct": 100.0 * sum(1 for g in gaps if g <= 1000) / len(gaps),
        "gap_within_5us_pct": 100.0 * sum(1 for g in gaps if g <= 5000) / len(gaps),
    }


def sender_report(run):
    """What the sender said of itself: rtlab's departure figures, or
    tcpreplay's printed statistics."""
    if run["tool"] == "rtlab":
        doc = load_json(run["sender"])
        traffic = doc["traffic"]
        return {"counts": traffic["counts"], "timestamps": traffic["timestamps"],
                "achieved_pps": traffic["achieved_pps"], "accuracy": traffic["accuracy"],
                "warnings": doc.get("warnings", [])}
    text = read_text(run["sender"])
    return {"printed": [line.strip() for line in text.splitlines() if line.strip()][-12:]}


def analyse(runs, meta):
    out_runs = []
    for run in runs:
        rec = load_json(run["record"])
        counts = rec["traffic"]["counts"]
        out_runs.append({
            "seq": run["seq"], "rate_pps": int(run["rate"]), "count": int(run["count"]),
            "tool": run["tool"], "timer": None if run["timer"] == "-" else run["timer"],
            "received": counts["received"], "lost": counts["lost"],
            "duplicates": counts["duplicates"], "reordered": counts["reordered"],
            "achieved_pps": rec["traffic"]["achieved_pps"],
            "departure": accuracy(rec, "arrival"),
            "inter_departure": accuracy(rec, "arrival_gap"),
            "departure_median_aligned": realigned(run, counts),
            "sender": sender_report(run),
            "started_at": run["started_at"], "loadavg_before": run["loadavg"],
            "cpu_busy_pct": run["cpu_busy_pct"], "cpu_steal_pct": run["cpu_steal_pct"],
            "busy_build_processes": run["busy"], "command": run["command"],
        })
    return {
        **{k: meta[k] for k in ("date", "host", "kernel", "versions", "config", "commands",
                                "environment") if k in meta},
        "schema": "rtlab.bench.replay-vs-tcpreplay/1",
        "runs": out_runs,
        "summary": summarize(out_runs),
    }


def best_tcpreplay(runs, rate):
    """tcpreplay's run at `rate` that drifted least (median-aligned; its
    departures within 5 us are ~0 % whatever the timer), else the one with
    the most departures within 5 us."""
    candidates = [r for r in runs if r["tool"] == "tcpreplay" and r["rate_pps"] == rate]

    def drift(run):
        a = run["departure_median_aligned"]
        d = a and a["drift_ns_per_s"]
        return abs(d) if d is not None else math.inf

    return min(candidates, key=lambda r: (drift(r), -r["departure"]["within_5us_pct"]),
               default=None)


def sender_departure(run):
    """rtlab's own departure figures (its kernel transmit stamps)."""
    return next((a for a in run["sender"].get("accuracy", []) if a["series"] == "departure"), None)


def targets(rtlab_runs, figures):
    """The issue's two targets on one view of rtlab's departures."""
    at_rate = [figures(r) for r in rtlab_runs if r["rate_pps"] == TARGET_RATE]
    within = at_rate[0]["within_5us_pct"] if at_rate and at_rate[0] else None
    drifts = {r["rate_pps"]: (figures(r) or {}).get("drift_ns_per_s") for r in rtlab_runs}
    return {
        "within_5us_at_2kpps_pct": within,
        "within_5us_at_2kpps_met": None if within is None else within >= TARGET_WITHIN_5US_PCT,
        "drift_ns_per_s": drifts,
        "no_cumulative_drift_met": all(d is not None and abs(d) <= DRIFT_LIMIT_NS_PER_S
                                       for d in drifts.values()) if drifts else None,
    }


def summarize(runs):
    rates = sorted({r["rate_pps"] for r in runs})
    per_rate = []
    for rate in rates:
        rtlab = next((r for r in runs if r["tool"] == "rtlab" and r["rate_pps"] == rate), None)
        default = next((r for r in runs if r["tool"] == "tcpreplay" and r["rate_pps"] == rate
                        and r["timer"] == "default"), None)
        best = best_tcpreplay(runs, rate)
        per_rate.append({
            "rate_pps": rate,
            "rtlab_seq": rtlab and rtlab["seq"],
            "tcpreplay_default_seq": default and default["seq"],
            "tcpreplay_best_seq": best and best["seq"],
            "tcpreplay_best_timer": best and best["timer"],
        })
    rtlab_runs = [r for r in runs if r["tool"] == "rtlab"]
    return {
        "per_rate": per_rate,
        "targets": {
            "first_aligned": targets(rtlab_runs, lambda r: r["departure"]),
            "median_aligned": targets(rtlab_runs, lambda r: r["departure_median_aligned"]),
            "rtlab_sender_kernel_stamps": targets(rtlab_runs, sender_departure),
            "drift_limit_ns_per_s": DRIFT_LIMIT_NS_PER_S,
        },
        "lost_total": {tool: sum(r["lost"] for r in runs if r["tool"] == tool)
                       for tool in ("rtlab", "tcpreplay")},
    }


def us(ns):
    return None if ns is None else ns / 1000.0


def sender_label(run):
    return "rtlab" if run["tool"] == "rtlab" else f"tcpreplay ({run['timer']})"


def result_rows(runs, rate, key):
    rows = []
    for r in (r for r in runs if r["rate_pps"] == rate):
        a = r[key]
        row = [sender_label(r), fmt(a["within_1us_pct"], 2), fmt(a["within_5us_pct"], 2)]
        if key == "inter_departure":
            row.append(fmt(a["within_1pct_of_gap_pct"], 2))
        row += [fmt(us(a["p50_ns"]), 2), fmt(us(a["p99_ns"]), 2), fmt(us(a["p99_9_ns"]), 2),
                fmt(us(a["max_ns"]), 1)]
        if key == "departure":
            row += [fmt(a["drift_ns_per_s"], 1), str(r["lost"]), fmt(r["achieved_pps"], 0)]
        rows.append(row)
    return rows


def median_rows(runs, rate):
    rows = []
    for r in (r for r in runs if r["rate_pps"] == rate):
        a = r["departure_median_aligned"]
        if a is None:
            rows.append([sender_label(r)] + ["-"] * 8)
            continue
        rows.append([sender_label(r), fmt(us(a["first_packet_offset_ns"]), 2),
                     fmt(a["within_1us_pct"], 2), fmt(a["within_5us_pct"], 2),
                     fmt(us(a["p50_ns"]), 2), fmt(us(a["p99_ns"]), 2), fmt(us(a["p99_9_ns"]), 2),
                     fmt(us(a["max_ns"]), 1), fmt(a["drift_ns_per_s"], 1)])
    return rows


def sender_rows(runs):
    rows = []
    for r in (r for r in runs if r["tool"] == "rtlab"):
        d = sender_departure(r)
        c = r["sender"]["counts"]
        if d is None:
            continue
        rows.append([str(r["rate_pps"]), r["sender"]["timestamps"], fmt(d["within_1us_pct"], 2),
                     fmt(d["within_5us_pct"], 2), fmt(us(d["mean_ns"]), 2),
                     fmt(us(d["max_ns"]), 1), fmt(d["drift_ns_per_s"], 1),
                     str(c["sent"]), str(c["late"]), str(c["skipped"])])
    return rows


DEPARTURE_HEADER = ["sender", "≤1 µs %", "≤5 µs %", "p50 µs", "p99 µs", "p99.9 µs", "max µs",
                    "drift ns/s", "lost", "pkt/s"]
MEDIAN_HEADER = ["sender", "1st packet µs", "≤1 µs %", "≤5 µs %", "p50 µs", "p99 µs", "p99.9 µs",
                 "max µs", "drift ns/s"]
GAP_HEADER = ["sender", "≤1 µs %", "≤5 µs %", "≤1 % gap %", "p50 µs", "p99 µs", "p99.9 µs",
              "max µs"]
SENDER_HEADER = ["pkt/s", "stamps", "≤1 µs %", "≤5 µs %", "mean µs", "max µs", "drift ns/s",
                 "sent", "late", "skipped"]


def target_rows(t):
    rows = []
    for key, view in (("first_aligned", "receiver, aligned on the first packet"),
                      ("median_aligned", "receiver, aligned on the median"),
                      ("rtlab_sender_kernel_stamps", "rtlab's own kernel transmit stamps")):
        v = t[key]
        rows.append([f"≥ {TARGET_WITHIN_5US_PCT} % within 5 µs at 2 kpps ({view})",
                     fmt(v["within_5us_at_2kpps_pct"], 3), fmt(v["within_5us_at_2kpps_met"])])
        rows.append([f"no cumulative drift, \\|slope\\| ≤ {DRIFT_LIMIT_NS_PER_S:g} ns/s ({view})",
                     ", ".join(f"{k}: {fmt(d, 1)}" for k, d in v["drift_ns_per_s"].items()),
                     fmt(v["no_cumulative_drift_met"])])
    return rows


def summary_lines(res):
    """One line per rate: tcpreplay's default and best timer against rtlab,
    on the median-aligned departures and the achieved rate."""
    by_seq = {r["seq"]: r for r in res["runs"]}

    def said(run):
        a = run["departure_median_aligned"] or {}
        return (f"{fmt(a.get('within_5us_pct'), 2)} % within 5 µs, drift "
                f"{fmt(us(a.get('drift_ns_per_s')), 3)} µs/s, {fmt(run['achieved_pps'], 0)} pkt/s")

    lines = ["In short (departures aligned on the median, drift in µs per second of replay):\n"]
    for p in res["summary"]["per_rate"]:
        parts = []
        for key, label in (("tcpreplay_default_seq", "tcpreplay default"),
                           ("tcpreplay_best_seq", "tcpreplay's best timer")):
            run = by_seq.get(p[key])
            if run:
                timer = "no --timer: gtod" if run["timer"] == "default" else f"--timer={run['timer']}"
                parts.append(f"{label} ({timer}): {said(run)}")
        if p["rtlab_seq"] in by_seq:
            parts.append(f"rtlab: {said(by_seq[p['rtlab_seq']])}")
        lines.append(f"- {p['rate_pps']} pkt/s: " + "; ".join(parts) + ".")
    return lines



def busy_note(env):
    """Says other work was running when the load average per CPU was high."""
    try:
        per_cpu = float(env.get("loadavg_1min_at_start")) / float(env.get("cpus"))
    except (TypeError, ValueError):
        return ""
    return ": other work was running" if per_cpu > 0.5 else ""

def render_md(res):
    cfg = res["config"]
    t = res["summary"]["targets"]
    env = res.get("environment", {})
    lines = ["# rtlab traffic replay vs tcpreplay\n",
             f"The same pcap (`rtlab traffic export` of a constant-rate plan, {cfg['size_bytes']}-byte "
             "UDP payloads carrying rtlab's stamps) replayed onto a veth between two network "
             "namespaces by tcpreplay (once per timer) and by rtlab (`traffic import` of that "
             "pcap, then `traffic replay`), both pinned to the same CPU at the same SCHED_FIFO "
             "priority; every run measured by the same receiver, `rtlab traffic record --against "
             "PLAN` on another CPU (kernel receive stamps). Departure error = |arrival − planned "
             "instant|; inter-departure error = |arrival gap − planned gap|. On a veth the "
             "receive stamp is taken inside the packet's transmit call, so these are the "
             "senders' departure errors.\n",
             f"Measured {res['date']} on {res['host']} ({env.get('cpus', '?')} CPUs, 1-min load "
             f"average {env.get('loadavg_1min_at_start', '?')} at the start{busy_note(env)}). "
             "**This VM has multi-ms host stalls** (the hypervisor takes its CPUs away "
             "now and then): they show in the max and p99.9 columns of every sender alike; read "
             "the % within and drift columns first.\n",
             *summary_lines(res), "",
             "## Targets (issue 20)\n",
             md_table(["target", "measured", "met"], target_rows(t), text_cols=1), "",
             "The receiver aligns its arrivals on the first packet (`traffic record`'s "
             "`arrival` series): a first packet that left late makes every later one look "
             "early by as much. The median-aligned figures are computed here from the "
             "receiver's recorded plan (`-o`), packet by packet: arrival offset − planned "
             "offset, minus the median of those; their drift compares the median error of "
             "the last tenth of the packets with the first tenth's. `1st packet µs` is how "
             "far the first packet was from the median.\n"]
    for rate in sorted({r["rate_pps"] for r in res["runs"]}):
        count = next(r["count"] for r in res["runs"] if r["rate_pps"] == rate)
        lines += [f"## {rate} packets/s ({count} packets)\n",
                  "Departure error as the receiver reports it (aligned on the first packet):\n",
                  md_table(DEPARTURE_HEADER, result_rows(res["runs"], rate, "departure")), "",
                  "Departure error aligned on the median (from the recorded plan):\n",
                  md_table(MEDIAN_HEADER, median_rows(res["runs"], rate)), "",
                  "Inter-departure error (gap − planned gap):\n",
                  md_table(GAP_HEADER, result_rows(res["runs"], rate, "inter_departure")), ""]
    lines += ["## rtlab's own report of its departures\n",
              "`traffic replay`'s `departure` series: the kernel's software transmit stamp "
              "of each packet − its planned instant (signed mean; no alignment needed: the "
              "sender knows its schedule).\n",
              md_table(SENDER_HEADER, sender_rows(res["runs"]), text_cols=2), ""]
    warnings = sorted({w for r in res["runs"] if r["tool"] == "rtlab"
                       for w in r["sender"].get("warnings", [])})
    if warnings:
        lines += ["## What rtlab warned about\n",
                  "Its warnings, once each (the guard and the wake-ups it measured differ run "
                  "to run). At 50 kpps the packets are 20 µs apart, inside the guard, so the "
                  "sender spins all the time and the kernel's real-time throttling "
                  "(`kernel.sched_rt_runtime_us`, 95 % by default) takes its CPU for 50 ms of "
                  "every second: that is the tens of ms in rtlab's p99 and max at 50 kpps, and "
                  "tcpreplay at the same priority is under the same limit. "
                  "`--sysctl kernel.sched_rt_runtime_us=-1` lifts it for an rtlab run; this "
                  "benchmark leaves the host's setting alone for both senders.\n",
                  *[f"- {w}" for w in warnings], ""]
    lines += ["## Settings\n",
              md_table(["", ""], host_rows(res, [("clocksource", "clocksource"),
                                                 ("idle states", "cpuidle"),
                                                 ("RT throttling", "rt_bandwidth"),
                                                 ("load average at start", "loadavg_1min_at_start")])
                       + [["rtlab", res["versions"]["rtlab"]],
                          ["tcpreplay", res["versions"]["tcpreplay"]],
                          ["rates (pkt/s)", ", ".join(map(str, cfg["rates_pps"]))],
                          ["tcpreplay timers", ", ".join(cfg["tcpreplay_timers"])
                           + (" (default = no --timer: gtod)" if "default" in cfg["tcpreplay_timers"] else "")],
                          ["tcpreplay --preload-pcap", fmt(cfg["tcpreplay_preload_pcap"])],
                          ["rtlab --skip-after", cfg.get("rtlab_skip_after", "-")],
                          ["sender CPU / receiver CPU", f"{cfg['sender_cpu']} / {cfg['receiver_cpu']}"],
                          ["priority", f"SCHED_FIFO {cfg['priority']}"],
                          ["link", cfg["link"]]], numeric=False), ""]
    lines += command_lines([res["commands"]["receiver"], res["commands"]["tcpreplay"],
                            res["commands"]["rtlab"]], ", `RATE` = packets/s, `COUNT` = packets")
    return "\n".join(lines)


def render_console(res):
    out = []
    for rate in sorted({r["rate_pps"] for r in res["runs"]}):
        out.append(f"{rate} pkt/s, departure error (receiver, aligned on the first packet):")
        out += console_table(DEPARTURE_HEADER, result_rows(res["runs"], rate, "departure"))
        out.append(f"{rate} pkt/s, departure error aligned on the median:")
        out += console_table(MEDIAN_HEADER, median_rows(res["runs"], rate))
        out.append("")
    out.append("rtlab's own departures (kernel transmit stamps):")
    out += console_table(SENDER_HEADER, sender_rows(res["runs"]))
    out.append("")
    out += console_table(["target", "measured", "met"],
                         [[a.replace("\\", ""), b, c] for a, b, c in target_rows(res["summary"]["targets"])])
    return "\n".join(out)


def main(argv=None):
    return run_cli("replay_compare", __doc__, argv,
                   columns=MANIFEST_COLUMNS, file_columns=FILE_COLUMNS,
                   analyse=analyse, render_md=render_md, render_console=render_console,
                   json_required=True)


if __name__ == "__main__":
    sys.exit(main())
