#!/usr/bin/env bash
# Side-by-side benchmark: `rtlab measure switch` vs rt-tests' IPC latency
# tools (rt-tests 2.x):
#
#   rtlab --mechanism pthread-mutex  vs  ptsematest   (POSIX mutex between threads)
#   rtlab --mechanism mq             vs  pmqtest      (POSIX message queue)
#   rtlab --mechanism signal         vs  sigwaittest  (signal + sigwait)
#   rtlab --mechanism sysv-sem       vs  svsematest   (SysV semaphore)
#
# For each mechanism runs, PAIRS times, three runs interleaved (their order
# rotates from pair to pair): rtlab with `--pacing rt-tests` (the tool's
# hand-off step for step: the comparison), the rt-tests tool, and rtlab
# with its default grid pacing (a timer thread on absolute deadlines, the
# task one priority below: a second line, to show what the pacing changes).
# All with the same CPU (both threads on it), interval, number of
# hand-offs and priority. Reads rtlab's JSON (and the paced run's samples
# CSV) and the tool's --json plus its printed summary with
# bench/switch_compare.py and writes
#   bench/results/switch-vs-rt-tests.md    human tables + settings + summary
# The raw per-run JSONs and logs live in a temporary directory that is
# removed on exit (set KEEP_RAW=DIR to copy them, with a summary JSON, to DIR).
#
# Needs root (SCHED_FIFO, mlockall); without it, it prints why and exits 0.
# Installs rt-tests when the tools are missing and builds rtlab in release
# mode. Exit code 0 when the runs and the report were done, non-zero only
# when something failed.
#
# Settings (environment variables):
#   PAIRS=3          rtlab+tool pairs per mechanism (3 or more recommended)
#   EVENTS=5000      hand-offs per run (rtlab --events, rt-tests -l)
#   INTERVAL_US=1000 period in microseconds (rtlab --interval, rt-tests -i)
#   CPU=1            CPU both threads of both tools are pinned to
#                    (default: the last online CPU, as rtlab's own default)
#   PRIO=90          SCHED_FIFO priority (rtlab --priority, rt-tests -p)
#   MECHANISMS="pthread-mutex mq signal sysv-sem"  which pairs to run
#   DMA_LATENCY=0    1 = let rtlab hold /dev/cpu_dma_latency at 0 (its default);
#                    0 = --no-dma-latency, as the rt-tests tools do not hold it
#   SETTLE=2         seconds of pause before each run
#   WAIT_IDLE=0      wait up to this many seconds for cargo/rustc to finish
#                    before measuring (other builds disturb the figures)
#   KEEP_RAW=        directory to keep the raw JSONs/logs/manifest in
#   RESULTS_DIR=bench/results  where the .md goes
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
NAME=switch-vs-rt-tests
# shellcheck source=bench/lib.sh
source "$SCRIPT_DIR/lib.sh"

PAIRS=${PAIRS:-3}
EVENTS=${EVENTS:-5000}
INTERVAL_US=${INTERVAL_US:-1000}
CPU=${CPU:-$(last_online_cpu)}
PRIO=${PRIO:-90}
MECHANISMS=${MECHANISMS:-pthread-mutex mq signal sysv-sem}
DMA_LATENCY=${DMA_LATENCY:-0}
SETTLE=${SETTLE:-2}
WAIT_IDLE=${WAIT_IDLE:-0}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}

# ---------------------------------------------------------------- settings
require_whole_numbers PAIRS EVENTS INTERVAL_US CPU PRIO DMA_LATENCY SETTLE WAIT_IDLE
(( PAIRS >= 1 )) || die "PAIRS must be at least 1"
(( EVENTS >= 1 )) || die "EVENTS must be at least 1"
(( INTERVAL_US >= 1 )) || die "INTERVAL_US must be at least 1"
# rtlab's task runs one below the timer thread, so its --priority starts at 2.
(( PRIO >= 2 && PRIO <= 99 )) || die "PRIO=$PRIO: expected 2-99 (rtlab's grid-paced task runs at PRIO-1)"
(( DMA_LATENCY <= 1 )) || die "DMA_LATENCY=$DMA_LATENCY: expected 0 or 1"
(( PAIRS >= 3 )) || log "warning: PAIRS=$PAIRS; at least 3 pairs are recommended for a median"

