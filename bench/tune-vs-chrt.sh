#!/usr/bin/env bash
# Side-by-side benchmark: `rtlab tune` vs what paper 000 (Hallberg 2017,
# §3.5.1) used and users combine today to promote processes to SCHED_FIFO:
# `pgrep | xargs -L1 chrt -f -p PRIO` (as a polling loop where it has to
# keep up with restarts) and tuna (one-shot, Debian package tuna).
#
# 1. Time to promotion after a (re)start. A throwaway process with a
#    unique name (a symlink to /bin/sleep) is started RESTARTS times per
#    contender and round, a random 100-600 ms apart (the same sequence of
#    pauses for every contender of a round), and killed once promoted. From
#    the bench's CLOCK_MONOTONIC just before posix_spawn to the moment a
#    python observer polling sched_getscheduler(pid) every OBSERVE_US sees
#    SCHED_FIFO. Contenders, alternating, ROUNDS rounds:
#      rtlab-events  rtlab tune watch --rules R            (process-event connector)
#      rtlab-poll    rtlab tune watch --rules R --poll --interval 500ms
#      chrt-loop     while :; do pgrep -x N | xargs -r -L1 chrt -f -p 50; sleep 0.5; done
# 2. Cost of keeping watch. The same three (plus `none`: no watcher, for the
#    fork storm's own speed), COST_ROUNDS rounds, each kept in a cpuacct
#    cgroup of its own (every process the shell loop starts is counted):
#    CPU time over IDLE_S s of an idle machine with one matching process
#    to keep promoted, then over a fork storm of STORM /bin/true processes
#    (+1 s for what the watcher still has queued).
# 3. One-shot promotion of MANY processes of one name: wall time (and CPU
#    time) of `rtlab tune set N --policy fifo --priority 50` vs
#    `pgrep -x N | xargs -L1 chrt -f -p 50` vs `tuna -t N -C -p FIFO:50`,
#    ONESHOT_ROUNDS rounds, alternating; each checked (every thread FIFO 50)
#    and reset to SCHED_OTHER (`rtlab tune undo --all`, `chrt -o -p 0`).
#    Then one round with SCALE_MANY processes: how each tool's cost grows.
# bench/tune_compare.py reads the runs and writes
#   bench/results/tune-vs-chrt.md    settings + tables + notes
# The per-run JSONs and logs live in a temporary directory that is removed
# on exit (set KEEP_RAW=DIR to copy them, with a summary JSON, to DIR).
# rtlab's change record goes to $TMP/state (RTLAB_STATE_DIR): the user's
# record is never touched, and `rtlab tune undo --all` runs after every
# rtlab run and on exit. Every throwaway process, watcher and loop is
# stopped on exit (normal, error or signal), and the cgroups are removed.
#
# Needs root (SCHED_FIFO for other processes, the process-event connector);
# without it, it prints why and exits 0. Installs tuna (Debian package) when
# it is missing, and goes on without it if it cannot be installed. TuneD is
# not compared (it needs its daemon and D-Bus). Builds rtlab in release
# mode. Exit code 0 when the runs and the report were done, non-zero only
# when something failed.
#
# Settings (environment variables):
#   ROUNDS=3            section 1 rounds (each contender once per round)
#   RESTARTS=10         restarts per contender and round (30 in all by default)
#   OBSERVE_US=200      the observer's polling step (its resolution)
#   TIMEOUT_MS=3000     a restart not promoted by then counts as not promoted
#   COST_ROUNDS=2       section 2 rounds
#   IDLE_S=15           section 2 idle window, seconds
#   STORM=2000          section 2 fork storm: /bin/true processes started one after another
#   MANY=100            section 3: processes promoted at once
#   ONESHOT_ROUNDS=5    section 3 rounds
#   SCALE_MANY=400      section 3, once more: one round with this many processes
#                       (how each tool's cost grows; 0 = skip)
#   PRIO=50             the SCHED_FIFO priority every tool gives
#   SETTLE=1            seconds of pause before each run (and after a watcher is ready)
#   WAIT_IDLE=0         wait up to this many seconds for cargo/rustc to finish
#   WAIT_RT=30          wait up to this many seconds for other real-time programs to end
#   KEEP_RAW=           directory to keep the raw JSONs/logs in
#   RESULTS_DIR=bench/results  where the .md goes
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
NAME=tune-vs-chrt
# shellcheck source=bench/lib.sh
source "$SCRIPT_DIR/lib.sh"

ROUNDS=${ROUNDS:-3}
RESTARTS=${RESTARTS:-10}
OBSERVE_US=${OBSERVE_US:-200}
TIMEOUT_MS=${TIMEOUT_MS:-3000}
COST_ROUNDS=${COST_ROUNDS:-2}
IDLE_S=${IDLE_S:-15}
STORM=${STORM:-2000}
MANY=${MANY:-100}
ONESHOT_ROUNDS=${ONESHOT_ROUNDS:-5}
SCALE_MANY=${SCALE_MANY:-400}
PRIO=${PRIO:-50}
SETTLE=${SETTLE:-1}
WAIT_IDLE=${WAIT_IDLE:-0}
WAIT_RT=${WAIT_RT:-30}
KEEP_RAW=${KEEP_RAW:-}
RESULTS_DIR=${RESULTS_DIR:-$SCRIPT_DIR/results}
# Fixed by the comparison itself (the brief's commands): a 500 ms poll for
# rtlab --poll and for the chrt loop, random pauses of 100-600 ms between
# restarts.
POLL_MS=500
PAUSE_MIN_MS=100
PAUSE_MAX_MS=600

