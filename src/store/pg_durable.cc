// The PostgreSQL durable layer: one connection per group-commit writer, per loader and for the
// sweeper, each a pg::LazyConnection (reopened after a failure, left when its server turns
// read-only). A batch is ONE statement (data-modifying CTEs over unnest() of binary arrays), so
// it costs one round trip and one COMMIT (one WAL flush) however many rows it carries. Keys and
// values travel as binary bytea: no escaping, every byte value round-trips.
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "pgconn/pgconn.h"
#include "skydb/durable.h"

namespace skydb::store {
namespace {

using pg::BinaryArray;
using pg::Int8Param;
using pg::kByteaArrayOid;
using pg::kByteaOid;
using pg::kInt8ArrayOid;
using pg::kInt8Oid;
using pg::LazyConnection;
using pg::QueryResult;
using pg::Statement;

constexpr int64_t kSweeperLockKey = 0x736b7964625377;  // "skydbSw": one sweeper per database

// The sessions table, named with its schema (no search_path is assumed).
#define SKYDB_SESSIONS "public.sky_sessions"

// Value writes: the whole of the common batch's statement, and the first CTE of the general one.
#define SKYDB_UPSERT_SQL                                                   \
  "INSERT INTO " SKYDB_SESSIONS                                            \
  " AS s (id, data, expires_at, expiry_bucket) "                           \
  "SELECT u.id, u.data, NULLIF(u.exp, 0), NULLIF(u.exp, 0) / 3600000 "     \
  "FROM unnest($1::bytea[], $2::bytea[], $3::int8[]) AS u(id, data, exp) " \
  "ON CONFLICT (id) DO UPDATE SET data = excluded.data, "                  \
  "expires_at = excluded.expires_at, expiry_bucket = excluded.expiry_bucket"

// A batch with deletes or deadline-only changes: one statement of three data-modifying CTEs.
const char* const kCommitSql =
    "WITH up AS (" SKYDB_UPSERT_SQL
    " RETURNING 1), "
    "del AS (DELETE FROM " SKYDB_SESSIONS
    " WHERE id = ANY($4::bytea[]) RETURNING 1), "
    "touch AS (UPDATE " SKYDB_SESSIONS
    " AS s "
    "SET expires_at = NULLIF(t.exp, 0), expiry_bucket = NULLIF(t.exp, 0) / 3600000 "
    "FROM unnest($5::bytea[], $6::int8[]) AS t(id, exp) WHERE s.id = t.id RETURNING 1) "
    "SELECT (SELECT count(*) FROM up), (SELECT count(*) FROM del), (SELECT count(*) FROM touch)";

// The common batch — value writes only — as a plain upsert: a third of the executor work of
// the three-CTE statement per commit.
const char* const kUpsertOnlySql = SKYDB_UPSERT_SQL;
// DELETE, not TRUNCATE: TRUNCATE's exclusive lock would stall other daemons' reads.
const char* const kDeleteAllSql = "DELETE FROM " SKYDB_SESSIONS;
#undef SKYDB_UPSERT_SQL

const char* const kReadSql = "SELECT data, COALESCE(expires_at, 0) FROM " SKYDB_SESSIONS
                             " WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)";

const char* const kReadManySql =
    "SELECT id, data, COALESCE(expires_at, 0) FROM " SKYDB_SESSIONS
    " WHERE id = ANY($1::bytea[]) AND (expires_at IS NULL OR expires_at > $2)";

const char* const kCountSql = "SELECT count(*), count(expires_at) FROM " SKYDB_SESSIONS
                              " WHERE expires_at IS NULL OR expires_at > $1";

// SCAN for shared coherence: keyset pagination over a 60-bit hash of the key, so the cursor is
// a number (as Redis clients expect) and rows added or removed meanwhile shift nothing.
const char* const kScanSql =
    "SELECT id, h FROM (SELECT id, ('x' || substr(md5(id), 1, 15))::bit(60)::int8 AS h"
    " FROM " SKYDB_SESSIONS
    " WHERE expires_at IS NULL OR expires_at > $1) AS k"
    " WHERE h >= $2 ORDER BY h LIMIT $3";

const char* const kIndexSql =
    "SELECT id, COALESCE(expires_at, 0), octet_length(data) FROM " SKYDB_SESSIONS
    " WHERE expires_at IS NULL OR expires_at > $1";

// Uses the partial index on expiry_bucket; the expires_at filter keeps rows of the current
// bucket that are still live. SKIP LOCKED: never waits on a row a writer holds.
const char* const kSweepSql = "DELETE FROM " SKYDB_SESSIONS
                              " WHERE id IN ("
                              " SELECT id FROM " SKYDB_SESSIONS
                              " WHERE expiry_bucket <= $1 / 3600000 AND expires_at <= $1"
                              " LIMIT $2 FOR UPDATE SKIP LOCKED)";
// A guarded commit (CommitIf): placeholders for the keys without a row — expired since the
// epoch's first millisecond, so no reader counts them — then every row locked and read as it
// is now, whatever its deadline, and the placeholders nobody wrote removed before COMMIT.
const char* const kPlaceholdSql =
    "INSERT INTO " SKYDB_SESSIONS
    " (id, data, expires_at, expiry_bucket) SELECT k, ''::bytea, 1, 0"
    " FROM unnest($1::bytea[]) AS k ON CONFLICT (id) DO NOTHING RETURNING id";
const char* const kLockSql = "SELECT id, data, COALESCE(expires_at, 0) FROM " SKYDB_SESSIONS
                             " WHERE id = ANY($1::bytea[]) ORDER BY id FOR UPDATE";
const char* const kUnplaceholdSql = "DELETE FROM " SKYDB_SESSIONS " WHERE id = ANY($1::bytea[])";
#undef SKYDB_SESSIONS

// The commit statements run once per batch and are prepared on each writer connection; so is
// the batched read, which shared coherence runs for nearly every operation.
const Statement kUpsertOnly{
    "skydb_upsert", kUpsertOnlySql, {kByteaArrayOid, kByteaArrayOid, kInt8ArrayOid}};
const Statement kCommit{
    "skydb_commit",
    kCommitSql,
    {kByteaArrayOid, kByteaArrayOid, kInt8ArrayOid, kByteaArrayOid, kByteaArrayOid, kInt8ArrayOid}};
const Statement kRead{nullptr, kReadSql, {kByteaOid, kInt8Oid}};
const Statement kDeleteAll{nullptr, kDeleteAllSql, {}};
const Statement kReadMany{"skydb_read_many", kReadManySql, {kByteaArrayOid, kInt8Oid}};
const Statement kCount{nullptr, kCountSql, {kInt8Oid}};
const Statement kScan{nullptr, kScanSql, {kInt8Oid, kInt8Oid, kInt8Oid}};
const Statement kIndex{nullptr, kIndexSql, {kInt8Oid}};
const Statement kSweepLock{nullptr, "SELECT pg_try_advisory_lock($1)", {kInt8Oid}};
const Statement kSweep{nullptr, kSweepSql, {kInt8Oid, kInt8Oid}};
const Statement kBegin{nullptr, "BEGIN", {}};
const Statement kCommitTransaction{nullptr, "COMMIT", {}};
const Statement kRollback{nullptr, "ROLLBACK", {}};
const Statement kPlacehold{nullptr, kPlaceholdSql, {kByteaArrayOid}};
const Statement kLock{nullptr, kLockSql, {kByteaArrayOid}};
const Statement kUnplacehold{nullptr, kUnplaceholdSql, {kByteaArrayOid}};

DurableValue ValueAt(const QueryResult& r, int row, int value_col) {
  DurableValue v;
  v.value.assign(r.Bytes(row, value_col));
  v.expires_at = r.Int8(row, value_col + 1);
  return v;
}

class PgDurable final : public DurableBackend {
 public:
  PgDurable(std::string conninfo, std::string description, int writers, int readers,
            bool transaction_pooling)
      : description_(std::move(description)),
        sweeper_(conninfo, "sweeper", !transaction_pooling),
        sweeper_lock_(!transaction_pooling) {
    bool named = !transaction_pooling;
    for (int i = 0; i < writers; ++i) {
      writers_.push_back(
          std::make_unique<LazyConnection>(conninfo, "writer " + std::to_string(i), named));
    }
    for (int i = 0; i < readers; ++i) {
      readers_.push_back(
          std::make_unique<LazyConnection>(conninfo, "reader " + std::to_string(i), named));
    }
    index_ = std::make_unique<LazyConnection>(conninfo, "index", named);
  }

