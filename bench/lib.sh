# Shared by the side-by-side benchmarks in bench/ (sourced, not run):
# messages, checks of the machine, installing rt-tests, building rtlab, the
# temporary directory and its KEEP_RAW copy, waiting for builds to finish,
# running one measured command and recording it in the manifest, a server
# the measured commands talk to, and the host description handed to the
# python helpers.
#
# The sourcing script sets, before it calls anything here:
#   NAME       its own name: the prefix of every message and of the temp dir
#   REPO_ROOT  the rtlab checkout to build
# and the settings the functions below name (PRIO, SETTLE, WAIT_IDLE,
# KEEP_RAW) and, before each run, CMD: the measured command's argv.

log() { printf '[%s] %s\n' "$NAME" "$*" >&2; }
die() { printf '[%s] error: %s\n' "$NAME" "$*" >&2; exit 1; }

# ---------------------------------------------------------------- settings
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# Every named variable must hold a whole number >= 0; the bounds each
# benchmark needs beyond that it checks itself.
require_whole_numbers() {  # VAR...
    local var
    for var in "$@"; do
        is_uint "${!var}" || die "$var=${!var}: expected a non-negative whole number"
    done
}

# The kernel's list of online CPUs ("0-3", "0,2-5"), or FALLBACK when it
# cannot be read.
online_cpus() {  # FALLBACK
    cat /sys/devices/system/cpu/online 2>/dev/null || echo "$1"
}

# The highest online CPU: the switch and noise benchmarks' default CPU (for
# the switch probe it is also rtlab's own default).
last_online_cpu() { awk -F'[-,]' '{print $NF}' <<<"$(online_cpus 0)"; }

# ---------------------------------------------------------------- machine
# A comparison at SCHED_FIFO needs root and a kernel (or container) that
# grants the priority: without them there is nothing worth measuring, so
# this is a skip (exit 0), not a failure. Tries PRIO with chrt. NEEDS ends
# the sentence "$NAME needs root: ..."; COMPARISON names what would be
# meaningless without the priority ("latency", "noise").
skip_unless_root_with_fifo() {  # NEEDS COMPARISON
    if [[ $(id -u) -ne 0 ]]; then
        echo "SKIP: $NAME needs root: $1 (rerun with sudo)."
        exit 0
    fi
    if command -v chrt >/dev/null 2>&1 && ! chrt -f "$PRIO" true 2>/dev/null; then
        echo "SKIP: running as root, but SCHED_FIFO $PRIO is refused here (no CAP_SYS_NICE in" \
             "this container?); a $2 comparison without real-time priority is meaningless."
        exit 0
    fi
}

require_online_cpu() {  # CPU ONLINE_LIST (the latter only for the message)
    [[ -d /sys/devices/system/cpu/cpu$1 ]] || die "CPU=$1: no such CPU (online: $2)"
    if [[ -r /sys/devices/system/cpu/cpu$1/online ]] && [[ $(cat "/sys/devices/system/cpu/cpu$1/online") != 1 ]]; then
        die "CPU=$1 is offline"
    fi
}

# ---------------------------------------------------------------- tools
apt_install() {  # PACKAGE
    command -v apt-get >/dev/null 2>&1 || die "$1 is missing and there is no apt-get to install it"
    log "installing $1 with apt-get"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "$1"; then
        # A fresh container often has no package lists yet.
        log "apt-get install $1 failed; running apt-get update and retrying"
        apt-get update || die "apt-get update failed"
        DEBIAN_FRONTEND=noninteractive apt-get install -y "$1" || die "apt-get install -y $1 failed"
    fi
}

# Installs the rt-tests package when TOOL (one of its programs) is missing.
ensure_rt_tests_tool() {  # TOOL
    command -v "$1" >/dev/null 2>&1 || apt_install rt-tests
    command -v "$1" >/dev/null 2>&1 || die "rt-tests is installed but $1 is not on PATH"
}

# "TOOL V 2.40 (rt-tests 2.4-1)": the version TOOL prints on the first line
# of its output for FLAG, and the Debian package's, for the report.
rt_tests_version() {  # TOOL PATH FLAG
    local version package
    version=$( { "$2" "$3" 2>&1 || true; } | sed -n "1{s/^$1 //;p;q}")
    package=$(dpkg-query -W -f='${Version}' rt-tests 2>/dev/null || true)
    printf '%s\n' "$1 ${version:-?}${package:+ (rt-tests $package)}"
}