# ---------------------------------------------------------------- settings
require_whole_numbers ROUNDS RESTARTS OBSERVE_US TIMEOUT_MS COST_ROUNDS IDLE_S STORM MANY \
    ONESHOT_ROUNDS SCALE_MANY PRIO SETTLE WAIT_IDLE WAIT_RT
(( ROUNDS >= 1 && RESTARTS >= 1 )) || die "ROUNDS and RESTARTS must be at least 1"
(( COST_ROUNDS >= 1 && ONESHOT_ROUNDS >= 1 )) || die "COST_ROUNDS and ONESHOT_ROUNDS must be at least 1"
(( OBSERVE_US >= 10 )) || die "OBSERVE_US must be at least 10"
(( TIMEOUT_MS >= 2 * POLL_MS )) || die "TIMEOUT_MS must be at least $(( 2 * POLL_MS )) (two poll periods)"
(( IDLE_S >= 1 && STORM >= 1 )) || die "IDLE_S and STORM must be at least 1"
(( MANY >= 1 && MANY <= 2000 )) || die "MANY must be 1-2000"
(( SCALE_MANY <= 2000 )) || die "SCALE_MANY must be 0-2000"
(( SETTLE >= 1 )) || die "SETTLE must be at least 1"
(( PRIO >= 1 && PRIO <= 98 )) || die "PRIO=$PRIO: expected 1-98 (rtlab refuses 99 without --allow-99)"
(( ROUNDS * RESTARTS >= 20 )) || log "warning: $(( ROUNDS * RESTARTS )) restarts per contender; 20 or more are recommended for a p95"

# ---------------------------------------------------------------- root
skip_unless_root_with_fifo "it promotes other processes to SCHED_FIFO $PRIO and listens to the kernel's process events" promotion

# ---------------------------------------------------------------- tools
command -v python3 >/dev/null 2>&1 || apt_install python3
command -v chrt >/dev/null 2>&1 || apt_install util-linux
command -v pgrep >/dev/null 2>&1 || apt_install procps
command -v xargs >/dev/null 2>&1 || apt_install findutils
# tuna is optional: a failed install leaves it out (the report says so).
TUNA=$(command -v tuna 2>/dev/null || true)
TUNA_MISSING_WHY=
if [[ -z $TUNA ]]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        TUNA_MISSING_WHY="tuna is not installed and there is no apt-get to install it"
    else
        log "installing tuna with apt-get"
        if ! DEBIAN_FRONTEND=noninteractive apt-get install -y tuna >/dev/null 2>&1; then
            log "apt-get install tuna failed; running apt-get update and retrying"
            apt-get update >/dev/null 2>&1 || true
            DEBIAN_FRONTEND=noninteractive apt-get install -y tuna >/dev/null 2>&1 ||
                TUNA_MISSING_WHY="apt-get install -y tuna failed (apt-cache policy tuna: $(apt-cache policy tuna 2>/dev/null | sed -n 's/^ *Candidate: //p' | head -1))"
        fi
        TUNA=$(command -v tuna 2>/dev/null || true)
        [[ -n $TUNA || -n $TUNA_MISSING_WHY ]] || TUNA_MISSING_WHY="tuna was installed but is not on PATH"
    fi
    [[ -z $TUNA_MISSING_WHY ]] || log "warning: $TUNA_MISSING_WHY; section 3 goes on without tuna"
fi
build_rtlab
CHRT_VERSION=$(chrt --version 2>/dev/null | head -1 || echo chrt)
PGREP_VERSION=$(pgrep --version 2>/dev/null | head -1 || echo pgrep)
TUNA_VERSION=
if [[ -n $TUNA ]]; then
    TUNA_VERSION="tuna $("$TUNA" --version 2>/dev/null | head -1 || echo '?')"
    pkg=$(dpkg-query -W -f='${Version}' tuna 2>/dev/null || true)
    TUNA_VERSION+="${pkg:+ (Debian tuna $pkg)}"
fi
PYTHON_VERSION=$(python3 --version 2>&1)

# ---------------------------------------------------------------- temp + traps
make_temp_dir
STATE=$TMP/state                      # rtlab's change record, never the user's
export RTLAB_STATE_DIR=$STATE
mkdir -p "$STATE" "$TMP/bin"
# Unique names (they carry this shell's pid): pgrep -x on them can only
# find this benchmark's own throwaway processes.
NAME_W=rtbw-$$                        # sections 1 and 2: restarted / kept promoted
NAME_M=rtbm-$$                        # section 3: the MANY processes
LINK_W=$TMP/bin/$NAME_W
LINK_M=$TMP/bin/$NAME_M
ln -s "$(readlink -f /bin/sleep)" "$LINK_W"
ln -s "$(readlink -f /bin/sleep)" "$LINK_M"
RULES=$TMP/rules.toml
cat >"$RULES" <<EOF
# written by bench/tune-vs-chrt.sh
[[rule]]
name = "bench"
match = "$NAME_W"
exact = true
policy = "fifo"
priority = $PRIO
EOF
chmod 0644 "$RULES"

