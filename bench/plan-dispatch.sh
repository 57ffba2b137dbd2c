#!/usr/bin/env bash
# Benchmark of rtlab's executive: `rtlab plan run` (sleep to the event minus
# a guard, then spin to the exact ns) against plain absolute clock_nanosleep
# to the same times, and a dense plan's throughput, size on disk and
# resident memory.
#
# 1. Sleep+spin vs plain sleep. One plan of DISPATCH_EVENTS events
#    DISPATCH_PERIOD_MS apart, run PAIRS times with `--guard auto` (the
#    executive: wake early, spin) and PAIRS times with `--guard 0ns` (no spin:
#    exactly a plain absolute clock_nanosleep to each event's time),
#    alternating, same binary, same plan, same CPU and SCHED_FIFO priority,
#    `--skip-after 1s` so that no event is skipped. The dispatch error
#    (fire - planned) of every event is in each run's JSON.
# 2. Dense throughput. Plans of DENSE_EVENTS events DENSE_SPACINGS_NS apart
#    (1 us and 0.5 us), run DENSE_RUNS times each with a fixed guard and
#    `--skip-after 1ms`: events dispatched per second (fired + skipped, over
#    the run's elapsed_ns) and fired per second; target >= 1 M events/s.
# 3. Memory and disk. Bytes per event of the binary plans ((size - header
#    length) / events; target <= 24) and the peak resident memory
#    (/usr/bin/time -v) of `rtlab plan run` for plans of MEM_EVENTS events
#    and of the DENSE_EVENTS plan, all at the first dense spacing (target: no
#    growth with the plan's length).
# Every run is wrapped in /usr/bin/time -v. bench/plan_compare.py reads the
# JSONs and time reports and writes
#   bench/results/plan-dispatch.md    settings + tables + targets + notes
# The plans (DENSE_EVENTS x 24 bytes each: 240 MB for 10 M) are generated
# once into a scratch directory that is removed on exit; the per-run JSONs
# and logs live in a temporary directory that is removed on exit too (set
# KEEP_RAW=DIR to copy them, with a summary JSON, to DIR; the plans are not
# copied).
#
# Needs root (SCHED_FIFO, mlockall); without it, it prints why and exits 0.
# Installs GNU time when /usr/bin/time is missing and builds rtlab in
# release mode. Exit code 0 whether or not the targets are met (the report
# says); non-zero only when something failed.
#
# Settings (environment variables):
#   PAIRS=3                 sleep+spin / plain sleep pairs (section 1)
#   DISPATCH_EVENTS=1000    events of the section 1 plan
#   DISPATCH_PERIOD_MS=10   their spacing (1000 x 10 ms = 10 s per run)
#   DENSE_EVENTS=10000000   events of each dense plan (240 MB each on disk)
#   DENSE_SPACINGS_NS="1000 500"  spacings of the dense plans, in ns
#   DENSE_RUNS=3            runs of each dense plan (and of each MEM_EVENTS plan)
#   DENSE_GUARD_US=50       --guard of the dense and memory runs
#   DENSE_SKIP_US=1000      --skip-after of the dense and memory runs
#   MEM_EVENTS="100000 1000000"  shorter plans (at the first dense spacing)
#                           whose peak RSS is compared with the DENSE_EVENTS one's
#   WITHIN_US="1 10 100 1000"    thresholds of the "% within" table (section 1)
#   CPU=1                   CPU the dispatcher is pinned to (default: the last online CPU)
#   PRIO=90                 SCHED_FIFO priority of the dispatcher
#   SETTLE=2                seconds of pause before each run
#   WAIT_IDLE=0             wait up to this many seconds for cargo/rustc to finish
#                           before measuring (other builds disturb the figures)
#   KEEP_RAW=               directory to keep the raw JSONs/logs/time reports in
#   RESULTS_DIR=bench/results  where the .md goes
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
NAME=plan-dispatch
# shellcheck source=bench/lib.sh
source "$SCRIPT_DIR/lib.sh"

