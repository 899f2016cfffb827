#!/usr/bin/env bash
# What bounds the p99 at half of saturation (docs/performance.md). For skydb `serve --embed`
# (tiered, sync) and then its anchor, redis-server `appendfsync always` on the same disk: a
# closed-loop skydb_loadgen run finds saturation; an open-loop run at half that rate gives the
# latency figures; the same open loop again runs while `perf sched record -a` watches 5 s of it
# (tracing slows a run, so only its waits are used). Prints `perf sched latency` (how long each
# task waited, runnable, for a CPU) and every wait over 1 ms charged to what held that CPU
# most of the time (`perf sched timehist`): the vCPU idle, i.e. the host did not run it;
# kdamond or another kernel thread; or a process of the run, by name. Needs a quiet machine
# (refuses above load average 0.5 × cores unless --force); run as root (PostgreSQL runs as
# SKYDB_TEST_USER).
# Output: bench/results/sched-<ts>/{<arm>-closed,<arm>-half,<arm>-traced}.json,
# <arm>-latency.txt and summary.txt, for arm skydb and redis-always.
#
# The load is run_all.sh's 2,080-byte model: 1 in 10 interactions a cold read (--expire-ratio).
#
# Usage: bench/sched_latency.sh [--seconds 10] [--connections 64] [--expire-ratio 0.1] [--force]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=10
connections=64
expire_ratio=0.1
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --expire-ratio) expire_ratio="$2"; shift 2 ;;
    --force) force=1; shift ;;
    *) echo "sched_latency.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
build=$(cd "${BENCH_BUILD_DIR:-build}" && pwd)
skydb="$build/src/skydb"
loadgen="$build/bench/loadgen/skydb_loadgen"
user=${SKYDB_TEST_USER:-skydbtest}
cores=$(nproc)
load_start=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load_start" -v c="$cores" 'BEGIN{exit !(l > c * 0.5)}' && [ "$force" -eq 0 ]; then
  echo "refusing: load average $load_start on $cores cores; wait for a quiet machine or --force" >&2
  exit 3
fi
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out="bench/results/sched-$stamp"
[ "$force" -eq 1 ] && out="bench/results/sched-FORCED-$stamp"
mkdir -p "$out"
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src bench || echo -dirty)"
work=$(mktemp -d /tmp/skydb-sched-XXXXXX)
chmod 0755 "$work"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# measure ARM SOCKET PID STORE DURABILITY: a closed-loop run for saturation, an open-loop run at
# half of it (the latency figures), and the same open loop again while perf traces the
# scheduler (tracing every switch slows that run, so only its waits are used).
measure() {
  local arm=$1 sock=$2 pid=$3 store=$4 durability=$5 saturation half perf_pid
  for _ in $(seq 1200); do
    [ "$(redis-cli -s "$sock" PING 2>/dev/null)" = PONG ] && break
    sleep 0.1
  done
  run() {
    "$loadgen" --socket "$sock" --expect-store "$store" --expect-durability "$durability" \
      --connections "$connections" --warmup 2 --duration "$seconds" --commit "$commit" \
      --expire-ratio "$expire_ratio" --server-pid "$pid" "$@"
  }
  run >"$out/$arm-closed.json"
  saturation=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["result"]["interactions_per_s"])' "$out/$arm-closed.json")
  half=$(awk -v s="$saturation" 'BEGIN{printf "%.0f", s / 2}')
  run --rate "$half" >"$out/$arm-half.json"
  # perf watches from 4 s into the run (2 s warm-up + 2 s) for 5 s, inside the window.
  (sleep 4; perf sched record -a -o "$work/$arm.sched" -- sleep 5 >/dev/null 2>&1) &
  perf_pid=$!
  run --rate "$half" >"$out/$arm-traced.json"
  wait "$perf_pid"
  perf sched latency -i "$work/$arm.sched" --sort max 2>/dev/null >"$out/$arm-latency.txt" || true
  perf sched timehist -i "$work/$arm.sched" 2>/dev/null >"$work/$arm.timehist" || true
}

