#!/usr/bin/env bash
# Side-by-side benchmark: `rtlab measure noise` vs oslat (rt-tests 2.x).
#
# Runs the two tools alternately (rtlab, oslat, rtlab, oslat, ...), PAIRS
# pairs, spinning on the same CPU at the same SCHED_FIFO priority for the
# same duration, rtlab without duty cycle (--runtime = --period) as oslat
# has none. Reads rtlab's JSON and oslat's --json plus its printed summary
# with bench/noise_compare.py, which rebuilds oslat's total noise from its
# histogram, and writes
#   bench/results/noise-vs-oslat.md    human tables + settings + summary
# The raw per-run JSONs and logs live in a temporary directory that is
# removed on exit (set KEEP_RAW=DIR to copy them, with a summary JSON, to DIR).
#
# Needs root (SCHED_FIFO, mlockall); without it, it prints why and exits 0.
# Installs rt-tests when oslat is missing and builds rtlab in release mode.
# Exit code 0 when the runs and the report were done, non-zero only when
# something failed.
#
# Settings (environment variables):
#   PAIRS=3          rtlab+oslat pairs (3 or more recommended)
#   DURATION=10      seconds measured per run (oslat -D; it also pre-heats 1 s)
#   CPU=1            CPU both tools spin on (default: the last online CPU)
#   PRIO=90          SCHED_FIFO priority (rtlab --priority, oslat -f)
#   THRESHOLD_US=1   rtlab --threshold in whole us; oslat's buckets >= it count
#   PERIOD_MS=1000   rtlab --runtime and --period (equal: no duty cycle)
#   WINDOW_MS=10     rtlab --window (its attribution window; its default)
#   OSLAT_BUCKETS=1024  oslat -b: 1 us buckets up to this many us (4-1024)
#   SETTLE=2         seconds of pause before each run
#   WAIT_IDLE=0      wait up to this many seconds for cargo/rustc to finish
#                    before measuring (other builds disturb the figures)
#   KEEP_RAW=        directory to keep the raw JSONs/logs/manifest in
#   RESULTS_DIR=bench/results  where the .md goes
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
NAME=noise-vs-oslat
# shellcheck source=bench/lib.sh
source "$SCRIPT_DIR/lib.sh"

ONLINE=$(online_cpus 0)
PAIRS=${PAIRS:-3}
DURATION=${DURATION:-10}
CPU=${CPU:-$(last_online_cpu)}
PRIO=${PRIO:-90}
THRESHOLD_US=${THRESHOLD_US:-1}
PERIOD_MS=${PERIOD_MS:-1000}
WINDOW_MS=${WINDOW_MS:-10}
OSLAT_BUCKETS=${OSLAT_BUCKETS:-1024}
SETTLE=${SETTLE:-2}
WAIT_IDLE=${WAIT_IDLE:-0}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}

# ---------------------------------------------------------------- settings
require_whole_numbers PAIRS DURATION CPU PRIO THRESHOLD_US PERIOD_MS WINDOW_MS OSLAT_BUCKETS SETTLE WAIT_IDLE
(( PAIRS >= 1 )) || die "PAIRS must be at least 1"
(( DURATION >= 1 )) || die "DURATION must be at least 1 (seconds)"
(( PRIO >= 1 && PRIO <= 99 )) || die "PRIO=$PRIO: SCHED_FIFO priorities are 1-99"
(( THRESHOLD_US >= 1 )) || die "THRESHOLD_US must be at least 1"
(( PERIOD_MS >= 1 )) || die "PERIOD_MS must be at least 1"
(( WINDOW_MS >= 1 )) || die "WINDOW_MS must be at least 1"
(( OSLAT_BUCKETS > 4 && OSLAT_BUCKETS <= 1024 )) || die "OSLAT_BUCKETS=$OSLAT_BUCKETS: oslat takes 5-1024"
(( THRESHOLD_US < OSLAT_BUCKETS )) || die "THRESHOLD_US must be below OSLAT_BUCKETS"
(( PAIRS >= 3 )) || log "warning: PAIRS=$PAIRS; at least 3 pairs are recommended for a median"

