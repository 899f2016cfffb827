#!/usr/bin/env bash
# Where a pipelined GET's time goes (docs/performance.md, the missed `GET -P 16` goal): runs
# skydb (`serve --store memory`, the same memory-tier GET path as a cached tiered GET) and
# redis-server under `valgrind --tool=callgrind`, drives each with the same redis-benchmark
# GET load (-P 16, 2,080-byte value, unix socket), and prints instructions per GET and each
# server's most expensive functions. Instruction counts do not depend on the machine's load,
# so this may run on a busy machine; wall-clock figures from it mean nothing.
# Output: bench/results/profile-get-<ts>/summary.txt (and each load's redis-benchmark output);
# the callgrind profiles go to $SKYDB_PROFILE_DIR/profile-get-<ts>/ (default /tmp/skydb-profiles),
# outside the repository: bench/results keeps what the docs cite, not profiler dumps.
#
# Usage: bench/profile_get.sh [--requests 200000]
#        CACHE_SIM=1 also simulates the caches (--cache-sim=yes: D1/LL misses; much slower).
set -euo pipefail
cd "$(dirname "$0")/.."

requests=200000
while [ $# -gt 0 ]; do
  case "$1" in
    --requests) requests="$2"; shift 2 ;;
    *) echo "profile_get.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
build=${BENCH_BUILD_DIR:-build}
skydb="$(cd "$build" && pwd)/src/skydb"
[ -x "$skydb" ] || { echo "profile_get.sh: build $build/src/skydb first" >&2; exit 2; }
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out="bench/results/profile-get-$stamp"
dumps="${SKYDB_PROFILE_DIR:-/tmp/skydb-profiles}/profile-get-$stamp"
mkdir -p "$out" "$dumps"
work=$(mktemp -d /tmp/skydb-profile-XXXXXX)
pid=""
# skydb started as root drops to a service user, and callgrind then writes its profile as
# that user: as root, run it as the user from the start, with a profile it may write.
user=${SKYDB_TEST_USER:-skydbtest}
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  chmod 0755 "$work"
  as_user=(setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups)  # execs: same pid
fi
cleanup() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

value=$(head -c 2080 /dev/zero | tr '\0' 'v')
profile() {  # $1 name, $2 socket, then the server's command; $runner runs valgrind
  local name=$1 sock=$2
  shift 2
  ${runner[@]+"${runner[@]}"} valgrind --tool=callgrind --callgrind-out-file="${callgrind_dir:-$out}/$name.callgrind" ${CACHE_SIM:+--cache-sim=yes} \
    --instr-atstart=no "$@" >"$work/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 1200); do
    [ "$(redis-cli -s "$sock" PING 2>/dev/null)" = PONG ] && break
    sleep 0.1
  done
  redis-cli -s "$sock" SET key:__rand_int__ "$value" >/dev/null
  # Only the measured requests are counted: collection is switched on around them, by the
  # server's own user (vgdb run by root waits forever on a server of another user).
  ${runner[@]+"${runner[@]}"} callgrind_control -i on "$pid" >/dev/null
  redis-benchmark -s "$sock" -t get -P 16 -c 16 -n "$requests" -d 2080 -q >"$out/$name.benchmark.txt"
  ${runner[@]+"${runner[@]}"} callgrind_control -i off "$pid" >/dev/null
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
}

mkdir -p "$work/skydb" "$work/profile"
[ ${#as_user[@]} -eq 0 ] || chown "$user" "$work/skydb" "$work/profile"
runner=()
export SKYDB_CONFIG="" SKYDB_HTTP_PORT=0  # valgrind must run skydb itself, not env
profile_out=$out
runner=(${as_user[@]+"${as_user[@]}"})
out="$work/profile" profile skydb "$work/skydb/run/skydb.sock" "$skydb" serve \
  --store memory --data-dir "$work/skydb"
runner=()
mv "$work/profile/skydb.callgrind" "$dumps/"
mv "$work/profile/skydb.benchmark.txt" "$profile_out/"
out=$profile_out
callgrind_dir=$dumps profile redis "$work/redis.sock" redis-server --unixsocket "$work/redis.sock" --port 0 \
  --save '' --appendonly no

{
  echo "GET -P 16 -c 16, $requests requests of a 2,080-byte value; commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo -dirty);"
  echo "$(redis-server --version | cut -d' ' -f1-3); valgrind $(valgrind --version); $(uname -r)"
  echo "profiles (not kept in the repository): $dumps"
  for name in skydb redis; do
    total=$(callgrind_annotate "$dumps/$name.callgrind" 2>/dev/null |
              awk '/PROGRAM TOTALS/ && !t {gsub(",", "", $1); t = $1} END {print t + 0}')
    echo
    echo "== $name: $total instructions in total, $((total / requests)) per GET"
    callgrind_annotate --inclusive=no "$dumps/$name.callgrind" 2>/dev/null |
      awk '/^-+$/{n++; next} n>=3 && NF && shown++ < 25' || true
  done
} | tee "$out/summary.txt"