THROWAWAY=()                          # pids of sleeps this shell started
CGROUPS=()                            # cgroup directories to remove
kill_throwaways() {
    local pid n
    if (( ${#THROWAWAY[@]} )); then
        kill -KILL "${THROWAWAY[@]}" 2>/dev/null || true
        for pid in "${THROWAWAY[@]}"; do wait "$pid" 2>/dev/null || true; done
        THROWAWAY=()
    fi
    # The probe's children (it kills them itself; this is the safety net).
    for n in "$NAME_W" "$NAME_M"; do
        pgrep -x "$n" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    done
}
bench_cleanup() {
    local rc=$? cg
    set +e
    trap - INT TERM HUP
    [[ -z ${SERVER:-} ]] || stop_server TERM 2 || true
    kill_throwaways
    if [[ -n ${RTLAB:-} && -d $STATE ]]; then
        "$RTLAB" tune undo --all >>"$TMP/undo-at-exit.log" 2>&1 ||
            log "warning: rtlab tune undo --all failed at exit (see undo-at-exit.log)"
    fi
    for cg in "${CGROUPS[@]}"; do cg_remove "$cg"; done
    (exit "$rc")
    cleanup
}
trap bench_cleanup EXIT

# ---------------------------------------------------------------- cgroups
# A cgroup per watcher run counts the CPU time of the watcher and of every
# process it starts (the shell loop's pgrep, xargs, chrt and sleep), even
# those that have exited: cgroup v1 cpuacct (cpuacct.usage, ns) where it is
# mounted, else cgroup v2 (cpu.stat usage_usec). Without either, CG_ROOT is
# empty and the figures come from /proc/PID/stat (utime+stime+cutime+cstime
# of the watcher: its own and its reaped children's).
CG_ROOT='' CG_KIND=''
if CG_ROOT=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpuacct(,|$)/ {print $2; exit}' /proc/self/mounts) && [[ -n $CG_ROOT ]]; then
    CG_KIND=v1-cpuacct
elif CG_ROOT=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts) && [[ -n $CG_ROOT ]]; then
    CG_KIND=v2
fi
if [[ -n $CG_ROOT ]]; then
    if mkdir "$CG_ROOT/$NAME-$$-probe" 2>/dev/null; then
        rmdir "$CG_ROOT/$NAME-$$-probe" 2>/dev/null || true
    else
        log "warning: cannot create a cgroup under $CG_ROOT; CPU times come from /proc/PID/stat"
        CG_ROOT='' CG_KIND=''
    fi
fi
CG_KIND=${CG_KIND:-proc-stat}
cg_create() {  # LABEL -> prints the cgroup directory (empty without cgroups)
    [[ -n $CG_ROOT ]] || { echo; return 0; }
    local dir=$CG_ROOT/$NAME-$$-$1
    mkdir "$dir" || die "cannot create cgroup $dir"
    echo "$dir"
}
cg_remove() {  # DIR
    local tries
    [[ -n $1 && -d $1 ]] || return 0
    for (( tries = 0; tries < 20; tries++ )); do
        rmdir "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    log "warning: could not remove cgroup $1 (tasks: $(paste -sd' ' - <"$1/cgroup.procs" 2>/dev/null))"
}

# ---------------------------------------------------------------- the probe
# One python helper (stdlib only) for the three measurements:
#   restarts  start LINK COUNT times, observe each until SCHED_FIFO, kill it
#   window    section 2: CPU of a watcher over an idle window and a fork storm
#   oneshot   section 3: check, run and time one promotion command, check, reset
PROBE=$TMP/tune_probe.py
cat >"$PROBE" <<'PYEOF'
import argparse, json, os, random, resource, signal, subprocess, sys, time

CLK_TCK = os.sysconf("SC_CLK_TCK")
CHILD = [None]


def on_term(signum, frame):
    if CHILD[0]:
        try:
            os.kill(CHILD[0], signal.SIGKILL)
            os.waitpid(CHILD[0], 0)
        except OSError:
            pass
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)


def forks_since_boot():
    """The `processes` line of /proc/stat: forks (and clones) since boot."""
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("processes "):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def io_stall_us():
    """/proc/pressure/io: microseconds since boot in which some task (`some`)
    or every task (`full`) waited for I/O; None without PSI."""
    out = {"some": None, "full": None}
    try:
        with open("/proc/pressure/io") as f:
            for line in f:
                kind, *fields = line.split()
                for field in fields:
                    if field.startswith("total="):
                        out[kind] = int(field[6:])
    except (OSError, ValueError):
        pass
    return out


def cpu_ns(pid, cgroup, kind):
    """CPU time so far of the watcher: its cgroup (every process in it, alive
    or exited) and /proc/PID/stat (utime+stime+cutime+cstime)."""
    out = {"cgroup_ns": None, "stat_ns": None, "forks": forks_since_boot()}
    if cgroup:
        try:
            if kind == "v1-cpuacct":
                with open(os.path.join(cgroup, "cpuacct.usage")) as f:
                    out["cgroup_ns"] = int(f.read())
            else:
                with open(os.path.join(cgroup, "cpu.stat")) as f:
                    for line in f:
                        k, v = line.split()
                        if k == "usage_usec":
                            out["cgroup_ns"] = int(v) * 1000
        except OSError:
            pass
    if pid:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            # fields[0] is field 3 (state): utime..cstime are fields 14-17.
            ticks = sum(int(x) for x in fields[11:15])
            out["stat_ns"] = ticks * 1_000_000_000 // CLK_TCK
        except OSError:
            pass
    return out


def starttime_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def restarts(a):
    rng = random.Random(a.seed)
    pauses = [rng.uniform(a.pause_min_ms, a.pause_max_ms) / 1000 for _ in range(a.count)]
    step = a.observe_us / 1e6
    timeout_ns = a.timeout_ms * 1_000_000
    env = dict(os.environ)
    samples = []
    cpu0 = cpu_ns(a.pid, a.cgroup, a.cgroup_kind)
    t_begin = time.monotonic_ns()
    for i in range(a.count):
        time.sleep(pauses[i])
        io0 = io_stall_us()
        t0 = time.monotonic_ns()
        pid = os.posix_spawn(a.link, [a.link, "3600"], env)
        t_spawned = time.monotonic_ns()
        CHILD[0] = pid
        checks, policy, seen, last = 0, None, None, t_spawned
        steps = []
        while True:
            try:
                policy = os.sched_getscheduler(pid)
            except OSError:
                policy = None
            now = time.monotonic_ns()
            checks += 1
            steps.append(now - last)
            last = now
            if policy == os.SCHED_FIFO:
                seen = now
                break
            if now - t0 > timeout_ns:
                break
            time.sleep(step)
        io1 = io_stall_us()
        prio = None
        if seen is not None:
            try:
                prio = os.sched_getparam(pid).sched_priority
            except OSError:
                pass
        start_ticks = starttime_ticks(pid)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        CHILD[0] = None
        steps.sort()
        samples.append({
            "i": i, "pid": pid, "pause_s": round(pauses[i], 6),
            "spawn_ns": t_spawned - t0,
            "promoted": seen is not None,
            "latency_ns": None if seen is None else seen - t0,
            "priority": prio, "checks": checks,
            "observe_step_median_ns": steps[len(steps) // 2] if steps else None,
            "starttime_ticks": start_ticks,
            # I/O stall on the machine while this start waited (PSI, us).
            "io_some_us": None if io0["some"] is None or io1["some"] is None
            else io1["some"] - io0["some"],
        })
    t_end = time.monotonic_ns()
    cpu1 = cpu_ns(a.pid, a.cgroup, a.cgroup_kind)
    return {"kind": "restarts", "count": a.count, "observe_us": a.observe_us,
            "timeout_ms": a.timeout_ms, "elapsed_ns": t_end - t_begin,
            "cpu_before": cpu0, "cpu_after": cpu1, "samples": samples}


def window(a):
    env = dict(os.environ)
    marks = []
    t0 = time.monotonic_ns()
    marks.append(("start", t0, cpu_ns(a.pid, a.cgroup, a.cgroup_kind)))
    time.sleep(a.idle_s)
    t1 = time.monotonic_ns()
    marks.append(("idle_end", t1, cpu_ns(a.pid, a.cgroup, a.cgroup_kind)))
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(a.storm):
        pid = os.posix_spawn("/bin/true", ["/bin/true"], env)
        os.waitpid(pid, 0)
    t2 = time.monotonic_ns()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    marks.append(("storm_end", t2, cpu_ns(a.pid, a.cgroup, a.cgroup_kind)))
    time.sleep(a.tail_s)
    t3 = time.monotonic_ns()
    marks.append(("tail_end", t3, cpu_ns(a.pid, a.cgroup, a.cgroup_kind)))
    return {"kind": "window", "idle_s": a.idle_s, "storm": a.storm, "tail_s": a.tail_s,
            "marks": [{"mark": m, "t_ns": t, **c} for m, t, c in marks],
            "storm_wall_ns": t2 - t1,
            "storm_children_cpu_ns": int(((r1.ru_utime - r0.ru_utime) +
                                          (r1.ru_stime - r0.ru_stime)) * 1e9)}


def sched_state(name, prio):
    """Every thread of every process named `name`: how many, and how many
    are SCHED_FIFO at `prio` / SCHED_OTHER."""
    procs = threads = fifo = other = 0
    wrong = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as f:
                if f.read().rstrip("\n") != name:
                    continue
            tids = os.listdir(f"/proc/{entry}/task")
        except OSError:
            continue
        procs += 1
        for tid in tids:
            try:
                pol = os.sched_getscheduler(int(tid))
                p = os.sched_getparam(int(tid)).sched_priority
            except OSError:
                continue
            threads += 1
            if pol == os.SCHED_FIFO and p == prio:
                fifo += 1
            elif pol == os.SCHED_OTHER:
                other += 1
            elif len(wrong) < 5:
                wrong.append({"tid": int(tid), "policy": pol, "priority": p})
    return {"processes": procs, "threads": threads, "fifo_at_prio": fifo,
            "other": other, "wrong": wrong}


def timed_shell(cmd, log):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic_ns()
    with open(log, "a") as out:
        out.write(f"$ {cmd}\n")
        out.flush()
        rc = subprocess.call(["bash", "-c", cmd], stdout=out, stderr=out)
    t1 = time.monotonic_ns()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"rc": rc, "wall_ns": t1 - t0,
            "cpu_ns": int(((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) * 1e9),
            "user_ns": int((r1.ru_utime - r0.ru_utime) * 1e9),
            "sys_ns": int((r1.ru_stime - r0.ru_stime) * 1e9)}


def oneshot(a):
    before = sched_state(a.name, a.prio)
    if before["processes"] != a.count or before["other"] != before["threads"]:
        raise SystemExit(f"oneshot: before the run expected {a.count} processes all at "
                         f"SCHED_OTHER, found {json.dumps(before)}")
    run = timed_shell(a.cmd, a.log)
    after = sched_state(a.name, a.prio)
    reset = timed_shell(a.reset, a.log)
    after_reset = sched_state(a.name, a.prio)
    res = {"kind": "oneshot", "count": a.count, "priority": a.prio, "cmd": a.cmd,
           "reset_cmd": a.reset, "before": before, "run": run, "after": after,
           "reset": reset, "after_reset": after_reset}
    # A command that failed, or a reset that did not restore SCHED_OTHER,
    # stops the benchmark (the next run would start from the wrong state).
    if run["rc"] != 0 or reset["rc"] != 0 or after_reset["other"] != after_reset["threads"]:
        with open(a.out + ".tmp", "w") as f:
            json.dump(res, f, indent=1)
        os.replace(a.out + ".tmp", a.out)
        raise SystemExit(f"oneshot: the command exited {run['rc']}, the reset {reset['rc']}; "
                         f"after the reset {after_reset['other']} of {after_reset['threads']} "
                         f"threads at SCHED_OTHER (output in the log above)")
    return res


def fsync_probe(a):
    """What one durable replace of a file costs here: write a temp file,
    fsync it, rename it over the target, fsync the directory (what rtlab does
    for each write of its change record, twice per change)."""
    payload = b"x" * a.bytes
    target = os.path.join(a.dir, "fsync-probe")
    dfd = os.open(a.dir, os.O_RDONLY)
    times = []
    try:
        for i in range(a.count):
            tmp = os.path.join(a.dir, f".fsync-probe.{i}")
            t0 = time.monotonic_ns()
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, payload)
            os.fsync(fd)
            os.close(fd)
            os.replace(tmp, target)
            os.fsync(dfd)
            times.append(time.monotonic_ns() - t0)
    finally:
        os.close(dfd)
        try:
            os.unlink(target)
        except OSError:
            pass
    return {"kind": "fsync", "bytes": a.bytes, "count": a.count, "times_ns": times}


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("restarts")
    r.add_argument("--link", required=True)
    r.add_argument("--count", type=int, required=True)
    r.add_argument("--pause-min-ms", type=float, required=True)
    r.add_argument("--pause-max-ms", type=float, required=True)
    r.add_argument("--observe-us", type=int, required=True)
    r.add_argument("--timeout-ms", type=int, required=True)
    r.add_argument("--seed", type=int, required=True)
    w = sub.add_parser("window")
    w.add_argument("--idle-s", type=float, required=True)
    w.add_argument("--storm", type=int, required=True)
    w.add_argument("--tail-s", type=float, default=1.0)
    for p in (r, w):
        p.add_argument("--pid", type=int, default=0)
        p.add_argument("--cgroup", default="")
        p.add_argument("--cgroup-kind", default="")
    o = sub.add_parser("oneshot")
    o.add_argument("--name", required=True)
    o.add_argument("--count", type=int, required=True)
    o.add_argument("--prio", type=int, required=True)
    o.add_argument("--cmd", required=True)
    o.add_argument("--reset", required=True)
    o.add_argument("--log", required=True)
    y = sub.add_parser("fsync")
    y.add_argument("--dir", required=True)
    y.add_argument("--bytes", type=int, required=True)
    y.add_argument("--count", type=int, required=True)
    for p in (r, w, o, y):
        p.add_argument("--out", required=True)
    a = ap.parse_args()
    res = {"restarts": restarts, "window": window, "oneshot": oneshot,
           "fsync": fsync_probe}[a.what](a)
    with open(a.out + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
    os.replace(a.out + ".tmp", a.out)


if __name__ == "__main__":
    main()
PYEOF

# ---------------------------------------------------------------- commands
# The contenders of sections 1 and 2 (argv without the cgroup wrapper).
LOOP_SCRIPT="while :; do pgrep -x $NAME_W | xargs -r -L1 chrt -f -p $PRIO; sleep 0.$(( POLL_MS / 100 )); done"
(( POLL_MS % 100 == 0 && POLL_MS < 1000 )) || die "POLL_MS must be 100-900 in steps of 100"
watcher_argv() {  # TOOL -> WATCHER=(argv)
    case $1 in
        rtlab-events) WATCHER=("$RTLAB" tune watch --rules "$RULES" --json) ;;
        rtlab-poll)   WATCHER=("$RTLAB" tune watch --rules "$RULES" --poll --interval "${POLL_MS}ms" --json) ;;
        # SIGTERM: exit after the current sleep (no pgrep/chrt left behind).
        chrt-loop)    WATCHER=(bash -c "trap 'exit 0' TERM; echo ready; $LOOP_SCRIPT") ;;
        *) die "unknown watcher $1" ;;
    esac
}
# Starts TOOL's watcher in cgroup CG (when given) with its output in
# OUT/ERR; returns when it is ready (SERVER = its pid).
start_watcher() {  # TOOL CG OUT ERR
    watcher_argv "$1"
    if [[ -n $2 ]]; then
        # shellcheck disable=SC2016  # $$, $0 and $@ are the inner shell's
        CMD=(bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$2" "${WATCHER[@]}")
    else
        CMD=("${WATCHER[@]}")
    fi
    start_server "$3" "$4" '"event":"started"|^ready$' 10
}

# One-shot commands of section 3 (run by the probe under bash -c). rtlab
# asks for --yes when a pattern matches more than 16 processes (in the
# versions that have the flag).
SET_YES=
if "$RTLAB" tune set --help 2>/dev/null | grep -q -- '--yes'; then SET_YES=" --yes"; fi
ONESHOT_TOOLS=(rtlab chrt)
[[ -z $TUNA ]] || ONESHOT_TOOLS+=(tuna)
oneshot_cmd() {  # TOOL -> ONESHOT_RUN, ONESHOT_RESET
    local chrt_reset="pgrep -x $NAME_M | xargs -L1 chrt -o -p 0"
    case $1 in
        rtlab) ONESHOT_RUN="$(quote "$RTLAB") tune set $NAME_M --exact --policy fifo --priority $PRIO$SET_YES"
               ONESHOT_RESET="$(quote "$RTLAB") tune undo --all" ;;
        chrt)  ONESHOT_RUN="pgrep -x $NAME_M | xargs -L1 chrt -f -p $PRIO"
               ONESHOT_RESET=$chrt_reset ;;
        tuna)  ONESHOT_RUN="$(quote "$TUNA") --threads=$NAME_M --affect_children --priority=FIFO:$PRIO"
               ONESHOT_RESET=$chrt_reset ;;
    esac
}