# ---------------------------------------------------------------- root
skip_unless_root_with_fifo "both tools spin at SCHED_FIFO $PRIO and lock memory" noise
require_online_cpu "$CPU" "$ONLINE"
# oslat's main thread sleeps on another CPU (-C), as it does by default on CPU 0.
MAIN_CPU=
for c in /sys/devices/system/cpu/cpu[0-9]*; do
    c=${c##*cpu}
    [[ $c == "$CPU" ]] && continue
    if [[ ! -r /sys/devices/system/cpu/cpu$c/online ]] || [[ $(cat "/sys/devices/system/cpu/cpu$c/online") == 1 ]]; then
        MAIN_CPU=$c; break
    fi
done
[[ -n $MAIN_CPU ]] || die "only CPU $CPU is online: the spinner would starve both tools' other threads"

# ---------------------------------------------------------------- tools
command -v python3 >/dev/null 2>&1 || apt_install python3
ensure_rt_tests_tool oslat
OSLAT=$(command -v oslat)
build_rtlab
OSLAT_VERSION=$(rt_tests_version oslat "$OSLAT" --version)
RT_RUNTIME=$(cat /proc/sys/kernel/sched_rt_runtime_us 2>/dev/null || echo '?')
RT_PERIOD=$(cat /proc/sys/kernel/sched_rt_period_us 2>/dev/null || echo '?')
if [[ $RT_RUNTIME == -1 ]]; then
    RT_THROTTLING="off (kernel.sched_rt_runtime_us = -1)"
else
    RT_THROTTLING="kernel.sched_rt_runtime_us = $RT_RUNTIME of sched_rt_period_us = $RT_PERIOD"
fi

# ---------------------------------------------------------------- temp + quiet
make_temp_dir
wait_for_idle_builds noise

# ---------------------------------------------------------------- commands
# Exact argv of each tool; $1 = run number.
rtlab_cmd() {
    CMD=("$RTLAB" measure noise --cpus "$CPU" --duration "${DURATION}s" --threshold "${THRESHOLD_US}us"
         --runtime "${PERIOD_MS}ms" --period "${PERIOD_MS}ms" --window "${WINDOW_MS}ms"
         --policy fifo --priority "$PRIO" --no-osnoise --no-dma-latency --no-store --quiet --json "$TMP/run$1-rtlab.json")
}
oslat_cmd() {
    CMD=("$OSLAT" --cpu-list "$CPU" -C "$MAIN_CPU" -f "$PRIO" -D "$DURATION" -b "$OSLAT_BUCKETS" -z
         "--json=$TMP/run$1-oslat.json")
}
rtlab_cmd N; RTLAB_TEMPLATE=$(cmd_template "${CMD[@]}")
oslat_cmd N; OSLAT_TEMPLATE=$(cmd_template "${CMD[@]}")

start_manifest pair seq tool json log

# A short rtlab run first, so a probe that does not work yet fails in seconds.
log "checking that rtlab measure noise works (1 s)"
if ! "$RTLAB" measure noise --cpus "$CPU" --duration 1s --threshold "${THRESHOLD_US}us" \
        --runtime "${PERIOD_MS}ms" --period "${PERIOD_MS}ms" --window "${WINDOW_MS}ms" \
        --policy fifo --priority "$PRIO" --no-osnoise --no-dma-latency --no-store --quiet \
        --json "$TMP/preflight.json" >"$TMP/preflight.log" 2>&1; then
    log "rtlab measure noise failed; its output:"; sed 's/^/    /' "$TMP/preflight.log" >&2 || true
    die "rtlab measure noise does not work: nothing to compare"
fi

run_one() {  # pair seq tool
    local pair=$1 seq=$2 tool=$3
    "${tool}_cmd" "$seq"
    local json=$TMP/run$seq-$tool.json logf=$TMP/run$seq-$tool.log
    settle_and_sample
    log "run $seq/$(( 2 * PAIRS )) (pair $pair): $tool, ${DURATION}s spinning on CPU $CPU (load $RUN_LOAD)"
    run_timed "$logf"
    check_run_output "$tool" "$logf" "$json"
    append_manifest_row "$pair" "$seq" "$tool" "${json##*/}" "${logf##*/}"
}

log "$PAIRS pairs x 2 runs x ${DURATION}s: about $(( PAIRS * 2 * (DURATION + SETTLE + 2) ))s"
seq_no=0
for (( pair = 1; pair <= PAIRS; pair++ )); do
    for tool in rtlab oslat; do
        seq_no=$(( seq_no + 1 ))
        run_one "$pair" "$seq_no" "$tool"
    done
done

# ---------------------------------------------------------------- report
export_host_environment "$ONLINE"
export BENCH_RT_THROTTLING=$RT_THROTTLING
export BENCH_RTLAB_VERSION=$RTLAB_VERSION BENCH_OSLAT_VERSION=$OSLAT_VERSION
export BENCH_RTLAB_CMD=$RTLAB_TEMPLATE BENCH_OSLAT_CMD=$OSLAT_TEMPLATE
export PAIRS DURATION CPU PRIO THRESHOLD_US PERIOD_MS WINDOW_MS OSLAT_BUCKETS SETTLE MAIN_CPU
python3 - "$TMP/meta.json" "$SCRIPT_DIR" <<'EOF'
import os, sys
sys.path.insert(0, sys.argv[2])
from benchlib import write_meta
e = os.environ
write_meta(
    sys.argv[1],
    versions={"rtlab": e["BENCH_RTLAB_VERSION"], "oslat": e["BENCH_OSLAT_VERSION"]},
    config={"pairs": int(e["PAIRS"]), "duration_s": int(e["DURATION"]), "cpu": int(e["CPU"]),
            "priority": int(e["PRIO"]), "policy": "SCHED_FIFO",
            "threshold_us": int(e["THRESHOLD_US"]), "period_ms": int(e["PERIOD_MS"]),
            "window_ms": int(e["WINDOW_MS"]),
            "oslat_buckets": int(e["OSLAT_BUCKETS"]), "main_cpu": int(e["MAIN_CPU"]),
            "settle_s": int(e["SETTLE"]), "order": "rtlab, oslat per pair"},
    commands={"rtlab": e["BENCH_RTLAB_CMD"], "oslat": e["BENCH_OSLAT_CMD"]},
    extra_environment={"rt_throttling": e["BENCH_RT_THROTTLING"]},
)
EOF

mkdir -p "$RESULTS_DIR"
echo
echo "== rtlab measure noise vs oslat: $PAIRS pairs, ${DURATION}s, CPU $CPU, FIFO $PRIO, threshold ${THRESHOLD_US}us =="
python3 "$SCRIPT_DIR/noise_compare.py" --manifest "$MANIFEST" --meta "$TMP/meta.json" \
    --md "$RESULTS_DIR/$NAME.md" --json "$TMP/summary.json" ||
    die "the analysis failed (bench/noise_compare.py)"
echo
log "wrote $RESULTS_DIR/$NAME.md"
exit 0
