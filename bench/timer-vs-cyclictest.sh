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
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)

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

log() { printf '[timer-vs-cyclictest] %s\n' "$*" >&2; }
die() { printf '[timer-vs-cyclictest] error: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- settings
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
for var in PAIRS DURATION CPU INTERVAL_US PRIO HIST_MAX_US SETTLE WAIT_IDLE; do
    is_uint "${!var}" || die "$var=${!var}: expected a non-negative whole number"
done
(( PAIRS >= 1 )) || die "PAIRS must be at least 1"
(( DURATION >= 1 )) || die "DURATION must be at least 1 (seconds)"
(( INTERVAL_US >= 1 )) || die "INTERVAL_US must be at least 1"
(( PRIO >= 1 && PRIO <= 99 )) || die "PRIO=$PRIO: SCHED_FIFO priorities are 1-99"
(( HIST_MAX_US >= 1 )) || die "HIST_MAX_US must be at least 1"
(( PAIRS >= 3 )) || log "warning: PAIRS=$PAIRS; at least 3 pairs are recommended for a median"

# ---------------------------------------------------------------- root
if [[ $(id -u) -ne 0 ]]; then
    echo "SKIP: timer-vs-cyclictest needs root: both tools run SCHED_FIFO $PRIO, lock memory" \
         "and write /dev/cpu_dma_latency (rerun with sudo)."
    exit 0
fi
if command -v chrt >/dev/null 2>&1 && ! chrt -f "$PRIO" true 2>/dev/null; then
    echo "SKIP: running as root, but SCHED_FIFO $PRIO is refused here (no CAP_SYS_NICE in" \
         "this container?); a latency comparison without real-time priority is meaningless."
    exit 0
fi
[[ -d /sys/devices/system/cpu/cpu$CPU ]] || die "CPU=$CPU: no such CPU (online: $(cat /sys/devices/system/cpu/online 2>/dev/null || echo '?'))"
if [[ -r /sys/devices/system/cpu/cpu$CPU/online ]] && [[ $(cat "/sys/devices/system/cpu/cpu$CPU/online") != 1 ]]; then
    die "CPU=$CPU is offline"
fi

# ---------------------------------------------------------------- tools
apt_install() {
    command -v apt-get >/dev/null 2>&1 || die "$1 is missing and there is no apt-get to install it"
    log "installing $1 with apt-get"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "$1"; then
        log "apt-get install $1 failed; running apt-get update and retrying"
        apt-get update || die "apt-get update failed"
        DEBIAN_FRONTEND=noninteractive apt-get install -y "$1" || die "apt-get install -y $1 failed"
    fi
}
command -v python3 >/dev/null 2>&1 || apt_install python3
command -v cyclictest >/dev/null 2>&1 || apt_install rt-tests
command -v cyclictest >/dev/null 2>&1 || die "rt-tests is installed but cyclictest is not on PATH"
CYCLICTEST=$(command -v cyclictest)
command -v cargo >/dev/null 2>&1 || die "cargo is not on PATH: cannot build rtlab"

log "building rtlab (cargo build --release -p rtlab)"
(cd "$REPO_ROOT" && cargo build --release -p rtlab) || die "cargo build --release -p rtlab failed"
TARGET_DIR=$(cd "$REPO_ROOT" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])') ||
    TARGET_DIR=$REPO_ROOT/target
RTLAB=$TARGET_DIR/release/rtlab
[[ -x $RTLAB ]] || die "built rtlab not found at $RTLAB"

