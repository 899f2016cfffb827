#!/usr/bin/env bash
# What sky_sessions' storage choice costs per value size, in PostgreSQL alone (docs/storage.md):
# for each value model (2 KB random letters; 37 KB gob-like sessions and 37 KB random bytes
# from bench/sessiongen; 256 KB gob-like sessions) and each layout of the data column
# (skydb's table with STORAGE MAIN and pglz, the same with lz4, STORAGE EXTERNAL: no
# compression; lz4-before125: lz4 with the vacuum of before migration 125, its TOAST table
# throttled and autovacuum's default minute between rounds; chunks: no TOAST at all, the value
# compressed by the client (lz4 -1, as skydb would) and cut into rows of at most 3,900 bytes
# keyed (id, part), STORAGE PLAIN, fillfactor 50 so a part's next version fits its page and
# the update is HOT; models 37 KB and up only; read: no write, the statement reads the values
# from bench_values as every other layout's upsert does, the share of their CPU that is not
# the write; read-chunks: the same for the chunks layout's parts), pgbench runs batched upserts
# (--clients connections, each transaction --rows rows, like the store's group commit) of values already in the server (table
# bench_values), so the client's transfer is not measured, only the upsert. Per arm: rows/s,
# the PostgreSQL tree's CPU per row (utime + stime of the postmaster, its children and the
# children it reaped), WAL bytes, full-page images and WAL records per row (pg_stat_wal), and
# the stored size of a value (pg_column_size) and the TOAST table's size at the end. Layouts
# alternate within each round, rounds repeat (--rounds); every line carries the load average at its start.
# A fresh cluster with the settings skydb derives for this host; a CHECKPOINT before each arm,
# so each arm pays the full-page images of a checkpoint cycle's first touches (an upper bound
# for a short run). Run as root (PostgreSQL runs as SKYDB_TEST_USER, default skydbtest).
# The chunks layout's parts are read from a table of their own (bench_chunks, inline), the
# others' values from bench_values (out of line); the read and read-chunks arms measure each read.
# Usage: bench/compression_bench.sh [--seconds 6] [--rounds 2] [--clients 4] [--rows 16]
#        [--models "2k gob37k rand37k gob256k"]
#        [--layouts "pglz lz4 external lz4-before125 chunks read read-chunks"]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=6 rounds=2 clients=4 rows=16
models="2k gob37k rand37k gob256k"
layouts="pglz lz4 external"
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    --layouts) layouts="$2"; shift 2 ;;
    *) echo "compression_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
build=${BENCH_BUILD_DIR:-build}
[ -x "$build/src/skydb" ] || { echo "compression_bench.sh: build $build/src/skydb first" >&2; exit 2; }
command -v go >/dev/null || { echo "compression_bench.sh: needs Go (apt-get install golang-go)" >&2; exit 2; }
bin=/usr/lib/postgresql/15/bin
user=${SKYDB_TEST_USER:-skydbtest}
work=$(mktemp -d /tmp/skydb-compression-XXXXXX)
chmod 0755 "$work"
chown "$user" "$work"
out="bench/results/compression-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
mkdir -p bench/results
# shellcheck source=bench/tuned_cluster.sh
. bench/tuned_cluster.sh
psql_() { PGOPTIONS="-c client_min_messages=warning" psql -qAtX -h "$work" -U "$user" -d postgres "$@"; }

# The values: one table, STORAGE EXTERNAL so reading one back costs no decompression.
psql_ -c "CREATE TABLE bench_values (model text, n int, data bytea);
          ALTER TABLE bench_values ALTER COLUMN data SET STORAGE EXTERNAL"
# The chunks layout's parts of each value: lz4 -1 of the whole value, cut at chunk_bytes.
chunk_bytes=3900
psql_ -c "CREATE TABLE bench_chunks (model text, n int, part int, parts int, data bytea);
          ALTER TABLE bench_chunks ALTER COLUMN data SET STORAGE PLAIN"
declare -A count
for m in $models; do
  case "$m" in
    2k) psql_ -c "INSERT INTO bench_values SELECT '2k', g, convert_to((SELECT string_agg(
                    chr(97 + ((g * 7919 + i * 104729) % 26)), '') FROM generate_series(1, 2080) i),
                    'UTF8') FROM generate_series(0, 255) g"
        count[$m]=256; continue ;;
    gob37k) args="-seed 1 -count 256 -size 37000"; count[$m]=256 ;;
    rand37k) args="-seed 1 -count 256 -size 37000 -incompressible"; count[$m]=256 ;;
    gob256k) args="-seed 2 -count 64 -size 262144"; count[$m]=64 ;;
    *) echo "compression_bench.sh: no model $m" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2086
  env GOCACHE="$work/gocache" GO111MODULE=off go run bench/sessiongen/main.go $args -out "$work/$m.bin"
  # Each value once as it is (bench_values), once lz4 -1 in chunk_bytes parts (bench_chunks).
  python3 - "$work/$m.bin" "$m" "$chunk_bytes" "$work/$m.copy" "$work/$m.chunks" <<'PY'
