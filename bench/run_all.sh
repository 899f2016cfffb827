#!/usr/bin/env bash
# Every benchmark arm in one run, with its conditions (docs/performance.md):
#   load      skydb tiered sync | tiered async | memory-only | redis-server appendfsync always |
#             redis-server appendfsync everysec | naive PostgreSQL store (one INSERT ... ON
#             CONFLICT per write, own transaction, 6-connection pool, on a skydb-tuned cluster),
#             driven by skydb_loadgen (GET then SET EX 1800 per interaction; every
#             --expire-ratio-th one a cold read, GET then EXPIRE 1800, as the runtime does),
#             for each value model of --values: 2080 (2,080 bytes of letters, the model every
#             earlier table used), gob37k (37 KB gob-encoded Sky.Live-shaped sessions from
#             bench/sessiongen, seeded) and rand37k (the same sizes of random bytes: the
#             incompressible worst case); WAL bytes per acknowledged write over the whole run
#             (PostgreSQL arms; redis-server's AOF size is recorded but shrinks at each
#             automatic rewrite, so it is not reported as bytes written):
#             a closed-loop saturation run, then an open-loop run at half of it; the
#             memory-speed arms (memory, tiered-async and their redis anchor, redis-everysec)
#             with --threads generator threads (default 2), the others with one;
#             counterbalanced (arms forward, reversed, forward), 3 repeats; on this machine's
#             disk and under a 1 ms fsync model (bench/slowfsync.c preloaded into PostgreSQL
#             and redis-server).
#   store     for each value model, bench/run_store_bench.sh's skydb and raw1 arms: the store
#             with no protocol in front against raw batched libpq upserts of the same values on
#             the same tuned cluster (the engine's limit at 64 in flight), natively and under the
#             1 ms fsync model, with CPU and WAL bytes per write; skip with --skip-store.
#   memory    skydb RSS at 1k/10k/100k live sessions (marginal slope), idle RSS, PostgreSQL
#             tree PSS idle (and under load, from the load runs), disk bytes per session.
#   startup   bench/supervisor_startup.py: cold start, warm start and kill -9 → ready, median of 5.
# Raw lines: bench/results/all-<timestamp>.jsonl; the table: all-<timestamp>.txt (all-FORCED-*
# when forced above the load threshold).
# Refuses to start above load average 0.5 × cores unless --force (then every line is flagged and
# the table says it is not a result); during the run, a load run whose window saw other
# processes use more than 0.25 cores is invalid (skydb_loadgen's foreign-CPU gate). Run as root (PostgreSQL runs as
# SKYDB_TEST_USER, default skydbtest).
#
# Usage: bench/run_all.sh [--seconds 10] [--warmup 2] [--connections 64] [--repeats 3]
#                         [--threads 2] [--threaded-arms "memory tiered-async redis-everysec"]
#                         [--disks "native slow"] [--skip-memory] [--skip-startup] [--skip-store]
#                         [--force]
#                         [--values "2080 gob37k rand37k"] [--arms "tiered-sync redis-always ..."]
#                         [--expire-ratio 0.1] [--max-foreign-cores 0.25]
# The value files are generated at the start (Go from Debian: apt-get install golang-go).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=10
warmup=2
connections=64
repeats=3
# One generator thread saturates the fsync-bound arms with CPU to spare but not a memory-speed
# server, so these arms get --threads. By default an arm and the redis arm it is compared with
# get the same count; every line records its own (the loadgen's conditions.threads) and the
# table marks a ratio between arms that ran different counts.
threads=2
threaded_arms="memory tiered-async redis-everysec"
disks="native slow"
skip_memory=0
skip_startup=0
skip_store=0
force=0
values="2080 gob37k rand37k"
expire_ratio=0.1
arm_list=""
max_foreign=0.25
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --threaded-arms) threaded_arms="$2"; shift 2 ;;
    --disks) disks="$2"; shift 2 ;;
    --skip-memory) skip_memory=1; shift ;;
    --skip-startup) skip_startup=1; shift ;;
    --skip-store) skip_store=1; shift ;;
    --force) force=1; shift ;;
    --values) values="$2"; shift 2 ;;
    --arms) arm_list="$2"; shift 2 ;;
    --expire-ratio) expire_ratio="$2"; shift 2 ;;
    # Above the default, a window where other processes ran is reported, not refused: every
    # line carries the gate it passed (checks.max_foreign_cores) and what it saw.
    --max-foreign-cores) max_foreign="$2"; shift 2 ;;
    *) echo "run_all.sh: unknown argument $1 (see the usage line at the top)" >&2; exit 2 ;;
  esac