# Builds rtlab in release mode and sets RTLAB (the binary) and RTLAB_VERSION
# ("rtlab X (git REV[, uncommitted changes])", for the report).
build_rtlab() {
    local target_dir git_rev
    command -v cargo >/dev/null 2>&1 || die "cargo is not on PATH: cannot build rtlab"
    log "building rtlab (cargo build --release -p rtlab)"
    (cd "$REPO_ROOT" && cargo build --release -p rtlab) || die "cargo build --release -p rtlab failed"
    # CARGO_TARGET_DIR or a config file can move target/: ask cargo.
    target_dir=$(cd "$REPO_ROOT" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])') ||
        target_dir=$REPO_ROOT/target
    RTLAB=$target_dir/release/rtlab
    [[ -x $RTLAB ]] || die "built rtlab not found at $RTLAB"

    RTLAB_VERSION=$("$RTLAB" --version 2>/dev/null || echo "rtlab ?")
    if git_rev=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null); then
        if [[ -n $(git -C "$REPO_ROOT" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
            git_rev="$git_rev, uncommitted changes"
        fi
        RTLAB_VERSION="$RTLAB_VERSION (git $git_rev)"
    fi
}

# RTLAB when it names a built rtlab (its version noted with its path), else
# a release build (build_rtlab); RTLAB_VERSION exported either way.
rtlab_or_build() {
    if [[ -n ${RTLAB:-} ]]; then
        [[ -x $RTLAB ]] || die "RTLAB=$RTLAB is not an executable"
        RTLAB_VERSION="$("$RTLAB" --version 2>/dev/null || echo 'rtlab ?') ($RTLAB)"
    else
        build_rtlab
    fi
    export RTLAB_VERSION
}

# The start of a measurement: TMP made (make_temp_dir), running builds
# waited for (wait_for_idle_builds WHAT), the host and its load average
# exported for the report (BENCH_*, BENCH_LOADAVG_BEFORE).
start_measuring() {  # WHAT
    make_temp_dir
    wait_for_idle_builds "$1"
    export_host_environment
    BENCH_LOADAVG_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
    export BENCH_LOADAVG_BEFORE
}

# ---------------------------------------------------------------- temp + traps
# Creates TMP, where every run writes its files. On exit (normal, error or
# signal) it stops the measured tool still running (CHILD, and CHILD's own
# children first: a wrapper such as /usr/bin/time does not pass SIGTERM on)
# and the server (SERVER, see start_server), copies TMP to KEEP_RAW when
# that is set, so a report can be rebuilt from the raw files later, and
# removes TMP and SCRATCH (see make_scratch_dir).
make_temp_dir() {
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/$NAME.XXXXXX")
    CHILD=
    SERVER=
    SCRATCH=
    trap cleanup EXIT
    trap 'log "interrupted"; exit 130' INT TERM HUP
}
# Creates SCRATCH, a second temporary directory for big inputs the runs
# read (generated files of hundreds of MB): removed on exit like TMP, but
# never copied to KEEP_RAW. Call after make_temp_dir.
make_scratch_dir() {
    SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/$NAME-scratch.XXXXXX")
}
cleanup() {
    local rc=$?
    if [[ -n $CHILD ]] && kill -0 "$CHILD" 2>/dev/null; then
        if command -v pkill >/dev/null 2>&1; then
            pkill -TERM -P "$CHILD" 2>/dev/null || true
        fi
        kill -TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
    fi
    [[ -z ${SERVER:-} ]] || stop_server TERM 2
    if [[ -n $KEEP_RAW && -d $TMP ]]; then
        mkdir -p "$KEEP_RAW" && cp -a "$TMP"/. "$KEEP_RAW"/ && log "raw files kept in $KEEP_RAW"
    fi
    rm -rf "$TMP"
    [[ -z ${SCRATCH:-} ]] || rm -rf "$SCRATCH"
    exit "$rc"
}

# ---------------------------------------------------------------- a quiet machine
busy_builds() { pgrep -c -x 'cargo|rustc' 2>/dev/null || true; }
# CPU ticks from /proc/stat, of the whole machine (cpu_ticks) or of CPU N
# (cpu_ticks_of N): "busy idle steal" (busy excludes steal).
cpu_ticks() { cpu_ticks_of ''; }
cpu_ticks_of() {  # N
    awk -v row="cpu$1 " 'index($0, row) == 1 {print $2+$3+$4+$7+$8, $5+$6, $9; exit}' /proc/stat
}
# Busy and steal % between two cpu_ticks readings (of the CPUs they read).
cpu_pct() {
    awk -v a="$1" -v b="$2" 'BEGIN{split(a,x," "); split(b,y," ");
        bu=y[1]-x[1]; id=y[2]-x[2]; st=y[3]-x[3]; t=bu+id+st; if (t<=0) t=1;
        printf "%.1f\t%.1f", 100*bu/t, 100*st/t}'
}

# Other builds disturb the figures: wait up to WAIT_IDLE seconds for
# cargo/rustc to finish, then warn if they still run. WHAT = what they
# disturb ("latencies", "noise").
wait_for_idle_builds() {  # WHAT
    local waited
    if (( WAIT_IDLE > 0 )); then
        waited=0
        while [[ $(busy_builds) -gt 0 ]] && (( waited < WAIT_IDLE )); do
            (( waited % 30 == 0 )) && log "cargo/rustc running; waiting for them (up to ${WAIT_IDLE}s)"
            sleep 5; waited=$(( waited + 5 ))
        done
    fi
    if [[ $(busy_builds) -gt 0 ]]; then
        log "warning: cargo/rustc processes are running; they may disturb the $1 (recorded per run)"
    fi
}

# Other real-time programs disturb the figures far more than builds: a
# SCHED_FIFO spinner at a higher priority on the measured CPU stops the
# measured threads for as long as it spins (another benchmark running at
# the same time, say). rt_competitors prints the user-space processes with
# a thread in SCHED_FIFO, SCHED_RR or SCHED_DEADLINE right now, kernel
# threads, this shell and the programs it started (the measured tool: its
# parent is this shell) left out, one "PID:NAME:POLICY PRIORITIES" word per
# process ("4242:rtlab:FF80-90"), on one line (empty when there are none).
rt_competitors() {
    local pid policy
    ps -eLo pid=,ppid=,cls=,rtprio= 2>/dev/null |
        awk -v self=$$ '($3 == "FF" || $3 == "RR" || $3 == "DLN") && $1 != 2 && $2 != 2 && $1 != self && $2 != self {
            p = $4 + 0; if (!($1 in lo) || p < lo[$1]) lo[$1] = p; if (!($1 in hi) || p > hi[$1]) hi[$1] = p
            cls[$1] = $3 }
            END { for (pid in cls) print pid, cls[pid] (lo[pid] == hi[pid] ? lo[pid] : lo[pid] "-" hi[pid]) }' |
        sort -n | while read -r pid policy; do
            printf '%s:%s:%s\n' "$pid" "$(cat "/proc/$pid/comm" 2>/dev/null || echo '?')" "$policy"
        done | paste -sd' ' -
}

