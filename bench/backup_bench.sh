#!/usr/bin/env bash
# Backup and restore throughput and the WAL archive lag under the load model (docs/backup.md,
# "Measured"). Run as root from the repository root after building skydb and skydb_loadgen:
#   bench/backup_bench.sh [BUILD_DIR] [APP_MIB] [RATE] [SECONDS]
# BACKUP_COMPRESSIONS (default "gzip lz4 zstd") are each measured after the plain backup: the
# backup (copy, extraction, verification), its size, the restore (extraction) and the start.
# The app table's rows are hex digests (about 4 bits per character, like session tokens), so
# compression ratios are not those of a table of repeated bytes.
# Prints one line per figure with its conditions. Not a test.
set -euo pipefail
build="${1:-build}"
app_mib="${2:-512}"
rate="${3:-1000}"
seconds="${4:-60}"
user="${SKYDB_TEST_USER:-skydbtest}"
skydb="$build/src/skydb"
loadgen="$build/bench/loadgen/skydb_loadgen"
root="$(mktemp -d /tmp/backup-bench.XXXXXX)"
chmod 0755 "$root"
install -d -o "$user" -g "$user" -m 0700 "$root/repo"
port=$((20000 + RANDOM % 20000))
daemon_pid=""
restored_pid=""
cleanup() {
  for pid in $restored_pid $daemon_pid; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $restored_pid $daemon_pid; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  done
  rm -rf "$root"
}
trap cleanup EXIT
stop_restored() {
  [ -n "$restored_pid" ] || return 0
  kill -TERM "$restored_pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$restored_pid" 2>/dev/null || break; sleep 0.2; done
  restored_pid=""
}

wait_ready() {  # DIR
  for _ in $(seq 600); do
    "$skydb" status --data-dir "$1" --json 2>/dev/null | grep -q '"state": "ready"' && return 0
    sleep 0.2
  done
  echo "not ready: $1" >&2
  return 1
}
now() { date +%s.%N; }
conditions="host $(hostname), $(nproc) cores (shared), $(free -g | awk '/Mem:/{print $2}') GiB, commit $(git rev-parse --short HEAD), skydb $build"

"$skydb" --set backup.repository="$root/repo" --set backup.schedule=0 --set http.port="$port" \
  serve --embed --data-dir "$root/d" --user "$user" >"$root/d.log" 2>&1 &
daemon_pid=$!
wait_ready "$root/d"
psql_app() { "$skydb" psql --data-dir "$root/d" -- -d app -Atc "$1"; }

# WAL archive lag while the load model runs: sample /metrics every second.
"$loadgen" --socket "$root/d/run/skydb.sock" --expect-store tiered --expect-durability sync \
  --connections 16 --sessions 10000 --value-bytes 2080 --rate "$rate" --warmup 2 \
  --duration "$seconds" --max-foreign-cores 64 --max-cpu-fraction 1 >"$root/load.json" 2>&1 &