done

if ! [[ "$threads" =~ ^[1-9][0-9]*$ ]] || [ "$threads" -gt "$connections" ]; then
  echo "run_all.sh: --threads must be a whole number from 1 to --connections ($connections)" >&2
  exit 2
fi
arms=(tiered-sync tiered-async memory redis-always redis-everysec naive)
# Not run by default: tiered-sync with sky_sessions.data's compression set to pglz or lz4 after
# the schema is migrated (ALTER TABLE ... SET COMPRESSION), to compare storage choices with one
# binary in one run.
extra_arms=(tiered-sync-pglz tiered-sync-lz4)
if [ -n "$arm_list" ]; then
  for a in $arm_list; do
    case " ${arms[*]} ${extra_arms[*]} " in
      *" $a "*) ;;
      *) echo "run_all.sh: --arms: no arm named $a (arms: ${arms[*]})" >&2; exit 2 ;;
    esac
  done
  read -r -a arms <<<"$arm_list"
fi
for v in $values; do
  case "$v" in
    2080|gob37k|rand37k) ;;
    *) echo "run_all.sh: --values: no value model $v (2080 gob37k rand37k)" >&2; exit 2 ;;
  esac
done
for a in $threaded_arms; do
  case " tiered-sync tiered-async memory redis-always redis-everysec naive ${extra_arms[*]} " in
    *" $a "*) ;;
    *) echo "run_all.sh: --threaded-arms: no arm named $a" >&2; exit 2 ;;
  esac
done

build=${BENCH_BUILD_DIR:-build}
for f in src/skydb bench/loadgen/skydb_loadgen bench/naive_store_server bench/libslowfsync.so; do
  if [ ! -e "$build/$f" ]; then
    echo "run_all.sh: $build/$f is missing; build it first:" >&2
    echo "  cmake --build $build -j2 --target skydb skydb_loadgen naive_store_server slowfsync" >&2
    exit 2
  fi
done
build=$(cd "$build" && pwd)
skydb="$build/src/skydb"
loadgen="$build/bench/loadgen/skydb_loadgen"
naive="$build/bench/naive_store_server"
slowfsync="$build/bench/libslowfsync.so"
user=${SKYDB_TEST_USER:-skydbtest}
cores=$(nproc)
threshold=$(awk -v c="$cores" 'BEGIN{print c * 0.5}')
above() { awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v t="$threshold" 'BEGIN{exit !(l > t)}'; }
if above && [ "$force" -eq 0 ]; then
  echo "refusing: load average $(cut -d' ' -f1 /proc/loadavg) on $cores cores is above" \
       "$threshold; the figures would be meaningless (wait for a quiet machine, or pass" \
       "--force and the output is flagged as not a result)" >&2
  exit 3
fi
ndisks=$(( $(wc -w <<<"$disks") * $(wc -w <<<"$values") ))
slot=$(awk -v s="$seconds" -v w="$warmup" 'BEGIN{print 2 * (s + w) + 4}')
estimate=$(awk -v n="$ndisks" -v r="$repeats" -v a="${#arms[@]}" -v s="$slot" \
  -v m="$skip_memory" -v u="$skip_startup" 'BEGIN{printf "%.0f", (n*r*a*s + (m?0:90) + (u?0:120)) / 60}')
echo "run_all.sh: ${#arms[@]} arms × $repeats repeats × disks ($disks) × values ($values)," \
     "~$slot s a slot;" \
     "expect about $estimate minutes" >&2

pgver=$(/usr/lib/postgresql/15/bin/postgres --version)
redisver=$(redis-server --version | cut -d' ' -f1-3)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p bench/results
name="all-$stamp"
[ "$force" -eq 1 ] && above && name="all-FORCED-$stamp"  # never to be read as a result
out="bench/results/$name.jsonl"
table="bench/results/$name.txt"
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src bench || echo -dirty)"
work=$(mktemp -d /tmp/skydb-all-XXXXXX)
chmod 0755 "$work"
server_pids=()
mkdir -p "$work/values"

