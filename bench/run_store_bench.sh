#!/usr/bin/env bash
# Durable-write benchmark of the session store against its anchors (docs/performance.md), in
# one run:
# skydb's tiered store (sync) vs a naive one-transaction-per-write store (6-connection pool)
# vs raw batched upserts, on this machine's disk and under a modelled 1 ms fsync.
# Arms: skydb (64 writers, the tuned store_writers), naive, raw (4 connections x 64-row
# batches: the engine's limit), raw1 (1 connection x 64 rows: the same 64 rows in flight as
# skydb's 64 writers) and skydb256 (256 writers: as many rows in flight as raw).
# Counterbalanced (A B C D, D C B A, A B C D, ... for --repeats rounds, default 3); medians and
# ranges are printed with the conditions, and for each arm how many commits shared a WAL flush,
# how long a flush took and what fraction of the run PostgreSQL spent flushing
# (track_wal_io_timing is on in the benchmark's cluster). Then, once per disk, skydb with 1, 2
# and 4 writers (the evidence for the store_writers formula; single runs, not
# counterbalanced). Results:
# bench/results/store-<timestamp>.jsonl. Run as root (PostgreSQL runs as the unprivileged user
# skydbtest).
# Then the extras (skip with --no-extras): MULTI + 10 SETs + EXEC against the same 10 SETs
# pipelined (bench/exec_bench.py: one daemon per disk, arms A B B A), redis-benchmark SET at
# -c 50 -P 1 against pgbench -c 6 upserts on the daemon's own cluster (bench/set_vs_pgbench.py),
# PUBLISH fan-out to 100 subscribers against redis-server (bench/pubsub_fanout.py), cached GET
# at -P 1 and -P 16 against redis-server (bench/resp_bench.sh) and instructions per pipelined
# GET against redis-server's (bench/profile_get.sh, callgrind), each with its own conditions.
# --value-file F: every arm writes the values of F (bench/sessiongen's framing, e.g. the 37 KB
# gob-like sessions bench/run_all.sh generates) instead of 2,080 random bytes.
# Usage: bench/run_store_bench.sh [--seconds 10] [--repeats 3] [--force]
#        [--arms "skydb naive raw raw1 skydb256"] [--no-sweep] [--no-extras] [--value-file F]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=10
repeats=3
force=0
arms="skydb naive raw raw1 skydb256"
sweep=1
extras=1
value_file=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --force) force=1; shift ;;
    --arms) arms="$2"; shift 2 ;;      # e.g. "skydb256 raw": 256 in flight; -w2: 2 store writers;
                                       # -o32: commit_overlap_rows 32; -b256:
                                       # commit_overlap_bytes 256 KiB; -l1: one loop thread
                                       # issues writes; base-skydb: $BENCH_BASE_BUILD_DIR's
    --no-sweep) sweep=0; shift ;;
    --no-extras) extras=0; shift ;;
    --value-file) value_file=$(realpath "$2"); shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
if ! [[ "$repeats" =~ ^[1-9][0-9]*$ ]]; then
  echo "run_store_bench.sh: --repeats must be a whole number of at least 1" >&2
  exit 2
fi

build=${BENCH_BUILD_DIR:-build}
[ -x "$build/bench/store_bench" ] || bash tools/build.sh release >/dev/null
build=$(cd "$build" && pwd)
# The 1 ms model is an LD_PRELOAD: without the library the "slow" disk would silently be this one.
for needed in bench/libslowfsync.so src/skydb; do
  if [ ! -e "$build/$needed" ]; then
    echo "run_store_bench.sh: no $build/$needed: build it (cmake --build $build --target" \
         "slowfsync skydb) or run tools/build.sh release" >&2
    exit 2
  fi
done
base_build=""
if [ -n "${BENCH_BASE_BUILD_DIR:-}" ]; then
  base_build=$(cd "$BENCH_BASE_BUILD_DIR" && pwd)
  [ -x "$base_build/bench/store_bench" ] || { echo "no $base_build/bench/store_bench" >&2; exit 2; }
fi
bin=/usr/lib/postgresql/15/bin
user=${SKYDB_TEST_USER:-skydbtest}
cores=$(nproc)
load_start=$(cut -d' ' -f1 /proc/loadavg)
if [ "$force" -eq 0 ] && awk -v l="$load_start" -v c="$cores" 'BEGIN{exit !(l > c * 0.5)}'; then
  echo "refusing: load average $load_start on $cores cores makes the figures meaningless" \
       "(wait for a quiet machine or pass --force; the result will be flagged)" >&2
  exit 3
