#!/usr/bin/env bash
# What bounds the interaction p99 at half of saturation (docs/performance.md): runs skydb
# `serve --embed` (tiered, sync), finds saturation with a closed-loop skydb_loadgen run, then
# runs the open loop at half that rate while `perf sched record -a` watches the middle of the
# window, and prints `perf sched latency` (how long each task waited, runnable, for a CPU)
# next to the run's latency percentiles. Needs a quiet machine (refuses above load average
# 0.5 × cores unless --force); run as root (PostgreSQL runs as SKYDB_TEST_USER).
# Output: bench/results/sched-<ts>/{closed.json,half.json,latency.txt,summary.txt}.
#
# Usage: bench/sched_latency.sh [--seconds 10] [--connections 64] [--force]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=10
connections=64
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
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
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/d"
SKYDB_CONFIG="" SKYDB_HTTP_PORT=0 "$skydb" serve --embed --data-dir "$work/d" --user "$user" \
  >"$work/skydb.log" 2>&1 &
pid=$!
sock="$work/d/run/skydb.sock"
for _ in $(seq 1200); do
  [ "$(redis-cli -s "$sock" PING 2>/dev/null)" = PONG ] && break
  sleep 0.1
done
run() {  # loadgen with common arguments plus "$@"
  "$loadgen" --socket "$sock" --expect-store tiered --expect-durability sync \
    --connections "$connections" --warmup 2 --duration "$seconds" --commit "$commit" \
    --server-pid "$pid" "$@"
}
run >"$out/closed.json"
saturation=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["result"]["interactions_per_s"])' "$out/closed.json")
half=$(awk -v s="$saturation" 'BEGIN{printf "%.0f", s / 2}')
# perf watches from 4 s into the run (2 s warm-up + 2 s) for 5 s, inside the window.
(sleep 4; perf sched record -a -o "$work/sched.data" -- sleep 5 >/dev/null 2>&1) &
perf_pid=$!
run --rate "$half" >"$out/half.json"
wait "$perf_pid"
perf sched latency -i "$work/sched.data" --sort max 2>/dev/null >"$out/latency.txt" || true

python3 - "$out" "$commit" "$cores" "$load_start" "$(cut -d' ' -f1 /proc/loadavg)" "$half" \
  "$saturation" <<'PY' | tee "$out/summary.txt"
import json, platform, re, sys
out, commit, cores, l0, l1, half, sat = sys.argv[1:]
h = json.load(open(f"{out}/half.json"))
r = h["result"] or {}
print(f"commit {commit}, host {platform.node()}, kernel {platform.release()}, {cores} cores, "
      f"load average {l0} at start / {l1} at end; saturation {float(sat):,.0f} interactions/s "
      f"(closed loop), open loop at {half}/s; half-load run valid: {h['valid']} "
      f"{h.get('invalid_reasons') or ''}")
if r:
    for op in ("interaction", "get", "set"):
        q = r[op]
        print(f"  {op:11} p50 {q['p50_us']/1000:.2f} ms  p99 {q['p99_us']/1000:.2f} ms  "
              f"p99.9 {q['p999_us']/1000:.2f} ms  max {q['max_us']/1000:.2f} ms")
print("scheduling delay while runnable (perf sched latency, 5 s inside the window), top tasks:")
rows = []
for line in open(f"{out}/latency.txt"):
    m = re.match(r"\s*(\S.*?)\s*\|\s*([\d.]+) ms\s*\|\s*(\d+)\s*\|\s*avg:\s*([\d.]+) ms\s*\|\s*max:\s*([\d.]+) ms", line)
    if m:
        rows.append((m.group(1), float(m.group(2)), int(m.group(3)), float(m.group(4)), float(m.group(5))))
for task, runtime, switches, avg, mx in sorted(rows, key=lambda x: -x[1])[:10]:
    print(f"  {task:32} runtime {runtime:8.1f} ms  switches {switches:7}  avg delay {avg:.3f} ms  max {mx:.3f} ms")
PY
