#!/usr/bin/env bash
# redis-benchmark against skydb (memory-only, and tiered sync over its private cluster) and
# against redis-server, in one run, over unix sockets: GET and SET at -c 50, -P 1 and -P 16,
# -d 2080. Arms are counterbalanced (redis, memory, tiered, then reversed, then again); medians
# and the ratio to redis-server are printed with the conditions. Not a test.
# Run as root. Usage: bench/resp_bench.sh [--requests 100000] [--force]
set -euo pipefail
cd "$(dirname "$0")/.."
requests=100000
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --requests) requests="$2"; shift 2 ;;
    --force) force=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
build=${BENCH_BUILD_DIR:-build}
[ -x "$build/src/skydb" ] || bash tools/build.sh release >/dev/null
build=$(cd "$build" && pwd)
user=${SKYDB_TEST_USER:-skydbtest}
cores=$(nproc)
load_start=$(cut -d' ' -f1 /proc/loadavg)
if [ "$force" -eq 0 ] && awk -v l="$load_start" -v c="$cores" 'BEGIN{exit !(l > c * 0.5)}'; then
  echo "refusing: load average $load_start on $cores cores (pass --force to run anyway)" >&2
  exit 3
fi
work=$(mktemp -d /tmp/skydb-respbench-XXXXXX)
chmod 0755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$work"
}
trap cleanup EXIT

wait_socket() { for _ in $(seq 300); do redis-cli -s "$1" PING >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }

redis-server --unixsocket "$work/redis.sock" --port 0 --save '' --appendonly no \
  --dir "$work" >/dev/null 2>&1 &
pids+=($!)
SKYDB_HTTP_PORT=0 "$build/src/skydb" serve --store memory --data-dir "$work/mem" --user "$user" >"$work/mem.log" 2>&1 &
pids+=($!)
SKYDB_HTTP_PORT=0 "$build/src/skydb" serve --embed --data-dir "$work/tiered" --user "$user" >"$work/tiered.log" 2>&1 &
pids+=($!)
declare -A sock=([redis]="$work/redis.sock" [memory]="$work/mem/run/skydb.sock"
                 [tiered]="$work/tiered/run/skydb.sock")
for arm in redis memory tiered; do
  if ! wait_socket "${sock[$arm]}"; then
    echo "$arm did not start; the daemons' last lines:" >&2
    tail -n 3 "$work/mem.log" "$work/tiered.log" >&2
    exit 1
  fi
done

out=bench/results/resp-$(date -u +%Y%m%dT%H%M%SZ).tsv
mkdir -p bench/results
{
  echo "# commit $(git rev-parse --short HEAD)$(git diff --quiet || echo -dirty) host $(hostname) kernel $(uname -r) cores $cores load_start $load_start $(redis-server --version | cut -d' ' -f1-3) requests $requests value 2080"
  printf 'repeat\tarm\ttest\tpipeline\trequests_per_s\n'
} | tee "$out"
for repeat in 1 2 3; do
  order="redis memory tiered"; [ "$repeat" = 2 ] && order="tiered memory redis"
  for arm in $order; do
    for p in 1 16; do
      redis-benchmark -s "${sock[$arm]}" -t set,get -c 50 -P "$p" -d 2080 -n "$requests" -q \
        2>/dev/null | tr '\r' '\n' | awk -v r="$repeat" -v a="$arm" -v p="$p" -F': ' \
        '/requests per second/ {split($2, v, " "); printf "%s\t%s\t%s\t%s\t%s\n", r, a, $1, p, v[1]}' \
        | tee -a "$out"
    done
  done
done
echo "# load_end $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out"
python3 - "$out" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l[0].isdigit()]
med = {}
for r, arm, test, p, rps in rows:
    med.setdefault((arm, test, p), []).append(float(rps))
print("\narm      test  -P  median req/s   range            vs redis-server")
for (arm, test, p), v in sorted(med.items()):
    base = statistics.median(med[("redis", test, p)])
    print(f"{arm:8} {test:4} {p:>3} {statistics.median(v):12.0f}   {min(v):.0f}-{max(v):.0f}   {statistics.median(v)/base:.2f}x")
PY
echo "results: $out"
