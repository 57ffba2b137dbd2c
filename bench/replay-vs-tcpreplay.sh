#!/usr/bin/env bash
# Side-by-side benchmark: `rtlab traffic replay` against tcpreplay, the same
# pcap replayed onto a veth by both and measured by the same receiver.
#
# Two network namespaces (A, the sender's; B, the receiver's) joined by a
# veth pair, with fixed MAC addresses and permanent neighbour entries. For
# each rate of RATES (packets per second, constant) with its COUNTS:
#   1. `rtlab traffic gen constant --rate R --count N --size SIZE` -> a plan;
#   2. `rtlab traffic export PLAN --to B:PORT --from A:PORT --src-mac <A's>
#      --dst-mac <B's>` -> a pcap whose frames carry rtlab's stamps
#      (stream, sequence, planned instant) and whose timestamps are the
#      plan's offsets exactly;
#   3. that very pcap replayed
#      - by tcpreplay -i <A's veth>, once per timer of TIMERS (`default`:
#        no --timer, i.e. this version's gtod; then --timer=nano, select...),
#      - by rtlab: `rtlab traffic import` of the pcap, then
#        `rtlab traffic replay --to B:PORT` (its own stamps, same sequences
#        and planned instants);
#      both senders pinned to SENDER_CPU at SCHED_FIFO PRIO;
#   4. each replay measured by `rtlab traffic record --listen B:PORT
#      --against PLAN` in B (pinned to RECEIVER_CPU, kernel receive stamps):
#      departure error = |arrival - planned instant| with the first packet's
#      arrival aligned on its instant (on a veth a packet's receive stamp is
#      taken inside its transmit call, so arrival = departure plus a
#      constant), inter-departure error = |arrival gap - planned gap|; % of
#      packets within 1 us / 5 us / 1 % of the gap, p50/p99/p99.9/max,
#      drift (least-squares slope of the signed error, ns/s), lost.
# bench/replay_compare.py reads the receivers' JSONs and recorded plans
# (and rtlab's own departure report) and writes
#   bench/results/replay-vs-tcpreplay.md     settings + tables + targets
#   bench/results/replay-vs-tcpreplay.json   every figure
# The raw files live in a temporary directory removed on exit (KEEP_RAW=DIR
# keeps them).
#
# Needs root (namespaces, SCHED_FIFO); without it, it prints why and exits 0.
# Installs tcpreplay (Debian package) when missing, builds rtlab in release
# mode. Warns when the load average is high: the figures need a quiet
# machine. Exit code 0 whether or not the targets are met (the report
# says); non-zero only when something failed.
#
# Settings (environment variables):
#   RATES="2000 10000 50000"     packets per second of each plan
#   COUNTS="20000 50000 100000"  packets of each plan (one per rate)
#   SIZE=64                      UDP payload bytes (>= 24: rtlab's stamp)
#   TIMERS="default nano select" tcpreplay's timers (default = no --timer)
#   PRELOAD=1                    1: tcpreplay --preload-pcap (packets in RAM)
#   RTLAB_ARGS='--sysctl kernel.sched_rt_runtime_us=-1 --guard auto'
#                                more arguments of rtlab's replay (RT throttling lifted for
#                                its run; --guard 499us spins through 2 kpps gaps)
#   SKIP_AFTER=1s                rtlab replay --skip-after: 1s sends every packet however
#                                late, as tcpreplay does (rtlab's default, 1ms, skips a
#                                packet reached later than that and counts it)
#   SENDER_CPU=1                 CPU both senders are pinned to (default: the last online CPU)
#   RECEIVER_CPU=0               CPU the receiver is pinned to
#   PRIO=90                      SCHED_FIFO priority of both senders and the receiver
#   PORT=7600                    UDP port of the receiver
#   LOAD_WARN=0.5                warn when the 1-min load average per CPU is above this
#   SETTLE=1                     seconds of pause before each run
#   WAIT_IDLE=0                  wait up to this many seconds for cargo/rustc to finish
#   KEEP_RAW=                    directory to keep the raw files in
#   RESULTS_DIR=bench/results    where the .md and .json go
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
NAME=replay-vs-tcpreplay
# shellcheck source=bench/lib.sh
source "$SCRIPT_DIR/lib.sh"