  std::string Describe() const override { return description_; }

  DurablePoolStats PoolStats() const override {
    DurablePoolStats s;
    auto count = [&s](const LazyConnection& conn) {
      ++s.size;
      s.open += conn.open() ? 1 : 0;
      s.busy += conn.busy() ? 1 : 0;
    };
    for (const auto& w : writers_) count(*w);
    for (const auto& r : readers_) count(*r);
    count(sweeper_);
    return s;
  }

  Status CommitBatch(int writer, const std::vector<DurableWrite>& writes) override {
    Status applied = Apply(*writers_[writer], writes);
    if (!applied.ok()) return std::move(applied).error().Within("commit");
    return Ok();
  }

  Result<Guarded> CommitIf(int writer_index, const std::vector<std::string>& keys, UnixMillis now,
                           const RowCheck& unchanged,
                           const std::vector<DurableWrite>& writes) override {
    LazyConnection& writer = *writers_[writer_index];
    auto begun = writer.Exec(kBegin, {});
    if (!begun.ok()) return std::move(begun).error().Within("guarded commit");
    Result<bool> held = GuardedBody(writer, keys, now, unchanged, writes);
    if (held.ok() && *held) {
      auto committed = writer.Exec(kCommitTransaction, {});
      if (committed.ok()) return Guarded::kCommitted;
      // Not retried: a second attempt would find this one's rows if it did commit.
      if (!writer.open()) return Guarded::kUnknown;
      return std::move(committed).error().Within("guarded commit");
    }
    // A broken connection rolled back with it; otherwise nothing of it may stay.
    if (writer.open()) (void)writer.Exec(kRollback, {});
    if (!held.ok()) return std::move(held).error().Within("guarded commit");
    return Guarded::kRefused;
  }