fi

work=$(mktemp -d /tmp/skydb-bench-XXXXXX)
chmod 0755 "$work"
chown "$user" "$work"
results_dir=bench/results
mkdir -p "$results_dir"
out="$results_dir/store-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
pg_pid=""

as_user() { runuser -u "$user" -- "$@"; }
stop_pg() {
  if [ -n "$pg_pid" ]; then as_user "$bin/pg_ctl" -D "$work/pgdata" -m fast -w stop >/dev/null || true; fi
  pg_pid=""
}
cleanup() { stop_pg; rm -rf "$work"; }
trap cleanup EXIT

start_pg() {  # $1: "native" or "slow"
  local preload=""
  [ "$1" = slow ] && preload="$build/bench/libslowfsync.so"
  as_user env LD_PRELOAD="$preload" SLOWFSYNC_US=1000 "$bin/pg_ctl" -D "$work/pgdata" \
    -l "$work/pg-$1.log" -w start >/dev/null
  pg_pid=$(head -1 "$work/pgdata/postmaster.pid")
}

as_user "$bin/initdb" -D "$work/pgdata" -E UTF8 --locale=C --auth=trust >/dev/null
# The same settings skydb derives for this host, plus a private socket.
"$build/src/skydb" tune --format conf > "$work/skydb.conf"
cp "$work/skydb.conf" "$work/pgdata/skydb.conf"
chown "$user" "$work/pgdata/skydb.conf"
{
  echo "include = 'skydb.conf'"
  echo "unix_socket_directories = '$work'"
  echo "track_wal_io_timing = on"  # every arm pays it: store_bench reports the time per flush
} >> "$work/pgdata/postgresql.conf"
conninfo="host=$work dbname=postgres user=$user"
store_writers=$("$build/src/skydb" tune --format json |
                python3 -c 'import json,sys; print(json.load(sys.stdin)["pools"]["store_writers"])')

base_commit=""
if [ -n "$base_build" ]; then
  base_src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$base_build/CMakeCache.txt")
  base_commit=$(git -C "$base_src" rev-parse --short HEAD)$(git -C "$base_src" diff --quiet || echo -dirty)
fi
value_bytes=2080
value_args=""
if [ -n "$value_file" ]; then
  value_bytes=$(python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(); i=n=t=0
while i < len(d): k=struct.unpack(">I", d[i:i+4])[0]; i+=4+k; n+=1; t+=k
print(t // n)' "$value_file")
  value_args="--value-file $value_file"
fi
conditions() {
  printf '{"conditions":{"commit":"%s","base_commit":"%s","host":"%s","kernel":"%s","cores":%s,"load_start":%s,"load_now":%s,"postgres":"%s","value_bytes":%s,"value_file":"%s","seconds":%s,"repeats":%s,"disk":"%s"}}\n' \
    "$(git rev-parse --short HEAD)$(git diff --quiet || echo -dirty)" "$base_commit" "$(hostname)" \
    "$(uname -r)" "$cores" "$load_start" "$(cut -d' ' -f1 /proc/loadavg)" \
    "$("$bin/postgres" --version)" "$value_bytes" "$value_file" "$seconds" "$repeats" "$1"
}

arm_args() {  # $1 arm name: skydb[256][-wN][-oN][-bN][-lN], naive, raw, raw1
  local arm=$1 args
  case "$arm" in
    naive) echo "--mode naive"; return ;;
    raw) echo "--mode raw --raw-connections 4 --raw-batch 64"; return ;;
    raw1) echo "--mode raw --raw-connections 1 --raw-batch 64"; return ;;
  esac
  args="--mode skydb"
  case "$arm" in skydb256*) args="$args --writers 256" ;; esac
  if [[ "$arm" =~ -w([0-9]+) ]]; then
    args="$args --store-writers ${BASH_REMATCH[1]}"
  else
    args="$args --store-writers $store_writers"
  fi
  [[ "$arm" =~ -o([0-9]+) ]] && args="$args --overlap-rows ${BASH_REMATCH[1]}"
  [[ "$arm" =~ -b([0-9]+) ]] && args="$args --overlap-bytes $((BASH_REMATCH[1] * 1024))"
  [[ "$arm" =~ -l([0-9]+) ]] && args="$args --loops ${BASH_REMATCH[1]}"
  echo "$args"
}

