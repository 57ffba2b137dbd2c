#!/usr/bin/env bash
# What `rtlab monitor` costs the machine it watches, in one invocation:
# cyclictest on every CPU alone, then beside `rtlab monitor` at its default
# duty (10 %), then beside it at --duty 100 % (the cost of continuity),
# alternated (alone, default, 100 %, alone, default, 100 %, ...) REPEATS
# times so that a drift of the machine spreads over every arm. For each run
# beside the monitor, the monitor's CPU use over the cyclictest run, from
# the kernel (/proc/PID/stat utime + stime) and from its own
# rtlab_monitor_cpu_seconds_total, as % of one CPU, while it is scraped
# every SCRAPE_S seconds as Prometheus would (protobuf, native histograms).
# Writes bench/results/monitor-cost.md and .json (bench/monitor_cost.py):
# cyclictest's p99 and max per CPU and arm, the median over repeats, the
# spread between repeats of one arm (what noise is on this machine) and the
# difference between the arms.
#
# Needs root (SCHED_FIFO, mlockall, /dev/cpu_dma_latency); without it, it
# prints why and exits 0. Builds rtlab in release mode first, then takes the
# host lock (LOCK) for the measuring only: do not run it under flock on the
# same file yourself. Exit code 0 whether or not the targets are met (the
# report says); non-zero only when something failed.
#
# Settings (environment variables):
#   REPEATS=2        rounds of the three arms (3 or more give a steadier median)
#   DURATION=60      seconds of each cyclictest run
#   INTERVAL_US=1000 cyclictest's period (-i) in microseconds
#   PRIO=90          cyclictest's SCHED_FIFO priority (-p); the monitor's is its default
#   HIST_MAX_US=400  cyclictest's histogram range (-h) in microseconds
#   SCRAPE_S=15      seconds between two scrapes of the monitor's /metrics
#   SETTLE=2         seconds of pause before each run
#   WAIT_IDLE=0      wait up to this many seconds for cargo/rustc to finish first
#   LOCK=/tmp/rtlab-host.lock  the machine-wide lock of live tests (empty: none)
#   KEEP_RAW=        directory to keep the raw files in
#   RESULTS_DIR=bench/results  where the .md and .json go
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
NAME=monitor-cost
# shellcheck source=bench/lib.sh
source "$SCRIPT_DIR/lib.sh"

REPEATS=${REPEATS:-2}
DURATION=${DURATION:-60}
INTERVAL_US=${INTERVAL_US:-1000}
PRIO=${PRIO:-90}
HIST_MAX_US=${HIST_MAX_US:-400}
SCRAPE_S=${SCRAPE_S:-15}
SETTLE=${SETTLE:-2}
WAIT_IDLE=${WAIT_IDLE:-0}
LOCK=${LOCK-/tmp/rtlab-host.lock}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}
# The monitor's arms: name and the flags that make it (none = its defaults).
ARMS=(alone monitor-default monitor-duty-100)
declare -A ARM_FLAGS=([monitor-default]="" [monitor-duty-100]="--duty 100%")
ACCEPT_PROTOBUF='application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited'

# ---------------------------------------------------------------- settings
require_whole_numbers REPEATS DURATION INTERVAL_US PRIO HIST_MAX_US SCRAPE_S SETTLE WAIT_IDLE
(( REPEATS >= 1 )) || die "REPEATS must be at least 1"
(( DURATION >= 5 )) || die "DURATION must be at least 5 (seconds)"
(( INTERVAL_US >= 1 )) || die "INTERVAL_US must be at least 1"
(( PRIO >= 1 && PRIO <= 99 )) || die "PRIO=$PRIO: SCHED_FIFO priorities are 1-99"
(( HIST_MAX_US >= 1 )) || die "HIST_MAX_US must be at least 1"
(( SCRAPE_S >= 1 )) || die "SCRAPE_S must be at least 1"
(( REPEATS >= 2 )) || log "warning: REPEATS=$REPEATS: one run per arm shows no spread"