  Status DeleteAll(int writer) override {
    auto res = writers_[writer]->Exec(kDeleteAll, {});
    if (!res.ok()) return std::move(res).error().Within("delete all sessions");
    return Ok();
  }

  Result<std::optional<DurableValue>> Read(int reader, const std::string& key,
                                           UnixMillis now) override {
    auto res = ExecRetryingOnce(Reader(reader), kRead, {key, Int8Param(now)});
    if (!res.ok()) return std::move(res).error().Within("read");
    if (res->rows() == 0) return std::optional<DurableValue>();
    return std::optional<DurableValue>(ValueAt(*res, 0, 0));
  }

  Result<std::vector<std::optional<DurableValue>>> ReadMany(int reader,
                                                            const std::vector<std::string>& keys,
                                                            UnixMillis now) override {
    if (keys.size() == 1) {
      auto one = Read(reader, keys[0], now);
      if (!one.ok()) return std::move(one).error();
      return std::vector<std::optional<DurableValue>>{std::move(one).value()};
    }
    BinaryArray ids(kByteaOid);
    std::unordered_map<std::string_view, size_t> slot_of;
    for (size_t i = 0; i < keys.size(); ++i) {
      ids.Add(keys[i]);
      slot_of.emplace(keys[i], i);
    }
    auto res = ExecRetryingOnce(Reader(reader), kReadMany, {ids.Encode(), Int8Param(now)});
    if (!res.ok()) return std::move(res).error().Within("read");
    std::vector<std::optional<DurableValue>> rows(keys.size());
    for (int i = 0; i < res->rows(); ++i) {
      auto found = slot_of.find(res->Bytes(i, 0));
      if (found == slot_of.end()) continue;
      rows[found->second] = ValueAt(*res, i, 1);
    }
    return rows;
  }