import struct, subprocess, sys
d, model, size = open(sys.argv[1], "rb").read(), sys.argv[2], int(sys.argv[3])
values, chunks = open(sys.argv[4], "w"), open(sys.argv[5], "w")
i = n = 0
while i < len(d):
    k = struct.unpack(">I", d[i:i + 4])[0]
    value = d[i + 4:i + 4 + k]
    values.write("%s\t%d\t\\\\x%s\n" % (model, n, value.hex()))
    z = subprocess.run(["lz4", "-1", "-c", "-q"], input=value, capture_output=True,
                       check=True).stdout
    parts = [z[j:j + size] for j in range(0, len(z), size)]
    for p, part in enumerate(parts):
        chunks.write("%s\t%d\t%d\t%d\t\\\\x%s\n" % (model, n, p, len(parts), part.hex()))
    i += 4 + k
    n += 1
values.close()
chunks.close()
PY
  psql_ -c "\\copy bench_values FROM '$work/$m.copy'"
  psql_ -c "\\copy bench_chunks FROM '$work/$m.chunks'"
done
psql_ -c "CREATE INDEX ON bench_values (model, n)" -c "CREATE INDEX ON bench_chunks (model, n)" \
  -c "VACUUM ANALYZE bench_values" -c "VACUUM ANALYZE bench_chunks"

pm=$(head -1 "$work/pgdata/postmaster.pid")
tree_ticks() {  # the PostgreSQL tree's CPU, in clock ticks (reaped children included)
  local s p
  s=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat")
  for p in $(pgrep -P "$pm"); do s=$((s + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
  echo "$s"
}
layout_sql() {
  case "$1" in
    pglz) echo "ALTER TABLE t ALTER COLUMN data SET STORAGE MAIN, ALTER COLUMN data SET COMPRESSION pglz" ;;
    lz4|lz4-before125) echo "ALTER TABLE t ALTER COLUMN data SET STORAGE MAIN, ALTER COLUMN data SET COMPRESSION lz4" ;;
    external) echo "ALTER TABLE t ALTER COLUMN data SET STORAGE EXTERNAL" ;;
    chunks) echo "ALTER TABLE t ALTER COLUMN data SET STORAGE PLAIN" ;;
  esac
}
# Migration 125's option and the derived autovacuum_naptime, or PostgreSQL's defaults.
toast_vacuum_sql() {
  [ "$1" = lz4-before125 ] && echo "ALTER TABLE t RESET (toast.autovacuum_vacuum_cost_delay)" ||
    echo "ALTER TABLE t SET (toast.autovacuum_vacuum_cost_delay = 0)"
}
naptime_sql() {
  [ "$1" = lz4-before125 ] && echo "ALTER SYSTEM SET autovacuum_naptime = '1min'" ||
    echo "ALTER SYSTEM RESET autovacuum_naptime"
}
run_arm() {  # $1 model, $2 layout, $3 round
  local m=$1 n=${count[$1]} sessions=1024 script="$work/upsert.sql" load w0 w1 c0 c1 res
  local table="id bytea PRIMARY KEY, expires_at bigint, expiry_bucket bigint, data bytea NOT NULL"
  local with="fillfactor = 60, toast_tuple_target = 8160" source="bench_values v ON v.model = '$m'"
  local key="(id)" part="" part_of="" stored_sql
  stored_sql="SELECT avg(pg_column_size(data))::int, avg(octet_length(data))::int,
    (SELECT coalesce(pg_relation_size(nullif(reltoastrelid, 0)), 0) FROM pg_class WHERE relname = 't') FROM t"
  if [ "$2" = read-chunks ]; then
    [ "$m" = 2k ] && return 0
    source="bench_chunks v ON v.model = '$m'"
  fi
  if [ "$2" = read ] || [ "$2" = read-chunks ]; then
    echo "\\set v random(0, $((n - rows)))" >"$script"
    echo "SELECT sum(get_byte(v.data, 0)) FROM generate_series(0, $((rows - 1))) g JOIN $source AND v.n = :v + g;" >>"$script"
    stored_sql="SELECT 0, (SELECT avg(octet_length(data))::int FROM bench_values WHERE model = '$m'), 0"
  fi
  if [ "$2" = chunks ]; then
    [ "$m" = 2k ] && return 0  # a 2 KB value is one inline row in every layout
    table="id bytea, part int, expires_at bigint, expiry_bucket bigint, data bytea NOT NULL,
      PRIMARY KEY (id, part)"
    with="fillfactor = 50" source="bench_chunks v ON v.model = '$m'" key="(id, part)"
    part=", part" part_of=", v.part"
    stored_sql="SELECT avg(s)::int, (SELECT avg(octet_length(data))::int FROM bench_values
      WHERE model = '$m'), 0 FROM (SELECT sum(pg_column_size(data)) s FROM t GROUP BY id) x"
  fi
  [ "${2%-chunks}" = read ] || psql_ -c "DROP TABLE IF EXISTS t" -c "CREATE TABLE t ($table) WITH ($with)" \
    -c "$(layout_sql "$2")" -c "$(toast_vacuum_sql "$2")" -c "$(naptime_sql "$2")" \
    -c "SELECT pg_reload_conf()" \
    -c "INSERT INTO t (id$part, expires_at, expiry_bucket, data) SELECT convert_to('sky:sess:' || g,
        'UTF8')$part_of, 1, 0, v.data FROM generate_series(0, $((sessions - 1))) g JOIN $source AND v.n = g % $n" \
    -c "VACUUM ANALYZE t" -c "CHECKPOINT" >/dev/null
  [ "${2%-chunks}" = read ] || {
    echo "\\set k random(0, $((sessions - rows)))"
    echo "\\set v random(0, $((n - rows)))"
    [ "$2" = chunks ] && echo "BEGIN;"
    echo "INSERT INTO t (id$part, data, expires_at, expiry_bucket) SELECT convert_to('sky:sess:' || (:k + g), 'UTF8')$part_of, v.data, 1, 0 FROM generate_series(0, $((rows - 1))) g JOIN $source AND v.n = :v + g ON CONFLICT $key DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at, expiry_bucket = excluded.expiry_bucket;"
    if [ "$2" = chunks ]; then
      # A shorter value leaves no parts of the longer one it replaced.
      echo "DELETE FROM t USING generate_series(0, $((rows - 1))) g JOIN bench_chunks v ON v.model = '$m' AND v.n = :v + g AND v.part = 0 WHERE t.id = convert_to('sky:sess:' || (:k + g), 'UTF8') AND t.part >= v.parts;"
      echo "COMMIT;"
    fi
  } >"$script"
  chmod 0644 "$script"
  load=$(cut -d' ' -f1 /proc/loadavg)
  w0=$(psql_ -c "SELECT wal_bytes, wal_fpi, wal_records FROM pg_stat_wal")
  c0=$(tree_ticks)
  res=$(as_user "$bin/pgbench" -n -h "$work" -U "$user" -c "$clients" -j 2 -T "$seconds" -f "$script" postgres 2>&1)
  # pgbench's backends publish their WAL counters on exit, and their CPU reaches the
  # postmaster's reaped-children counters once it has reaped them.
  sleep 1
  c1=$(tree_ticks)
  w1=$(psql_ -c "SELECT wal_bytes, wal_fpi, wal_records FROM pg_stat_wal")
  stored=$(psql_ -c "$stored_sql")
  hot=null  # the share of the updates that were HOT (no index entry, no new page)
  [ "${2%-chunks}" = read ] || hot=$(psql_ -c "SELECT coalesce(round(n_tup_hot_upd::numeric
    / nullif(n_tup_upd, 0), 3), 0) FROM pg_stat_user_tables WHERE relname = 't'")
  python3 - "$m" "$2" "$3" "$load" "$res" "$rows" "$seconds" "$c0" "$c1" "$w0" "$w1" "$stored" \
    "$(getconf CLK_TCK)" "$hot" <<'PY' | tee -a "$out"
