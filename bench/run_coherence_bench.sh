#!/usr/bin/env bash
# What shared coherence costs (docs/scaling.md): one skydb daemon on an external database
# (`serve --database-url`) with store.coherence = exclusive, then = shared, same PostgreSQL,
# same load (skydb_loadgen: GET then SET EX 1800 of 2,080 bytes per interaction, closed loop,
# sync durability). The database is a skydb-tuned private cluster (a `serve --embed` daemon
# that otherwise stays idle). Arms counterbalanced (A B, B A, A B); prints the medians and the
# ratio shared / exclusive with the conditions. Raw lines: bench/results/coherence-<ts>.jsonl.
# Refuses to start above load average 0.5 × cores unless --force (then flagged, not a result);
# loadgen marks a run invalid when other processes used more than 0.25 cores meanwhile.
# Run as root (PostgreSQL runs as SKYDB_TEST_USER, default skydbtest).
#
# Usage: bench/run_coherence_bench.sh [--seconds 10] [--warmup 2] [--connections 64]
#                                     [--repeats 3] [--force]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=10
warmup=2
connections=64
repeats=3
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --force) force=1; shift ;;
    *) echo "run_coherence_bench.sh: unknown argument $1 (see the usage line)" >&2; exit 2 ;;
  esac
done

build=${BENCH_BUILD_DIR:-build}
for f in src/skydb bench/loadgen/skydb_loadgen; do
  if [ ! -e "$build/$f" ]; then
    echo "run_coherence_bench.sh: $build/$f is missing; build it first:" >&2
    echo "  cmake --build $build -j2 --target skydb skydb_loadgen" >&2
    exit 2
  fi
done
build=$(cd "$build" && pwd)
skydb="$build/src/skydb"
loadgen="$build/bench/loadgen/skydb_loadgen"
user=${SKYDB_TEST_USER:-skydbtest}
cores=$(nproc)
threshold=$(awk -v c="$cores" 'BEGIN{print c * 0.5}')
load_start=$(cut -d' ' -f1 /proc/loadavg)
above() { awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v t="$threshold" 'BEGIN{exit !(l > t)}'; }
forced=false
if above; then
  if [ "$force" -eq 0 ]; then
    echo "refusing: load average $load_start on $cores cores is above $threshold; wait for a" \
         "quiet machine, or pass --force (the output is then flagged as not a result)" >&2
    exit 3
  fi
  forced=true
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p bench/results
out="bench/results/coherence-$stamp.jsonl"
[ "$forced" = true ] && out="bench/results/coherence-FORCED-$stamp.jsonl"
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src bench || echo -dirty)"
pgver=$(/usr/lib/postgresql/15/bin/postgres --version)
work=$(mktemp -d /tmp/skydb-coherence-XXXXXX)
chmod 0755 "$work"
pids=()
stop_pid() {  # SIGTERM, bounded wait, SIGKILL: only processes this script started
  kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq 300); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
}
cleanup() {
  local p
  for p in "${pids[@]}"; do stop_pid "$p"; done
  rm -rf "$work"
}
trap cleanup EXIT

wait_ping() {  # $1 socket, $2 pid, $3 log
  for _ in $(seq 1200); do
    [ "$(redis-cli -s "$1" PING 2>/dev/null)" = PONG ] && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "run_coherence_bench.sh: no PONG on $1; log:" >&2
  tail -20 "$3" >&2
  exit 1
}

# The database: a private cluster, tuned for this host, that serves nobody itself.
mkdir -p "$work/db"
SKYDB_CONFIG="" "$skydb" serve --embed --data-dir "$work/db" --user "$user" \
  >>"$work/db.log" 2>&1 &
db_pid=$!
pids+=("$db_pid")
wait_ping "$work/db/run/skydb.sock" "$db_pid" "$work/db.log"
url=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))
print("host=%s port=%s user=%s dbname=%s" % (s["socket_dir"], s["port"], s["superuser"], s["database"]))' \
  "$work/db/run/skydb.status.json")

run_arm() {  # $1 coherence, $2 repeat
  local d="$work/$1-$2" ext line
  mkdir -p "$d"
  SKYDB_CONFIG="" SKYDB_HTTP_PORT=0 "$skydb" --set "store.coherence=$1" serve \
    --database-url "$url" --data-dir "$d" >>"$d.log" 2>&1 &
  ext=$!
  pids+=("$ext")
  wait_ping "$d/run/skydb.sock" "$ext" "$d.log"
  line=$("$loadgen" --socket "$d/run/skydb.sock" --expect-store tiered --expect-durability sync \
           --connections "$connections" --warmup "$warmup" --duration "$seconds" \
           --commit "$commit" --server-pid "$ext" --server-pid "$db_pid" \
           --label "arm=$1" --label "repeat=$2" --label "postgres=$pgver" || true)
  [ -n "$line" ] || line='{"valid":false,"invalid_reasons":["skydb_loadgen printed nothing"]}'
  echo "{\"arm\":\"$1\",\"repeat\":$2,\"forced_above_load\":$forced,\"run\":$line}" >>"$out"
  stop_pid "$ext"
}

echo "run_coherence_bench.sh: 2 arms × $repeats repeats × ~$((seconds + warmup + 5)) s" >&2
for r in $(seq 1 "$repeats"); do
  if [ $((r % 2)) -eq 1 ]; then order="exclusive shared"; else order="shared exclusive"; fi
  for arm in $order; do run_arm "$arm" "$r"; done
done

python3 - "$out" "$commit" "$cores" "$load_start" "$(cut -d' ' -f1 /proc/loadavg)" \
  "$connections" "$seconds" "$pgver" <<'PY'
import json, platform, statistics, sys
out, commit, cores, load_start, load_end, conns, seconds, pgver = sys.argv[1:]
rows = [json.loads(l) for l in open(out)]
print(f"coherence cost — commit {commit}, host {platform.node()}, kernel {platform.release()}, "
      f"{cores} cores, load average {load_start} at start / {load_end} at end, {pgver}, "
      f"{conns} connections, {seconds} s windows, sync durability, 2,080-byte values")
if any(r["forced_above_load"] for r in rows):
    print("FORCED above the load threshold: not a result")
med = {}
for arm in ("exclusive", "shared"):
    runs = [r["run"] for r in rows if r["arm"] == arm]
    valid = [r for r in runs if r.get("valid")]
    bad = [", ".join(r.get("invalid_reasons", [])) for r in runs if not r.get("valid")]
    if not valid:
        print(f"{arm:9}: no valid run ({'; '.join(bad)})")
        continue
    tput = [r["result"]["interactions_per_s"] for r in valid]
    med[arm] = statistics.median(tput)
    lat = lambda op, q: statistics.median(r["result"][op][q] for r in valid) / 1000
    cpu = statistics.median(r["result"]["server_cpu_us_per_write"] for r in valid)
    print(f"{arm:9}: {med[arm]:,.0f} interactions/s median (range {min(tput):,.0f}–{max(tput):,.0f}, "
          f"{len(valid)}/{len(runs)} valid); GET p50 {lat('get', 'p50_us'):.2f} ms "
          f"p99 {lat('get', 'p99_us'):.2f} ms; interaction p99 {lat('interaction', 'p99_us'):.2f} ms; "
          f"server CPU {cpu:.1f} µs per write" + (f"; invalid: {'; '.join(bad)}" if bad else ""))
if len(med) == 2:
    print(f"shared / exclusive throughput: {med['shared'] / med['exclusive']:.2f}×")
print(f"raw lines: {out}")
PY
