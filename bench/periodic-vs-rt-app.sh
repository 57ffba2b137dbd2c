#!/usr/bin/env bash
# Side-by-side benchmark: the same periodic task set under rt-app (Debian
# package rt-app) and under `rtlab exec periodic`, both rtlab's executive and
# its plain SCHED_FIFO baseline (--mode fifo).
#
# For each task count (TASKS) runs the three alternately, PAIRS rounds
# (round 1: 1 task rt-app, executive, fifo; 10 tasks rt-app, executive,
# fifo; ...; then round 2, ...): every task activated every PERIOD_US with
# WORK_US of spinning work (wall clock), task i offset by i x period / tasks,
# all tasks (and rtlab's executive) pinned to one CPU, tasks at SCHED_FIFO
# TASK_PRIO, rtlab's executive at EXEC_PRIO. Reads rt-app's per-thread logs
# (wu_lat, slack) and rtlab's JSON plus its per-activation samples with
# bench/periodic_compare.py, which computes every figure with one rule, and
# writes
#   bench/results/periodic-vs-rt-app.md    human tables + settings + summary
# The raw files live in a temporary directory that is removed on exit (set
# KEEP_RAW=DIR to copy them, with a summary JSON, to DIR).
#
# rt-app: one task object per task, each a loop of a "timer" (unique per
# thread, "mode": "absolute" = a fixed grid from the start) then "runtime"
# (wall-clock spinning work), logged to a memory buffer written out at the
# end ("log_size" in MB), pages locked. Its "delay" is RTAPP_START_S plus the
# task's offset: rt-app starts its grid when its first thread is ready, and
# its other threads lock memory (mlockall, every thread's stack included)
# before they join, which takes hundreds of ms with 30 threads; without the
# margin their first activations are run late, back to back (wu_lat 0).
# rtlab starts its grid 50 ms after its threads are set up. rt-app's
# "duration" is DURATION + RTAPP_START_S, so both plan about DURATION /
# period activations per task. Its calibration (ns per loop, used by
# "runtime"'s 32 us work chunks) is measured once on CPU before the runs
# and passed as a number (RTAPP_CALIBRATION overrides it).
#
# Needs root (SCHED_FIFO, mlockall); without it, it prints why and exits 0.
# Installs rt-app (Debian package) when it is missing and builds rtlab in
# release mode. Exit code 0 when the runs and the report were done, non-zero
# only when something failed.
#
# Settings (environment variables):
#   PAIRS=3          rounds (rt-app, rtlab executive, rtlab fifo) per task count
#   TASKS="1 10 30"  task counts to run
#   DURATION=10      seconds per run (rt-app "duration"; rtlab --duration)
#   PERIOD_US=10000  period of every task, us (rt-app timer "period"; rtlab --period)
#   WORK_US=200      work per activation, us (rt-app "runtime"; rtlab --work)
#   CPU=1            CPU of every task and of the executive (default: the last online CPU)
#   TASK_PRIO=80     SCHED_FIFO priority of every task (rt-app "priority"; rtlab --task-priority)
#   EXEC_PRIO=90     SCHED_FIFO priority of rtlab's executive (--priority)
#   DMA_LATENCY=0    0 = nobody holds /dev/cpu_dma_latency (rtlab --no-dma-latency;
#                    rt-app never does); 1 = both run with it held at 0 (rtlab
#                    itself, rt-app under a python3 wrapper that holds it)
#   RTAPP_CALIBRATION=  rt-app's ns per loop; empty = measure it once on CPU
#   RTAPP_START_S=1  seconds rt-app's tasks wait before their grid starts
#                    (added to every "delay" and to "duration"; 0 = none)
#   SETTLE=1         seconds of pause before each run
#   WAIT_IDLE=0      wait up to this many seconds for cargo/rustc to finish
#                    before measuring (other builds disturb the figures)
#   WAIT_RT=120      before each run, wait up to this many seconds for other
#                    real-time programs (SCHED_FIFO/RR/DEADLINE user threads:
#                    another benchmark, say) to finish; the ones running at the
#                    start of a run or seen during it (sampled every 0.5 s from
#                    another CPU) are recorded and reported
#   KEEP_RAW=        directory to keep the raw files (logs, JSON, CSV, manifest) in
#   RESULTS_DIR=bench/results  where the .md goes
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
NAME=periodic-vs-rt-app
# shellcheck source=bench/lib.sh
source "$SCRIPT_DIR/lib.sh"