start_manifest pair seq tool section data log

# ---------------------------------------------------------------- quiet
wait_for_idle_builds "timings"
wait_for_no_rt_competitors "$WAIT_RT"
RT_AT_START=$RT_COMPETITORS
# Other real-time programs are sampled before every run, not during it (a
# sampler that starts ps twice a second would wake the event watcher).
RT_SEEN_FILE=$TMP/rt-seen.txt
: >"$RT_SEEN_FILE"
sample_rt() { rt_competitors >>"$RT_SEEN_FILE" || true; }

# A quick check first, so an rtlab that does not work fails in seconds.
log "checking that rtlab tune set/undo and tune watch work"
"$LINK_W" 3600 & THROWAWAY+=($!)
sleep 0.1
"$RTLAB" tune set "$NAME_W" --exact --policy fifo --priority "$PRIO" >"$TMP/preflight.log" 2>&1 ||
    { sed 's/^/    /' "$TMP/preflight.log" >&2; die "rtlab tune set does not work: nothing to compare"; }
"$RTLAB" tune undo --all >>"$TMP/preflight.log" 2>&1 ||
    { sed 's/^/    /' "$TMP/preflight.log" >&2; die "rtlab tune undo --all does not work"; }
[[ $(chrt -p "${THROWAWAY[0]}" | head -1) == *SCHED_OTHER* ]] || die "rtlab tune undo --all did not restore SCHED_OTHER"
kill_throwaways
start_watcher rtlab-events "" "$TMP/preflight-watch.out" "$TMP/preflight-watch.err"
grep -q '"mode":"process events"' "$TMP/preflight-watch.out" ||
    log "warning: rtlab tune watch does not use process events here: $(head -2 "$TMP/preflight-watch.out")"