declare -A TOOL_FOR=([pthread-mutex]=ptsematest [mq]=pmqtest [signal]=sigwaittest [sysv-sem]=svsematest)
read -r -a MECHS <<<"$MECHANISMS"
(( ${#MECHS[@]} >= 1 )) || die "MECHANISMS is empty"
for m in "${MECHS[@]}"; do
    [[ -n ${TOOL_FOR[$m]:-} ]] || die "MECHANISMS: '$m' has no rt-tests counterpart (known: ${!TOOL_FOR[*]})"
done

# ---------------------------------------------------------------- root
skip_unless_root_with_fifo "both tools run SCHED_FIFO $PRIO and lock memory" latency
require_online_cpu "$CPU" "$(online_cpus '?')"

# ---------------------------------------------------------------- tools
command -v python3 >/dev/null 2>&1 || apt_install python3
declare -A TOOL_PATH=()
for m in "${MECHS[@]}"; do
    t=${TOOL_FOR[$m]}
    ensure_rt_tests_tool "$t"
    TOOL_PATH[$t]=$(command -v "$t")
done
build_rtlab
# The tools come from one package: the first one's version stands for all.
first_tool=${TOOL_FOR[${MECHS[0]}]}
RT_TESTS_VERSION=$(rt_tests_version "$first_tool" "${TOOL_PATH[$first_tool]}" --help)

# ---------------------------------------------------------------- temp + quiet
make_temp_dir
wait_for_idle_builds latencies

# ---------------------------------------------------------------- commands
DMA_ARGS=()
(( DMA_LATENCY == 1 )) || DMA_ARGS=(--no-dma-latency)
# Exact argv of each run; $1 = run number, $2 = mechanism, $3 = rtlab's
# pacing (rt-tests: the paced run also writes every sample, for the
# resolution check in switch_compare.py).
rtlab_cmd() {
    CMD=("$RTLAB" measure switch --mechanism "$2" --events "$EVENTS" --interval "${INTERVAL_US}us"
         --cpu "$CPU" --policy fifo --priority "$PRIO" "${DMA_ARGS[@]}" --pacing "$3" --no-store --quiet
         --json "$TMP/run$1-rtlab.json")
    [[ $3 == rt-tests ]] && CMD+=(--samples "$TMP/run$1-rtlab.csv")
    return 0
}
# One thread pair (-t1), both threads pinned to CPU (-a$CPU: the attached form,
# as "-a 0" would be read as "-a" = every CPU), same priority, interval and
# count, summary only (-q), results also as JSON.
tool_cmd() {
    local tool=${TOOL_FOR[$2]}
    CMD=("${TOOL_PATH[$tool]}" -t1 "-a$CPU" -p "$PRIO" -i "$INTERVAL_US" -l "$EVENTS" -q
         "--json=$TMP/run$1-$tool.json")
}
rtlab_cmd N M rt-tests; RTLAB_TEMPLATE=$(cmd_template "${CMD[@]}")
rtlab_cmd N M grid; RTLAB_GRID_TEMPLATE=$(cmd_template "${CMD[@]}")
tool_cmd N "${MECHS[0]}"
TOOL_TEMPLATE=$(cmd_template TOOL "${CMD[@]:1}" | sed "s#run\(N\)-$first_tool#run\1-TOOL#")

start_manifest pair seq tool mechanism json log

# A short rtlab run first, so a probe that does not work yet fails in seconds
# rather than after the reference runs.
log "checking that rtlab measure switch works (${#MECHS[@]} mechanism(s), 50 events each, both pacings)"
pre_mechs=$(IFS=,; echo "${MECHS[*]}")
for pacing in rt-tests grid; do
    if ! "$RTLAB" measure switch --mechanism "$pre_mechs" --events 50 --interval "${INTERVAL_US}us" \
            --cpu "$CPU" --policy fifo --priority "$PRIO" "${DMA_ARGS[@]}" --pacing "$pacing" \
            --no-store --quiet --json "$TMP/preflight.json" >"$TMP/preflight.log" 2>&1; then
        log "rtlab measure switch --pacing $pacing failed; its output:"
        sed 's/^/    /' "$TMP/preflight.log" >&2 || true
        die "rtlab measure switch does not work: nothing to compare"
    fi
done

run_one() {  # pair seq tool mechanism
    local pair=$1 seq=$2 tool=$3 mech=$4
    case $tool in
        rtlab) rtlab_cmd "$seq" "$mech" rt-tests ;;
        rtlab-grid) rtlab_cmd "$seq" "$mech" grid ;;
        *) tool_cmd "$seq" "$mech" ;;
    esac
    local json=$TMP/run$seq-${tool%-grid}.json logf=$TMP/run$seq-$tool.log
    settle_and_sample
    log "run $seq/$TOTAL_RUNS (pair $pair, $mech): $tool, $EVENTS events on CPU $CPU (load $RUN_LOAD)"
    run_timed "$logf"
    check_run_output "$tool" "$logf" "$json"
    append_manifest_row "$pair" "$seq" "$tool" "$mech" "${json##*/}" "${logf##*/}"
}