# Waits up to MAX_S seconds for rt_competitors to be empty (checking every
# 5 s), then warns if it is not; sets RT_COMPETITORS to what is left.
wait_for_no_rt_competitors() {  # MAX_S
    local waited=0
    RT_COMPETITORS=$(rt_competitors)
    while [[ -n $RT_COMPETITORS ]] && (( waited < $1 )); do
        (( waited % 30 == 0 )) && log "other real-time programs are running ($RT_COMPETITORS); waiting for them (up to $1 s)"
        sleep 5; waited=$(( waited + 5 ))
        RT_COMPETITORS=$(rt_competitors)
    done
    if [[ -n $RT_COMPETITORS ]]; then
        log "warning: other real-time programs are running ($RT_COMPETITORS); they may disturb the run (recorded)"
    fi
}

# Samples rt_competitors every half second while a run goes on, so that one
# that starts and ends during the run is seen too: start_rt_monitor before
# the run (on CPU MONITOR_CPU, when given, away from the measured one),
# stop_rt_monitor after it, which sets RT_SEEN to every word seen (empty:
# none). The sampler stops by itself if this shell goes away.
start_rt_monitor() {  # FILE [MONITOR_CPU]
    RT_MONITOR_FILE=$1
    : >"$RT_MONITOR_FILE"
    (
        while kill -0 $$ 2>/dev/null; do
            rt_competitors >>"$RT_MONITOR_FILE"
            sleep 0.5
        done
    ) &
    RT_MONITOR=$!
    if [[ -n ${2:-} ]] && command -v taskset >/dev/null 2>&1; then
        taskset -a -p -c "$2" "$RT_MONITOR" >/dev/null 2>&1 || true
    fi
}
stop_rt_monitor() {
    if [[ -n ${RT_MONITOR:-} ]]; then
        kill "$RT_MONITOR" 2>/dev/null || true
        wait "$RT_MONITOR" 2>/dev/null || true
        RT_MONITOR=
    fi
    RT_SEEN=$(tr ' ' '\n' <"$RT_MONITOR_FILE" 2>/dev/null | sed '/^$/d' | sort -u | paste -sd' ' -)
}