  Result<LiveCount> CountLive(UnixMillis now) override {
    auto res = sweeper_.Exec(kCount, {Int8Param(now)});
    if (!res.ok()) return std::move(res).error();
    LiveCount count;
    count.sessions = res->Int8(0, 0);
    count.expiring = res->Int8(0, 1);
    return count;
  }

  Result<ScanReply> ScanKeys(int reader, uint64_t cursor, size_t count, UnixMillis now) override {
    // One row more than asked, to know whether the last hash is complete and where to go on.
    auto res = Reader(reader).Exec(kScan, {Int8Param(now), Int8Param(static_cast<int64_t>(cursor)),
                                           Int8Param(static_cast<int64_t>(count) + 1)});
    if (!res.ok()) return std::move(res).error();
    const QueryResult& r = *res;
    int n = r.rows();
    ScanReply reply;
    auto hash_at = [&](int i) { return static_cast<uint64_t>(r.Int8(i, 1)); };
    int keep = n;
    if (n > static_cast<int>(count)) {
      // The page is full: stop before the hash of the extra row, so that hash is read whole
      // next time (keys sharing it are returned together).
      uint64_t next = hash_at(n - 1);
      keep = 0;
      while (keep < n && hash_at(keep) < next) ++keep;
      if (keep == 0) keep = n;  // every row shares one hash: return them all (60 bits: rare)
      reply.next_cursor = keep < n ? hash_at(keep) : hash_at(n - 1) + 1;
    }
    for (int i = 0; i < keep; ++i) reply.keys.emplace_back(r.Bytes(i, 0));
    return reply;
  }

  Status LoadIndex(UnixMillis now,
                   const std::function<void(std::string, UnixMillis, size_t)>& visit) override {
    Status loaded = index_->ForEachRow(kIndex, {Int8Param(now)}, [&](const QueryResult& row) {
      visit(std::string(row.Bytes(0, 0)), row.Int8(0, 1), static_cast<size_t>(row.Int4(0, 2)));
    });
    index_->Close();  // only needed at start
    if (!loaded.ok()) return std::move(loaded).error().Within("load index");
    return Ok();
  }

  Result<int64_t> SweepExpired(UnixMillis now, int limit) override {
    if (sweeper_lock_ && (!holds_sweeper_lock_ || !sweeper_.Healthy())) {
      holds_sweeper_lock_ = false;
      auto lock = sweeper_.Exec(kSweepLock, {Int8Param(kSweeperLockKey)});
      if (!lock.ok()) return std::move(lock).error().Within("sweep");
      holds_sweeper_lock_ = lock->Bool(0, 0);
      if (!holds_sweeper_lock_) return int64_t{0};  // another daemon sweeps this database
    }
    auto res = sweeper_.Exec(kSweep, {Int8Param(now), Int8Param(limit)});
    if (!res.ok()) return std::move(res).error().Within("sweep");
    return static_cast<int64_t>(res->AffectedRows());
  }

 private:
  // One batch's writes as one statement on `writer`.
  static Status Apply(LazyConnection& writer, const std::vector<DurableWrite>& writes) {
    BinaryArray up_ids(kByteaOid), up_data(kByteaOid), up_exp(kInt8Oid);
    BinaryArray del_ids(kByteaOid), touch_ids(kByteaOid), touch_exp(kInt8Oid);
    size_t upserts = 0, key_bytes = 0, value_bytes = 0;
    for (const auto& w : writes) {
      if (w.kind != DurableWrite::Kind::kUpsert) continue;
      ++upserts;
      key_bytes += w.key.size();
      value_bytes += w.value.size();
    }
    // Each value is copied once here and once by libpq, never regrown.
    up_ids.Reserve(upserts, key_bytes);
    up_data.Reserve(upserts, value_bytes);
    up_exp.Reserve(upserts, 8 * upserts);
    for (const auto& w : writes) {
      switch (w.kind) {
        case DurableWrite::Kind::kUpsert:
          up_ids.Add(w.key);
          up_data.Add(w.value.str());
          up_exp.AddInt64(w.expires_at);
          break;
        case DurableWrite::Kind::kDelete:
          del_ids.Add(w.key);
          break;
        case DurableWrite::Kind::kTouch:
          touch_ids.Add(w.key);
          touch_exp.AddInt64(w.expires_at);
          break;
      }
    }
    bool upserts_only = del_ids.empty() && touch_ids.empty();
    std::vector<std::string> params;
    params.reserve(6);
    params.push_back(std::move(up_ids).Encode());
    params.push_back(std::move(up_data).Encode());
    params.push_back(std::move(up_exp).Encode());
    if (!upserts_only) {
      params.push_back(std::move(del_ids).Encode());
      params.push_back(std::move(touch_ids).Encode());
      params.push_back(std::move(touch_exp).Encode());
    }
    auto res = writer.Exec(upserts_only ? kUpsertOnly : kCommit, params);
    if (!res.ok()) return std::move(res).error();
    return Ok();
  }