skip_unless_root_with_fifo \
    "cyclictest and the monitor run SCHED_FIFO, lock memory and write /dev/cpu_dma_latency" latency

# ---------------------------------------------------------------- tools
command -v python3 >/dev/null 2>&1 || apt_install python3
ensure_rt_tests_tool cyclictest
CYCLICTEST=$(command -v cyclictest)
CYCLICTEST_VERSION=$(rt_tests_version cyclictest "$CYCLICTEST" --help)
build_rtlab
CLK_TCK=$(getconf CLK_TCK)

make_temp_dir
if [[ -n $LOCK ]]; then
    exec 9>"$LOCK"
    log "waiting for the host lock $LOCK"
    flock 9
fi
wait_for_idle_builds latencies
wait_for_no_rt_competitors 60
ONLINE=$(online_cpus '?')

# ---------------------------------------------------------------- commands
cyclictest_cmd() {  # N
    CMD=("$CYCLICTEST" -m -S -p "$PRIO" -i "$INTERVAL_US" -h "$HIST_MAX_US" -q -D "$DURATION"
         "--json=$TMP/run$1-cyclictest.json")
}
monitor_cmd() {  # ARM
    # shellcheck disable=SC2206  # the arm's flags are words on purpose
    CMD=("$RTLAB" monitor --listen 127.0.0.1:0 --json ${ARM_FLAGS[$1]})
}
cyclictest_cmd N; CYCLICTEST_TEMPLATE=$(cmd_template "${CMD[@]}")
MONITOR_TEMPLATES=()
for arm in "${ARMS[@]:1}"; do
    monitor_cmd "$arm"; MONITOR_TEMPLATES+=("$(cmd_template "${CMD[@]}")")
done