stop_server TERM 2
"$RTLAB" tune undo --all >>"$TMP/preflight.log" 2>&1 || true

SEQ=0
rotate() {  # ROUND ITEM... -> ROTATED (the items, rotated by ROUND-1)
    local n=$(( $# - 1 )) r=$1 i
    shift
    ROTATED=()
    for (( i = 0; i < n; i++ )); do ROTATED+=("${@:$(( (i + r - 1) % n + 1 )):1}"); done
}

after_rtlab_run() {  # LOG: take back whatever rtlab recorded (the threads are gone: dropped)
    "$RTLAB" tune undo --all >>"$1" 2>&1 || log "warning: rtlab tune undo --all failed (see ${1##*/})"
}

per_restart_s=$(( (PAUSE_MIN_MS + PAUSE_MAX_MS) / 2 + POLL_MS / 2 ))
log "about $(( ROUNDS * 3 * (RESTARTS * per_restart_s / 1000 + SETTLE + 2) + COST_ROUNDS * (3 * (IDLE_S + SETTLE + 6) + 6) + (ONESHOT_ROUNDS + 1) * ${#ONESHOT_TOOLS[@]} * (SETTLE + 2) ))s of runs"

# ---------------------------------------------------------------- 1. restarts
WATCH_TOOLS=(rtlab-events rtlab-poll chrt-loop)
TOTAL1=$(( ROUNDS * ${#WATCH_TOOLS[@]} ))
n1=0
for (( round = 1; round <= ROUNDS; round++ )); do
    rotate "$round" "${WATCH_TOOLS[@]}"
    seed=$(( 1000 + round ))   # the same pauses for every contender of a round
    for tool in "${ROTATED[@]}"; do
        SEQ=$(( SEQ + 1 )); n1=$(( n1 + 1 ))
        data=$TMP/run$SEQ.json logf=$TMP/run$SEQ.log
        cg=$(cg_create "run$SEQ"); [[ -z $cg ]] || CGROUPS+=("$cg")
        sample_rt
        settle_and_sample
        start_watcher "$tool" "$cg" "$TMP/run$SEQ-watch.out" "$TMP/run$SEQ-watch.err"
        sleep "$SETTLE"
        log "1. restarts, run $n1/$TOTAL1 (round $round): $tool, $RESTARTS restarts of $NAME_W (load $RUN_LOAD)"
        CMD=(python3 "$PROBE" restarts --link "$LINK_W" --count "$RESTARTS" --pause-min-ms "$PAUSE_MIN_MS"
             --pause-max-ms "$PAUSE_MAX_MS" --observe-us "$OBSERVE_US" --timeout-ms "$TIMEOUT_MS"
             --seed "$seed" --pid "$SERVER" --cgroup "$cg" --cgroup-kind "$CG_KIND" --out "$data")
        run_timed "$logf"
        stop_server TERM 2
        [[ -z $cg ]] || cg_remove "$cg"
        check_run_output "the restart probe" "$logf" "$data"
        [[ $tool != rtlab-* ]] || after_rtlab_run "$logf"
        append_manifest_row "$round" "$SEQ" "$tool" restarts "${data##*/}" "${logf##*/}"
    done
done

# ---------------------------------------------------------------- 2. cost
COST_TOOLS=(none rtlab-events rtlab-poll chrt-loop)
TOTAL2=$(( COST_ROUNDS * ${#COST_TOOLS[@]} ))
n2=0
for (( round = 1; round <= COST_ROUNDS; round++ )); do
    rotate "$round" "${COST_TOOLS[@]}"
    for tool in "${ROTATED[@]}"; do
        SEQ=$(( SEQ + 1 )); n2=$(( n2 + 1 ))
        data=$TMP/run$SEQ.json logf=$TMP/run$SEQ.log
        # One matching process for the watcher to keep promoted.
        "$LINK_W" 3600 & THROWAWAY+=($!)
        sample_rt
        settle_and_sample
        if [[ $tool == none ]]; then
            log "2. cost, run $n2/$TOTAL2 (round $round): no watcher, storm of $STORM /bin/true (load $RUN_LOAD)"
            CMD=(python3 "$PROBE" window --idle-s 0 --storm "$STORM" --out "$data")
        else
            cg=$(cg_create "run$SEQ"); [[ -z $cg ]] || CGROUPS+=("$cg")
            start_watcher "$tool" "$cg" "$TMP/run$SEQ-watch.out" "$TMP/run$SEQ-watch.err"
            sleep "$SETTLE"
            log "2. cost, run $n2/$TOTAL2 (round $round): $tool, ${IDLE_S}s idle + storm of $STORM /bin/true (load $RUN_LOAD)"
            CMD=(python3 "$PROBE" window --idle-s "$IDLE_S" --storm "$STORM" --pid "$SERVER"
                 --cgroup "$cg" --cgroup-kind "$CG_KIND" --out "$data")
        fi
        run_timed "$logf"
        if [[ $tool != none ]]; then
            # Was the kept process promoted? (it should be, by every watcher)
            chrt -p "${THROWAWAY[-1]}" >>"$logf" 2>&1 || true
            stop_server TERM 2
            [[ -z $cg ]] || cg_remove "$cg"
        fi
        kill_throwaways
        check_run_output "the cost probe" "$logf" "$data"
        [[ $tool != rtlab-* ]] || after_rtlab_run "$logf"
        append_manifest_row "$round" "$SEQ" "$tool" cost "${data##*/}" "${logf##*/}"
    done
done

# ---------------------------------------------------------------- 3. one-shot
log "3. one-shot: starting $MANY processes named $NAME_M"
for (( i = 0; i < MANY; i++ )); do "$LINK_M" 3600 & THROWAWAY+=($!); done
sleep 0.5
TOTAL3=$(( ONESHOT_ROUNDS * ${#ONESHOT_TOOLS[@]} ))
n3=0
for (( round = 1; round <= ONESHOT_ROUNDS; round++ )); do
    rotate "$round" "${ONESHOT_TOOLS[@]}"
    for tool in "${ROTATED[@]}"; do
        SEQ=$(( SEQ + 1 )); n3=$(( n3 + 1 ))
        data=$TMP/run$SEQ.json logf=$TMP/run$SEQ.log
        oneshot_cmd "$tool"
        sample_rt
        settle_and_sample
        log "3. one-shot, run $n3/$TOTAL3 (round $round): $tool promotes $MANY processes (load $RUN_LOAD)"
        CMD=(python3 "$PROBE" oneshot --name "$NAME_M" --count "$MANY" --prio "$PRIO"
             --cmd "$ONESHOT_RUN" --reset "$ONESHOT_RESET" --log "$logf" --out "$data")
        run_timed "$TMP/run$SEQ-probe.log"
        cat "$TMP/run$SEQ-probe.log" >>"$logf"
        check_run_output "the one-shot probe ($tool)" "$logf" "$data"
        append_manifest_row "$round" "$SEQ" "$tool" oneshot "${data##*/}" "${logf##*/}"
    done
done
kill_throwaways

# How the one-shot cost grows: one more round with SCALE_MANY processes.
if (( SCALE_MANY > 0 )); then
    log "3b. one-shot at scale: starting $SCALE_MANY processes named $NAME_M"
    for (( i = 0; i < SCALE_MANY; i++ )); do "$LINK_M" 3600 & THROWAWAY+=($!); done
    sleep 1
    for tool in "${ONESHOT_TOOLS[@]}"; do
        SEQ=$(( SEQ + 1 ))
        data=$TMP/run$SEQ.json logf=$TMP/run$SEQ.log
        oneshot_cmd "$tool"
        sample_rt
        settle_and_sample
        log "3b. one-shot at scale: $tool promotes $SCALE_MANY processes (load $RUN_LOAD)"
        CMD=(python3 "$PROBE" oneshot --name "$NAME_M" --count "$SCALE_MANY" --prio "$PRIO"
             --cmd "$ONESHOT_RUN" --reset "$ONESHOT_RESET" --log "$logf" --out "$data")
        run_timed "$TMP/run$SEQ-probe.log"
        cat "$TMP/run$SEQ-probe.log" >>"$logf"
        check_run_output "the one-shot probe ($tool, $SCALE_MANY processes)" "$logf" "$data"
        append_manifest_row 1 "$SEQ" "$tool" scale "${data##*/}" "${logf##*/}"
    done
    kill_throwaways
fi
"$RTLAB" tune undo --all >"$TMP/undo-final.log" 2>&1 || log "warning: rtlab tune undo --all failed at the end"

# What a durable write of rtlab's change record costs on its filesystem (a
# record of MANY entries is ~45 kB; the probe writes FSYNC_BYTES).
FSYNC_BYTES=20000 FSYNC_COUNT=100
log "timing $FSYNC_COUNT durable replaces of a ${FSYNC_BYTES}-byte file next to rtlab's change record"
mkdir -p "$TMP/fsync"
python3 "$PROBE" fsync --dir "$TMP/fsync" --bytes "$FSYNC_BYTES" --count "$FSYNC_COUNT" \
    --out "$TMP/fsync.json" || die "the fsync probe failed"
# Our own promoted throwaways are not competitors.
RT_SEEN=$(tr ' ' '\n' <"$RT_SEEN_FILE" | sort -u | grep -v -e ":$NAME_W:" -e ":$NAME_M:" | sed '/^$/d' | paste -sd' ' - || true)

# ---------------------------------------------------------------- report
export_host_environment
export_cpu_environment 0
export BENCH_RTLAB_VERSION=$RTLAB_VERSION BENCH_CHRT_VERSION=$CHRT_VERSION
export BENCH_PGREP_VERSION=$PGREP_VERSION BENCH_TUNA_VERSION=$TUNA_VERSION
export BENCH_TUNA_MISSING_WHY=$TUNA_MISSING_WHY BENCH_PYTHON_VERSION=$PYTHON_VERSION
export BENCH_CG_KIND=$CG_KIND BENCH_RT_AT_START=$RT_AT_START BENCH_RT_SEEN=$RT_SEEN
BENCH_STATE_FS=$(df -PT "$STATE" 2>/dev/null | awk 'NR == 2 {print $2 " (" $1 ")"}')
threads=(/proc/[0-9]*/task/[0-9]*)
BENCH_THREADS=${#threads[@]}
BENCH_CLK_TCK=$(getconf CLK_TCK)
export BENCH_STATE_FS BENCH_THREADS BENCH_CLK_TCK
for t in rtlab-events rtlab-poll chrt-loop; do
    watcher_argv "$t"
    v=BENCH_CMD_${t//-/_}
    if [[ $t == chrt-loop ]]; then
        export "$v=$LOOP_SCRIPT"
    else
        export "$v=$(cmd_template "${WATCHER[@]}")"
    fi
done
for t in rtlab chrt tuna; do
    [[ $t != tuna || -n $TUNA ]] || continue
    oneshot_cmd "$t"
    export "BENCH_ONESHOT_${t}=$ONESHOT_RUN" "BENCH_RESET_${t}=$ONESHOT_RESET"
done
export BENCH_NAME_W=$NAME_W BENCH_NAME_M=$NAME_M
export ROUNDS RESTARTS OBSERVE_US TIMEOUT_MS COST_ROUNDS IDLE_S STORM MANY ONESHOT_ROUNDS SCALE_MANY PRIO SETTLE
export POLL_MS PAUSE_MIN_MS PAUSE_MAX_MS
python3 - "$TMP/meta.json" "$SCRIPT_DIR" <<'EOF'
import os, sys
sys.path.insert(0, sys.argv[2])
from benchlib import write_meta
e = os.environ
ints = lambda *keys: {k.lower(): int(e[k]) for k in keys}
commands = {"rtlab-events": e["BENCH_CMD_rtlab_events"], "rtlab-poll": e["BENCH_CMD_rtlab_poll"],
            "chrt-loop": e["BENCH_CMD_chrt_loop"]}
for t in ("rtlab", "chrt", "tuna"):
    if e.get(f"BENCH_ONESHOT_{t}"):
        commands[f"oneshot-{t}"] = e[f"BENCH_ONESHOT_{t}"]
        commands[f"reset-{t}"] = e[f"BENCH_RESET_{t}"]
write_meta(
    sys.argv[1],
    versions={"rtlab": e["BENCH_RTLAB_VERSION"], "chrt": e["BENCH_CHRT_VERSION"],
              "pgrep": e["BENCH_PGREP_VERSION"], "tuna": e["BENCH_TUNA_VERSION"] or None,
              "python": e["BENCH_PYTHON_VERSION"]},
    config={**ints("ROUNDS", "RESTARTS", "OBSERVE_US", "TIMEOUT_MS", "COST_ROUNDS", "IDLE_S",
                   "STORM", "MANY", "ONESHOT_ROUNDS", "SCALE_MANY", "PRIO", "SETTLE", "POLL_MS",
                   "PAUSE_MIN_MS", "PAUSE_MAX_MS"),
            "policy": "SCHED_FIFO", "name_restarted": e["BENCH_NAME_W"],
            "name_many": e["BENCH_NAME_M"], "cpu_accounting": e["BENCH_CG_KIND"],
            "tuna_missing_why": e["BENCH_TUNA_MISSING_WHY"] or None,
            "order": "per round, the contenders in turn, the order rotated by one each round"},
    commands=commands,
    extra_environment={"cpuidle": e["BENCH_CPUIDLE"], "rt_bandwidth": e["BENCH_RT_BANDWIDTH"],
                       "state_fs": e["BENCH_STATE_FS"], "threads": int(e["BENCH_THREADS"]),
                       "clk_tck": int(e["BENCH_CLK_TCK"]),
                       "rt_programs_at_start": e["BENCH_RT_AT_START"],
                       "rt_programs_seen": e["BENCH_RT_SEEN"]},
)
EOF

mkdir -p "$RESULTS_DIR"
echo
echo "== rtlab tune vs pgrep|chrt and tuna: $(( ROUNDS * RESTARTS )) restarts per watcher, $COST_ROUNDS cost rounds, $MANY processes x $ONESHOT_ROUNDS one-shot rounds, FIFO $PRIO =="
python3 "$SCRIPT_DIR/tune_compare.py" --manifest "$MANIFEST" --meta "$TMP/meta.json" \
    --md "$RESULTS_DIR/$NAME.md" --json "$TMP/summary.json" ||
    die "the analysis failed (bench/tune_compare.py)"
echo
log "wrote $RESULTS_DIR/$NAME.md"
exit 0