RTLAB_VERSION=$("$RTLAB" --version 2>/dev/null || echo "rtlab ?")
if GIT_REV=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null); then
    if [[ -n $(git -C "$REPO_ROOT" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
        GIT_REV="$GIT_REV, uncommitted changes"
    fi
    RTLAB_VERSION="$RTLAB_VERSION (git $GIT_REV)"
fi
CYCLICTEST_VERSION=$( { "$CYCLICTEST" --help 2>&1 || true; } | sed -n '1{s/^cyclictest //;p;q}')
PKG_VERSION=$(dpkg-query -W -f='${Version}' rt-tests 2>/dev/null || true)
CYCLICTEST_VERSION="cyclictest ${CYCLICTEST_VERSION:-?}${PKG_VERSION:+ (rt-tests $PKG_VERSION)}"

# ---------------------------------------------------------------- temp + traps
TMP=$(mktemp -d "${TMPDIR:-/tmp}/timer-vs-cyclictest.XXXXXX")
CHILD=
cleanup() {
    local rc=$?
    if [[ -n $CHILD ]] && kill -0 "$CHILD" 2>/dev/null; then
        kill -TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
    fi
    if [[ -n $KEEP_RAW && -d $TMP ]]; then
        mkdir -p "$KEEP_RAW" && cp -a "$TMP"/. "$KEEP_RAW"/ && log "raw files kept in $KEEP_RAW"
    fi
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

busy_builds() { pgrep -c -x 'cargo|rustc' 2>/dev/null || true; }
# Whole-machine CPU ticks from /proc/stat: "busy idle steal" (busy excludes steal).
cpu_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6, $9; exit}' /proc/stat; }
# Busy and steal % of all CPUs between two cpu_ticks readings.
cpu_pct() {
    awk -v a="$1" -v b="$2" 'BEGIN{split(a,x," "); split(b,y," ");
        bu=y[1]-x[1]; id=y[2]-x[2]; st=y[3]-x[3]; t=bu+id+st; if (t<=0) t=1;
        printf "%.1f\t%.1f", 100*bu/t, 100*st/t}'
}

if (( WAIT_IDLE > 0 )); then
    waited=0
    while [[ $(busy_builds) -gt 0 ]] && (( waited < WAIT_IDLE )); do
        (( waited % 30 == 0 )) && log "cargo/rustc running; waiting for them (up to ${WAIT_IDLE}s)"
        sleep 5; waited=$(( waited + 5 ))
    done
fi
if [[ $(busy_builds) -gt 0 ]]; then
    log "warning: cargo/rustc processes are running; they may disturb the latencies (recorded per run)"
fi

# ---------------------------------------------------------------- commands
# Exact argv of each tool; N is replaced by the run number.
rtlab_cmd() {
    CMD=("$RTLAB" measure timer --cpus "$CPU" --interval "${INTERVAL_US}us" --priority "$PRIO"
         --duration "${DURATION}s" --quiet --json "$TMP/run$1-rtlab.json"
         --histfile "$TMP/run$1-rtlab.hist" --hist-max "${HIST_MAX_US}us")
}
cyclictest_cmd() {
    CMD=("$CYCLICTEST" -m -p "$PRIO" -i "$INTERVAL_US" -a "$CPU" -t 1 -D "$DURATION" -q
         -h "$HIST_MAX_US" "--histfile=$TMP/run$1-cyclictest.hist" "--json=$TMP/run$1-cyclictest.json")
}
quote() { local out= a; for a in "$@"; do out+="${out:+ }$(printf '%q' "$a")"; done; printf '%s' "$out"; }
rtlab_cmd N;      RTLAB_TEMPLATE=$(quote "${CMD[@]}" | sed "s#$TMP#\$TMP#g")
cyclictest_cmd N; CYCLICTEST_TEMPLATE=$(quote "${CMD[@]}" | sed "s#$TMP#\$TMP#g")

MANIFEST=$TMP/runs.tsv
printf '# pair\tseq\ttool\thist\tjson\tlog\tstarted_at\tended_at\telapsed_s\trc\tloadavg\tbusy\tcpu_busy_pct\tcpu_steal_pct\tcommand\n' >"$MANIFEST"

run_one() {  # pair seq tool
    local pair=$1 seq=$2 tool=$3 rc=0 started ended t0 t1 load busy ticks0 ticks1
    "${tool}_cmd" "$seq"
    local hist=$TMP/run$seq-$tool.hist json=$TMP/run$seq-$tool.json logf=$TMP/run$seq-$tool.log
    (( SETTLE > 0 )) && sleep "$SETTLE"
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    busy=$(busy_builds)
    log "run $seq/$(( 2 * PAIRS )) (pair $pair): $tool, ${DURATION}s on CPU $CPU (load $load)"
    started=$(date -u +%Y-%m-%dT%H:%M:%SZ); t0=$(date +%s.%N); ticks0=$(cpu_ticks)
    "${CMD[@]}" >"$logf" 2>&1 &
    CHILD=$!
    wait "$CHILD" || rc=$?
    CHILD=
    ticks1=$(cpu_ticks); t1=$(date +%s.%N); ended=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    if (( rc != 0 )) || [[ ! -s $hist || ! -s $json ]]; then
        log "$tool failed (exit code $rc); command: $(quote "${CMD[@]}")"
        log "its output:"; sed 's/^/    /' "$logf" >&2 || true
        [[ -s $hist ]] || log "no histfile was written"
        [[ -s $json ]] || log "no JSON was written"
        exit 1
    fi
    if [[ -s $logf ]] && grep -qiE 'warn|error' "$logf"; then
        log "$tool said:"; sed 's/^/    /' "$logf" >&2
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$pair" "$seq" "$tool" "${hist##*/}" "${json##*/}" "${logf##*/}" "$started" "$ended" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')" "$rc" "$load" "${busy:-0}" "$(cpu_pct "$ticks0" "$ticks1")" \
        "$(quote "${CMD[@]}")" >>"$MANIFEST"
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
export BENCH_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) BENCH_HOST=$(hostname 2>/dev/null || uname -n)
export BENCH_KERNEL=$(uname -r) BENCH_UNAME_V=$(uname -v)
export BENCH_CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
export BENCH_ONLINE=$(cat /sys/devices/system/cpu/online 2>/dev/null || true)
export BENCH_CLOCKSOURCE=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || true)
export BENCH_RTLAB_VERSION=$RTLAB_VERSION BENCH_CYCLICTEST_VERSION=$CYCLICTEST_VERSION
export BENCH_RTLAB_CMD=$RTLAB_TEMPLATE BENCH_CYCLICTEST_CMD=$CYCLICTEST_TEMPLATE
export PAIRS DURATION CPU INTERVAL_US PRIO HIST_MAX_US SETTLE
python3 - "$TMP/meta.json" <<'EOF'
import json, os, sys
e = os.environ
meta = {
    "date": e["BENCH_DATE"],
    "host": e["BENCH_HOST"],
    "kernel": e["BENCH_KERNEL"],
    "versions": {"rtlab": e["BENCH_RTLAB_VERSION"], "cyclictest": e["BENCH_CYCLICTEST_VERSION"]},
    "config": {"pairs": int(e["PAIRS"]), "duration_s": int(e["DURATION"]), "cpu": int(e["CPU"]),
               "interval_us": int(e["INTERVAL_US"]), "priority": int(e["PRIO"]),
               "policy": "SCHED_FIFO", "hist_max_us": int(e["HIST_MAX_US"]),
               "settle_s": int(e["SETTLE"]), "order": "rtlab, cyclictest per pair"},
    "duration_s": int(e["DURATION"]), "interval_us": int(e["INTERVAL_US"]),
    "commands": {"rtlab": e["BENCH_RTLAB_CMD"], "cyclictest": e["BENCH_CYCLICTEST_CMD"]},
    "environment": {"uname_v": e["BENCH_UNAME_V"], "cpu_model": e["BENCH_CPU_MODEL"],
                    "online_cpus": e["BENCH_ONLINE"], "clocksource": e["BENCH_CLOCKSOURCE"]},
}
with open(sys.argv[1], "w") as f:
    json.dump(meta, f, indent=2)
EOF

mkdir -p "$RESULTS_DIR"
echo
echo "== rtlab measure timer vs cyclictest: $PAIRS pairs, ${DURATION}s, CPU $CPU, ${INTERVAL_US}us, FIFO $PRIO =="
python3 "$SCRIPT_DIR/timer_compare.py" --manifest "$MANIFEST" --meta "$TMP/meta.json" \
    --md "$RESULTS_DIR/timer-vs-cyclictest.md" --json "$RESULTS_DIR/timer-vs-cyclictest.json" ||
    die "the analysis failed (bench/timer_compare.py)"
echo
log "wrote $RESULTS_DIR/timer-vs-cyclictest.md and .json"
exit 0