ONLINE=$(online_cpus 0)
PAIRS=${PAIRS:-3}
DISPATCH_EVENTS=${DISPATCH_EVENTS:-1000}
DISPATCH_PERIOD_MS=${DISPATCH_PERIOD_MS:-10}
DENSE_EVENTS=${DENSE_EVENTS:-10000000}
DENSE_SPACINGS_NS=${DENSE_SPACINGS_NS:-1000 500}
DENSE_RUNS=${DENSE_RUNS:-3}
DENSE_GUARD_US=${DENSE_GUARD_US:-50}
DENSE_SKIP_US=${DENSE_SKIP_US:-1000}
MEM_EVENTS=${MEM_EVENTS:-100000 1000000}
WITHIN_US=${WITHIN_US:-1 10 100 1000}
CPU=${CPU:-$(last_online_cpu)}
PRIO=${PRIO:-90}
SETTLE=${SETTLE:-2}
WAIT_IDLE=${WAIT_IDLE:-0}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}

# ---------------------------------------------------------------- settings
require_whole_numbers PAIRS DISPATCH_EVENTS DISPATCH_PERIOD_MS DENSE_EVENTS DENSE_RUNS \
    DENSE_GUARD_US DENSE_SKIP_US CPU PRIO SETTLE WAIT_IDLE