load_pid=$!
max_pending=0
max_lag=0
max_ready_age=0  # the oldest segment PostgreSQL has marked ready and not yet archived
start_archived=$(curl -s "localhost:$port/metrics" | awk '/^skydb_wal_archived_total/{print $2}')
start_lsn=$("$skydb" psql --data-dir "$root/d" -- -Atc "SELECT pg_current_wal_lsn()")
load_avg_during=""
while kill -0 "$load_pid" 2>/dev/null; do
  m=$(curl -s "localhost:$port/metrics")
  p=$(awk '/^skydb_wal_archive_pending_segments/{print $2}' <<<"$m")
  l=$(awk '/^skydb_wal_archive_lag_seconds/{print $2}' <<<"$m")
  [ -n "$p" ] && awk -v a="$p" -v b="$max_pending" 'BEGIN{exit !(a>b)}' && max_pending=$p
  [ -n "$l" ] && awk -v a="$l" -v b="$max_lag" 'BEGIN{exit !(a>b)}' && max_lag=$l
  oldest=$(stat -c %Y "$root"/d/pgdata/pg_wal/archive_status/*.ready 2>/dev/null | sort -n | head -1 || true)
  if [ -n "$oldest" ]; then
    age=$(( $(date +%s) - oldest ))
    [ "$age" -gt "$max_ready_age" ] && max_ready_age=$age
  fi
  load_avg_during=$(cut -d' ' -f1-3 /proc/loadavg)
  sleep 0.5
done
wait "$load_pid" || true
wal_bytes=$("$skydb" psql --data-dir "$root/d" -- -Atc \
  "SELECT pg_current_wal_lsn() - '$start_lsn'::pg_lsn")
end_archived=$(curl -s "localhost:$port/metrics" | awk '/^skydb_wal_archived_total/{print $2}')
achieved=$(grep -o '"interactions_per_s": *[0-9.]*' "$root/load.json" | head -1 | grep -o '[0-9.]*$' || echo "?")
echo "archive under load: ${rate}/s target (${achieved}/s achieved, GET+SET 2080 B, sync), ${seconds} s:" \
  "WAL $((wal_bytes / 1048576)) MiB, segments archived $((${end_archived%.*} - ${start_archived%.*})), max pending segments $max_pending," \
  "metric skydb_wal_archive_lag_seconds max ${max_lag} s, oldest unarchived .ready segment max ${max_ready_age} s old; load average $load_avg_during; $conditions"

# A cluster of APP_MIB MiB of app rows, then a base backup (copy + verify) and a restore.
psql_app "CREATE TABLE big AS SELECT g AS id, (SELECT string_agg(md5((g * 31 + i)::text), '') FROM generate_series(1, 31) i) AS pad FROM generate_series(1, $((app_mib * 1000))) g" >/dev/null
out=$("$skydb" --set backup.repository="$root/repo" backup --data-dir "$root/d")
echo "backup: $out; load average $(cut -d' ' -f1-3 /proc/loadavg); $conditions"
psql_app "INSERT INTO big SELECT g, 'after' FROM generate_series(1, 1000) g" >/dev/null
"$skydb" psql --data-dir "$root/d" -- -Atc "SELECT pg_switch_wal()" >/dev/null
sleep 3
# Restores the newest backup into DIR, starts it, and prints the figures with WHAT first.
restore_and_start() {  # DIR WHAT VERB
  local t2 t3 t4 size rows
  t2=$(now)
  "$skydb" restore --from "$root/repo" --to "$1" --user "$user" --latest >/dev/null
  t3=$(now)
  "$skydb" serve --embed --data-dir "$1" --user "$user" >"$1.log" 2>&1 &
  restored_pid=$!
  wait_ready "$1"
  t4=$(now)
  size=$(du -sm "$1/pgdata" | cut -f1)
  rows=$("$skydb" psql --data-dir "$1" -- -d app -Atc "SELECT count(*) FROM big")
  awk -v c="$t3" -v b="$t2" -v r="$t4" -v s="$size" -v rows="$rows" -v cond="$conditions" \
    -v what="$2" -v verb="$3" -v la="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN{
    printf "%s: %s %d MiB in %.1f s (%.0f MiB/s), then start to ready (WAL replay, promote, migrate) %.1f s; %d rows back; load average %s; %s\n",
      what, verb, s, c-b, s/(c-b), r-c, rows, la, cond}'
}
restore_and_start "$root/r" restore copy

# The same cluster backed up compressed: time, size, the restore's extraction and the start.
for compression in ${BACKUP_COMPRESSIONS:-gzip lz4 zstd}; do
  stop_restored
  sleep 1.1  # a new label
  out=$("$skydb" --set backup.repository="$root/repo" --set backup.compression="$compression" \
    backup --data-dir "$root/d")
  echo "backup ($compression): $out; load average $(cut -d' ' -f1-3 /proc/loadavg); $conditions"
  restore_and_start "$root/r-$compression" "restore ($compression)" extract
done