# The value files of the 37 KB models, from bench/sessiongen (seeded: the same seed writes the
# same values, but for the order of map entries, which Go's gob writes as the map iterates).
value_args_of() {  # value model → skydb_loadgen arguments
  case "$1" in
    2080) echo "--value-bytes 2080" ;;
    gob37k) echo "--value-file $work/values/gob37k.bin" ;;
    rand37k) echo "--value-file $work/values/rand37k.bin" ;;
  esac
}
for v in $values; do
  [ "$v" = 2080 ] && continue
  if ! command -v go >/dev/null; then
    echo "run_all.sh: the $v values need Go (apt-get install -y golang-go)" >&2
    exit 2
  fi
  flag=""
  [ "$v" = rand37k ] && flag="-incompressible"
  env GOCACHE="$work/gocache" GOPATH="$work/gopath" GO111MODULE=off go run bench/sessiongen/main.go \
    -seed 1 -count 256 -size 37000 $flag -out "$work/values/$v.bin"
done

stop_servers() {
  local p
  for p in "${server_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${server_pids[@]}"; do
    for _ in $(seq 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null || true
  done
  server_pids=()
}
cleanup() { stop_servers; chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

wait_ping() {  # $1 socket, $2 pid: PONG within 120 s, or the server's log and exit
  for _ in $(seq 1200); do
    [ "$(redis-cli -s "$1" PING 2>/dev/null)" = PONG ] && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "run_all.sh: the server on $1 did not answer PING; its log:" >&2
  tail -20 "$work"/*.log >&2 || true
  exit 1
}

# skydb serve --embed on DIR (created at first use), under the disk model. Sets `sock`.
start_skydb_embed() {  # $1 dir, $2 durability, $3 preload
  mkdir -p "$1"
  env LD_PRELOAD="$3" SLOWFSYNC_US=1000 SKYDB_CONFIG="" "$skydb" --set "store.durability=$2" \
    serve --embed --data-dir "$1" --user "$user" >>"$1.log" 2>&1 &
  server_pids+=($!)
  sock="$1/run/skydb.sock"
  wait_ping "$sock" $!
}

# psql on the cluster of the skydb daemon under arm directory $1, as its superuser.
psql_arm() {
  local dir=$1; shift
  python3 - "$dir/run/skydb.status.json" "$@" <<'PY'
import json, subprocess, sys
s = json.load(open(sys.argv[1]))
sys.exit(subprocess.run(["psql", "-qAt", "-h", s["socket_dir"], "-p", str(s["port"]), "-U",
                         s["superuser"], "-d", s["database"]] + sys.argv[2:]).returncode)
PY
}

# Starts arm $1 under disk model $2; sets `sock` and `pids` (the server trees to measure).
start_arm() {
  local arm=$1 disk=$2 preload="" d="$work/$2/$1"
  [ "$disk" = slow ] && preload="$slowfsync"
  case "$arm" in
    tiered-sync) start_skydb_embed "$d" sync "$preload" ;;
    tiered-sync-pglz|tiered-sync-lz4)
      start_skydb_embed "$d" sync "$preload"
      psql_arm "$d" -c "ALTER TABLE sky_sessions ALTER COLUMN data SET COMPRESSION ${arm#tiered-sync-}" ;;
    tiered-async) start_skydb_embed "$d" async "$preload" ;;
    memory)
      mkdir -p "$d"
      SKYDB_CONFIG="" "$skydb" serve --store memory --data-dir "$d" --user "$user" >>"$d.log" 2>&1 &
      server_pids+=($!)
      sock="$d/run/skydb.sock"
      wait_ping "$sock" $! ;;
    redis-always|redis-everysec)
      rm -rf "$d"; mkdir -p "$d"  # a fresh append-only file for every run
      env LD_PRELOAD="$preload" SLOWFSYNC_US=1000 redis-server --unixsocket "$d/redis.sock" \
        --port 0 --save '' --appendonly yes --appendfsync "${arm#redis-}" --dir "$d" \
        >>"$d.log" 2>&1 &
      server_pids+=($!)
      sock="$d/redis.sock"
      wait_ping "$sock" $! ;;
    naive)
      # skydb supplies the cluster (same tuning and schema as the tiered arms) and stays idle;
      # the naive store writes to that cluster's sky_sessions over its own pool.
      start_skydb_embed "$d" sync "$preload"
      local conninfo
      conninfo=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))
print("host=%s port=%s user=%s dbname=%s" % (s["socket_dir"], s["port"], s["superuser"], s["database"]))' \
        "$d/run/skydb.status.json")
      "$naive" --socket "$d/naive.sock" --conninfo "$conninfo" --pool 6 >>"$d.naive.log" 2>&1 &
      server_pids+=($!)
      sock="$d/naive.sock"
      wait_ping "$sock" $! ;;
  esac
  pids=("${server_pids[@]}")
}

# PostgreSQL's WAL position (bytes) of the cluster under arm directory $1, or nothing.
wal_lsn() {
  [ -f "$1/run/skydb.status.json" ] || return 0
  psql_arm "$1" -c "SELECT pg_current_wal_lsn() - '0/0'" 2>/dev/null || true
}

threads_of() {  # arm → skydb_loadgen --threads
  case " $threaded_arms " in
    *" $1 "*) echo "$threads" ;;
    *) echo 1 ;;
  esac
}

expect_of() {  # arm → loadgen's --expect-store/--expect-durability
  case "$1" in
    tiered-sync|tiered-sync-pglz|tiered-sync-lz4) echo "tiered sync" ;;
    tiered-async) echo "tiered async" ;;
    memory) echo "memory none" ;;
    redis-always) echo "redis always" ;;
    redis-everysec) echo "redis everysec" ;;
    naive) echo "naive sync" ;;
  esac
}

record() {  # $1 phase JSON fields (without braces), $2 loadgen JSON → one line of $out
  local forced=false
  [ "$force" -eq 1 ] && above && forced=true
  echo "{$1,\"forced_above_load\":$forced,\"run\":$2}" >>"$out"
}

run_load() {  # $1 arm, $2 disk, $3 repeat, $4 loop (closed|half), $5 extra loadgen args, $6 values
  local expect pid_args=() p line nthreads wal0 wal1 dir="$work/$2/$1"
  read -r -a expect <<<"$(expect_of "$1")"
  nthreads=$(threads_of "$1")
  for p in "${pids[@]}"; do pid_args+=(--server-pid "$p"); done
  wal0=$(wal_lsn "$dir")
  # shellcheck disable=SC2086
  line=$("$loadgen" --socket "$sock" --expect-store "${expect[0]}" \
           --expect-durability "${expect[1]}" --connections "$connections" --warmup "$warmup" \
           --threads "$nthreads" \
           --duration "$seconds" --commit "$commit" "${pid_args[@]}" --label "arm=$1" \
           --label "disk=$2" --label "repeat=$3" --label "phase=$4" --label "postgres=$pgver" \
           --label "redis=$redisver" --label "values=$6" --expire-ratio "$expire_ratio" \
           --max-foreign-cores "$max_foreign" \
           $(value_args_of "$6") $5 || true)
  wal1=$(wal_lsn "$dir")
  [ -n "$line" ] || line='{"valid":false,"invalid_reasons":["skydb_loadgen printed nothing"],"result":null}'
  record "\"phase\":\"load\",\"arm\":\"$1\",\"disk\":\"$2\",\"values\":\"$6\",\"repeat\":$3,\"loop\":\"$4\",\"threads\":$nthreads,\"wal_bytes\":${wal1:-null},\"wal_bytes_before\":${wal0:-null}" \
    "$line"
  echo "$line"
}

loadgen_threads=$(for a in "${arms[@]}"; do printf '%s=%s ' "$a" "$(threads_of "$a")"; done)
python3 - "$commit" "$cores" "$force" "$seconds" "$warmup" "$connections" "$repeats" "$disks" \
  "$loadgen_threads" "$values" "$expire_ratio" "$work/values" >"$out" <<'PY'
import hashlib, json, os, platform, subprocess, sys
commit, cores, force, seconds, warmup, conns, repeats, disks, threads, values, expire, vdir = sys.argv[1:]
files = {v: os.path.join(vdir, v + ".bin") for v in values.split() if v != "2080"}
digests = {v: hashlib.sha256(open(f, "rb").read()).hexdigest()[:16] for v, f in files.items()}
run = lambda *a: subprocess.run(a, capture_output=True, text=True).stdout.strip()
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
mem = next(int(l.split()[1]) // 1024 for l in open("/proc/meminfo") if l.startswith("MemTotal"))
print(json.dumps({"phase": "conditions", "commit": commit, "host": platform.node(),
  "kernel": platform.release(), "cpu": cpu, "cores": int(cores), "ram_mib": mem,
  "load_start": open("/proc/loadavg").read().split()[:3], "forced": force == "1",
  "postgres": run("/usr/lib/postgresql/15/bin/postgres", "--version"),
  "redis": run("redis-server", "--version"), "compiler_build": os.environ.get("BENCH_BUILD_DIR", "build"),
  "seconds": float(seconds), "warmup": float(warmup), "connections": int(conns),
  "repeats": int(repeats), "disks": disks.split(), "values": values.split(),
  "value_files_sha256_16": digests, "expire_ratio": float(expire),
  "go": run("go", "version") if files else "", "fsync_model_us": 1000,
  "loadgen_threads": {a: int(n) for a, n in (kv.split("=") for kv in threads.split())}}))
PY

for disk in $disks; do
 for vmodel in $values; do
  for repeat in $(seq "$repeats"); do
    order=("${arms[@]}")
    if [ $((repeat % 2)) -eq 0 ]; then
      order=(); for ((i = ${#arms[@]} - 1; i >= 0; i--)); do order+=("${arms[$i]}"); done
    fi
    for arm in "${order[@]}"; do
      echo "== $disk · $vmodel · repeat $repeat · $arm" >&2
      start_arm "$arm" "$disk"
      closed=$(run_load "$arm" "$disk" "$repeat" closed "" "$vmodel")
      rate=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]).get("result") or {}
print(int(r.get("interactions_per_s", 0) / 2))' "$closed")
      if [ "$rate" -gt 0 ]; then
        run_load "$arm" "$disk" "$repeat" half "--rate $rate" "$vmodel" >/dev/null
      fi
      stop_servers
    done
  done
 done
done

# The store phase, per value model; run_store_bench.sh refuses a loaded machine, so the load
# this script's own arms left is let settle first (at most 3 minutes).
if [ "$skip_store" -eq 0 ]; then
  store_force=()
  [ "$force" -eq 1 ] && store_force=(--force)
  for vmodel in $values; do
    for _ in $(seq 18); do
      awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v c="$cores" 'BEGIN{exit !(l > c * 0.5)}' || break
      sleep 10
    done
    echo "== store: skydb against raw batched libpq, values $vmodel" >&2
    value_file=()
    [ "$vmodel" = 2080 ] || value_file=(--value-file "$work/values/$vmodel.bin")
    BENCH_BUILD_DIR="$build" \
      bash bench/run_store_bench.sh --arms "skydb raw1" --repeats "$repeats" --seconds "$seconds" \
      --no-sweep --no-extras "${value_file[@]}" "${store_force[@]}" >"$work/store-$vmodel.out" 2>&1 || true
    python3 - "$vmodel" "$work/store-$vmodel.out" >>"$out" <<'PY'
import json, sys
text = open(sys.argv[2]).read().splitlines()
files = [l[len("results: "):] for l in text if l.startswith("results: ")]
at = next((i for i, l in enumerate(text) if l.startswith("== disk")), None)
print(json.dumps({"phase": "store", "values": sys.argv[1], "file": files[0] if files else None,
                  "summary": [l for l in text[at:] if not l.startswith("results: ")] if at is not None
                  else [], "why": None if files else (text[-1] if text else "no output")}))
PY
  done
fi

if [ "$skip_memory" -eq 0 ]; then
  echo "== memory (native disk, tiered sync)" >&2
  bash bench/memory_bench.sh --skydb "$skydb" --loadgen "$loadgen" --work "$work/memory" \
    --commit "$commit" >>"$out"
fi
if [ "$skip_startup" -eq 0 ]; then
  echo "== startup and recovery (supervisor_startup.py, median of 5)" >&2
  startup=$(python3 bench/supervisor_startup.py --skydb "$skydb" --runs 5 | tr -d '\n')
  echo "{\"phase\":\"startup\",\"run\":$startup}" >>"$out"
fi

# The load average at the end includes this benchmark's own work, so it proves nothing about
# other processes; each load run instead measures the CPU that neither the generator nor the
# server used during its window, and is invalid above --max-foreign-cores (0.25).
echo "{\"phase\":\"end\",\"load_end\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}" >>"$out"
python3 bench/summarise_all.py "$out" | tee "$table"
echo "results: $out  table: $table" >&2
