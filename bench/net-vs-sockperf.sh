#!/usr/bin/env bash
# Side-by-side benchmark: `rtlab net probe --mode sockperf` vs sockperf's
# ping-pong client (sockperf 3.x), against the same server.
#
# For each transport (UDP, TCP) and each server (sockperf's own `sockperf sr`,
# the reference, then `rtlab net serve --mode sockperf`), runs PAIRS pairs:
# one server is started per pair, and both clients run against it one after
# the other (rtlab, then sockperf) at the same message rate, payload and
# duration, pinned to the same CPU at the same SCHED_FIFO priority, the
# server on another CPU. Reads rtlab's JSON and per-message CSV, sockperf's
# printed summary and --full-log, and the servers' counters with
# bench/net_compare.py, and writes
#   bench/results/net-vs-sockperf.md    human tables + settings + summary
# The raw files live in a temporary directory that is removed on exit (set
# KEEP_RAW=DIR to copy them, with a summary JSON, to DIR).
#
# Both clients report the full round trip: sockperf with --full-rtt (without
# it, sockperf prints half the round trip as "latency"), rtlab always.
#
# Needs root (SCHED_FIFO, mlockall); without it, it prints why and exits 0.
# Installs sockperf (Debian package) when it is missing and builds rtlab in
# release mode. A client run that fails is reported, not hidden: the others
# go on, the report lists it, and the exit code is 1. Exit code 0 when every
# run and the report were done.
#
# Settings (environment variables):
#   PAIRS=3          rtlab+sockperf pairs per transport and server
#   DURATION=8       seconds per client run (sockperf -t; rtlab --count = DURATION x MPS);
#                    sockperf adds ~2.5 s of its own (warm-up, then a 2 s pause)
#   MPS=1000         messages per second (sockperf --mps; rtlab --interval = 1/MPS,
#                    which must be a whole number of microseconds)
#   PAYLOAD=64       bytes per message (sockperf -m, rtlab --payload; 14-1472)
#   CLIENT_CPU=0     CPU both clients are pinned to
#   SERVER_CPU=1     CPU the server is pinned to (default: the last online CPU)
#   PRIO=90          SCHED_FIFO priority of both clients
#   SERVER_PRIO=80   SCHED_FIFO priority of both servers (0 = SCHED_OTHER)
#   TRANSPORTS="udp tcp"      which transports to run
#   SERVERS="sockperf rtlab"  which servers: sockperf sr, rtlab net serve --mode sockperf
#   ADDR=127.0.0.1   address the servers listen on and the clients send to
#   PORT=11111       sockperf sr's port; rtlab net serve listens on PORT+1
#   DMA_LATENCY=0    0 = neither client holds /dev/cpu_dma_latency (rtlab
#                    --no-dma-latency; sockperf never does); 1 = both run with it
#                    held at 0 (rtlab itself, its default; sockperf under a python3
#                    wrapper that holds it and execs sockperf), so no CPU enters
#                    an idle state deeper than polling
#   SETTLE=1         seconds of pause before each client run
#   WAIT_IDLE=0      wait up to this many seconds for cargo/rustc to finish
#                    before measuring (other builds disturb the figures)
#   KEEP_RAW=        directory to keep the raw files (JSON, CSV, logs, manifest) in
#   RESULTS_DIR=bench/results  where the .md goes
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
NAME=net-vs-sockperf
# shellcheck source=bench/lib.sh
source "$SCRIPT_DIR/lib.sh"

ONLINE=$(online_cpus 0)
PAIRS=${PAIRS:-3}
DURATION=${DURATION:-8}
MPS=${MPS:-1000}
PAYLOAD=${PAYLOAD:-64}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-$(last_online_cpu)}
PRIO=${PRIO:-90}
SERVER_PRIO=${SERVER_PRIO:-80}
TRANSPORTS=${TRANSPORTS:-udp tcp}
SERVERS=${SERVERS:-sockperf rtlab}
ADDR=${ADDR:-127.0.0.1}
PORT=${PORT:-11111}
DMA_LATENCY=${DMA_LATENCY:-0}
SETTLE=${SETTLE:-1}
WAIT_IDLE=${WAIT_IDLE:-0}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}