import json, re, sys
m, layout, rnd, load, res, rows, secs, c0, c1, w0, w1, stored, tck, hot = sys.argv[1:]
tps = float(re.search(r"tps = ([0-9.]+)", res).group(1))
writes = tps * int(rows) * float(secs)
w0 = [float(x) for x in w0.split("|")]
w1 = [float(x) for x in w1.split("|")]
st, raw, toast = (int(x) for x in stored.split("|"))
print(json.dumps({"model": m, "layout": layout, "round": int(rnd), "load_start": float(load),
                  "rows_per_s": round(tps * int(rows)), "value_bytes": raw, "stored_bytes": st,
                  "toast_bytes_at_end": toast, "hot_update_ratio": json.loads(hot),
                  "cpu_us_per_row": round((int(c1) - int(c0)) / int(tck) / writes * 1e6, 1),
                  "wal_bytes_per_row": round((w1[0] - w0[0]) / writes),
                  "fpi_per_row": round((w1[1] - w0[1]) / writes, 2),
                  "wal_records_per_row": round((w1[2] - w0[2]) / writes, 1)}))
PY
}

printf '{"conditions":{"commit":"%s","host":"%s","cores":%s,"postgres":"%s","seconds":%s,"rounds":%s,"clients":%s,"rows":%s,"load_start":"%s"}}\n' \
  "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- bench src || echo -dirty)" "$(hostname)" "$(nproc)" \
  "$("$bin/postgres" --version)" "$seconds" "$rounds" "$clients" "$rows" "$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
for ((r = 1; r <= rounds; r++)); do
  for m in $models; do
    order=$layouts
    [ $((r % 2)) -eq 0 ] && order=$(echo "$layouts" | tr ' ' '\n' | tac | tr '\n' ' ')
    for l in $order; do run_arm "$m" "$l" "$r"; done
  done
done
echo "results: $out" >&2