# ---------------------------------------------------------------- commands
# The arguments, shell-quoted, on one line.
quote() { local out= a; for a in "$@"; do out+="${out:+ }$(printf '%q' "$a")"; done; printf '%s' "$out"; }

# A command for the report: quoted, with the temporary directory written
# as $TMP (it is gone by the time anyone reads the report).
cmd_template() {  # ARG...
    quote "$@" | sed "s#$TMP#\$TMP#g"
}

# ---------------------------------------------------------------- runs
# The manifest (TMP/runs.tsv) has one row per run: the benchmark's own
# columns first (pair, seq, tool, its files, ...), then the columns every
# benchmark records, which append_manifest_row fills in. The python
# helpers read it with the same layout (benchlib.RUN_COLUMNS).
start_manifest() {  # OWN_COLUMN...
    MANIFEST=$TMP/runs.tsv
    local IFS=$'\t'
    printf '# %s\tstarted_at\tended_at\telapsed_s\trc\tloadavg\tbusy\tcpu_busy_pct\tcpu_steal_pct\tcommand\n' \
        "$*" >"$MANIFEST"
}

# The pause before a run, then what the machine is doing just before it:
# RUN_LOAD (the three load averages) and RUN_BUSY (cargo/rustc processes).
settle_and_sample() {
    (( SETTLE > 0 )) && sleep "$SETTLE"
    RUN_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
    RUN_BUSY=$(busy_builds)
}

# Runs CMD with its output in LOGFILE, in the background so that cleanup
# can stop it on a signal, and sets RUN_RC, RUN_STARTED, RUN_ENDED (UTC),
# RUN_ELAPSED (s) and RUN_CPU_PCT (busy and steal % of all CPUs meanwhile).
run_timed() {  # LOGFILE
    local t0 t1 ticks0 ticks1
    RUN_RC=0
    RUN_STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ); t0=$(date +%s.%N); ticks0=$(cpu_ticks)
    "${CMD[@]}" >"$1" 2>&1 &
    CHILD=$!
    wait "$CHILD" || RUN_RC=$?
    CHILD=
    ticks1=$(cpu_ticks); t1=$(date +%s.%N); RUN_ENDED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    RUN_ELAPSED=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')
    RUN_CPU_PCT=$(cpu_pct "$ticks0" "$ticks1")
}

# Stops the benchmark when the run failed or left no JSON (nor histfile,
# when HIST is given), with the tool's output; passes on any warning or
# error the tool printed although it succeeded. JSON can be any file the
# run must leave (a tool without JSON output: its data file).
check_run_output() {  # TOOL LOGFILE JSON [HIST]
    local tool=$1 logf=$2 json=$3 hist=${4:-}
    if (( RUN_RC != 0 )) || [[ ! -s $json ]] || [[ -n $hist && ! -s $hist ]]; then
        log "$tool failed (exit code $RUN_RC); command: $(quote "${CMD[@]}")"
        log "its output:"; sed 's/^/    /' "$logf" >&2 || true
        [[ -z $hist || -s $hist ]] || log "no histfile was written"
        [[ -s $json ]] || log "no ${json##*/} was written"
        exit 1
    fi
    if [[ -s $logf ]] && grep -qiE 'warn|error' "$logf"; then
        log "$tool said:"; sed 's/^/    /' "$logf" >&2
    fi
}

