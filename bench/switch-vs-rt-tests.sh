#!/usr/bin/env bash
# Side-by-side benchmark: `rtlab measure switch` vs rt-tests' IPC latency
# tools (rt-tests 2.x):
#
#   rtlab --mechanism pthread-mutex  vs  ptsematest   (POSIX mutex between threads)
#   rtlab --mechanism mq             vs  pmqtest      (POSIX message queue)
#   rtlab --mechanism signal         vs  sigwaittest  (signal + sigwait)
#   rtlab --mechanism sysv-sem       vs  svsematest   (SysV semaphore)
#
# For each mechanism runs the two tools alternately (rtlab, tool, rtlab,
# tool, ...), PAIRS pairs, with the same CPU (both threads on it), interval,
# number of hand-offs and priority, reads rtlab's JSON and the tool's --json
# plus its printed summary with bench/switch_compare.py and writes
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

PAIRS=${PAIRS:-3}
EVENTS=${EVENTS:-5000}
INTERVAL_US=${INTERVAL_US:-1000}
LAST_CPU=$(awk -F'[-,]' '{print $NF}' /sys/devices/system/cpu/online 2>/dev/null || echo 0)
CPU=${CPU:-$LAST_CPU}
PRIO=${PRIO:-90}
MECHANISMS=${MECHANISMS:-pthread-mutex mq signal sysv-sem}
DMA_LATENCY=${DMA_LATENCY:-0}
SETTLE=${SETTLE:-2}
WAIT_IDLE=${WAIT_IDLE:-0}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}

log() { printf '[%s] %s\n' "$NAME" "$*" >&2; }
die() { printf '[%s] error: %s\n' "$NAME" "$*" >&2; exit 1; }

# ---------------------------------------------------------------- settings
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
for var in PAIRS EVENTS INTERVAL_US CPU PRIO DMA_LATENCY SETTLE WAIT_IDLE; do
    is_uint "${!var}" || die "$var=${!var}: expected a non-negative whole number"
done
(( PAIRS >= 1 )) || die "PAIRS must be at least 1"
(( EVENTS >= 1 )) || die "EVENTS must be at least 1"
(( INTERVAL_US >= 1 )) || die "INTERVAL_US must be at least 1"
# rtlab's task runs one below the timer thread, so its --priority starts at 2.
(( PRIO >= 2 && PRIO <= 99 )) || die "PRIO=$PRIO: expected 2-99 (rtlab's task runs at PRIO-1)"
(( DMA_LATENCY <= 1 )) || die "DMA_LATENCY=$DMA_LATENCY: expected 0 or 1"
(( PAIRS >= 3 )) || log "warning: PAIRS=$PAIRS; at least 3 pairs are recommended for a median"