run_arm() {  # $1 disk model, $2 arm; store_bench recreates sky_sessions from skydb's schema
  local line bench_bin="$build/bench/store_bench" arm=$2
  # base-<arm>: the same arm with the store_bench of $BENCH_BASE_BUILD_DIR (an A/B of builds).
  if [[ "$arm" == base-* ]]; then
    bench_bin="$base_build/bench/store_bench"
    arm=${arm#base-}
  fi
  # shellcheck disable=SC2046
  line=$("$bench_bin" $(arm_args "$arm") $value_args --conninfo "$conninfo" \
         --seconds "$seconds" --postmaster-pid "$pg_pid" || true)
  echo "{\"disk\":\"$1\",\"arm\":\"$2\",\"result\":$line}" | tee -a "$out"
}

for disk in native slow; do
  start_pg "$disk"
  conditions "$disk" | tee -a "$out"
  reversed=$(echo "$arms" | tr ' ' '\n' | tac | tr '\n' ' ')
  for ((round = 0; round < repeats; round++)); do
    order=$arms
    [ $((round % 2)) -eq 1 ] && order=$reversed
    for arm in $order; do run_arm "$disk" "$arm"; done
  done
  if [ "$sweep" -eq 1 ]; then
    for arm in skydb-w1 skydb-w2 skydb-w4; do run_arm "$disk" "$arm"; done
  fi
  stop_pg
done

python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for disk in ("native", "slow"):
    res = {}
    for r in rows:
        if r.get("disk") == disk and "result" in r:
            res.setdefault(r["arm"], []).append(r["result"])
    if not res: continue
    # The first `repeats` runs of an arm are its rounds; a sweep run comes after them.
    repeats = next((r["conditions"].get("repeats", 3) for r in rows
                    if r.get("conditions", {}).get("disk") == disk), 3)
    print(f"\n== disk: {disk} ({'1 ms fsync model' if disk == 'slow' else 'this machine'}) ==")
    bad = {m for m, v in res.items() if any(x["errors"] > 0 or x["writes"] == 0 for x in v)}
    for m in sorted(bad):
        print(f"{m:8} INVALID: a run had errors or no writes; see the stderr of store_bench")
    res = {m: v for m, v in res.items() if m not in bad}
    med = {m: statistics.median(x["writes_per_s"] for x in v) for m, v in res.items()}
    for m, v in res.items():
        w = [x["writes_per_s"] for x in v]
        print(f"{m:8} writes/s median {med[m]:9.0f} range {min(w):.0f}-{max(w):.0f}  "
              f"p50 {statistics.median(x['p50_us'] for x in v):7.0f} us  "
              f"p99 {statistics.median(x['p99_us'] for x in v):7.0f} us  "
              f"rows/commit {statistics.median(x['rows_per_commit'] for x in v):5.1f}  "
              f"cpu/write {statistics.median(x['cpu_us_per_write'] for x in v):5.1f} us "
              f"(skydb/client {statistics.median(x['client_cpu_s'] / x['writes'] * 1e6 for x in v):5.1f} us)")
        if all(x.get("wal_flushes", 0) > 0 for x in v):
            print(f"{'':8} WAL: commits/flush {statistics.median(x['commits_per_flush'] for x in v):5.2f}  "
                  f"writes/flush {statistics.median(x['writes_per_flush'] for x in v):6.1f}  "
                  f"ms/flush {statistics.median(x['flush_ms'] for x in v):6.3f}  "
                  f"flushing {statistics.median(x['flush_busy'] for x in v) * 100:3.0f}% of the run"
                  + (f"  WAL bytes/write {statistics.median(x['wal_bytes_per_write'] for x in v):7.0f}"
                     if all("wal_bytes_per_write" in x for x in v) else ""))
        elif any("wal_flushes" in x for x in v):  # files from before have no such field
            print(f"{'':8} WAL: counters not read in every run (see store_bench's stderr)")
    if "naive" in med and "skydb" in med:
        print(f"skydb / naive = {med['skydb'] / med['naive']:.2f}x")
    if "raw" in med and "skydb" in med:
        print(f"skydb / raw   = {med['skydb'] / med['raw']:.2f}x  (raw: 4 x 64-row batches, the engine's limit)")
    for m in sorted(med):
        core = m[len("base-"):] if m.startswith("base-") else m
        anchor = "raw" if core.startswith("skydb256") else "raw1"
        if not core.startswith("skydb") or anchor not in med:
            continue
        line = (f"{m} / {anchor} = {med[m] / med[anchor]:.2f}x  "
                f"(both {256 if anchor == 'raw' else 64} rows in flight")
        if len(res[m]) >= repeats and len(res[anchor]) >= repeats:
            # The i-th run of each arm ran in round i: the ratio is paired, so the host's drift
            # between rounds cancels.
            paired = [x["writes_per_s"] / y["writes_per_s"]
                      for x, y in zip(res[m][:repeats], res[anchor][:repeats])]
            line += (f"; per round {' '.join(f'{r:.2f}' for r in paired)}, "
                     f"median {statistics.median(paired):.2f}x")
        print(line + ")")
PY
echo "results: $out"

# The arms leave the 1-minute load average high with their own load, and each extra but the
# callgrind one refuses a loaded machine: wait for it to settle (at most 3 minutes) first.
wait_quiet() {
  local waited=0
  while [ "$waited" -lt 180 ] &&
    awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v c="$cores" 'BEGIN{exit !(l > c * 0.5)}'; do
    sleep 10
    waited=$((waited + 10))
  done
}

if [ "$extras" -eq 1 ]; then
  echo
  echo "== extras: EXEC of 10 SETs vs 10 pipelined SETs; SET -c 50 vs pgbench -c 6;" \
    "PUBLISH fan-out to 100 subscribers; GET against redis-server =="
  force_flag=()
  [ "$force" -eq 1 ] && force_flag=(--force)
  wait_quiet
  if python3 bench/exec_bench.py --skydb "$build/src/skydb" \
      --slowfsync "$build/bench/libslowfsync.so" "${force_flag[@]}" >"$work/exec.out" 2>&1; then
    python3 - "$(ls bench/results/exec-*.json | tail -1)" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
c = report["conditions"]
print("EXEC conditions: commit %s, host %s, %d cores, load %.2f -> %.2f, fsync median %.0f us, %s"
      % (c["commit"], c["host"], c["cores"], c["load_start"], c["load_end"],
         c["fsync_us_median"], c["skydb"]))
for row in report["results"]:
    print("%-8s exec10 %8.0f batches/s (p99 %.2f ms)  pipe10 %8.0f batches/s (p99 %.2f ms)"
          "  exec/pipeline %.2fx %s"
          % (row["disk"], row["exec10"]["batches_per_s"], row["exec10"]["p99_ms"],
             row["pipe10"]["batches_per_s"], row["pipe10"]["p99_ms"],
             row["exec_over_pipeline"], ("FLAGGED: " + row["flag"]) if row["flag"] else ""))
print("written to", sys.argv[1])
PY
  else
    echo "the EXEC row did not run:"
    tail -3 "$work/exec.out"
  fi
  wait_quiet
  if python3 bench/set_vs_pgbench.py --skydb "$build/src/skydb" \
      --slowfsync "$build/bench/libslowfsync.so" "${force_flag[@]}" >"$work/setpg.out" 2>&1; then
    grep -v '^ *$' "$work/setpg.out"
  else
    echo "the SET against pgbench row did not run:"
    tail -3 "$work/setpg.out"
  fi
  wait_quiet
  if [ -x "$build/tests/integration/resp/resp_test_server" ]; then
    python3 bench/pubsub_fanout.py "$build/tests/integration/resp/resp_test_server" 100 100000 16 \
        --rounds 3 ||
      echo "the PUBLISH row did not run"
  else
    echo "the PUBLISH row did not run: no $build/tests/integration/resp/resp_test_server"
  fi
  wait_quiet
  if BENCH_BUILD_DIR="$build" bash bench/resp_bench.sh --requests 200000 "${force_flag[@]}" \
      >"$work/resp.out" 2>&1; then
    sed -n '/^arm  /,$p' "$work/resp.out"
  else
    echo "the GET against redis-server rows did not run:"
    tail -3 "$work/resp.out"
  fi
  # Instructions do not depend on the machine's load: no refusal here.
  if BENCH_BUILD_DIR="$build" bash bench/profile_get.sh --requests 50000 \
      >"$work/profile.out" 2>&1; then
    grep -E '^(GET|== )' "$work/profile.out"
  else
    echo "the instructions-per-GET row did not run:"
    tail -3 "$work/profile.out"
  fi
fi