ONLINE=$(online_cpus 0)
PAIRS=${PAIRS:-3}
TASKS=${TASKS:-1 10 30}
DURATION=${DURATION:-10}
PERIOD_US=${PERIOD_US:-10000}
WORK_US=${WORK_US:-200}
CPU=${CPU:-$(last_online_cpu)}
TASK_PRIO=${TASK_PRIO:-80}
EXEC_PRIO=${EXEC_PRIO:-90}
DMA_LATENCY=${DMA_LATENCY:-0}
RTAPP_CALIBRATION=${RTAPP_CALIBRATION:-}
RTAPP_START_S=${RTAPP_START_S:-1}
SETTLE=${SETTLE:-1}
WAIT_IDLE=${WAIT_IDLE:-0}
WAIT_RT=${WAIT_RT:-120}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}
# The highest priority used, for the check that SCHED_FIFO is granted.
PRIO=$EXEC_PRIO

# ---------------------------------------------------------------- settings
require_whole_numbers PAIRS DURATION PERIOD_US WORK_US CPU TASK_PRIO EXEC_PRIO DMA_LATENCY \
    RTAPP_START_S SETTLE WAIT_IDLE WAIT_RT
[[ -z $RTAPP_CALIBRATION ]] || require_whole_numbers RTAPP_CALIBRATION
(( PAIRS >= 1 )) || die "PAIRS must be at least 1"
(( DURATION >= 1 )) || die "DURATION must be at least 1 (whole seconds: rt-app's \"duration\")"
(( PERIOD_US >= 100 )) || die "PERIOD_US must be at least 100"
(( WORK_US >= 1 && WORK_US < PERIOD_US )) || die "WORK_US=$WORK_US: expected 1 to PERIOD_US-1"
(( DURATION * 1000000 >= 2 * PERIOD_US )) || die "DURATION must hold at least two periods"
(( TASK_PRIO >= 1 && TASK_PRIO <= 99 )) || die "TASK_PRIO=$TASK_PRIO: SCHED_FIFO priorities are 1-99"
(( EXEC_PRIO >= 1 && EXEC_PRIO <= 99 )) || die "EXEC_PRIO=$EXEC_PRIO: SCHED_FIFO priorities are 1-99"
(( EXEC_PRIO > TASK_PRIO )) || die "EXEC_PRIO ($EXEC_PRIO) must be above TASK_PRIO ($TASK_PRIO): rtlab's executive preempts its tasks"
(( DMA_LATENCY <= 1 )) || die "DMA_LATENCY=$DMA_LATENCY: expected 0 or 1"
[[ -z $RTAPP_CALIBRATION ]] || (( RTAPP_CALIBRATION >= 1 )) || die "RTAPP_CALIBRATION must be at least 1 (ns per loop)"
read -r -a TASK_LIST <<<"$TASKS"
(( ${#TASK_LIST[@]} >= 1 )) || die "TASKS is empty"
for n in "${TASK_LIST[@]}"; do
    if ! is_uint "$n" || (( n < 1 || n > 1000 )); then
        die "TASKS: '$n' (expected task counts 1-1000)"
    fi
    (( n * WORK_US < PERIOD_US )) ||
        die "TASKS: $n tasks x ${WORK_US} us of work do not fit in one ${PERIOD_US} us period on one CPU"
done
(( PAIRS >= 3 )) || log "warning: PAIRS=$PAIRS; at least 3 rounds are recommended for a median"

# ---------------------------------------------------------------- root
skip_unless_root_with_fifo "the tasks run SCHED_FIFO $TASK_PRIO (rtlab's executive $EXEC_PRIO) and lock memory" latency
require_online_cpu "$CPU" "$ONLINE"
# The sampler of other real-time programs runs on another CPU when there is one.
MONITOR_CPU=
for c in /sys/devices/system/cpu/cpu[0-9]*; do
    c=${c##*cpu}
    [[ $c == "$CPU" ]] && continue
    if [[ ! -r /sys/devices/system/cpu/cpu$c/online ]] || [[ $(cat "/sys/devices/system/cpu/cpu$c/online") == 1 ]]; then
        MONITOR_CPU=$c; break
    fi
done

# ---------------------------------------------------------------- tools
command -v python3 >/dev/null 2>&1 || apt_install python3
command -v rt-app >/dev/null 2>&1 || apt_install rt-app
RTAPP=$(command -v rt-app) || die "rt-app is installed but not on PATH"
build_rtlab
RTAPP_PACKAGE=$(dpkg-query -W -f='${Version}' rt-app 2>/dev/null || true)
# rt-app has no --version; the package says which it is.
RTAPP_VERSION="rt-app${RTAPP_PACKAGE:+ (Debian rt-app $RTAPP_PACKAGE)}"

# ---------------------------------------------------------------- temp + quiet
make_temp_dir
wait_for_idle_builds latencies

# ---------------------------------------------------------------- commands
DMA_ARGS=() DMA_HOLD=()
if (( DMA_LATENCY == 1 )); then
    [[ -w /dev/cpu_dma_latency ]] || die "DMA_LATENCY=1: /dev/cpu_dma_latency is not writable"
    # Writes 0 and execs the rest of its argv with the file still open: the
    # kernel drops the request when that program exits, whatever happens.
    DMA_HOLD=(python3 -c 'import os, struct, sys; fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY); os.write(fd, struct.pack("i", 0)); os.set_inheritable(fd, True); os.execvp(sys.argv[1], sys.argv[1:])')
else
    DMA_ARGS=(--no-dma-latency)
fi
# Activations per task in a run (rtlab: duration / period).
ACTIVATIONS=$(( DURATION * 1000000 / PERIOD_US ))
# rt-app's log buffer per thread, MB: one row of about 100 bytes per
# activation, with room to spare (it is circular: an overflow would lose rows).
LOG_MB=$(( (ACTIVATIONS + 2) * 256 / 1048576 + 1 ))

# rt-app's task set: FILE LOGDIR TASKS CALIBRATION. Task i starts after a
# "delay" of RTAPP_START_S + i x period / tasks (whole us; rtlab's offsets
# are in ns), then loops: wait for its timer (absolute grid: start + delay
# + k x period, k >= 1), then spin "runtime" us.
write_rtapp_config() {
    local file=$1 logdir=$2 n=$3 calib=$4 i sep=
    {
        printf '{\n  "global": {\n'
        printf '    "duration": %d, "calibration": %s, "default_policy": "SCHED_FIFO",\n' \
            $(( DURATION + RTAPP_START_S )) "$calib"
        printf '    "lock_pages": true, "logdir": "%s", "log_basename": "rt-app",\n' "$logdir"
        printf '    "log_size": %d, "ftrace": false, "gnuplot": false\n  },\n  "tasks": {\n' "$LOG_MB"
        for (( i = 0; i < n; i++ )); do
            printf '%s    "task%d": {"policy": "SCHED_FIFO", "priority": %d, "cpus": [%d], "delay": %d,\n' \
                "$sep" "$i" "$TASK_PRIO" "$CPU" $(( RTAPP_START_S * 1000000 + i * PERIOD_US / n ))
            printf '      "timer": {"ref": "unique", "period": %d, "mode": "absolute"}, "runtime": %d}' \
                "$PERIOD_US" "$WORK_US"
            sep=$',\n'
        done
        printf '\n  }\n}\n'
    } >"$file"
}

# Exact argv of each tool (rt-app, rtlab-executive, rtlab-fifo); $2 = run
# number, $3 = tasks.
tool_cmd() {  # tool run tasks
    case $1 in
        rt-app)
            CMD=("${DMA_HOLD[@]}" "$RTAPP" "$TMP/run$2-rt-app.json") ;;
        rtlab-executive|rtlab-fifo)
            local mode=${1#rtlab-}
            CMD=("$RTLAB" exec periodic --tasks "$3" --period "${PERIOD_US}us" --work "${WORK_US}us"
                 --duration "${DURATION}s" --cpu "$CPU" --mode "$mode" --priority "$EXEC_PRIO"
                 --task-priority "$TASK_PRIO" "${DMA_ARGS[@]}" --no-store --quiet
                 --json "$TMP/run$2-$1.json" --samples "$TMP/run$2-$1.csv") ;;
        *) die "unknown tool $1" ;;
    esac
}
tool_cmd rt-app N T;          RTAPP_TEMPLATE=$(cmd_template "${CMD[@]:${#DMA_HOLD[@]}}")
(( DMA_LATENCY == 0 )) || RTAPP_TEMPLATE="HOLD_DMA_LATENCY_0 $RTAPP_TEMPLATE"
tool_cmd rtlab-executive N T; EXEC_TEMPLATE=$(cmd_template "${CMD[@]}")
tool_cmd rtlab-fifo N T;      FIFO_TEMPLATE=$(cmd_template "${CMD[@]}")

start_manifest pair seq tool tasks result data log rt_others_before rt_others_during cpu_busy_pct_measured

# rt-app's calibration, once (it takes a few seconds), and a short run of
# each tool, so that one that does not work fails in seconds.
wait_for_no_rt_competitors "$WAIT_RT"
if [[ -z $RTAPP_CALIBRATION ]]; then
    log "measuring rt-app's calibration (ns per loop) on CPU $CPU, and checking that rt-app works"
    CALIB_SOURCE="measured by rt-app (\"calibration\": \"CPU$CPU\") once before the runs"
else
    log "checking that rt-app works (calibration $RTAPP_CALIBRATION ns per loop, given)"
    CALIB_SOURCE="given (RTAPP_CALIBRATION)"
fi
mkdir -p "$TMP/preflight-rt-app"
saved_duration=$DURATION; DURATION=1
write_rtapp_config "$TMP/preflight-rt-app.json" "$TMP/preflight-rt-app" 1 \
    "${RTAPP_CALIBRATION:-\"CPU$CPU\"}"
DURATION=$saved_duration
if ! "${DMA_HOLD[@]}" "$RTAPP" "$TMP/preflight-rt-app.json" >"$TMP/preflight-rt-app.log" 2>&1 ||
        [[ ! -s $TMP/preflight-rt-app/rt-app-task0-0.log ]]; then
    log "rt-app failed; its output:"; sed 's/^/    /' "$TMP/preflight-rt-app.log" >&2 || true
    die "rt-app does not work: nothing to compare"
fi
if [[ -z $RTAPP_CALIBRATION ]]; then
    RTAPP_CALIBRATION=$(sed -n 's/.*pLoad = \([0-9][0-9]*\)ns.*/\1/p' "$TMP/preflight-rt-app.log" | head -1)
    if ! is_uint "${RTAPP_CALIBRATION:-x}" || (( RTAPP_CALIBRATION < 1 )); then
        die "could not read rt-app's calibration (pLoad = N ns) from its output (KEEP_RAW keeps it)"
    fi
fi
log "rt-app calibration: $RTAPP_CALIBRATION ns per loop"
log "checking that rtlab exec periodic works (1 s, executive)"
if ! "$RTLAB" exec periodic --tasks 1 --period "${PERIOD_US}us" --work "${WORK_US}us" --duration 1s \
        --cpu "$CPU" --priority "$EXEC_PRIO" --task-priority "$TASK_PRIO" "${DMA_ARGS[@]}" --no-store \
        --quiet --json "$TMP/preflight-rtlab.json" >"$TMP/preflight-rtlab.log" 2>&1; then
    log "rtlab exec periodic failed; its output:"; sed 's/^/    /' "$TMP/preflight-rtlab.log" >&2 || true
    die "rtlab exec periodic does not work: nothing to compare"
fi
# The report shows the configuration of the first task count.
# shellcheck disable=SC2016  # a literal $TMP: the report names the temporary directory so
write_rtapp_config "$TMP/example-rt-app.json" '$TMP/runN-rt-app' "${TASK_LIST[0]}" "$RTAPP_CALIBRATION"

run_one() {  # pair seq tool tasks
    local pair=$1 seq=$2 tool=$3 n=$4 result data first
    tool_cmd "$tool" "$seq" "$n"
    local logf=$TMP/run$seq-$tool.log
    if [[ $tool == rt-app ]]; then
        result=$TMP/run$seq-rt-app data=$TMP/run$seq-rt-app.json
        mkdir -p "$result"
        write_rtapp_config "$data" "$result" "$n" "$RTAPP_CALIBRATION"
        first=$result/rt-app-task0-0.log
    else
        result=$TMP/run$seq-$tool.json data=$TMP/run$seq-$tool.csv first=$data
    fi
    wait_for_no_rt_competitors "$WAIT_RT"
    local rt_before=${RT_COMPETITORS:--} c0 c1
    settle_and_sample
    log "run $seq/$TOTAL_RUNS (round $pair): $tool, $n task(s), ${DURATION}s on CPU $CPU (load $RUN_LOAD)"
    start_rt_monitor "$TMP/run$seq-rt-others.txt" "$MONITOR_CPU"
    c0=$(cpu_ticks_of "$CPU")
    run_timed "$logf"
    c1=$(cpu_ticks_of "$CPU")
    stop_rt_monitor
    [[ -z $RT_SEEN ]] || log "other real-time programs ran during run $seq: $RT_SEEN"
    # For rt-app: the first task's log (the helper checks every task's).
    check_run_output "$tool" "$logf" "$first"
    [[ $tool != rt-app ]] || check_run_output "$tool" "$logf" "$result/rt-app-task$(( n - 1 ))-$(( n - 1 )).log"
    append_manifest_row "$pair" "$seq" "$tool" "$n" "${result##*/}" "${data##*/}" "${logf##*/}" \
        "$rt_before" "${RT_SEEN:--}" "$(cpu_pct "$c0" "$c1" | cut -f1)"
}

TOTAL_RUNS=$(( PAIRS * 3 * ${#TASK_LIST[@]} ))
log "${#TASK_LIST[@]} task count(s) x $PAIRS rounds x 3 runs x ${DURATION}s:" \
    "about $(( PAIRS * ${#TASK_LIST[@]} * (3 * (DURATION + SETTLE) + 1 + RTAPP_START_S) ))s"
seq_no=0
for (( pair = 1; pair <= PAIRS; pair++ )); do
    for n in "${TASK_LIST[@]}"; do
        for tool in rt-app rtlab-executive rtlab-fifo; do
            seq_no=$(( seq_no + 1 ))
            run_one "$pair" "$seq_no" "$tool" "$n"
        done
    done
done

# ---------------------------------------------------------------- report
export_host_environment "$ONLINE"
# Idle states decide what a sleeping thread pays to wake; a spinning one
# meets the kernel's RT bandwidth limit.
export_cpu_environment "$CPU"
export BENCH_RTLAB_VERSION=$RTLAB_VERSION BENCH_RTAPP_VERSION=$RTAPP_VERSION
export BENCH_RTAPP_CMD=$RTAPP_TEMPLATE BENCH_EXEC_CMD=$EXEC_TEMPLATE BENCH_FIFO_CMD=$FIFO_TEMPLATE
export BENCH_RTAPP_CALIB_SOURCE=$CALIB_SOURCE
export PAIRS TASKS DURATION PERIOD_US WORK_US CPU TASK_PRIO EXEC_PRIO DMA_LATENCY RTAPP_CALIBRATION
export RTAPP_START_S
export SETTLE ACTIVATIONS LOG_MB
python3 - "$TMP/meta.json" "$SCRIPT_DIR" "$TMP/example-rt-app.json" <<'EOF'
import os, sys
sys.path.insert(0, sys.argv[2])
from benchlib import write_meta
e = os.environ
with open(sys.argv[3], encoding="utf-8") as f:
    example = f.read()
write_meta(
    sys.argv[1],
    versions={"rtlab": e["BENCH_RTLAB_VERSION"], "rt-app": e["BENCH_RTAPP_VERSION"]},
    config={"pairs": int(e["PAIRS"]), "tasks": [int(t) for t in e["TASKS"].split()],
            "duration_s": int(e["DURATION"]), "period_us": int(e["PERIOD_US"]),
            "work_us": int(e["WORK_US"]), "activations_per_task": int(e["ACTIVATIONS"]),
            "cpu": int(e["CPU"]), "task_priority": int(e["TASK_PRIO"]),
            "executive_priority": int(e["EXEC_PRIO"]), "policy": "SCHED_FIFO",
            "phasing": "staggered: task i at i x period / tasks",
            "dma_latency": e["DMA_LATENCY"] == "1",
            "rtapp_calibration_ns_per_loop": int(e["RTAPP_CALIBRATION"]),
            "rtapp_calibration_source": e["BENCH_RTAPP_CALIB_SOURCE"],
            "rtapp_log_size_mb": int(e["LOG_MB"]), "rtapp_timer_mode": "absolute",
            "rtapp_start_s": int(e["RTAPP_START_S"]),
            "settle_s": int(e["SETTLE"]),
            "order": "per round, per task count: rt-app, rtlab executive, rtlab fifo",
            "rtapp_config_example": example},
    commands={"rt-app": e["BENCH_RTAPP_CMD"], "rtlab-executive": e["BENCH_EXEC_CMD"],
              "rtlab-fifo": e["BENCH_FIFO_CMD"]},
    extra_environment={"cpuidle": e["BENCH_CPUIDLE"], "rt_bandwidth": e["BENCH_RT_BANDWIDTH"]},
)
EOF

mkdir -p "$RESULTS_DIR"
echo
echo "== rt-app vs rtlab exec periodic: tasks $TASKS, every ${PERIOD_US}us, ${WORK_US}us work, ${DURATION}s, CPU $CPU, $PAIRS rounds =="
python3 "$SCRIPT_DIR/periodic_compare.py" --manifest "$MANIFEST" --meta "$TMP/meta.json" \
    --md "$RESULTS_DIR/$NAME.md" --json "$TMP/summary.json" ||
    die "the analysis failed (bench/periodic_compare.py)"
echo
log "wrote $RESULTS_DIR/$NAME.md"
exit 0