# ---------------------------------------------------------------- the monitor
# GET /metrics of the monitor at $1 with Accept $2; the body on stdout.
scrape() {  # ADDR ACCEPT
    python3 - "$1" "$2" <<'EOF'
import sys, urllib.request
req = urllib.request.Request(f"http://{sys.argv[1]}/metrics", headers={"Accept": sys.argv[2]})
sys.stdout.buffer.write(urllib.request.urlopen(req, timeout=10).read())
EOF
}
# One reading of the monitor's CPU use: "TICKS WALL_S COUNTER_S", its
# utime + stime from the kernel, the wall clock, its own counter.
monitor_reading() {  # PID ADDR
    local ticks wall counter
    ticks=$(awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$1/stat")
    wall=$(date +%s.%N)
    counter=$(scrape "$2" 'text/plain;version=0.0.4' |
        awk '$1 == "rtlab_monitor_cpu_seconds_total" {print $2; found=1} END {if (!found) exit 1}') ||
        die "no rtlab_monitor_cpu_seconds_total in the monitor's /metrics at $2"
    printf '%s %s %s' "$ticks" "$wall" "$counter"
}
# Scrapes ADDR every SCRAPE_S seconds until stopped (SCRAPER: its pid).
start_scraper() {  # ADDR
    (
        # Ends with this script, whatever ends it.
        while sleep "$SCRAPE_S" && kill -0 $$ 2>/dev/null; do
            scrape "$1" "$ACCEPT_PROTOBUF" >/dev/null 2>&1 || true
        done
    ) &
    SCRAPER=$!
}
stop_scraper() {
    kill "$SCRAPER" 2>/dev/null || true
    wait "$SCRAPER" 2>/dev/null || true
}

# ---------------------------------------------------------------- runs
start_manifest pair seq tool json monitor log

run_one() {  # round seq arm
    local round=$1 seq=$2 arm=$3 addr before after
    local json=$TMP/run$seq-cyclictest.json logf=$TMP/run$seq-cyclictest.log
    local monitor_file=$TMP/run$seq-monitor.txt
    : >"$monitor_file"
    if [[ $arm != alone ]]; then
        monitor_cmd "$arm"
        start_server "$TMP/run$seq-monitor.out" "$TMP/run$seq-monitor.err" '"listen"' 60
        addr=$(python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["listen"])' \
            <"$TMP/run$seq-monitor.out") || die "no listen address in the monitor's first line"
        start_scraper "$addr"
    fi
    cyclictest_cmd "$seq"
    settle_and_sample
    log "run $seq/$(( ${#ARMS[@]} * REPEATS )) (round $round): $arm, ${DURATION}s on CPUs $ONLINE (load $RUN_LOAD)"
    [[ $arm == alone ]] || before=$(monitor_reading "$SERVER" "$addr")
    run_timed "$logf"
    if [[ $arm != alone ]]; then
        after=$(monitor_reading "$SERVER" "$addr")
        stop_scraper
        stop_server TERM 10
        [[ $SERVER_STOPPED_BY == TERM && $SERVER_RC == 0 ]] ||
            die "the monitor did not end with exit code 0 on SIGTERM (ended by $SERVER_STOPPED_BY, code $SERVER_RC)"
        printf '%s %s %s\n' "$before" "$after" "$CLK_TCK" >"$monitor_file"
    fi
    check_run_output cyclictest "$logf" "$json"
    append_manifest_row "$round" "$seq" "$arm" "${json##*/}" "${monitor_file##*/}" "${logf##*/}"
}

log "$REPEATS rounds x ${#ARMS[@]} arms x ${DURATION}s: about $(( REPEATS * ${#ARMS[@]} * (DURATION + SETTLE + 2) ))s"
seq_no=0
for (( round = 1; round <= REPEATS; round++ )); do
    for arm in "${ARMS[@]}"; do
        seq_no=$(( seq_no + 1 ))
        run_one "$round" "$seq_no" "$arm"
    done
done

# ---------------------------------------------------------------- report
export_host_environment "$ONLINE"
export_cpu_environment 0
export BENCH_RTLAB_VERSION=$RTLAB_VERSION BENCH_CYCLICTEST_VERSION=$CYCLICTEST_VERSION
export BENCH_CYCLICTEST_CMD=$CYCLICTEST_TEMPLATE
BENCH_MONITOR_CMDS=$(printf '%s\n' "${MONITOR_TEMPLATES[@]}")
export BENCH_MONITOR_CMDS BENCH_ARMS="${ARMS[*]}"
export REPEATS DURATION INTERVAL_US PRIO HIST_MAX_US SCRAPE_S SETTLE
python3 - "$TMP/meta.json" "$SCRIPT_DIR" <<'EOF'
import os, sys
sys.path.insert(0, sys.argv[2])
from benchlib import write_meta
e = os.environ
write_meta(
    sys.argv[1],
    versions={"rtlab": e["BENCH_RTLAB_VERSION"], "cyclictest": e["BENCH_CYCLICTEST_VERSION"]},
    config={"repeats": int(e["REPEATS"]), "duration_s": int(e["DURATION"]),
            "interval_us": int(e["INTERVAL_US"]), "priority": int(e["PRIO"]),
            "hist_max_us": int(e["HIST_MAX_US"]), "scrape_s": int(e["SCRAPE_S"]),
            "settle_s": int(e["SETTLE"]), "arms": e["BENCH_ARMS"].split(),
            "order": "the arms in turn, round after round"},
    commands={"cyclictest": e["BENCH_CYCLICTEST_CMD"],
              "monitor": e["BENCH_MONITOR_CMDS"].splitlines()},
    extra_environment={"cpuidle": e["BENCH_CPUIDLE"], "rt_bandwidth": e["BENCH_RT_BANDWIDTH"]},
)
EOF

mkdir -p "$RESULTS_DIR"
echo
echo "== rtlab monitor's cost: $REPEATS rounds, ${DURATION}s, CPUs $ONLINE, cyclictest -i $INTERVAL_US -p $PRIO =="
python3 "$SCRIPT_DIR/monitor_cost.py" --manifest "$MANIFEST" --meta "$TMP/meta.json" \
    --md "$RESULTS_DIR/monitor-cost.md" --json "$RESULTS_DIR/monitor-cost.json" ||
    die "the analysis failed (bench/monitor_cost.py)"
echo
log "wrote $RESULTS_DIR/monitor-cost.md and .json"
exit 0
