// The SQL of the PostgreSQL durable layer (pg_durable.cc): every statement on the sessions
// table, and the prepared statements built from them. Internal to src/store; included by
// pg_durable.cc only.
#pragma once

#include <cstdint>

#include "pgconn/pgconn.h"

namespace skydb::store::sql {

using pg::kByteaArrayOid;
using pg::kByteaOid;
using pg::kInt8ArrayOid;
using pg::kInt8Oid;
using pg::Statement;

inline constexpr int64_t kSweeperLockKey = 0x736b7964625377;  // "skydbSw": one sweeper per database
// "skydbAn": one announcer of expired keys per database, among the daemons that want them.
inline constexpr int64_t kAnnouncerLockKey = 0x736b796462416e;
// "skydbAf": one announcer of hashes with expired fields per database, the same way.
inline constexpr int64_t kFieldsAnnouncerLockKey = 0x736b7964624166;

// The sessions table, named with its schema (no search_path is assumed).
#define SKYDB_SESSIONS "public.sky_sessions"

// Hashes' fields and sets' members, a row each (docs/storage.md).
#define SKYDB_FIELDS "public.sky_fields"

// Value writes: the whole of the common batch's statement, and the first CTE of the general one.
// A string's row and a hash's or set's own row (data empty) alike, with its type and version.
#define SKYDB_UPSERT_SQL                                                                        \
  "INSERT INTO " SKYDB_SESSIONS                                                                 \
  " AS s (id, data, expires_at, expiry_bucket, kind, version) "                                 \
  "SELECT u.id, u.data, NULLIF(u.exp, 0), NULLIF(u.exp, 0) / 3600000, u.kind::smallint, u.ver " \
  "FROM unnest($1::bytea[], $2::bytea[], $3::int8[], $4::int8[], $5::int8[])"                   \
  " AS u(id, data, exp, kind, ver) "                                                            \
  "ON CONFLICT (id) DO UPDATE SET data = excluded.data, "                                       \
  "expires_at = excluded.expires_at, expiry_bucket = excluded.expiry_bucket, "                  \
  "kind = excluded.kind, version = excluded.version"

// A batch with deletes or deadline-only changes: one statement of three data-modifying CTEs.
// A row's delete takes its fields along (ON DELETE CASCADE).
inline const char* const kCommitSql =
    "WITH up AS (" SKYDB_UPSERT_SQL
    " RETURNING 1), "
    "del AS (DELETE FROM " SKYDB_SESSIONS
    " WHERE id = ANY($6::bytea[]) RETURNING 1), "
    "touch AS (UPDATE " SKYDB_SESSIONS
    " AS s "
    "SET expires_at = NULLIF(t.exp, 0), expiry_bucket = NULLIF(t.exp, 0) / 3600000, "
    "version = t.ver "
    "FROM unnest($7::bytea[], $8::int8[], $9::int8[]) AS t(id, exp, ver) WHERE s.id = t.id "
    "RETURNING 1) "
    "SELECT (SELECT count(*) FROM up), (SELECT count(*) FROM del), (SELECT count(*) FROM touch)";

// The common batch — value writes only — as a plain upsert: a third of the executor work of
// the three-CTE statement per commit.
inline const char* const kUpsertOnlySql = SKYDB_UPSERT_SQL;
// DELETE, not TRUNCATE: TRUNCATE's exclusive lock would stall other daemons' reads.
inline const char* const kDeleteAllSql = "DELETE FROM " SKYDB_SESSIONS;
#undef SKYDB_UPSERT_SQL

// A batch's field writes, after its rows: the cleared keys' fields, then the field deletes, then
// the field upserts (separate statements in one transaction: one statement may not change a
// row twice).
inline const char* const kClearFieldsSql =
    "DELETE FROM " SKYDB_FIELDS " WHERE id = ANY($1::bytea[])";
inline const char* const kDeleteFieldsSql =
    "DELETE FROM " SKYDB_FIELDS
    " AS f USING unnest($1::bytea[], $2::bytea[]) AS d(id, field)"
    " WHERE f.id = d.id AND f.field = d.field";
inline const char* const kUpsertFieldsSql =
    "INSERT INTO " SKYDB_FIELDS
    " (id, field, value, expires_at)"
    " SELECT u.id, u.field, u.value, NULLIF(u.exp, 0)"
    " FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::int8[]) AS u(id, field, value, exp)"
    " ON CONFLICT (id, field) DO UPDATE SET value = excluded.value, expires_at = "
    "excluded.expires_at";

inline const char* const kReadSql =
    "SELECT data, COALESCE(expires_at, 0), kind::int4, version FROM " SKYDB_SESSIONS
    " WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)";

inline const char* const kReadManySql =
    "SELECT id, data, COALESCE(expires_at, 0), kind::int4, version FROM " SKYDB_SESSIONS
    " WHERE id = ANY($1::bytea[]) AND (expires_at IS NULL OR expires_at > $2)";

// The live fields of the hashes and sets a read found.
inline const char* const kReadFieldsSql =
    "SELECT id, field, value, COALESCE(expires_at, 0) FROM " SKYDB_FIELDS
    " WHERE id = ANY($1::bytea[]) AND (expires_at IS NULL OR expires_at > $2)";

inline const char* const kCountSql = "SELECT count(*), count(expires_at) FROM " SKYDB_SESSIONS
                                     " WHERE expires_at IS NULL OR expires_at > $1";

// SCAN for shared coherence: keyset pagination over a 60-bit hash of the key, so the cursor is
// a number (as Redis clients expect) and rows added or removed meanwhile shift nothing.
inline const char* const kScanSql =
    "SELECT id, h FROM (SELECT id, ('x' || substr(md5(id), 1, 15))::bit(60)::int8 AS h"
    " FROM " SKYDB_SESSIONS
    " WHERE (expires_at IS NULL OR expires_at > $1) AND ($4 < 0 OR kind = $4)) AS k"
    " WHERE h >= $2 ORDER BY h LIMIT $3";

inline const char* const kIndexSql =
    "SELECT id, COALESCE(expires_at, 0), octet_length(data), kind::int4 FROM " SKYDB_SESSIONS
    " WHERE expires_at IS NULL OR expires_at > $1";

// Uses the partial index on expiry_bucket; the expires_at filter keeps rows of the current
// bucket that are still live. SKIP LOCKED: never waits on a row a writer holds. A row's fields
// go with it (ON DELETE CASCADE).
inline const char* const kSweepSql = "DELETE FROM " SKYDB_SESSIONS
                                     " WHERE id IN ("
                                     " SELECT id FROM " SKYDB_SESSIONS
                                     " WHERE expiry_bucket <= $1 / 3600000 AND expires_at <= $1"
                                     " LIMIT $2 FOR UPDATE SKIP LOCKED)";
// Rows whose deadline fell in ($1, $2], through the same index: the "expired" events of shared
// coherence, announced before the grace that the sweep leaves.
inline const char* const kExpiredBetweenSql =
    "SELECT id FROM " SKYDB_SESSIONS
    " WHERE expiry_bucket >= $1 / 3600000 AND expiry_bucket <= $2 / 3600000"
    " AND expires_at > $1 AND expires_at <= $2 ORDER BY expires_at LIMIT $3";
// Hashes with a field whose own deadline fell in ($1, $2] while its hash lived, through the
// partial index below, the earliest first; and whether no field outlives $2 (the hash is gone).
inline const char* const kFieldsExpiredBetweenSql =
    "SELECT f.id, NOT EXISTS (SELECT 1 FROM " SKYDB_FIELDS
    " g WHERE g.id = f.id"
    " AND (g.expires_at IS NULL OR g.expires_at > $2))"
    " FROM " SKYDB_FIELDS " f JOIN " SKYDB_SESSIONS
    " s ON s.id = f.id"
    " WHERE f.expires_at > $1 AND f.expires_at <= $2"
    " AND (s.expires_at IS NULL OR s.expires_at > f.expires_at)"
    " GROUP BY f.id ORDER BY min(f.expires_at) LIMIT $3";
// Hash fields past their own deadline (HEXPIRE), through the partial index on it.
inline const char* const kSweepFieldsSql =
    "DELETE FROM " SKYDB_FIELDS " WHERE (id, field) IN (SELECT id, field FROM " SKYDB_FIELDS
    " WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)";
// A guarded commit: placeholders for the keys without a row — expired since the epoch's first
// millisecond, so no reader counts them — then every row locked and read as it is now,
// whatever its deadline, and the placeholders nobody wrote removed before COMMIT.
inline const char* const kPlaceholdSql =
    "INSERT INTO " SKYDB_SESSIONS
    " (id, data, expires_at, expiry_bucket) SELECT k, ''::bytea, 1, 0"
    " FROM unnest($1::bytea[]) AS k ON CONFLICT (id) DO NOTHING RETURNING id";
inline const char* const kLockSql =
    "SELECT id, data, COALESCE(expires_at, 0), kind::int4, version FROM " SKYDB_SESSIONS
    " WHERE id = ANY($1::bytea[]) ORDER BY id FOR UPDATE";
inline const char* const kUnplaceholdSql =
    "DELETE FROM " SKYDB_SESSIONS " WHERE id = ANY($1::bytea[])";
#undef SKYDB_FIELDS
#undef SKYDB_SESSIONS

// The commit statements run once per batch and are prepared on each writer connection; so is
// the batched read, which shared coherence runs for nearly every operation.
inline const Statement kUpsertOnly{
    "skydb_upsert",
    kUpsertOnlySql,
    {kByteaArrayOid, kByteaArrayOid, kInt8ArrayOid, kInt8ArrayOid, kInt8ArrayOid}};
inline const Statement kCommit{
    "skydb_commit",
    kCommitSql,
    {kByteaArrayOid, kByteaArrayOid, kInt8ArrayOid, kInt8ArrayOid, kInt8ArrayOid, kByteaArrayOid,
     kByteaArrayOid, kInt8ArrayOid, kInt8ArrayOid}};
inline const Statement kClearFields{nullptr, kClearFieldsSql, {kByteaArrayOid}};
inline const Statement kDeleteFields{nullptr, kDeleteFieldsSql, {kByteaArrayOid, kByteaArrayOid}};
inline const Statement kUpsertFields{
    "skydb_upsert_fields",
    kUpsertFieldsSql,
    {kByteaArrayOid, kByteaArrayOid, kByteaArrayOid, kInt8ArrayOid}};
inline const Statement kReadFields{"skydb_read_fields", kReadFieldsSql, {kByteaArrayOid, kInt8Oid}};
inline const Statement kSweepFields{nullptr, kSweepFieldsSql, {kInt8Oid, kInt8Oid}};
inline const Statement kRead{nullptr, kReadSql, {kByteaOid, kInt8Oid}};
inline const Statement kDeleteAll{nullptr, kDeleteAllSql, {}};
inline const Statement kReadMany{"skydb_read_many", kReadManySql, {kByteaArrayOid, kInt8Oid}};
inline const Statement kCount{nullptr, kCountSql, {kInt8Oid}};
inline const Statement kScan{nullptr, kScanSql, {kInt8Oid, kInt8Oid, kInt8Oid, kInt8Oid}};
inline const Statement kIndex{nullptr, kIndexSql, {kInt8Oid}};
inline const Statement kSweepLock{nullptr, "SELECT pg_try_advisory_lock($1)", {kInt8Oid}};
inline const Statement kUnlock{nullptr, "SELECT pg_advisory_unlock($1)", {kInt8Oid}};
inline const Statement kSweep{nullptr, kSweepSql, {kInt8Oid, kInt8Oid}};
inline const Statement kExpiredBetween{nullptr, kExpiredBetweenSql, {kInt8Oid, kInt8Oid, kInt8Oid}};
inline const Statement kFieldsExpiredBetween{
    nullptr, kFieldsExpiredBetweenSql, {kInt8Oid, kInt8Oid, kInt8Oid}};
inline const Statement kBegin{nullptr, "BEGIN", {}};
inline const Statement kCommitTransaction{nullptr, "COMMIT", {}};
inline const Statement kRollback{nullptr, "ROLLBACK", {}};
inline const Statement kPlacehold{nullptr, kPlaceholdSql, {kByteaArrayOid}};
inline const Statement kLock{nullptr, kLockSql, {kByteaArrayOid}};
inline const Statement kUnplacehold{nullptr, kUnplaceholdSql, {kByteaArrayOid}};

}  // namespace skydb::store::sql
