#!/usr/bin/env bash
# Side-by-side benchmark: `rtlab measure timer` vs cyclictest (rt-tests 2.x).
#
# Runs the two tools alternately (rtlab, cyclictest, rtlab, cyclictest, ...),
# PAIRS pairs, with the same CPU, interval, priority and duration, reads both
# tools' histfiles with the same parser (bench/timer_compare.py) and writes
#   bench/results/timer-vs-cyclictest.md    human tables + summary
#   bench/results/timer-vs-cyclictest.json  raw figures per run + ratios
# The raw per-run histfiles and JSONs live in a temporary directory that is
# removed on exit (set KEEP_RAW=DIR to copy them to DIR instead).
#
# Needs root (SCHED_FIFO, mlockall, /dev/cpu_dma_latency); without it, it
# prints why and exits 0. Installs rt-tests when cyclictest is missing and
# builds rtlab in release mode. Exit code 0 whether or not the 5 % target is
# met (the report says); non-zero only when something failed.
#
# Settings (environment variables):
#   PAIRS=3          rtlab+cyclictest pairs (3 or more recommended)
#   DURATION=10      seconds per run
#   CPU=0            CPU both tools are pinned to
#   INTERVAL_US=1000 period in microseconds
#   PRIO=90          SCHED_FIFO priority
#   HIST_MAX_US=10000  histogram range in us (cyclictest -h, rtlab --hist-max)
#   SETTLE=2         seconds of pause before each run
#   WAIT_IDLE=0      wait up to this many seconds for cargo/rustc to finish
#                    before measuring (other builds disturb the figures)
#   KEEP_RAW=        directory to keep the raw histfiles/JSONs/logs in
#   RESULTS_DIR=bench/results  where the .md and .json go
#   MODE=abs         how both wait: abs (clock_nanosleep, cyclictest's default)
#                    or posix (POSIX interval timers: rtlab --mode posix,
#                    cyclictest -x); posix writes timer-vs-cyclictest-posix.*
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
NAME=timer-vs-cyclictest
# shellcheck source=bench/lib.sh
source "$SCRIPT_DIR/lib.sh"

PAIRS=${PAIRS:-3}
DURATION=${DURATION:-10}
CPU=${CPU:-0}
INTERVAL_US=${INTERVAL_US:-1000}
PRIO=${PRIO:-90}
HIST_MAX_US=${HIST_MAX_US:-10000}
SETTLE=${SETTLE:-2}
WAIT_IDLE=${WAIT_IDLE:-0}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}
MODE=${MODE:-abs}
case $MODE in
    abs) RTLAB_MODE=(); CYCLICTEST_MODE=(); RESULT=$NAME ;;
    posix) RTLAB_MODE=(--mode posix); CYCLICTEST_MODE=(-x); RESULT=$NAME-posix ;;
    *) die "MODE=$MODE: abs or posix" ;;
esac

# ---------------------------------------------------------------- settings
require_whole_numbers PAIRS DURATION CPU INTERVAL_US PRIO HIST_MAX_US SETTLE WAIT_IDLE
(( PAIRS >= 1 )) || die "PAIRS must be at least 1"
(( DURATION >= 1 )) || die "DURATION must be at least 1 (seconds)"
(( INTERVAL_US >= 1 )) || die "INTERVAL_US must be at least 1"
(( PRIO >= 1 && PRIO <= 99 )) || die "PRIO=$PRIO: SCHED_FIFO priorities are 1-99"
(( HIST_MAX_US >= 1 )) || die "HIST_MAX_US must be at least 1"
(( PAIRS >= 3 )) || log "warning: PAIRS=$PAIRS; at least 3 pairs are recommended for a median"

# ---------------------------------------------------------------- root
skip_unless_root_with_fifo \
    "both tools run SCHED_FIFO $PRIO, lock memory and write /dev/cpu_dma_latency" latency
require_online_cpu "$CPU" "$(online_cpus '?')"

# ---------------------------------------------------------------- tools
command -v python3 >/dev/null 2>&1 || apt_install python3
ensure_rt_tests_tool cyclictest
CYCLICTEST=$(command -v cyclictest)
build_rtlab
CYCLICTEST_VERSION=$(rt_tests_version cyclictest "$CYCLICTEST" --help)

# ---------------------------------------------------------------- temp + quiet
make_temp_dir
wait_for_idle_builds latencies

