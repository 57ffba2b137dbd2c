#!/usr/bin/env bash
# What the witness (docs/runs.md, "Spikes explained") costs the figures it
# explains, measured in one run: `rtlab measure timer --witness-alternate`
# keeps the witness watching only in even seconds of the run, so every
# run holds samples with the witness (even seconds) and without it (odd
# seconds) under the same conditions, interleaved second by second. Each
# run's samples file is split by the second each sample's deadline fell
# in; p50, p99, p99.9 and max per arm and CPU come from the samples, the
# witness's own CPU time from the result (witness.cpu_ns). REPEATS runs
# per witness period in PERIODS.
# Writes bench/results/witness-cost.md (bench/witness_cost.py).
#
# Needs root (SCHED_FIFO, mlockall, /dev/cpu_dma_latency); without it, it
# prints why and exits 0. Builds rtlab in release mode first, then takes the
# host lock (LOCK) for the measuring only.
#
# Settings (environment variables):
#   REPEATS=2          runs per period
#   DURATION=30        seconds of each run (half with the witness)
#   PERIODS="50ms 20ms" the witness periods measured (the first is the default)
#   INTERVAL_US=1000   the timer's interval
#   PRIO=90            the timer's SCHED_FIFO priority
#   SETTLE=2           seconds of pause before each run
#   WAIT_IDLE=0        wait up to this many seconds for cargo/rustc to finish first
#   LOCK=/tmp/rtlab-host.lock  the machine-wide lock of live tests (empty: none)
#   KEEP_RAW=          directory to keep the raw files in
#   RESULTS_DIR=bench/results  where the .md goes
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
NAME=witness-cost
# shellcheck source=bench/lib.sh
source "$SCRIPT_DIR/lib.sh"

REPEATS=${REPEATS:-2}
DURATION=${DURATION:-30}
PERIODS=${PERIODS:-50ms 20ms}
INTERVAL_US=${INTERVAL_US:-1000}
PRIO=${PRIO:-90}
SETTLE=${SETTLE:-2}
WAIT_IDLE=${WAIT_IDLE:-0}
LOCK=${LOCK-/tmp/rtlab-host.lock}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}

require_whole_numbers REPEATS DURATION INTERVAL_US PRIO SETTLE WAIT_IDLE
(( REPEATS >= 1 )) || die "REPEATS must be at least 1"
(( DURATION >= 6 )) || die "DURATION must be at least 6 (seconds): three of each arm"
(( PRIO >= 1 && PRIO <= 99 )) || die "PRIO=$PRIO: SCHED_FIFO priorities are 1-99"
[[ -n $PERIODS ]] || die "PERIODS is empty"

skip_unless_root_with_fifo "the timer runs SCHED_FIFO, locks memory and writes /dev/cpu_dma_latency" latency
command -v python3 >/dev/null 2>&1 || apt_install python3
build_rtlab

make_temp_dir
if [[ -n $LOCK ]]; then
    exec 9>"$LOCK"
    log "waiting for the host lock $LOCK"
    flock 9
fi
wait_for_idle_builds latencies
ONLINE=$(online_cpus '?')
export RTLAB_STATE_DIR=$TMP/state XDG_DATA_HOME=$TMP/data

printf 'period\trepeat\tjson\tsamples\tbuilds\n' >"$TMP/runs.tsv"
for period in $PERIODS; do
    for (( r = 1; r <= REPEATS; r++ )); do
        sleep "$SETTLE"
        json=$TMP/run-$period-$r.json samples=$TMP/run-$period-$r.csv
        log "witness every $period, run $r/$REPEATS: ${DURATION}s on CPUs $ONLINE, the witness in even seconds only"
        "$RTLAB" measure timer --cpus all --interval "${INTERVAL_US}us" --priority "$PRIO" \
            --duration "${DURATION}s" --witness-period "$period" --witness-alternate \
            --samples "$samples" --json "$json" --quiet ||
            die "rtlab measure timer failed (see above)"
        printf '%s\t%s\t%s\t%s\t%s\n' "$period" "$r" "${json##*/}" "${samples##*/}" "$(busy_builds)" \
            >>"$TMP/runs.tsv"
    done
done
[[ -z $LOCK ]] || flock -u 9

mkdir -p "$RESULTS_DIR"
python3 "$SCRIPT_DIR/witness_cost.py" --dir "$TMP" --md "$RESULTS_DIR/$NAME.md" \
    --rtlab "$RTLAB_VERSION" --command "rtlab measure timer --cpus all --interval ${INTERVAL_US}us --priority $PRIO --duration ${DURATION}s --witness-period PERIOD --witness-alternate --samples S.csv --json R.json"
log "wrote $RESULTS_DIR/$NAME.md"