# ---------------------------------------------------------------- settings
require_whole_numbers PAIRS DURATION MPS PAYLOAD CLIENT_CPU SERVER_CPU PRIO SERVER_PRIO PORT \
    DMA_LATENCY SETTLE WAIT_IDLE
(( PAIRS >= 1 )) || die "PAIRS must be at least 1"
(( DURATION >= 2 )) || die "DURATION must be at least 2 (seconds): sockperf leaves its first 0.4 s out"
(( MPS >= 1 && MPS <= 100000 )) || die "MPS=$MPS: expected 1-100000 messages per second"
(( 1000000 % MPS == 0 )) || die "MPS=$MPS: 1/MPS must be a whole number of microseconds (1000, 2000, 500, ...)"
INTERVAL_US=$(( 1000000 / MPS ))
(( PAYLOAD >= 14 && PAYLOAD <= 1472 )) || die "PAYLOAD=$PAYLOAD: expected 14-1472 bytes (sockperf's header is 14)"
(( PRIO >= 1 && PRIO <= 99 )) || die "PRIO=$PRIO: SCHED_FIFO priorities are 1-99"
(( SERVER_PRIO <= 99 )) || die "SERVER_PRIO=$SERVER_PRIO: expected 0 (SCHED_OTHER) or 1-99"
(( PORT >= 1 && PORT < 65535 )) || die "PORT=$PORT: expected 1-65534 (rtlab's server takes PORT+1)"
(( DMA_LATENCY <= 1 )) || die "DMA_LATENCY=$DMA_LATENCY: expected 0 or 1"
(( CLIENT_CPU != SERVER_CPU )) || die "CLIENT_CPU and SERVER_CPU are both $CLIENT_CPU: client and server need a CPU each"
(( PAIRS >= 3 )) || log "warning: PAIRS=$PAIRS; at least 3 pairs are recommended for a median"
read -r -a TRANSPORT_LIST <<<"$TRANSPORTS"
read -r -a SERVER_LIST <<<"$SERVERS"
(( ${#TRANSPORT_LIST[@]} >= 1 )) || die "TRANSPORTS is empty"
(( ${#SERVER_LIST[@]} >= 1 )) || die "SERVERS is empty"
for t in "${TRANSPORT_LIST[@]}"; do
    [[ $t == udp || $t == tcp ]] || die "TRANSPORTS: '$t' (expected udp and/or tcp)"
done
for s in "${SERVER_LIST[@]}"; do
    [[ $s == sockperf || $s == rtlab ]] || die "SERVERS: '$s' (expected sockperf and/or rtlab)"
done

# ---------------------------------------------------------------- root
skip_unless_root_with_fifo "both clients run SCHED_FIFO $PRIO and rtlab locks memory" latency
require_online_cpu "$CLIENT_CPU" "$ONLINE"
require_online_cpu "$SERVER_CPU" "$ONLINE"

# ---------------------------------------------------------------- tools
command -v python3 >/dev/null 2>&1 || apt_install python3
for t in chrt taskset; do
    command -v "$t" >/dev/null 2>&1 || apt_install util-linux
done
command -v sockperf >/dev/null 2>&1 || apt_install sockperf
SOCKPERF=$(command -v sockperf) || die "sockperf is installed but not on PATH"
CHRT=$(command -v chrt)
TASKSET=$(command -v taskset)
build_rtlab
SOCKPERF_VERSION="sockperf $("$SOCKPERF" --version 2>&1 | sed -n '1s/^sockperf, version //p')"
SOCKPERF_PACKAGE=$(dpkg-query -W -f='${Version}' sockperf 2>/dev/null || true)
SOCKPERF_VERSION+=${SOCKPERF_PACKAGE:+ (Debian sockperf $SOCKPERF_PACKAGE)}
SOCKPERF_HELP=$("$SOCKPERF" ping-pong --help 2>&1 || true)
[[ $SOCKPERF_HELP == *--full-rtt* ]] ||
    die "this sockperf has no --full-rtt: it would report half round trips, rtlab full ones"

# ---------------------------------------------------------------- temp + quiet
make_temp_dir
wait_for_idle_builds latencies

# ---------------------------------------------------------------- commands
DMA_ARGS=() DMA_HOLD=()
if (( DMA_LATENCY == 1 )); then
    [[ -w /dev/cpu_dma_latency ]] || die "DMA_LATENCY=1: /dev/cpu_dma_latency is not writable"
    # Writes 0 and execs the rest of its argv with the file still open: the
    # kernel drops the request when that program exits, whatever happens.
    DMA_HOLD=(python3 -c 'import os, struct, sys; fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY); os.write(fd, struct.pack("i", 0)); os.set_inheritable(fd, True); os.execvp(sys.argv[1], sys.argv[1:])')
else
    DMA_ARGS=(--no-dma-latency)
fi
# Both servers run at SERVER_PRIO (or SCHED_OTHER) on SERVER_CPU.
SERVER_SCHED=(--policy other)
SERVER_CHRT=("$CHRT" -o 0)
if (( SERVER_PRIO > 0 )); then
    SERVER_SCHED=(--policy fifo --priority "$SERVER_PRIO")
    SERVER_CHRT=("$CHRT" -f "$SERVER_PRIO")
fi
transport_flag() { [[ $1 == tcp ]] && echo --tcp || echo --udp; }
port_of() { [[ $1 == sockperf ]] && echo "$PORT" || echo $(( PORT + 1 )); }

# Exact argv of each command; $1 = run number (or pair), $2 = transport,
# $3 = server (rtlab's client: $4 = messages, DURATION x MPS by default).
rtlab_cmd() {
    CMD=("$RTLAB" net probe "$ADDR:$(port_of "$3")" "$(transport_flag "$2")" --mode sockperf
         --round-trips 1 --interval "${INTERVAL_US}us" --count "${4:-$(( DURATION * MPS ))}"
         --payload "$PAYLOAD" --cpu "$CLIENT_CPU" --policy fifo --priority "$PRIO" "${DMA_ARGS[@]}"
         --json "$TMP/run$1-rtlab.json" --samples "$TMP/run$1-rtlab.csv" --no-store --quiet)
}
sockperf_cmd() {
    local tcp=()
    [[ $2 == tcp ]] && tcp=(--tcp)
    CMD=("${DMA_HOLD[@]}" "$CHRT" -f "$PRIO" "$TASKSET" -c "$CLIENT_CPU" "$SOCKPERF" ping-pong -i "$ADDR"
         -p "$(port_of "$3")" "${tcp[@]}" -t "$DURATION" --mps "$MPS" -m "$PAYLOAD" --full-rtt
         --full-log "$TMP/run$1-sockperf.csv")
}
server_cmd() {  # pair transport server
    local tcp=()
    if [[ $3 == sockperf ]]; then
        [[ $2 == tcp ]] && tcp=(--tcp)
        CMD=("${SERVER_CHRT[@]}" "$TASKSET" -c "$SERVER_CPU" "$SOCKPERF" server -i "$ADDR"
             -p "$PORT" "${tcp[@]}")
    else
        CMD=("$RTLAB" net serve --listen "$ADDR:$(( PORT + 1 ))" "$(transport_flag "$2")"
             --mode sockperf "${SERVER_SCHED[@]}" --cpu "$SERVER_CPU" --json)
    fi
}
# What each server prints once it takes requests.
server_ready_pattern() {
    [[ $1 == sockperf ]] && echo 'block on socket' || echo 'rtlab net serve: listening on'
}
# The templates for the report: UDP against sockperf's server (the legend
# says what changes for TCP and for rtlab's server).
rtlab_cmd N udp sockperf;    RTLAB_TEMPLATE=$(cmd_template "${CMD[@]}")
sockperf_cmd N udp sockperf; SOCKPERF_TEMPLATE=$(cmd_template "${CMD[@]:${#DMA_HOLD[@]}}")
(( DMA_LATENCY == 0 )) || SOCKPERF_TEMPLATE="HOLD_DMA_LATENCY_0 $SOCKPERF_TEMPLATE"
server_cmd P udp sockperf;   SOCKPERF_SERVER_TEMPLATE=$(cmd_template "${CMD[@]}")
server_cmd P udp rtlab;      RTLAB_SERVER_TEMPLATE=$(cmd_template "${CMD[@]}")

start_manifest pair seq tool transport server result data log server_out server_err \
    server_counters client_cpu_busy_pct server_cpu_busy_pct

# Waits up to 5 s for FILE to hold N lines (rtlab's server answering SIGUSR1).
wait_for_lines() {  # FILE N
    local tenths
    for (( tenths = 0; tenths < 50; tenths++ )); do
        (( $(wc -l <"$1") >= $2 )) && return 0
        sleep 0.1
    done
    return 1
}

# A short rtlab run against the first server first, so a client or server
# that does not work yet fails in seconds rather than after the first runs.
log "checking that rtlab net probe works against ${SERVER_LIST[0]}'s server (${TRANSPORT_LIST[0]}, 200 messages)"
server_cmd 0 "${TRANSPORT_LIST[0]}" "${SERVER_LIST[0]}"
start_server "$TMP/preflight-server.out" "$TMP/preflight-server.err" "$(server_ready_pattern "${SERVER_LIST[0]}")" 10
rtlab_cmd 0 "${TRANSPORT_LIST[0]}" "${SERVER_LIST[0]}" 200
if ! "${CMD[@]}" >"$TMP/preflight.log" 2>&1; then
    log "rtlab net probe failed; command: $(quote "${CMD[@]}")"
    log "its output:"; sed 's/^/    /' "$TMP/preflight.log" >&2 || true
    die "rtlab net probe does not work: nothing to compare"
fi
stop_server INT 1

FAILED_RUNS=()
run_one() {  # pair seq tool transport server counters_line
    local pair=$1 seq=$2 tool=$3 transport=$4 server=$5 line=$6
    "${tool}_cmd" "$seq" "$transport" "$server"
    local result=$TMP/run$seq-$tool.json data=$TMP/run$seq-$tool.csv logf=$TMP/run$seq-$tool.log
    [[ $tool == sockperf ]] && result=$logf
    local c0 c1 s0 s1
    settle_and_sample
    log "run $seq/$TOTAL_RUNS (pair $pair, $transport, $server server): $tool, ${DURATION}s at $MPS msg/s (load $RUN_LOAD)"
    c0=$(cpu_ticks_of "$CLIENT_CPU"); s0=$(cpu_ticks_of "$SERVER_CPU")
    run_timed "$logf"
    c1=$(cpu_ticks_of "$CLIENT_CPU"); s1=$(cpu_ticks_of "$SERVER_CPU")
    if [[ $server == rtlab ]]; then
        # The server's counters so far, as one more JSON line on its stdout.
        if ! kill -USR1 "$SERVER" 2>/dev/null || ! wait_for_lines "$SERVER_OUT" "$line"; then
            log "warning: rtlab's server printed no counters after run $seq"
        fi
    else
        line=-
    fi
    if (( RUN_RC != 0 )) || [[ ! -s $data ]]; then
        # Reported, not fatal: the report says which runs failed and how.
        log "$tool failed (exit code $RUN_RC, ${data##*/} $([[ -s $data ]] && echo written || echo missing));" \
            "command: $(quote "${CMD[@]}")"
        log "its output:"; sed 's/^/    /' "$logf" >&2 || true
        FAILED_RUNS+=("$seq")
        (( RUN_RC != 0 )) || RUN_RC=1
    else
        check_run_output "$tool" "$logf" "$data"
    fi
    append_manifest_row "$pair" "$seq" "$tool" "$transport" "$server" "${result##*/}" "${data##*/}" \
        "${logf##*/}" "${SERVER_OUT##*/}" "${SERVER_ERR##*/}" "$line" \
        "$(cpu_pct "$c0" "$c1" | cut -f1)" "$(cpu_pct "$s0" "$s1" | cut -f1)"
}

TOTAL_RUNS=$(( PAIRS * 2 * ${#TRANSPORT_LIST[@]} * ${#SERVER_LIST[@]} ))
# Per pair: two runs and their pauses, sockperf's ~2.5 s of warm-up, starting
# and stopping the server.
log "${#TRANSPORT_LIST[@]} transport(s) x ${#SERVER_LIST[@]} server(s) x $PAIRS pairs x 2 runs x ${DURATION}s:" \
    "about $(( TOTAL_RUNS * (2 * (DURATION + SETTLE) + 4) / 2 ))s"
seq_no=0
for transport in "${TRANSPORT_LIST[@]}"; do
    for server in "${SERVER_LIST[@]}"; do
        for (( pair = 1; pair <= PAIRS; pair++ )); do
            SERVER_OUT=$TMP/pair$pair-$transport-$server-server.out
            SERVER_ERR=$TMP/pair$pair-$transport-$server-server.err
            server_cmd "$pair" "$transport" "$server"
            start_server "$SERVER_OUT" "$SERVER_ERR" "$(server_ready_pattern "$server")" 10
            counters_line=0
            for tool in rtlab sockperf; do
                seq_no=$(( seq_no + 1 )); counters_line=$(( counters_line + 1 ))
                run_one "$pair" "$seq_no" "$tool" "$transport" "$server" "$counters_line"
            done
            # sockperf's server prints its total at SIGINT, rtlab's its counters at SIGTERM.
            if [[ $server == sockperf ]]; then stop_server INT 1; else stop_server TERM 3; fi
            printf '%s\t%s\n' "$SERVER_STOPPED_BY" "$SERVER_RC" >"$SERVER_ERR.stopped"
        done
    done
done

# ---------------------------------------------------------------- report
export_host_environment "$ONLINE"
# Idle states decide what a sleeping thread pays to wake; a spinning one
# meets the kernel's RT bandwidth limit.
export_cpu_environment "$CLIENT_CPU"
export BENCH_RTLAB_VERSION=$RTLAB_VERSION BENCH_SOCKPERF_VERSION=$SOCKPERF_VERSION
export BENCH_RTLAB_CMD=$RTLAB_TEMPLATE BENCH_SOCKPERF_CMD=$SOCKPERF_TEMPLATE
export BENCH_SOCKPERF_SERVER_CMD=$SOCKPERF_SERVER_TEMPLATE BENCH_RTLAB_SERVER_CMD=$RTLAB_SERVER_TEMPLATE
export PAIRS DURATION MPS INTERVAL_US PAYLOAD CLIENT_CPU SERVER_CPU PRIO SERVER_PRIO TRANSPORTS SERVERS
export ADDR PORT DMA_LATENCY SETTLE
python3 - "$TMP/meta.json" "$SCRIPT_DIR" <<'EOF'
import os, sys
sys.path.insert(0, sys.argv[2])
from benchlib import write_meta
e = os.environ
write_meta(
    sys.argv[1],
    versions={"rtlab": e["BENCH_RTLAB_VERSION"], "sockperf": e["BENCH_SOCKPERF_VERSION"]},
    config={"pairs": int(e["PAIRS"]), "duration_s": int(e["DURATION"]), "mps": int(e["MPS"]),
            "interval_us": int(e["INTERVAL_US"]), "payload": int(e["PAYLOAD"]),
            "client_cpu": int(e["CLIENT_CPU"]), "server_cpu": int(e["SERVER_CPU"]),
            "priority": int(e["PRIO"]), "policy": "SCHED_FIFO",
            "server_priority": int(e["SERVER_PRIO"]),
            "transports": e["TRANSPORTS"].split(), "servers": e["SERVERS"].split(),
            "address": e["ADDR"], "port": int(e["PORT"]),
            "dma_latency": e["DMA_LATENCY"] == "1", "settle_s": int(e["SETTLE"]),
            "order": "per transport, per server, per pair (one server each): rtlab then sockperf"},
    commands={"rtlab": e["BENCH_RTLAB_CMD"], "sockperf": e["BENCH_SOCKPERF_CMD"],
              "sockperf_server": e["BENCH_SOCKPERF_SERVER_CMD"],
              "rtlab_server": e["BENCH_RTLAB_SERVER_CMD"]},
    extra_environment={"cpuidle": e["BENCH_CPUIDLE"], "rt_bandwidth": e["BENCH_RT_BANDWIDTH"]},
)
EOF

mkdir -p "$RESULTS_DIR"
echo
echo "== rtlab net probe vs sockperf ping-pong: $PAIRS pairs, ${DURATION}s, $MPS msg/s, ${PAYLOAD} B, client CPU $CLIENT_CPU FIFO $PRIO, server CPU $SERVER_CPU =="
python3 "$SCRIPT_DIR/net_compare.py" --manifest "$MANIFEST" --meta "$TMP/meta.json" \
    --md "$RESULTS_DIR/$NAME.md" --json "$TMP/summary.json" ||
    die "the analysis failed (bench/net_compare.py)"
echo
log "wrote $RESULTS_DIR/$NAME.md"
if (( ${#FAILED_RUNS[@]} > 0 )); then
    log "runs ${FAILED_RUNS[*]} failed (see the report)"
    exit 1
fi
exit 0
