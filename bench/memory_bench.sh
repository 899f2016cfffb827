#!/usr/bin/env bash
# skydb's memory as a function of live sessions (docs/performance.md), one JSON line on stdout:
# a fresh `skydb serve --embed` (tiered, sync) idles 5 s (idle RSS of skydb, PSS of the
# PostgreSQL tree), then skydb_loadgen --populate writes 1k, 10k and 100k sessions of 2,080
# bytes (SET EX 1800; each level adds new sessions to the previous ones); after each level
# skydb's VmRSS, INFO used_memory and DBSIZE are read. The marginal slope (bytes per added
# session) is what a session costs; RSS ÷ n is not (it carries the fixed cost). Disk bytes per session:
# pg_total_relation_size(sky_sessions) ÷ rows at 100k. Called by bench/run_all.sh.
# Usage: bench/memory_bench.sh --skydb BIN --loadgen BIN --work DIR [--commit C]
set -euo pipefail
cd "$(dirname "$0")/.."
commit=unknown
while [ $# -gt 0 ]; do
  case "$1" in
    --skydb) skydb="$2"; shift 2 ;;
    --loadgen) loadgen="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --commit) commit="$2"; shift 2 ;;
    *) echo "memory_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
user=${SKYDB_TEST_USER:-skydbtest}
mkdir -p "$work"
chmod 0755 "$work"
d="$work/d"
SKYDB_CONFIG="" "$skydb" serve --embed --data-dir "$d" --user "$user" >"$work/daemon.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; for _ in $(seq 300); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done' EXIT
sock="$d/run/skydb.sock"
for _ in $(seq 1200); do
  [ "$(redis-cli -s "$sock" PING 2>/dev/null)" = PONG ] && break
  kill -0 "$pid" 2>/dev/null || { echo "memory_bench.sh: skydb exited: $(tail -5 "$work/daemon.log")" >&2; exit 1; }
  sleep 0.1
done
sleep 5

kib() { awk -v f="$2:" '$1 == f {print $2}' "$1" 2>/dev/null || echo 0; }
tree_pss() {  # PSS (KiB) summed over skydb's descendants: the postmaster and its processes
  local total=0 n=0 p
  for p in $(ps -o pid= --ppid "$pid"); do
    for q in $p $(ps -o pid= --ppid "$p"); do
      total=$((total + $(kib "/proc/$q/smaps_rollup" Pss))); n=$((n + 1))
    done
  done
  echo "$total $n"
}
snapshot() {  # $1 label → JSON object of skydb's memory now
  local pss used dbsize
  read -r pss nproc <<<"$(tree_pss)"
  used=$(redis-cli -s "$sock" INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" {print $2}')
  dbsize=$(redis-cli -s "$sock" DBSIZE)
  printf '{"label":"%s","sessions":%s,"skydb_rss_kib":%s,"skydb_pss_kib":%s,"used_memory":%s,"postgres_tree_pss_kib":%s,"postgres_processes":%s}' \
    "$1" "$dbsize" "$(kib "/proc/$pid/status" VmRSS)" "$(kib "/proc/$pid/smaps_rollup" Pss)" \
    "$used" "$pss" "$nproc"
}

points=("$(snapshot idle)")
runs=()
have=0
for n in 1000 10000 100000; do
  # New keys only (a prefix per level), so every GET is a first read and DBSIZE reaches n.
  run=$("$loadgen" --socket "$sock" --expect-store tiered --expect-durability sync --populate \
          --sessions $((n - have)) --connections 50 --key-prefix "mem$n:" --commit "$commit" \
          --label phase=memory || true)
  have=$n
  runs+=("$run")
  sleep 2
  points+=("$(snapshot "populated-$n")")
done
disk=$("$skydb" psql --data-dir "$d" -- -Atc \
  "SELECT pg_total_relation_size('sky_sessions') || ' ' || count(*) FROM sky_sessions" \
  2>/dev/null || echo "0 0")

python3 - "$commit" "$disk" "${points[@]}" -- "${runs[@]}" <<'PY'
import json, sys
args = sys.argv[1:]
commit, disk = args[0], args[1].split()
sep = args.index("--")
points = [json.loads(p) for p in args[2:sep]]
runs = [json.loads(r) for r in args[sep + 1:]]
pop = [p for p in points if p["label"] != "idle"]
def slope(a, b):
    dn = b["sessions"] - a["sessions"]
    return round((b["skydb_rss_kib"] - a["skydb_rss_kib"]) * 1024 / dn) if dn else None
n = len(pop)
mx = sum(p["sessions"] for p in pop) / n
my = sum(p["skydb_rss_kib"] * 1024 for p in pop) / n
sxx = sum((p["sessions"] - mx) ** 2 for p in pop)
fit = sum((p["sessions"] - mx) * (p["skydb_rss_kib"] * 1024 - my) for p in pop) / sxx if sxx else None
total, rows = int(disk[0]), int(disk[1])
print(json.dumps({"phase": "memory", "commit": commit, "value_bytes": 2080,
  "load": open("/proc/loadavg").read().split()[:3],
  "valid": all(r.get("valid") for r in runs) and all(p["sessions"] == int(p["label"].split("-")[1])
                                                      for p in pop),
  "invalid_reasons": [x for r in runs for x in r.get("invalid_reasons", [])],
  "idle": points[0], "points": pop,
  "rss_slope_bytes_per_session": {"1k_to_10k": slope(pop[0], pop[1]),
                                  "10k_to_100k": slope(pop[1], pop[2]),
                                  "least_squares": round(fit) if fit is not None else None},
  "disk": {"sky_sessions_total_bytes": total, "rows": rows,
           "bytes_per_session": round(total / rows) if rows else None}}))
PY