append_manifest_row() {  # OWN_FIELD... (as named to start_manifest)
    local IFS=$'\t'
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$*" "$RUN_STARTED" "$RUN_ENDED" \
        "$RUN_ELAPSED" "$RUN_RC" "$RUN_LOAD" "${RUN_BUSY:-0}" "$RUN_CPU_PCT" \
        "$(quote "${CMD[@]}")" >>"$MANIFEST"
}

# ---------------------------------------------------------------- servers
# A server the measured commands talk to: CMD, started in the background
# with its stdout in OUT and its stderr in ERR. Returns once PATTERN (grep
# -E) shows in either, and sets SERVER (its pid); stops the benchmark, with
# the server's output, when it exits or is not ready within TIMEOUT_S.
start_server() {  # OUT ERR PATTERN TIMEOUT_S
    local tenths=0 rc=0
    "${CMD[@]}" >"$1" 2>"$2" &
    SERVER=$!
    until grep -qE "$3" "$1" "$2" 2>/dev/null; do
        if ! kill -0 "$SERVER" 2>/dev/null || (( tenths >= $4 * 10 )); then
            if kill -0 "$SERVER" 2>/dev/null; then
                log "the server was not ready within $4 s"
                stop_server TERM 2
            else
                wait "$SERVER" || rc=$?
                SERVER=
                log "the server exited (code $rc) before it was ready"
            fi
            log "command: $(quote "${CMD[@]}")"
            log "its output:"; cat "$1" "$2" | sed 's/^/    /' >&2 || true
            exit 1
        fi
        sleep 0.1
        tenths=$(( tenths + 1 ))
    done
}

# Stops SERVER: SIGNAL first (the one after which it prints its totals),
# then SIGTERM and SIGKILL, each after GRACE_S seconds in which it did not
# exit. Sets SERVER_STOPPED_BY (the signal that ended it) and SERVER_RC
# (its exit code), for the caller.
# shellcheck disable=SC2034
stop_server() {  # SIGNAL GRACE_S
    local sig tenths
    SERVER_STOPPED_BY='' SERVER_RC=''
    [[ -n $SERVER ]] || return 0
    for sig in "$1" TERM KILL; do
        kill -s "$sig" "$SERVER" 2>/dev/null || break
        SERVER_STOPPED_BY=$sig
        for (( tenths = 0; tenths < $2 * 10; tenths++ )); do
            kill -0 "$SERVER" 2>/dev/null || break 2
            sleep 0.1
        done
    done
    SERVER_RC=0
    wait "$SERVER" 2>/dev/null || SERVER_RC=$?
    SERVER=
}

# ---------------------------------------------------------------- report
# The host, for the report's first table (benchlib.write_meta reads these).
# ONLINE_LIST: the online CPUs as the script read them at the start, if it did.
# BENCH_CPUIDLE (driver, governor, idle states of CPU) and
# BENCH_RT_BANDWIDTH (the kernel's RT throttling): what decides how a
# sleeping thread wakes and how long a spinning one may run.
export_cpu_environment() {  # CPU
    local idle=/sys/devices/system/cpu/cpuidle governor states
    governor=$(cat "$idle/current_governor" 2>/dev/null || cat "$idle/current_governor_ro" 2>/dev/null || echo '?')
    states=$(cat /sys/devices/system/cpu/cpu"$1"/cpuidle/state*/name 2>/dev/null || true)
    BENCH_CPUIDLE="driver $(cat "$idle/current_driver" 2>/dev/null || echo none), governor $governor"
    BENCH_CPUIDLE+=", states of CPU $1: ${states//$'\n'/, }"
    BENCH_RT_BANDWIDTH="kernel.sched_rt_runtime_us = $(cat /proc/sys/kernel/sched_rt_runtime_us 2>/dev/null || echo '?') of sched_rt_period_us = $(cat /proc/sys/kernel/sched_rt_period_us 2>/dev/null || echo '?')"
    export BENCH_CPUIDLE BENCH_RT_BANDWIDTH
}

export_host_environment() {  # [ONLINE_LIST]
    export BENCH_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) BENCH_HOST=$(hostname 2>/dev/null || uname -n)
    export BENCH_KERNEL=$(uname -r) BENCH_UNAME_V=$(uname -v)
    export BENCH_CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
    export BENCH_ONLINE=${1-$(cat /sys/devices/system/cpu/online 2>/dev/null || true)}
    export BENCH_CLOCKSOURCE=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || true)
}