# The disk under both: the fsync probe the other benchmarks record (bench/embedded_daemon.py).
fsync_probe=$(python3 -c 'import sys; sys.path.insert(0, "bench")
from embedded_daemon import fsync_latency_us
print("fsync median %.0f us" % fsync_latency_us(sys.argv[1]))' "$work")
mkdir -p "$work/d" "$work/redis"
SKYDB_CONFIG="" SKYDB_HTTP_PORT=0 "$skydb" serve --embed --data-dir "$work/d" --user "$user" \
  >"$work/skydb.log" 2>&1 &
pids+=($!)
measure skydb "$work/d/run/skydb.sock" $! tiered sync
versions="$("$skydb" --version | head -1), PostgreSQL $(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["server_version"])' "$work/d/run/skydb.status.json"),\
 $(redis-server --version | cut -d' ' -f1-3)"
kill -TERM "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
pids=()  # stopped; its PID is not ours to signal again
# The anchor: redis-server with every write fsynced, on the same disk, same load.
redis-server --unixsocket "$work/redis/redis.sock" --port 0 --save '' --appendonly yes \
  --appendfsync always --dir "$work/redis" >"$work/redis.log" 2>&1 &
pids+=($!)
measure redis-always "$work/redis/redis.sock" $! redis always

python3 - "$out" "$commit" "$cores" "$load_start" "$(cut -d' ' -f1 /proc/loadavg)" "$work" \
  "$fsync_probe" "$versions" <<'PY' | tee "$out/summary.txt"
import json, platform, re, sys
out, commit, cores, l0, l1, work, fsync, versions = sys.argv[1:9]
print(f"commit {commit}, host {platform.node()}, kernel {platform.release()}, {cores} cores, "
      f"load average {l0} at start / {l1} at end; {fsync}; {versions}")

def kind_of(task):
    if task == "<idle>":
        return "vCPU idle (host)"
    if task.startswith("kdamond"):
        return "kdamond"
    if re.match(r"(kworker|ksoftirqd|rcu_|migration|kcompactd)", task):
        return "other kernel thread"
    return re.sub(r"\[.*", "", task)  # a task of the run, by process name

def long_waits(path):
    """timehist: time, [cpu], task, wait, scheduling delay, run time (ms), printed when a task
    leaves the CPU. A wait over 1 ms is charged to what ran longest on that CPU meanwhile."""
    recent, waits = {}, {}
    for line in open(path):
        f = line.split()
        if len(f) < 6 or not f[1].startswith("[") or not re.match(r"^[\d.]+$", f[5]):
            continue
        end, cpu, task = float(f[0]) * 1000, f[1], f[2]
        delay, run = float(f[4]), float(f[5])
        start = end - run
        if delay > 1.0:
            held = {}
            for s0, e0, t0 in recent.get(cpu, []):
                overlap = min(e0, start) - max(s0, start - delay)
                if overlap > 0:
                    held[kind_of(t0)] = held.get(kind_of(t0), 0) + overlap
            kind = max(held, key=held.get) if held else "?"
            n, worst = waits.get(kind, (0, 0.0))
            waits[kind] = (n + 1, max(worst, delay))
        recent.setdefault(cpu, []).append((start, end, task))
        del recent[cpu][:-200]
    return waits

for arm in ("skydb", "redis-always"):
    sat = json.load(open(f"{out}/{arm}-closed.json"))["result"]["interactions_per_s"]
    h = json.load(open(f"{out}/{arm}-half.json"))
    print(f"\n== {arm}: saturation {sat:,.0f} interactions/s (closed loop); open loop at "
          f"{sat / 2:,.0f}/s; half-load run valid: {h['valid']} {h.get('invalid_reasons') or ''}")
    r = h["result"] or {}
    for op in ("interaction", "get", "set"):
        if r:
            q = r[op]
            print(f"  {op:11} p50 {q['p50_us']/1000:.2f} ms  p99 {q['p99_us']/1000:.2f} ms  "
                  f"p99.9 {q['p999_us']/1000:.2f} ms  max {q['max_us']/1000:.2f} ms")
    t = (json.load(open(f"{out}/{arm}-traced.json"))["result"] or {}).get("set")
    if t:
        print(f"  traced run (perf on): set p99 {t['p99_us']/1000:.2f} ms")
    print("  scheduling delay while runnable (perf sched latency, 5 s of the traced run):")
    rows = []
    for line in open(f"{out}/{arm}-latency.txt"):
        m = re.match(r"\s*(\S.*?)\s*\|\s*([\d.]+) ms\s*\|\s*(\d+)\s*\|\s*avg:\s*([\d.]+) ms\s*\|\s*max:\s*([\d.]+) ms", line)
        if m:
            rows.append((m.group(1), float(m.group(2)), int(m.group(3)), float(m.group(4)), float(m.group(5))))
    for task, runtime, switches, avg, mx in sorted(rows, key=lambda x: -x[1])[:6]:
        print(f"    {task:30} runtime {runtime:8.1f} ms  switches {switches:7}  avg delay {avg:.3f} ms  max {mx:.3f} ms")
    print("  waits for a CPU over 1 ms, by what held that CPU most of the wait (perf sched timehist):")
    for kind, (n, worst) in sorted(long_waits(f"{work}/{arm}.timehist").items(), key=lambda x: -x[1][0]):
        print(f"    {kind:22} {n:5} waits, longest {worst:.3f} ms")
PY