declare -A TOOL_FOR=([pthread-mutex]=ptsematest [mq]=pmqtest [signal]=sigwaittest [sysv-sem]=svsematest)
read -r -a MECHS <<<"$MECHANISMS"
(( ${#MECHS[@]} >= 1 )) || die "MECHANISMS is empty"
for m in "${MECHS[@]}"; do
    [[ -n ${TOOL_FOR[$m]:-} ]] || die "MECHANISMS: '$m' has no rt-tests counterpart (known: ${!TOOL_FOR[*]})"
done

# ---------------------------------------------------------------- root
if [[ $(id -u) -ne 0 ]]; then
    echo "SKIP: $NAME needs root: both tools run SCHED_FIFO $PRIO and lock memory" \
         "(rerun with sudo)."
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
declare -A TOOL_PATH=()
for m in "${MECHS[@]}"; do
    t=${TOOL_FOR[$m]}
    command -v "$t" >/dev/null 2>&1 || apt_install rt-tests
    command -v "$t" >/dev/null 2>&1 || die "rt-tests is installed but $t is not on PATH"
    TOOL_PATH[$t]=$(command -v "$t")
done
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
first_tool=${TOOL_FOR[${MECHS[0]}]}
TOOL_VERSION=$( { "${TOOL_PATH[$first_tool]}" --help 2>&1 || true; } | sed -n "1{s/^$first_tool //;p;q}")
PKG_VERSION=$(dpkg-query -W -f='${Version}' rt-tests 2>/dev/null || true)
RT_TESTS_VERSION="$first_tool ${TOOL_VERSION:-?}${PKG_VERSION:+ (rt-tests $PKG_VERSION)}"

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
    log "warning: cargo/rustc processes are running; they may disturb the latencies (recorded per run)"
fi

# ---------------------------------------------------------------- commands
DMA_ARGS=()
(( DMA_LATENCY == 1 )) || DMA_ARGS=(--no-dma-latency)
# Exact argv of each run; $1 = run number, $2 = mechanism.
rtlab_cmd() {
    CMD=("$RTLAB" measure switch --mechanism "$2" --events "$EVENTS" --interval "${INTERVAL_US}us"
         --cpu "$CPU" --policy fifo --priority "$PRIO" "${DMA_ARGS[@]}" --no-store --quiet
         --json "$TMP/run$1-rtlab.json")
}
# One thread pair (-t1), both threads pinned to CPU (-a$CPU: the attached form,
# as "-a 0" would be read as "-a" = every CPU), same priority, interval and
# count, summary only (-q), results also as JSON.
tool_cmd() {
    local tool=${TOOL_FOR[$2]}
    CMD=("${TOOL_PATH[$tool]}" -t1 "-a$CPU" -p "$PRIO" -i "$INTERVAL_US" -l "$EVENTS" -q
         "--json=$TMP/run$1-$tool.json")
}
quote() { local out= a; for a in "$@"; do out+="${out:+ }$(printf '%q' "$a")"; done; printf '%s' "$out"; }
rtlab_cmd N M; RTLAB_TEMPLATE=$(quote "${CMD[@]}" | sed "s#$TMP#\$TMP#g")
tool_cmd N "${MECHS[0]}"
TOOL_TEMPLATE=$(quote TOOL "${CMD[@]:1}" | sed "s#$TMP#\$TMP#g; s#run\(N\)-$first_tool#run\1-TOOL#")

MANIFEST=$TMP/runs.tsv
printf '# pair\tseq\ttool\tmechanism\tjson\tlog\tstarted_at\tended_at\telapsed_s\trc\tloadavg\tbusy\tcpu_busy_pct\tcpu_steal_pct\tcommand\n' >"$MANIFEST"

# A short rtlab run first, so a probe that does not work yet fails in seconds
# rather than after the reference runs.
log "checking that rtlab measure switch works (${#MECHS[@]} mechanism(s), 50 events each)"
pre_mechs=$(IFS=,; echo "${MECHS[*]}")
if ! "$RTLAB" measure switch --mechanism "$pre_mechs" --events 50 --interval "${INTERVAL_US}us" \
        --cpu "$CPU" --policy fifo --priority "$PRIO" "${DMA_ARGS[@]}" --no-store --quiet \
        --json "$TMP/preflight.json" >"$TMP/preflight.log" 2>&1; then
    log "rtlab measure switch failed; its output:"; sed 's/^/    /' "$TMP/preflight.log" >&2 || true
    die "rtlab measure switch does not work: nothing to compare"
fi

run_one() {  # pair seq tool mechanism
    local pair=$1 seq=$2 tool=$3 mech=$4 rc=0 started ended t0 t1 load busy ticks0 ticks1
    if [[ $tool == rtlab ]]; then rtlab_cmd "$seq" "$mech"; else tool_cmd "$seq" "$mech"; fi
    local json=$TMP/run$seq-$tool.json logf=$TMP/run$seq-$tool.log
    (( SETTLE > 0 )) && sleep "$SETTLE"
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    busy=$(busy_builds)
    log "run $seq/$TOTAL_RUNS (pair $pair, $mech): $tool, $EVENTS events on CPU $CPU (load $load)"
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
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$pair" "$seq" "$tool" "$mech" "${json##*/}" "${logf##*/}" "$started" "$ended" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')" "$rc" "$load" "${busy:-0}" \
        "$(cpu_pct "$ticks0" "$ticks1")" "$(quote "${CMD[@]}")" >>"$MANIFEST"
}

TOTAL_RUNS=$(( PAIRS * 2 * ${#MECHS[@]} ))
run_s=$(( EVENTS * INTERVAL_US / 1000000 ))
log "${#MECHS[@]} mechanism(s) x $PAIRS pairs x 2 runs x ~${run_s}s: about $(( TOTAL_RUNS * (run_s + SETTLE) ))s"
seq_no=0
for (( pair = 1; pair <= PAIRS; pair++ )); do
    for mech in "${MECHS[@]}"; do
        for tool in rtlab "${TOOL_FOR[$mech]}"; do
            seq_no=$(( seq_no + 1 ))
            run_one "$pair" "$seq_no" "$tool" "$mech"
        done
    done
done

# ---------------------------------------------------------------- report
export BENCH_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) BENCH_HOST=$(hostname 2>/dev/null || uname -n)
export BENCH_KERNEL=$(uname -r) BENCH_UNAME_V=$(uname -v)
export BENCH_CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
export BENCH_ONLINE=$(cat /sys/devices/system/cpu/online 2>/dev/null || true)
export BENCH_CLOCKSOURCE=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || true)
export BENCH_RTLAB_VERSION=$RTLAB_VERSION BENCH_RT_TESTS_VERSION=$RT_TESTS_VERSION
export BENCH_RTLAB_CMD=$RTLAB_TEMPLATE BENCH_TOOL_CMD=$TOOL_TEMPLATE
export PAIRS EVENTS CPU INTERVAL_US PRIO SETTLE DMA_LATENCY MECHANISMS
python3 - "$TMP/meta.json" <<'EOF'
import json, os, sys
e = os.environ
meta = {
    "date": e["BENCH_DATE"],
    "host": e["BENCH_HOST"],
    "kernel": e["BENCH_KERNEL"],
    "versions": {"rtlab": e["BENCH_RTLAB_VERSION"], "rt_tests": e["BENCH_RT_TESTS_VERSION"]},
    "config": {"pairs": int(e["PAIRS"]), "events": int(e["EVENTS"]), "cpu": int(e["CPU"]),
               "interval_us": int(e["INTERVAL_US"]), "priority": int(e["PRIO"]),
               "policy": "SCHED_FIFO", "settle_s": int(e["SETTLE"]),
               "dma_latency": e["DMA_LATENCY"] == "1",
               "mechanisms": e["MECHANISMS"].split(),
               "order": "per pair, per mechanism: rtlab then the rt-tests tool"},
    "commands": {"rtlab": e["BENCH_RTLAB_CMD"], "rt_tests": e["BENCH_TOOL_CMD"]},
    "environment": {"uname_v": e["BENCH_UNAME_V"], "cpu_model": e["BENCH_CPU_MODEL"],
                    "online_cpus": e["BENCH_ONLINE"], "clocksource": e["BENCH_CLOCKSOURCE"]},
}
with open(sys.argv[1], "w") as f:
    json.dump(meta, f, indent=2)
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
