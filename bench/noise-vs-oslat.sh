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

ONLINE=$(cat /sys/devices/system/cpu/online 2>/dev/null || echo 0)
LAST_CPU=$(awk -F'[-,]' '{print $NF}' <<<"$ONLINE")
PAIRS=${PAIRS:-3}
DURATION=${DURATION:-10}
CPU=${CPU:-$LAST_CPU}
PRIO=${PRIO:-90}
THRESHOLD_US=${THRESHOLD_US:-1}
PERIOD_MS=${PERIOD_MS:-1000}
WINDOW_MS=${WINDOW_MS:-10}
OSLAT_BUCKETS=${OSLAT_BUCKETS:-1024}
SETTLE=${SETTLE:-2}
WAIT_IDLE=${WAIT_IDLE:-0}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}

log() { printf '[%s] %s\n' "$NAME" "$*" >&2; }
die() { printf '[%s] error: %s\n' "$NAME" "$*" >&2; exit 1; }

# ---------------------------------------------------------------- settings
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
for var in PAIRS DURATION CPU PRIO THRESHOLD_US PERIOD_MS WINDOW_MS OSLAT_BUCKETS SETTLE WAIT_IDLE; do
    is_uint "${!var}" || die "$var=${!var}: expected a non-negative whole number"
done
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
if [[ $(id -u) -ne 0 ]]; then
    echo "SKIP: $NAME needs root: both tools spin at SCHED_FIFO $PRIO and lock memory" \
         "(rerun with sudo)."
    exit 0
fi
if command -v chrt >/dev/null 2>&1 && ! chrt -f "$PRIO" true 2>/dev/null; then
    echo "SKIP: running as root, but SCHED_FIFO $PRIO is refused here (no CAP_SYS_NICE in" \
         "this container?); a noise comparison without real-time priority is meaningless."
    exit 0
fi
[[ -d /sys/devices/system/cpu/cpu$CPU ]] || die "CPU=$CPU: no such CPU (online: $ONLINE)"
if [[ -r /sys/devices/system/cpu/cpu$CPU/online ]] && [[ $(cat "/sys/devices/system/cpu/cpu$CPU/online") != 1 ]]; then
    die "CPU=$CPU is offline"
fi
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
command -v oslat >/dev/null 2>&1 || apt_install rt-tests
command -v oslat >/dev/null 2>&1 || die "rt-tests is installed but oslat is not on PATH"
OSLAT=$(command -v oslat)
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
OSLAT_VERSION=$( { "$OSLAT" --version 2>&1 || true; } | sed -n '1{s/^oslat //;p;q}')
PKG_VERSION=$(dpkg-query -W -f='${Version}' rt-tests 2>/dev/null || true)
OSLAT_VERSION="oslat ${OSLAT_VERSION:-?}${PKG_VERSION:+ (rt-tests $PKG_VERSION)}"
RT_RUNTIME=$(cat /proc/sys/kernel/sched_rt_runtime_us 2>/dev/null || echo '?')
RT_PERIOD=$(cat /proc/sys/kernel/sched_rt_period_us 2>/dev/null || echo '?')
if [[ $RT_RUNTIME == -1 ]]; then
    RT_THROTTLING="off (kernel.sched_rt_runtime_us = -1)"
else
    RT_THROTTLING="kernel.sched_rt_runtime_us = $RT_RUNTIME of sched_rt_period_us = $RT_PERIOD"
fi

# ---------------------------------------------------------------- temp + traps
TMP=$(mktemp -d "${TMPDIR:-/tmp}/$NAME.XXXXXX")
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
    log "warning: cargo/rustc processes are running; they may disturb the noise (recorded per run)"
fi

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
quote() { local out= a; for a in "$@"; do out+="${out:+ }$(printf '%q' "$a")"; done; printf '%s' "$out"; }
rtlab_cmd N; RTLAB_TEMPLATE=$(quote "${CMD[@]}" | sed "s#$TMP#\$TMP#g")
oslat_cmd N; OSLAT_TEMPLATE=$(quote "${CMD[@]}" | sed "s#$TMP#\$TMP#g")