  // CommitIf inside its transaction: true when the rows held and the writes were applied.
  static Result<bool> GuardedBody(LazyConnection& writer, const std::vector<std::string>& keys,
                                  UnixMillis now, const RowCheck& unchanged,
                                  const std::vector<DurableWrite>& writes) {
    BinaryArray ids(kByteaOid);
    for (const auto& key : keys) ids.Add(key);
    auto placed = writer.Exec(kPlacehold, {ids.Encode()});
    if (!placed.ok()) return std::move(placed).error();
    auto locked = writer.Exec(kLock, {ids.Encode()});
    if (!locked.ok()) return std::move(locked).error();
    std::unordered_map<std::string_view, size_t> slot_of;
    for (size_t i = 0; i < keys.size(); ++i) slot_of.emplace(keys[i], i);
    std::vector<std::optional<DurableValue>> rows(keys.size());
    for (int i = 0; i < locked->rows(); ++i) {
      auto found = slot_of.find(locked->Bytes(i, 0));
      if (found == slot_of.end()) continue;
      DurableValue v = ValueAt(*locked, i, 1);
      if (v.expires_at == 0 || v.expires_at > now) rows[found->second] = std::move(v);
    }
    if (!unchanged(rows)) return false;
    std::unordered_set<std::string_view> written;
    for (const auto& w : writes) written.insert(w.key);
    BinaryArray unused(kByteaOid);
    for (int i = 0; i < placed->rows(); ++i) {
      if (written.count(placed->Bytes(i, 0)) == 0) unused.Add(placed->Bytes(i, 0));
    }
    if (!unused.empty()) {
      auto removed = writer.Exec(kUnplacehold, {unused.Encode()});
      if (!removed.ok()) return std::move(removed).error();
    }
    SKYDB_RETURN_IF_ERROR(Apply(writer, writes));
    return true;
  }

  LazyConnection& Reader(int reader) {
    return *readers_[static_cast<size_t>(reader) % readers_.size()];
  }

  // A read that failed because its connection broke or turned read-only (a failover) is
  // retried at once on a fresh connection, so a client sees an error only if that fails too.
  static Result<QueryResult> ExecRetryingOnce(LazyConnection& conn, const Statement& statement,
                                              const std::vector<std::string>& params) {
    auto res = conn.Exec(statement, params);
    if (res.ok() || conn.open()) return res;
    return conn.Exec(statement, params);
  }

  std::string description_;
  std::vector<std::unique_ptr<LazyConnection>> writers_;
  std::vector<std::unique_ptr<LazyConnection>> readers_;
  std::unique_ptr<LazyConnection> index_;
  LazyConnection sweeper_;
  const bool sweeper_lock_;  // false under transaction pooling: every daemon sweeps
  bool holds_sweeper_lock_ = false;
};

}  // namespace
}  // namespace skydb::store

namespace skydb {

std::unique_ptr<DurableBackend> NewPostgresDurable(const std::string& conninfo,
                                                   const std::string& description, int writers,
                                                   int readers, bool transaction_pooling) {
  return std::make_unique<store::PgDurable>(conninfo, description, writers, readers,
                                            transaction_pooling);
}

}  // namespace skydb
