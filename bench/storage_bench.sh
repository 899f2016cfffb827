#!/usr/bin/env bash
# Table design under update-heavy 2 KB sessions (docs/storage.md): for each schema
# (skydb's, and a plain first design), 1,000,000 upserts over 100,000 sessions of 2,080 random
# bytes through skydb's store, then HOT-update ratio, heap/TOAST/index sizes, dead rows and
# WAL bytes per write. Sizes and ratios, not times: machine load does not change them.
# Run as root (PostgreSQL runs as skydbtest). Usage: bench/storage_bench.sh [WRITES] [SESSIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
writes=${1:-1000000}
sessions=${2:-100000}
build=${BENCH_BUILD_DIR:-build}
[ -x "$build/bench/store_bench" ] || bash tools/build.sh release >/dev/null
build=$(cd "$build" && pwd)
bin=/usr/lib/postgresql/15/bin
user=${SKYDB_TEST_USER:-skydbtest}
work=$(mktemp -d /tmp/skydb-storage-XXXXXX)
chmod 0755 "$work"; chown "$user" "$work"
# shellcheck source=bench/tuned_cluster.sh
. bench/tuned_cluster.sh
conninfo="host=$work dbname=postgres user=$user"
psqlc() { "$bin/psql" -X -q -A -t "$conninfo" -c "$1"; }
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet || echo -dirty) · $(uname -r) · $(nproc) cores · $("$bin/postgres" --version) · $writes writes over $sessions sessions of 2080 B"
report() {  # $1 schema, $2 round, $3 WAL position before the round
  psqlc "SELECT '$1' AS schema, $2 AS round,
     n_tup_upd AS updates, n_tup_hot_upd AS hot,
     round(100.0 * n_tup_hot_upd / greatest(n_tup_upd, 1), 1) AS hot_pct,
     n_live_tup AS live, n_dead_tup AS dead,
     pg_size_pretty(pg_relation_size('sky_sessions')) AS heap,
     pg_size_pretty(coalesce(pg_total_relation_size(reltoastrelid), 0)) AS toast,
     pg_size_pretty(pg_indexes_size('sky_sessions')) AS indexes,
     round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$3') / $writes.0) AS wal_bytes_per_write
   FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = 'sky_sessions'" \
   | tr '|' '\t'
}
printf 'schema\tround\tupdates\thot\thot%%\tlive\tdead\theap\ttoast\tindexes\tWAL B/write\n'
for schema in skydb plain; do
  for round in 1 2; do
    keep=$([ "$round" = 1 ] && echo 0 || echo 1)
    "$build/bench/store_bench" --mode skydb --schema "$schema" --keep-table "$keep" \
      --conninfo "$conninfo" --sessions "$sessions" --total-writes "$writes" --warmup 0 \
      >/dev/null 2>&1 &
    bench=$!
    for _ in $(seq 100); do  # round 1 recreates the table: wait for it
      [ "$(psqlc "SELECT to_regclass('sky_sessions') IS NOT NULL")" = t ] && break
      sleep 0.1
    done
    lsn0=$(psqlc "SELECT pg_current_wal_lsn()")
    wait "$bench"
    sleep 1  # let the statistics catch up
    report "$schema" "$round" "$lsn0"
  done
done