MANIFEST=$TMP/runs.tsv
printf '# pair\tseq\ttool\tjson\tlog\tstarted_at\tended_at\telapsed_s\trc\tloadavg\tbusy\tcpu_busy_pct\tcpu_steal_pct\tcommand\n' >"$MANIFEST"

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
    local pair=$1 seq=$2 tool=$3 rc=0 started ended t0 t1 load busy ticks0 ticks1
    "${tool}_cmd" "$seq"
    local json=$TMP/run$seq-$tool.json logf=$TMP/run$seq-$tool.log
    (( SETTLE > 0 )) && sleep "$SETTLE"
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    busy=$(busy_builds)
    log "run $seq/$(( 2 * PAIRS )) (pair $pair): $tool, ${DURATION}s spinning on CPU $CPU (load $load)"
    started=$(date -u +%Y-%m-%dT%H:%M:%SZ); t0=$(date +%s.%N); ticks0=$(cpu_ticks)
    "${CMD[@]}" >"$logf" 2>&1 &
    CHILD=$!
    wait "$CHILD" || rc=$?
    CHILD=
    ticks1=$(cpu_ticks); t1=$(date +%s.%N); ended=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    if (( rc != 0 )) || [[ ! -s $json ]]; then
        log "$tool failed (exit code $rc); command: $(quote "${CMD[@]}")"
        log "its output:"; sed 's/^/    /' "$logf" >&2 || true
        [[ -s $json ]] || log "no JSON was written"
        exit 1
    fi
    if [[ -s $logf ]] && grep -qiE 'warn|error' "$logf"; then
        log "$tool said:"; sed 's/^/    /' "$logf" >&2
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$pair" "$seq" "$tool" "${json##*/}" "${logf##*/}" "$started" "$ended" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')" "$rc" "$load" "${busy:-0}" \
        "$(cpu_pct "$ticks0" "$ticks1")" "$(quote "${CMD[@]}")" >>"$MANIFEST"
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
export BENCH_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) BENCH_HOST=$(hostname 2>/dev/null || uname -n)
export BENCH_KERNEL=$(uname -r) BENCH_UNAME_V=$(uname -v)
export BENCH_CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
export BENCH_ONLINE=$ONLINE
export BENCH_CLOCKSOURCE=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || true)
export BENCH_RT_THROTTLING=$RT_THROTTLING
export BENCH_RTLAB_VERSION=$RTLAB_VERSION BENCH_OSLAT_VERSION=$OSLAT_VERSION
export BENCH_RTLAB_CMD=$RTLAB_TEMPLATE BENCH_OSLAT_CMD=$OSLAT_TEMPLATE
export PAIRS DURATION CPU PRIO THRESHOLD_US PERIOD_MS WINDOW_MS OSLAT_BUCKETS SETTLE MAIN_CPU
python3 - "$TMP/meta.json" <<'EOF'
import json, os, sys
e = os.environ
meta = {
    "date": e["BENCH_DATE"],
    "host": e["BENCH_HOST"],
    "kernel": e["BENCH_KERNEL"],
    "versions": {"rtlab": e["BENCH_RTLAB_VERSION"], "oslat": e["BENCH_OSLAT_VERSION"]},
    "config": {"pairs": int(e["PAIRS"]), "duration_s": int(e["DURATION"]), "cpu": int(e["CPU"]),
               "priority": int(e["PRIO"]), "policy": "SCHED_FIFO",
               "threshold_us": int(e["THRESHOLD_US"]), "period_ms": int(e["PERIOD_MS"]),
               "window_ms": int(e["WINDOW_MS"]),
               "oslat_buckets": int(e["OSLAT_BUCKETS"]), "main_cpu": int(e["MAIN_CPU"]),
               "settle_s": int(e["SETTLE"]), "order": "rtlab, oslat per pair"},
    "commands": {"rtlab": e["BENCH_RTLAB_CMD"], "oslat": e["BENCH_OSLAT_CMD"]},
    "environment": {"uname_v": e["BENCH_UNAME_V"], "cpu_model": e["BENCH_CPU_MODEL"],
                    "online_cpus": e["BENCH_ONLINE"], "clocksource": e["BENCH_CLOCKSOURCE"],
                    "rt_throttling": e["BENCH_RT_THROTTLING"]},
}
with open(sys.argv[1], "w") as f:
    json.dump(meta, f, indent=2)
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
