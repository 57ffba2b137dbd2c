#!/usr/bin/env bash
# Paper 002's SCHED_KURT_PROCS against SCHED_ALL_PROCS (issue 19): one
# invocation of `rtlab exec kurt-table --processes --focus FOCUS` runs every
# task count (TASKS) idle and under LOAD three ways, so the focused and the
# unfocused executive tables come from the same run under the same load:
#   (a) SCHED_FIFO processes timing themselves (clock_nanosleep),
#   (b) processes under `rtlab exec serve`, sharing the CPUs with everything,
#   (c) the same, with `exec serve --focus FOCUS`: the CPU theirs alone (the
#       load, the table's own process and every other movable task and IRQ
#       moved to the other CPUs, all put back after each cell).
# bench/kurt_focus.py writes
#   bench/results/kurt-focus.md   the tables (% within 10/50/100/500/1000 us),
#                                 focused minus unfocused per row, the
#                                 accounting of every run, the machine, its
#                                 load average before and after, the command
#                                 and the date
# The raw JSON lives in a temporary directory removed on exit (KEEP_RAW=DIR
# keeps it).
#
# Needs root (SCHED_FIFO, mlockall, cpusets) and two online CPUs; without
# them it prints why and exits 0. Builds rtlab in release mode unless RTLAB
# names a built binary. Exit code 0 when the runs and the report were done
# (whatever the figures), non-zero when something failed.
#
# Settings (environment variables):
#   TASKS="1 10"        task counts (kurt-table --tasks)
#   DURATION=10         seconds per run (kurt-table --duration)
#   LOAD=io             the load of the loaded table (--load)
#   FOCUS=              the focused CPU(s) [default: the last online CPU]
#   RTLAB=              a built rtlab to use instead of a release build
#   WAIT_IDLE=0         wait up to this many seconds for cargo/rustc to finish
#   KEEP_RAW=           directory to keep the raw JSON in
#   RESULTS_DIR=bench/results  where the .md goes
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
NAME=kurt-focus
# shellcheck source=bench/lib.sh
source "$SCRIPT_DIR/lib.sh"

TASKS=${TASKS:-1 10}
DURATION=${DURATION:-10}
LOAD=${LOAD:-io}
FOCUS=${FOCUS:-$(last_online_cpu)}
WAIT_IDLE=${WAIT_IDLE:-0}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}
PRIO=90

require_whole_numbers DURATION WAIT_IDLE
(( DURATION >= 1 )) || die "DURATION must be at least 1 (seconds)"
read -r -a TASK_LIST <<<"$TASKS"
(( ${#TASK_LIST[@]} >= 1 )) || die "TASKS is empty"
for n in "${TASK_LIST[@]}"; do
    is_uint "$n" && (( n >= 1 && n <= 80 )) || die "TASKS: '$n' (expected 1-80 processes)"
done
[[ -n $LOAD ]] || die "LOAD is empty"

skip_unless_root_with_fifo "the processes run SCHED_FIFO and the focus moves every process and IRQ" latency
if [[ $(online_cpus 0) =~ ^[0-9]+$ ]]; then
    echo "SKIP: one online CPU: focusing needs one left for the rest."
    exit 0
fi
command -v python3 >/dev/null 2>&1 || apt_install python3
rtlab_or_build
"$RTLAB" exec kurt-table --help 2>/dev/null | grep -q -- '--focus' ||
    die "$RTLAB has no 'kurt-table --focus' (issue 19): nothing to compare"

make_temp_dir
wait_for_idle_builds latencies
export_host_environment
BENCH_LOADAVG_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
export BENCH_LOADAVG_BEFORE

TASKS_ARG=$(IFS=,; echo "${TASK_LIST[*]}")
CMD=("$RTLAB" exec kurt-table --processes --focus "$FOCUS" --cpu "$FOCUS" --tasks "$TASKS_ARG"
     --duration "${DURATION}s" --load "$LOAD" --no-store --quiet --json "$TMP/kurt.json")
log "running: ${CMD[*]}"
status=0
"${CMD[@]}" || status=$?
# 1: a run failed or was partial; its cells say which. Anything else is ours.
(( status == 0 || status == 1 )) || die "rtlab exec kurt-table --processes --focus exited with $status"
[[ -s $TMP/kurt.json ]] || die "no JSON document from rtlab"
BENCH_LOADAVG_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
export BENCH_LOADAVG_AFTER BENCH_BUSY_BUILDS=$(busy_builds)

mkdir -p "$RESULTS_DIR"
TEMPLATE="${CMD[*]}"
python3 "$SCRIPT_DIR/kurt_focus.py" "$TMP/kurt.json" "$RESULTS_DIR/kurt-focus.md" \
    "${TEMPLATE//$TMP/\$TMP}"
log "wrote $RESULTS_DIR/kurt-focus.md"
