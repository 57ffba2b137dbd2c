#!/usr/bin/env bash
# Paper 002's Table 4.1 with processes (issue 18): one invocation of
# `rtlab exec kurt-table --processes` (release build) runs every task count
# (TASKS) as separate processes, idle and under LOAD, twice each: processes
# attached to `rtlab exec serve` (rtlab-client) and SCHED_FIFO processes
# timing themselves (absolute clock_nanosleep, paper 002's Program 4.7).
# bench/kurt_processes.py writes
#   bench/results/kurt-processes.md   the table (% within 10/50/100/500/1000 us
#                                     per task count, executive vs SCHED_FIFO
#                                     processes), the ratio executive/FIFO at
#                                     10 us per row, the accounting of every
#                                     run, the target checked, and paper 002's
#                                     KURT and FIFO figures beside them
# The raw JSON lives in a temporary directory that is removed on exit (set
# KEEP_RAW=DIR to keep it).
#
# Needs root (SCHED_FIFO, mlockall); without it, it prints why and exits 0.
# Builds rtlab in release mode. Exit code 0 when the runs and the report were
# done (whatever the figures), non-zero when something failed.
#
# Settings (environment variables):
#   TASKS="1 10 20 30"  task counts (kurt-table --tasks)
#   DURATION=5          seconds per run (kurt-table --duration)
#   PERIOD_US=10000     period of every task, us (--period)
#   WORK_US=100         work per activation, us (--work)
#   LOAD=io             the load of the loaded table (--load)
#   WAIT_IDLE=0         wait up to this many seconds for cargo/rustc to finish
#   KEEP_RAW=           directory to keep the raw JSON in
#   RESULTS_DIR=bench/results  where the .md goes
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
NAME=kurt-processes
# shellcheck source=bench/lib.sh
source "$SCRIPT_DIR/lib.sh"

TASKS=${TASKS:-1 10 20 30}
DURATION=${DURATION:-5}
PERIOD_US=${PERIOD_US:-10000}
WORK_US=${WORK_US:-100}
LOAD=${LOAD:-io}
WAIT_IDLE=${WAIT_IDLE:-0}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}
# The executive's priority, for the check that SCHED_FIFO is granted.
PRIO=90

require_whole_numbers DURATION PERIOD_US WORK_US WAIT_IDLE
(( DURATION >= 1 )) || die "DURATION must be at least 1 (seconds)"
(( PERIOD_US >= 100 )) || die "PERIOD_US must be at least 100"
(( WORK_US >= 1 && WORK_US < PERIOD_US )) || die "WORK_US=$WORK_US: expected 1 to PERIOD_US-1"
read -r -a TASK_LIST <<<"$TASKS"
(( ${#TASK_LIST[@]} >= 1 )) || die "TASKS is empty"
for n in "${TASK_LIST[@]}"; do
    if ! is_uint "$n" || (( n < 1 || n > 100 )); then
        die "TASKS: '$n' (expected task counts 1-100: one process each)"
    fi
    (( n * WORK_US < PERIOD_US )) ||
        die "TASKS: $n tasks x ${WORK_US} us of work do not fit in one ${PERIOD_US} us period on one CPU"
done
[[ -n $LOAD ]] || die "LOAD is empty"

skip_unless_root_with_fifo "the processes run SCHED_FIFO 80 (rtlab's executive 90) and lock memory" latency
command -v python3 >/dev/null 2>&1 || apt_install python3
build_rtlab
export RTLAB_VERSION
"$RTLAB" exec serve --help >/dev/null 2>&1 ||
    die "$RTLAB has no 'exec serve' (issue 18's executive as a service): nothing to compare with"

make_temp_dir
wait_for_idle_builds latencies
export_host_environment

TASKS_ARG=$(IFS=,; echo "${TASK_LIST[*]}")
CMD=("$RTLAB" exec kurt-table --processes --tasks "$TASKS_ARG" --duration "${DURATION}s"
     --period "${PERIOD_US}us" --work "${WORK_US}us" --load "$LOAD" --no-store --quiet
     --json "$TMP/kurt.json")
log "running: ${CMD[*]}"
status=0
"${CMD[@]}" || status=$?
# 1: a run failed or was partial; its cells say which. Anything else is ours.
(( status == 0 || status == 1 )) || die "rtlab exec kurt-table --processes exited with $status"
[[ -s $TMP/kurt.json ]] || die "no JSON document from rtlab"

mkdir -p "$RESULTS_DIR"
TEMPLATE="${CMD[*]}"
python3 "$SCRIPT_DIR/kurt_processes.py" "$TMP/kurt.json" "$RESULTS_DIR/kurt-processes.md" \
    "${TEMPLATE//$TMP/\$TMP}"
log "wrote $RESULTS_DIR/kurt-processes.md"