read -r -a SPACINGS <<<"$DENSE_SPACINGS_NS"
read -r -a MEM_LIST <<<"$MEM_EVENTS"
read -r -a WITHIN_LIST <<<"$WITHIN_US"
(( ${#SPACINGS[@]} >= 1 )) || die "DENSE_SPACINGS_NS is empty"
(( ${#WITHIN_LIST[@]} >= 1 )) || die "WITHIN_US is empty"
for v in "${SPACINGS[@]}" "${MEM_LIST[@]}" "${WITHIN_LIST[@]}"; do
    if ! is_uint "$v" || (( v < 1 )); then
        die "DENSE_SPACINGS_NS, MEM_EVENTS, WITHIN_US: '$v' is not a whole number >= 1"
    fi
done
for n in "${MEM_LIST[@]}"; do
    (( n < DENSE_EVENTS )) || die "MEM_EVENTS: $n is not below DENSE_EVENTS=$DENSE_EVENTS"
done
(( PAIRS >= 1 )) || die "PAIRS must be at least 1"
(( DISPATCH_EVENTS >= 10 )) || die "DISPATCH_EVENTS must be at least 10"
(( DISPATCH_PERIOD_MS >= 1 )) || die "DISPATCH_PERIOD_MS must be at least 1"
(( DENSE_EVENTS >= 1000 )) || die "DENSE_EVENTS must be at least 1000"
(( DENSE_RUNS >= 1 )) || die "DENSE_RUNS must be at least 1"
(( DENSE_SKIP_US >= 1 )) || die "DENSE_SKIP_US must be at least 1"
(( PRIO >= 1 && PRIO <= 99 )) || die "PRIO=$PRIO: SCHED_FIFO priorities are 1-99"
(( PAIRS >= 3 )) || log "warning: PAIRS=$PAIRS; at least 3 pairs are recommended for a median"
MEM_SPACING=${SPACINGS[0]}

# ---------------------------------------------------------------- root
skip_unless_root_with_fifo "the dispatcher runs SCHED_FIFO $PRIO and locks memory" latency
require_online_cpu "$CPU" "$ONLINE"
# The dense runs spin on CPU for seconds: another CPU must stay for the rest.
[[ $ONLINE != "$CPU" ]] || die "only CPU $CPU is online: the dense runs' spinning dispatcher would starve everything else"

# ---------------------------------------------------------------- tools
command -v python3 >/dev/null 2>&1 || apt_install python3
[[ -x /usr/bin/time ]] || apt_install time
TIME_BIN=/usr/bin/time
"$TIME_BIN" -v -o /dev/null true 2>/dev/null || die "$TIME_BIN does not take -v -o: GNU time is needed (Debian package time)"
TIME_VERSION=$("$TIME_BIN" --version 2>&1 | head -1 || true)
TIME_VERSION=${TIME_VERSION% UNKNOWN}  # Debian's build prints no version of its own
TIME_PACKAGE=$(dpkg-query -W -f='${Version}' time 2>/dev/null || true)
TIME_VERSION="${TIME_VERSION:-$TIME_BIN}${TIME_PACKAGE:+ (Debian time $TIME_PACKAGE)}"
build_rtlab
RT_RUNTIME=$(cat /proc/sys/kernel/sched_rt_runtime_us 2>/dev/null || echo '?')
RT_PERIOD=$(cat /proc/sys/kernel/sched_rt_period_us 2>/dev/null || echo '?')
if [[ $RT_RUNTIME == -1 ]]; then
    RT_THROTTLING="off (kernel.sched_rt_runtime_us = -1)"
else
    RT_THROTTLING="kernel.sched_rt_runtime_us = $RT_RUNTIME of sched_rt_period_us = $RT_PERIOD"
fi

# ---------------------------------------------------------------- temp + quiet
make_temp_dir
make_scratch_dir
PLANS=$SCRATCH

# The plans: label, events, spacing (ns). The memory plans share the first
# dense spacing, so the DENSE_EVENTS plan at that spacing is their longest.
PLAN_LABELS=() PLAN_EVENTS=() PLAN_SPACING=()
add_plan() { PLAN_LABELS+=("$1"); PLAN_EVENTS+=("$2"); PLAN_SPACING+=("$3"); }
dense_label() { echo "dense-${1}ns"; }
add_plan dispatch "$DISPATCH_EVENTS" $(( DISPATCH_PERIOD_MS * 1000000 ))
for s in "${SPACINGS[@]}"; do add_plan "$(dense_label "$s")" "$DENSE_EVENTS" "$s"; done
for n in "${MEM_LIST[@]}"; do add_plan "mem-$n" "$n" "$MEM_SPACING"; done

need_kb=0
for n in "${PLAN_EVENTS[@]}"; do need_kb=$(( need_kb + (n * 24 + 4096) / 1024 + 1 )); done
avail_kb=$(df -Pk "$PLANS" | awk 'NR == 2 {print $4}')
is_uint "$avail_kb" || die "cannot read the free space of $PLANS"
(( avail_kb > need_kb + need_kb / 10 + 65536 )) ||
    die "the plans need $(( need_kb / 1024 )) MB in ${TMPDIR:-/tmp}, only $(( avail_kb / 1024 )) MB are free (set TMPDIR, or lower DENSE_EVENTS)"

wait_for_idle_builds "dispatch errors"

# ---------------------------------------------------------------- plans
# Each plan is generated once (under /usr/bin/time: plan gen's own memory
# is reported too); plans.tsv records what the report needs from them, so
# the report can be rebuilt from KEEP_RAW without the plans.
PLANS_TSV=$TMP/plans.tsv
printf '# label\tevents\tspacing_ns\tfile\tbytes\theader_len\tgen_json\tgen_time\n' >"$PLANS_TSV"
log "generating ${#PLAN_LABELS[@]} plans in $PLANS ($(( need_kb / 1024 )) MB)"
for i in "${!PLAN_LABELS[@]}"; do
    label=${PLAN_LABELS[$i]}
    file=$PLANS/$label.plan
    CMD=("$TIME_BIN" -v -o "$TMP/gen-$label.time" "$RTLAB" plan gen periodic --module tick:mark
         --period "${PLAN_SPACING[$i]}ns" --count "${PLAN_EVENTS[$i]}" -o "$file" -q --json)
    [[ $label == dispatch ]] && GEN_TEMPLATE=$(cmd_template "${CMD[@]:4}" | sed "s#$PLANS#\$PLANS#g")
    "${CMD[@]}" >"$TMP/gen-$label.json" 2>"$TMP/gen-$label.log" || {
        log "rtlab plan gen failed; command: $(quote "${CMD[@]}")"
        sed 's/^/    /' "$TMP/gen-$label.log" "$TMP/gen-$label.json" >&2 || true
        die "could not generate the $label plan"
    }
    bytes=$(stat -c %s "$file")
    # The binary header: u32 little-endian header length at offset 12.
    header_len=$(od -An -t u4 -j 12 -N 4 --endian=little "$file" | tr -d ' ')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "${PLAN_EVENTS[$i]}" "${PLAN_SPACING[$i]}" \
        "${file##*/}" "$bytes" "$header_len" "gen-$label.json" "gen-$label.time" >>"$PLANS_TSV"
done

# ---------------------------------------------------------------- commands
# Exact argv of each run; $1 = run number, $2 = plan label, $3 = guard,
# $4 = skip-after. Every run under /usr/bin/time -v (peak resident memory).
plan_cmd() {
    CMD=("$TIME_BIN" -v -o "$TMP/run$1.time" "$RTLAB" plan run "$PLANS/$2.plan" --cpu "$CPU"
         --priority "$PRIO" --guard "$3" --skip-after "$4" --json "$TMP/run$1.json" --no-store -q)
}
template() {  # label guard skip
    plan_cmd N "$@"
    cmd_template "${CMD[@]}" | sed "s#$PLANS#\$PLANS#g"
}
SPIN_TEMPLATE=$(template dispatch auto 1s)
SLEEP_TEMPLATE=$(template dispatch 0ns 1s)
DENSE_TEMPLATE=$(template "$(dense_label "$MEM_SPACING")" "${DENSE_GUARD_US}us" "${DENSE_SKIP_US}us")

start_manifest pair seq tool plan json log time

# Short runs first (10 events 1 ms apart, each guard kind), so a dispatcher
# that does not work yet fails in seconds.
log "checking that rtlab plan run works (10 events, --guard auto, 0ns and ${DENSE_GUARD_US}us)"
"$RTLAB" plan gen periodic --period 1ms --count 10 -o "$TMP/preflight.plan" -q >/dev/null 2>&1 ||
    die "rtlab plan gen does not work"
for guard in auto 0ns "${DENSE_GUARD_US}us"; do
    if ! "$RTLAB" plan run "$TMP/preflight.plan" --cpu "$CPU" --priority "$PRIO" --guard "$guard" \
            --json "$TMP/preflight.json" --no-store -q >"$TMP/preflight.log" 2>&1; then
        log "rtlab plan run --guard $guard failed; its output:"
        sed 's/^/    /' "$TMP/preflight.log" >&2 || true
        die "rtlab plan run does not work: nothing to measure"
    fi
done
rm -f "$TMP/preflight.plan" "$TMP/preflight.json" "$TMP/preflight.log"

SEQ=0
TOTAL_RUNS=$(( PAIRS * 2 + DENSE_RUNS * (${#SPACINGS[@]} + ${#MEM_LIST[@]}) ))
run_one() {  # pair tool label guard skip what
    local pair=$1 tool=$2 label=$3
    SEQ=$(( SEQ + 1 ))
    plan_cmd "$SEQ" "$label" "$4" "$5"
    local json=$TMP/run$SEQ.json logf=$TMP/run$SEQ.log timef=$TMP/run$SEQ.time
    settle_and_sample
    log "run $SEQ/$TOTAL_RUNS: $6 on CPU $CPU (load $RUN_LOAD)"
    run_timed "$logf"
    check_run_output "rtlab plan run" "$logf" "$json"
    [[ -s $timef ]] || die "run $SEQ: /usr/bin/time wrote no report (${timef##*/})"
    append_manifest_row "$pair" "$SEQ" "$tool" "$label" "${json##*/}" "${logf##*/}" "${timef##*/}"
}

dense_s=0
for s in "${SPACINGS[@]}"; do dense_s=$(( dense_s + DENSE_EVENTS * s / 1000000000 + 1 )); done
mem_s=0
for n in "${MEM_LIST[@]}"; do mem_s=$(( mem_s + n * MEM_SPACING / 1000000000 + 1 )); done
log "about $(( PAIRS * 2 * (DISPATCH_EVENTS * DISPATCH_PERIOD_MS / 1000 + 1 + SETTLE) \
    + DENSE_RUNS * (dense_s + mem_s + (${#SPACINGS[@]} + ${#MEM_LIST[@]}) * (SETTLE + 1)) ))s of runs"

# 1. sleep+spin vs plain sleep, alternating.
span_s=$(( DISPATCH_EVENTS * DISPATCH_PERIOD_MS / 1000 ))
for (( pair = 1; pair <= PAIRS; pair++ )); do
    run_one "$pair" spin dispatch auto 1s \
        "pair $pair, sleep+spin (--guard auto): $DISPATCH_EVENTS events ${DISPATCH_PERIOD_MS} ms apart (${span_s} s)"
    run_one "$pair" sleep dispatch 0ns 1s \
        "pair $pair, plain sleep (--guard 0ns): $DISPATCH_EVENTS events ${DISPATCH_PERIOD_MS} ms apart (${span_s} s)"
done
# 2 and 3. dense plans and the shorter memory plans, round after round.
for (( round = 1; round <= DENSE_RUNS; round++ )); do
    for n in "${MEM_LIST[@]}"; do
        run_one "$round" memory "mem-$n" "${DENSE_GUARD_US}us" "${DENSE_SKIP_US}us" \
            "round $round, memory: $n events ${MEM_SPACING} ns apart"
    done
    for s in "${SPACINGS[@]}"; do
        run_one "$round" dense "$(dense_label "$s")" "${DENSE_GUARD_US}us" "${DENSE_SKIP_US}us" \
            "round $round, dense: $DENSE_EVENTS events ${s} ns apart"
    done
done

# ---------------------------------------------------------------- report
export_host_environment "$ONLINE"
export BENCH_RT_THROTTLING=$RT_THROTTLING BENCH_RT_RUNTIME=$RT_RUNTIME BENCH_RT_PERIOD=$RT_PERIOD
export BENCH_RTLAB_VERSION=$RTLAB_VERSION BENCH_TIME_VERSION=$TIME_VERSION
export BENCH_SPIN_CMD=$SPIN_TEMPLATE BENCH_SLEEP_CMD=$SLEEP_TEMPLATE BENCH_DENSE_CMD=$DENSE_TEMPLATE
export BENCH_GEN_CMD=$GEN_TEMPLATE BENCH_PLANS_TSV=$PLANS_TSV
export PAIRS DISPATCH_EVENTS DISPATCH_PERIOD_MS DENSE_EVENTS DENSE_SPACINGS_NS DENSE_RUNS
export DENSE_GUARD_US DENSE_SKIP_US MEM_EVENTS MEM_SPACING WITHIN_US CPU PRIO SETTLE
python3 - "$TMP/meta.json" "$SCRIPT_DIR" <<'EOF'
import os, sys
sys.path.insert(0, sys.argv[2])
from benchlib import write_meta
e = os.environ
ints = lambda key: [int(x) for x in e[key].split()]
plans = []
with open(e["BENCH_PLANS_TSV"], encoding="utf-8") as f:
    for line in f:
        if line.startswith("#") or not line.strip():
            continue
        label, events, spacing, file, size, header, gen_json, gen_time = line.rstrip("\n").split("\t")
        plans.append({"label": label, "events": int(events), "spacing_ns": int(spacing),
                      "file": file, "bytes": int(size), "header_len": int(header),
                      "gen_json": gen_json, "gen_time": gen_time})
write_meta(
    sys.argv[1],
    versions={"rtlab": e["BENCH_RTLAB_VERSION"], "time": e["BENCH_TIME_VERSION"]},
    config={"pairs": int(e["PAIRS"]), "dispatch_events": int(e["DISPATCH_EVENTS"]),
            "dispatch_period_ms": int(e["DISPATCH_PERIOD_MS"]),
            "dense_events": int(e["DENSE_EVENTS"]), "dense_spacings_ns": ints("DENSE_SPACINGS_NS"),
            "dense_runs": int(e["DENSE_RUNS"]), "dense_guard_us": int(e["DENSE_GUARD_US"]),
            "dense_skip_us": int(e["DENSE_SKIP_US"]), "mem_events": ints("MEM_EVENTS"),
            "mem_spacing_ns": int(e["MEM_SPACING"]), "within_us": ints("WITHIN_US"),
            "cpu": int(e["CPU"]), "priority": int(e["PRIO"]), "policy": "SCHED_FIFO",
            "settle_s": int(e["SETTLE"]),
            "order": "section 1: sleep+spin then plain sleep per pair; then per round: the "
                     "memory plans, then the dense plans"},
    extra={"plans": plans},
    commands={"gen": e["BENCH_GEN_CMD"], "spin": e["BENCH_SPIN_CMD"],
              "sleep": e["BENCH_SLEEP_CMD"], "dense": e["BENCH_DENSE_CMD"]},
    extra_environment={"rt_throttling": e["BENCH_RT_THROTTLING"],
                       "sched_rt_runtime_us": e["BENCH_RT_RUNTIME"],
                       "sched_rt_period_us": e["BENCH_RT_PERIOD"]},
)
EOF

mkdir -p "$RESULTS_DIR"
echo
echo "== rtlab plan run: sleep+spin vs plain sleep ($PAIRS pairs), dense ${DENSE_EVENTS}-event plans, memory; CPU $CPU, FIFO $PRIO =="
python3 "$SCRIPT_DIR/plan_compare.py" --manifest "$MANIFEST" --meta "$TMP/meta.json" \
    --md "$RESULTS_DIR/$NAME.md" --json "$TMP/summary.json" ||
    die "the analysis failed (bench/plan_compare.py)"
echo
log "wrote $RESULTS_DIR/$NAME.md"
exit 0