# ---------------------------------------------------------------- commands
# Exact argv of each tool; N is replaced by the run number.
rtlab_cmd() {
    CMD=("$RTLAB" measure timer --cpus "$CPU" --interval "${INTERVAL_US}us" --priority "$PRIO"
         --duration "${DURATION}s" --quiet --json "$TMP/run$1-rtlab.json"
         --histfile "$TMP/run$1-rtlab.hist" --hist-max "${HIST_MAX_US}us" "${RTLAB_MODE[@]}")
}
cyclictest_cmd() {
    CMD=("$CYCLICTEST" -m -p "$PRIO" -i "$INTERVAL_US" -a "$CPU" -t 1 -D "$DURATION" -q "${CYCLICTEST_MODE[@]}"
         -h "$HIST_MAX_US" "--histfile=$TMP/run$1-cyclictest.hist" "--json=$TMP/run$1-cyclictest.json")
}
rtlab_cmd N;      RTLAB_TEMPLATE=$(cmd_template "${CMD[@]}")
cyclictest_cmd N; CYCLICTEST_TEMPLATE=$(cmd_template "${CMD[@]}")

start_manifest pair seq tool hist json log

run_one() {  # pair seq tool
    local pair=$1 seq=$2 tool=$3
    "${tool}_cmd" "$seq"
    local hist=$TMP/run$seq-$tool.hist json=$TMP/run$seq-$tool.json logf=$TMP/run$seq-$tool.log
    settle_and_sample
    log "run $seq/$(( 2 * PAIRS )) (pair $pair): $tool, ${DURATION}s on CPU $CPU (load $RUN_LOAD)"
    run_timed "$logf"
    check_run_output "$tool" "$logf" "$json" "$hist"
    append_manifest_row "$pair" "$seq" "$tool" "${hist##*/}" "${json##*/}" "${logf##*/}"
}

log "$PAIRS pairs x 2 runs x ${DURATION}s: about $(( PAIRS * 2 * (DURATION + SETTLE) ))s"
seq_no=0
for (( pair = 1; pair <= PAIRS; pair++ )); do
    for tool in rtlab cyclictest; do
        seq_no=$(( seq_no + 1 ))
        run_one "$pair" "$seq_no" "$tool"
    done
done

# ---------------------------------------------------------------- report
export_host_environment
export BENCH_RTLAB_VERSION=$RTLAB_VERSION BENCH_CYCLICTEST_VERSION=$CYCLICTEST_VERSION
export BENCH_RTLAB_CMD=$RTLAB_TEMPLATE BENCH_CYCLICTEST_CMD=$CYCLICTEST_TEMPLATE
export PAIRS DURATION CPU INTERVAL_US PRIO HIST_MAX_US SETTLE MODE
python3 - "$TMP/meta.json" "$SCRIPT_DIR" <<'EOF'
import os, sys
sys.path.insert(0, sys.argv[2])
from benchlib import write_meta
e = os.environ
write_meta(
    sys.argv[1],
    versions={"rtlab": e["BENCH_RTLAB_VERSION"], "cyclictest": e["BENCH_CYCLICTEST_VERSION"]},
    config={"pairs": int(e["PAIRS"]), "duration_s": int(e["DURATION"]), "cpu": int(e["CPU"]),
            "interval_us": int(e["INTERVAL_US"]), "priority": int(e["PRIO"]),
            "policy": "SCHED_FIFO", "hist_max_us": int(e["HIST_MAX_US"]),
            "settle_s": int(e["SETTLE"]), "order": "rtlab, cyclictest per pair",
            "mode": e["MODE"]},
    # timer_compare.py reads these two at the top level.
    extra={"duration_s": int(e["DURATION"]), "interval_us": int(e["INTERVAL_US"])},
    commands={"rtlab": e["BENCH_RTLAB_CMD"], "cyclictest": e["BENCH_CYCLICTEST_CMD"]},
)
EOF

mkdir -p "$RESULTS_DIR"
echo
echo "== rtlab measure timer vs cyclictest: $PAIRS pairs, ${DURATION}s, CPU $CPU, ${INTERVAL_US}us, FIFO $PRIO, mode $MODE =="
python3 "$SCRIPT_DIR/timer_compare.py" --manifest "$MANIFEST" --meta "$TMP/meta.json" \
    --md "$RESULTS_DIR/$RESULT.md" --json "$RESULTS_DIR/$RESULT.json" ||
    die "the analysis failed (bench/timer_compare.py)"
echo
log "wrote $RESULTS_DIR/$RESULT.md and .json"
exit 0