ONLINE=$(online_cpus 0)
RATES=${RATES:-2000 10000 50000}
COUNTS=${COUNTS:-20000 50000 100000}
SIZE=${SIZE:-64}
TIMERS=${TIMERS:-default nano select}
PRELOAD=${PRELOAD:-1}
SKIP_AFTER=${SKIP_AFTER:-1s}
# The kernel's real-time throttling takes the CPU from a FIFO thread that
# has run 95 % of a second: at 50 kpps (20 us gaps, inside the guard)
# rtlab's dispatcher never sleeps and lost 50 ms a second to it. rtlab lifts
# it for its own run (journaled, put back after); tcpreplay's spinning
# timers get no such help from the script (a host change it could leave).
RTLAB_ARGS=${RTLAB_ARGS:---sysctl kernel.sched_rt_runtime_us=-1 --guard auto}
SENDER_CPU=${SENDER_CPU:-$(last_online_cpu)}
RECEIVER_CPU=${RECEIVER_CPU:-0}
PRIO=${PRIO:-90}
PORT=${PORT:-7600}
LOAD_WARN=${LOAD_WARN:-0.5}
SETTLE=${SETTLE:-1}
WAIT_IDLE=${WAIT_IDLE:-0}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}

# ---------------------------------------------------------------- settings
require_whole_numbers SIZE PRELOAD SENDER_CPU RECEIVER_CPU PRIO PORT SETTLE WAIT_IDLE
read -r -a RATE_LIST <<<"$RATES"
read -r -a COUNT_LIST <<<"$COUNTS"
read -r -a TIMER_LIST <<<"$TIMERS"
(( ${#RATE_LIST[@]} >= 1 )) || die "RATES is empty"
(( ${#RATE_LIST[@]} == ${#COUNT_LIST[@]} )) || die "RATES has ${#RATE_LIST[@]} rates, COUNTS ${#COUNT_LIST[@]} counts: one count per rate"
for v in "${RATE_LIST[@]}" "${COUNT_LIST[@]}"; do
    is_uint "$v" && (( v > 0 )) || die "RATES/COUNTS: '$v' is not a positive whole number"
done
for t in "${TIMER_LIST[@]}"; do
    [[ $t =~ ^(default|select|ioport|gtod|nano)$ ]] || die "TIMERS: '$t' (expected default, select, ioport, gtod or nano)"
done
(( SIZE >= 24 && SIZE <= 1472 )) || die "SIZE=$SIZE: expected 24-1472 (rtlab's 24-byte stamp, one Ethernet frame)"
(( PRIO >= 1 && PRIO <= 99 )) || die "PRIO=$PRIO: SCHED_FIFO priorities are 1-99"
(( PORT >= 1 && PORT <= 65535 )) || die "PORT=$PORT: expected 1-65535"
(( PRELOAD <= 1 )) || die "PRELOAD=$PRELOAD: expected 0 or 1"
(( SENDER_CPU != RECEIVER_CPU )) || die "SENDER_CPU and RECEIVER_CPU are both $SENDER_CPU: sender and receiver need a CPU each"

# ---------------------------------------------------------------- root + tools
skip_unless_root_with_fifo "namespaces, a veth, and SCHED_FIFO $PRIO for both senders" timing
require_online_cpu "$SENDER_CPU" "$ONLINE"
require_online_cpu "$RECEIVER_CPU" "$ONLINE"
command -v python3 >/dev/null 2>&1 || apt_install python3
command -v ip >/dev/null 2>&1 || apt_install iproute2
command -v ss >/dev/null 2>&1 || apt_install iproute2
for t in chrt taskset; do
    command -v "$t" >/dev/null 2>&1 || apt_install util-linux
done
command -v tcpreplay >/dev/null 2>&1 || apt_install tcpreplay
TCPREPLAY=$(command -v tcpreplay) || die "tcpreplay is installed but not on PATH"
CHRT=$(command -v chrt)
TASKSET=$(command -v taskset)
TCPREPLAY_VERSION=$("$TCPREPLAY" --version 2>&1 | sed -n '1{s/^tcpreplay version: //;p;q}')
TCPREPLAY_PACKAGE=$(dpkg-query -W -f='${Version}' tcpreplay 2>/dev/null || true)
TCPREPLAY_VERSION="tcpreplay $TCPREPLAY_VERSION${TCPREPLAY_PACKAGE:+ (Debian tcpreplay $TCPREPLAY_PACKAGE)}"
log "$TCPREPLAY_VERSION"
build_rtlab

# ---------------------------------------------------------------- quiet machine
NCPU=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
LOAD1=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$LOAD1" -v n="$NCPU" -v w="$LOAD_WARN" 'BEGIN{exit !(l / n > w)}'; then
    log "warning: the load average is $LOAD1 on $NCPU CPUs (above $LOAD_WARN per CPU): the machine is not quiet, the figures will show it"
fi

# ---------------------------------------------------------------- namespaces
# Named after this shell's pid, so two benchmarks never share them; the
# veth ends live inside them (no name on the host), and both go on exit.
NS_A=rtlb$$a NS_B=rtlb$$b
DEV_A=rtlbA DEV_B=rtlbB
ADDR_A=10.78.0.1 ADDR_B=10.78.0.2
MAC_A=02:72:74:6c:01:01 MAC_B=02:72:74:6c:01:02
NETNS_MADE=0
delete_namespaces() {
    (( NETNS_MADE )) || return 0
    ip netns del "$NS_A" 2>/dev/null || true
    ip netns del "$NS_B" 2>/dev/null || true
    NETNS_MADE=0
}
make_temp_dir
# lib.sh's cleanup (stop the runs, keep the raw files, remove TMP) after the
# namespaces are gone, with the script's exit code.
bench_cleanup() {
    local rc=$?
    [[ -z ${RECEIVER:-} ]] || { kill -TERM "$RECEIVER" 2>/dev/null || true; wait "$RECEIVER" 2>/dev/null || true; }
    delete_namespaces
    (exit "$rc")
    cleanup
}
trap bench_cleanup EXIT
wait_for_idle_builds "departure times"

NETNS_MADE=1
ip netns add "$NS_A" || die "ip netns add $NS_A failed"
ip netns add "$NS_B" || die "ip netns add $NS_B failed"
in_a() { ip netns exec "$NS_A" "$@"; }
in_b() { ip netns exec "$NS_B" "$@"; }
in_a ip link set lo up
in_b ip link set lo up
in_a ip link add "$DEV_A" address "$MAC_A" type veth peer name "$DEV_B" address "$MAC_B" netns "$NS_B"
in_a ip addr add "$ADDR_A/30" dev "$DEV_A"
in_b ip addr add "$ADDR_B/30" dev "$DEV_B"
in_a ip link set "$DEV_A" up
in_b ip link set "$DEV_B" up
# No ARP exchange lands in a measured stream.
in_a ip neigh replace "$ADDR_B" lladdr "$MAC_B" dev "$DEV_A" nud permanent
in_b ip neigh replace "$ADDR_A" lladdr "$MAC_A" dev "$DEV_B" nud permanent
for (( tenths = 0; tenths < 50; tenths++ )); do
    shown=$(in_a ip -o link show dev "$DEV_A")$(in_b ip -o link show dev "$DEV_B")
    [[ $shown == *"state UP"*"state UP"* && $shown != *"qdisc noop"* ]] && break
    sleep 0.1
done
[[ $shown == *"state UP"*"state UP"* ]] || die "the veth pair did not come up: $shown"

# ---------------------------------------------------------------- commands
PRELOAD_ARGS=()
(( PRELOAD == 0 )) || PRELOAD_ARGS=(--preload-pcap)
timer_args() { [[ $1 == default ]] || echo "--timer=$1"; }
record_cmd() {  # RUN_FILE_PREFIX PLAN COUNT
    CMD=(ip netns exec "$NS_B" "$RTLAB" traffic record --listen "$ADDR_B:$PORT" --against "$2"
         --count "$3" --idle 2s --cpu "$RECEIVER_CPU" --priority "$PRIO"
         -o "$1-got.plan" --json "$1-record.json" --no-store --quiet)
}
tcpreplay_cmd() {  # RUN_FILE_PREFIX PCAP TIMER
    local timer
    timer=$(timer_args "$3")
    CMD=(ip netns exec "$NS_A" "$CHRT" -f "$PRIO" "$TASKSET" -c "$SENDER_CPU" "$TCPREPLAY"
         -i "$DEV_A" ${timer:+"$timer"} "${PRELOAD_ARGS[@]}" "$2")
}
rtlab_cmd() {  # RUN_FILE_PREFIX PLAN
    CMD=(ip netns exec "$NS_A" "$RTLAB" traffic replay "$2" --to "$ADDR_B:$PORT" --cpu "$SENDER_CPU"
         --priority "$PRIO" --skip-after "$SKIP_AFTER" $RTLAB_ARGS --json "$1-replay.json" --no-store --quiet)
}

# Starts the receiver and returns once it listens (RECEIVER: its pid).
start_receiver() {  # PREFIX PLAN COUNT
    record_cmd "$@"
    "${CMD[@]}" >"$1-record.out" 2>"$1-record.err" &
    RECEIVER=$!
    local tenths
    for (( tenths = 0; tenths < 100; tenths++ )); do
        [[ -n $(in_b ss -H -u -l -n "sport = :$PORT" 2>/dev/null) ]] && return 0
        kill -0 "$RECEIVER" 2>/dev/null || break
        sleep 0.1
    done
    log "the receiver did not listen; command: $(quote "${CMD[@]}")"
    sed 's/^/    /' "$1-record.err" >&2 || true
    exit 1
}
# Waits for the receiver to end (its --count, or 2 s without a packet).
wait_receiver() {  # PREFIX
    local rc=0
    wait "$RECEIVER" || rc=$?
    RECEIVER=
    if (( rc != 0 )) || [[ ! -s $1-record.json ]]; then
        log "the receiver failed (exit code $rc):"; sed 's/^/    /' "$1-record.err" >&2 || true
        exit 1
    fi
}

# pair = the rate's place in RATES (its runs are compared with each other).
start_manifest pair rate count seq tool timer record got plan sender log
TOTAL_RUNS=$(( ${#RATE_LIST[@]} * (${#TIMER_LIST[@]} + 1) ))
seq_no=0
measure() {  # PAIR RATE COUNT PLAN TOOL TIMER SENDER_INPUT
    local pair=$1 rate=$2 count=$3 plan=$4 tool=$5 timer=$6 input=$7 prefix sender
    seq_no=$(( seq_no + 1 ))
    prefix=$TMP/run$seq_no-$tool
    settle_and_sample
    log "run $seq_no/$TOTAL_RUNS: $rate pkt/s x $count, $tool${timer:+ ($timer)} (load $RUN_LOAD)"
    start_receiver "$prefix" "$plan" "$count"
    if [[ $tool == tcpreplay ]]; then
        tcpreplay_cmd "$prefix" "$input" "$timer"
        sender=$prefix.log
    else
        rtlab_cmd "$prefix" "$input"
        sender=$prefix-replay.json
    fi
    run_timed "$prefix.log"
    check_run_output "$tool" "$prefix.log" "$sender"
    wait_receiver "$prefix"
    append_manifest_row "$pair" "$rate" "$count" "$seq_no" "$tool" "${timer:--}" \
        "${prefix##*/}-record.json" "${prefix##*/}-got.plan" "${plan##*/}" "${sender##*/}" "${prefix##*/}.log"
}

for i in "${!RATE_LIST[@]}"; do
    rate=${RATE_LIST[$i]} count=${COUNT_LIST[$i]}
    plan=$TMP/r$rate.plan pcap=$TMP/r$rate.pcap imported=$TMP/r$rate-imported.plan
    "$RTLAB" traffic gen constant --rate "$rate" --count "$count" --size "$SIZE" -o "$plan" --quiet ||
        die "traffic gen failed"
    "$RTLAB" traffic export "$plan" --to "$ADDR_B:$PORT" --from "$ADDR_A:$PORT" \
        --src-mac "$MAC_A" --dst-mac "$MAC_B" -o "$pcap" >/dev/null || die "traffic export failed"
    "$RTLAB" traffic import "$pcap" -o "$imported" --quiet || die "traffic import of $pcap failed"
    for timer in "${TIMER_LIST[@]}"; do
        measure $(( i + 1 )) "$rate" "$count" "$plan" tcpreplay "$timer" "$pcap"
    done
    measure $(( i + 1 )) "$rate" "$count" "$plan" rtlab "" "$imported"
done

# ---------------------------------------------------------------- report
export_host_environment "$ONLINE"
export_cpu_environment "$SENDER_CPU"
tcpreplay_cmd "$TMP/runN" "$TMP/rRATE.pcap" default; TCPREPLAY_TEMPLATE=$(cmd_template "${CMD[@]}")
rtlab_cmd "$TMP/runN" "$TMP/rRATE-imported.plan"; RTLAB_TEMPLATE=$(cmd_template "${CMD[@]}")
record_cmd "$TMP/runN" "$TMP/rRATE.plan" COUNT; RECORD_TEMPLATE=$(cmd_template "${CMD[@]}")
export BENCH_RTLAB_VERSION=$RTLAB_VERSION BENCH_TCPREPLAY_VERSION=$TCPREPLAY_VERSION
export BENCH_RTLAB_CMD=$RTLAB_TEMPLATE BENCH_TCPREPLAY_CMD=$TCPREPLAY_TEMPLATE BENCH_RECORD_CMD=$RECORD_TEMPLATE
export RATES COUNTS SIZE TIMERS PRELOAD SKIP_AFTER SENDER_CPU RECEIVER_CPU PRIO PORT SETTLE LOAD1 NCPU
python3 - "$TMP/meta.json" "$SCRIPT_DIR" <<'EOF'
import os, sys
sys.path.insert(0, sys.argv[2])
from benchlib import write_meta
e = os.environ
write_meta(
    sys.argv[1],
    versions={"rtlab": e["BENCH_RTLAB_VERSION"], "tcpreplay": e["BENCH_TCPREPLAY_VERSION"]},
    config={"rates_pps": [int(x) for x in e["RATES"].split()],
            "counts": [int(x) for x in e["COUNTS"].split()],
            "size_bytes": int(e["SIZE"]), "tcpreplay_timers": e["TIMERS"].split(),
            "tcpreplay_preload_pcap": e["PRELOAD"] == "1", "rtlab_skip_after": e["SKIP_AFTER"],
            "sender_cpu": int(e["SENDER_CPU"]), "receiver_cpu": int(e["RECEIVER_CPU"]),
            "priority": int(e["PRIO"]), "policy": "SCHED_FIFO", "port": int(e["PORT"]),
            "settle_s": int(e["SETTLE"]),
            "link": "two network namespaces, one veth pair, permanent neighbour entries",
            "order": "per rate: tcpreplay once per timer, then rtlab; one receiver per run"},
    commands={"tcpreplay": e["BENCH_TCPREPLAY_CMD"], "rtlab": e["BENCH_RTLAB_CMD"],
              "receiver": e["BENCH_RECORD_CMD"]},
    extra_environment={"cpuidle": e["BENCH_CPUIDLE"], "rt_bandwidth": e["BENCH_RT_BANDWIDTH"],
                       "loadavg_1min_at_start": e["LOAD1"], "cpus": e["NCPU"]},
)
EOF

mkdir -p "$RESULTS_DIR"
echo
echo "== rtlab traffic replay vs $TCPREPLAY_VERSION: ${RATES// /, } pkt/s, ${SIZE} B, sender CPU $SENDER_CPU, receiver CPU $RECEIVER_CPU, FIFO $PRIO =="
python3 "$SCRIPT_DIR/replay_compare.py" --manifest "$MANIFEST" --meta "$TMP/meta.json" \
    --md "$RESULTS_DIR/$NAME.md" --json "$RESULTS_DIR/$NAME.json" ||
    die "the analysis failed (bench/replay_compare.py)"
echo
log "wrote $RESULTS_DIR/$NAME.md and $NAME.json"