TOTAL_RUNS=$(( PAIRS * 3 * ${#MECHS[@]} ))
run_s=$(( EVENTS * INTERVAL_US / 1000000 ))
log "${#MECHS[@]} mechanism(s) x $PAIRS pairs x 3 runs x ~${run_s}s: about $(( TOTAL_RUNS * (run_s + SETTLE) ))s"
seq_no=0
for (( pair = 1; pair <= PAIRS; pair++ )); do
    for mech in "${MECHS[@]}"; do
        # The order rotates from pair to pair, so no side always runs first.
        order=(rtlab "${TOOL_FOR[$mech]}" rtlab-grid)
        for (( k = 0; k < 3; k++ )); do
            tool=${order[$(( (k + pair - 1) % 3 ))]}
            seq_no=$(( seq_no + 1 ))
            run_one "$pair" "$seq_no" "$tool" "$mech"
        done
    done
done

# ---------------------------------------------------------------- report
export_host_environment
export BENCH_RTLAB_VERSION=$RTLAB_VERSION BENCH_RT_TESTS_VERSION=$RT_TESTS_VERSION
export BENCH_RTLAB_CMD=$RTLAB_TEMPLATE BENCH_RTLAB_GRID_CMD=$RTLAB_GRID_TEMPLATE BENCH_TOOL_CMD=$TOOL_TEMPLATE
export PAIRS EVENTS CPU INTERVAL_US PRIO SETTLE DMA_LATENCY MECHANISMS
python3 - "$TMP/meta.json" "$SCRIPT_DIR" <<'EOF'
import os, sys
sys.path.insert(0, sys.argv[2])
from benchlib import write_meta
e = os.environ
write_meta(
    sys.argv[1],
    versions={"rtlab": e["BENCH_RTLAB_VERSION"], "rt_tests": e["BENCH_RT_TESTS_VERSION"]},
    config={"pairs": int(e["PAIRS"]), "events": int(e["EVENTS"]), "cpu": int(e["CPU"]),
            "interval_us": int(e["INTERVAL_US"]), "priority": int(e["PRIO"]),
            "policy": "SCHED_FIFO", "settle_s": int(e["SETTLE"]),
            "dma_latency": e["DMA_LATENCY"] == "1",
            "mechanisms": e["MECHANISMS"].split(),
            "order": "per pair, per mechanism: rtlab (rt-tests pacing), the rt-tests tool, "
                     "rtlab (grid pacing), rotated by one from pair to pair"},
    commands={"rtlab": e["BENCH_RTLAB_CMD"], "rtlab_grid": e["BENCH_RTLAB_GRID_CMD"],
              "rt_tests": e["BENCH_TOOL_CMD"]},
)
EOF

mkdir -p "$RESULTS_DIR"
echo
echo "== rtlab measure switch vs rt-tests: $PAIRS pairs, $EVENTS events, CPU $CPU, ${INTERVAL_US}us, FIFO $PRIO =="
python3 "$SCRIPT_DIR/switch_compare.py" --manifest "$MANIFEST" --meta "$TMP/meta.json" \
    --md "$RESULTS_DIR/$NAME.md" --json "$TMP/summary.json" ||
    die "the analysis failed (bench/switch_compare.py)"
echo
log "wrote $RESULTS_DIR/$NAME.md"
exit 0
