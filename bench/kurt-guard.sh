#!/usr/bin/env bash
# Issue 22 item 2's proof: rtlab's executive with its guard learned online
# (`--guard auto`, the default) against the fixed 100 µs guard it had
# before (`--guard 100us --release-early 50us`), ROUNDS times each,
# alternating, in one invocation of this script: `rtlab exec kurt-table
# --idle-only` at TASKS tasks, DURATION s a cell.
# bench/kurt_guard.py writes
#   bench/results/kurt-guard.md   per round and guard the % of activations
#                                 within 10/50/100/500/1000 us (executive
#                                 and SCHED_FIFO), the target (>= 99 %
#                                 within 10 us) per row, the guards the
#                                 executive learned per idle length and the
#                                 CPU it spent spinning, the accounting of
#                                 every run, the machine, the commands
# The raw JSON lives in a temporary directory removed on exit (KEEP_RAW=DIR
# keeps it).
#
# Needs root (SCHED_FIFO, mlockall); without it it prints why and exits 0.
# Builds rtlab in release mode unless RTLAB names a built binary. LOCK=FILE
# runs each kurt-table under `flock FILE` (a machine shared by benchmarks).
# Exit code 0 when the runs and the report were done (whatever the
# figures), non-zero when something failed.
#
# Settings (environment variables):
#   TASKS="1 10 20 30"  task counts (kurt-table --tasks)
#   DURATION=5          seconds per run (kurt-table --duration)
#   ROUNDS=3            rounds of (learned, fixed)
#   CPU=                the CPU of the tasks [default: the last online CPU]
#   RTLAB=              a built rtlab to use instead of a release build
#   LOCK=               a lock file to hold for each kurt-table
#   WAIT_IDLE=0         wait up to this many seconds for cargo/rustc to finish
#   KEEP_RAW=           directory to keep the raw JSON in
#   RESULTS_DIR=bench/results  where the .md goes
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
NAME=kurt-guard
# shellcheck source=bench/lib.sh
source "$SCRIPT_DIR/lib.sh"

TASKS=${TASKS:-1 10 20 30}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CPU=${CPU:-$(last_online_cpu)}
WAIT_IDLE=${WAIT_IDLE:-0}
LOCK=${LOCK:-}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}
PRIO=90

require_whole_numbers DURATION ROUNDS WAIT_IDLE CPU
(( DURATION >= 1 )) || die "DURATION must be at least 1 (seconds)"
(( ROUNDS >= 1 )) || die "ROUNDS must be at least 1"
read -r -a TASK_LIST <<<"$TASKS"
(( ${#TASK_LIST[@]} >= 1 )) || die "TASKS is empty"
for n in "${TASK_LIST[@]}"; do
    is_uint "$n" && (( n >= 1 && n <= 1000 )) || die "TASKS: '$n' (expected 1-1000 tasks)"
done

skip_unless_root_with_fifo "the executive and its tasks run SCHED_FIFO" latency
command -v python3 >/dev/null 2>&1 || apt_install python3
rtlab_or_build
"$RTLAB" exec kurt-table --help 2>/dev/null | grep -q -- '--spin-budget' ||
    die "$RTLAB has no learned guard (kurt-table --spin-budget, issue 22): nothing to compare"

start_measuring latencies

TASKS_ARG=$(IFS=,; echo "${TASK_LIST[*]}")
LOCKED=()
[[ -n $LOCK ]] && LOCKED=(flock "$LOCK")
declare -A GUARD_ARGS=([learned]="--guard auto" [fixed]="--guard 100us --release-early 50us")
for round in $(seq 1 "$ROUNDS"); do
    for guard in learned fixed; do
        read -r -a extra <<<"${GUARD_ARGS[$guard]}"
        CMD=("$RTLAB" exec kurt-table --idle-only --cpu "$CPU" --tasks "$TASKS_ARG"
             --duration "${DURATION}s" "${extra[@]}" --no-store --quiet
             --json "$TMP/$guard-$round.json")
        log "round $round/$ROUNDS, $guard guard: ${CMD[*]}"
        status=0
        "${LOCKED[@]}" "${CMD[@]}" || status=$?
        # 1: a run failed or was partial; its cells say which.
        (( status == 0 || status == 1 )) || die "rtlab exec kurt-table exited with $status"
        [[ -s $TMP/$guard-$round.json ]] || die "no JSON document from rtlab ($guard, round $round)"
    done
done
BENCH_LOADAVG_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
export BENCH_LOADAVG_AFTER BENCH_BUSY_BUILDS=$(busy_builds)

mkdir -p "$RESULTS_DIR"
TEMPLATE="$RTLAB exec kurt-table --idle-only --cpu $CPU --tasks $TASKS_ARG --duration ${DURATION}s GUARD --no-store --quiet --json \$TMP/GUARD-N.json"
python3 "$SCRIPT_DIR/kurt_guard.py" "$TMP" "$ROUNDS" "$RESULTS_DIR/kurt-guard.md" "$TEMPLATE"
log "wrote $RESULTS_DIR/kurt-guard.md"
