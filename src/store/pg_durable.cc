// The PostgreSQL durable layer: one connection per group-commit writer, per loader and for the
// sweeper, each a pg::LazyConnection (reopened after a failure, left when its server turns
// read-only). A batch is ONE statement (data-modifying CTEs over unnest() of binary arrays), so
// it costs one round trip and one COMMIT (one WAL flush) however many rows it carries. Keys and
// values travel as binary bytea: no escaping, every byte value round-trips.
#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "pgconn/pgconn.h"
#include "skydb/durable.h"
#include "store/pg_sql.h"

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
using namespace sql;  // NOLINT(google-build-using-namespace): the statements of pg_sql.h

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

  Result<CommitResult> Commit(int writer_index, const CommitRequest& request) override {
    LazyConnection& writer = *writers_[writer_index];
    CommitResult result;
    result.refused.assign(request.guards.size(), false);
    if (request.guards.empty() && !request.delete_all) {
      Status applied = Apply(writer, request.writes);
      if (!applied.ok()) return std::move(applied).error().Within("commit");
      return result;
    }
    auto begun = writer.Exec(kBegin, {});
    if (!begun.ok()) return std::move(begun).error().Within("commit");
    Status body = TransactionBody(writer, request, &result.refused);
    if (body.ok()) {
      auto committed = writer.Exec(kCommitTransaction, {});
      if (committed.ok()) return result;
      // Not retried with its guards: a second attempt would find this one's rows if it did
      // commit.
      if (!request.guards.empty() && !writer.open()) {
        result.unknown = true;
        return result;
      }
      return std::move(committed).error().Within("commit");
    }
    // A broken connection rolled back with it; otherwise nothing of it may stay.
    if (writer.open()) (void)writer.Exec(kRollback, {});
    return std::move(body).error().Within("commit");
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

  // Commit's transaction after BEGIN: the guards' rows locked and checked (`refused` per
  // guard), FLUSHALL's delete, then the writes of the guards that held and of no guard.
  static Status TransactionBody(LazyConnection& writer, const CommitRequest& request,
                                std::vector<bool>* refused) {
    if (!request.guards.empty()) SKYDB_RETURN_IF_ERROR(CheckGuards(writer, request, refused));
    bool any_refused = std::find(refused->begin(), refused->end(), true) != refused->end();
    // A FLUSHALL is a unit of its own: a failed guard is its own.
    if (request.delete_all && !any_refused) {
      auto deleted = writer.Exec(kDeleteAll, {});
      if (!deleted.ok()) return std::move(deleted).error();
    }
    if (!any_refused) return request.writes.empty() ? Ok() : Apply(writer, request.writes);
    std::vector<DurableWrite> kept = KeptWrites(request, *refused);
    return kept.empty() ? Ok() : Apply(writer, kept);
  }

  // The writes of no guard or of a guard that held.
  static std::vector<DurableWrite> KeptWrites(const CommitRequest& request,
                                              const std::vector<bool>& refused) {
    std::vector<DurableWrite> kept;
    for (size_t i = 0; i < request.writes.size(); ++i) {
      int guard = i < request.guard_of.size() ? request.guard_of[i] : -1;
      if (guard < 0 || !refused[static_cast<size_t>(guard)]) kept.push_back(request.writes[i]);
    }
    return kept;
  }

  // Locks every guarded key's row (placeholders for the absent), checks each guard against
  // them, and removes the placeholders no kept write replaces.
  static Status CheckGuards(LazyConnection& writer, const CommitRequest& request,
                            std::vector<bool>* refused) {
    std::vector<std::string_view> keys;
    for (const auto& g : request.guards) keys.insert(keys.end(), g.keys.begin(), g.keys.end());
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    BinaryArray ids(kByteaOid);
    for (const auto& key : keys) ids.Add(key);
    std::string encoded = std::move(ids).Encode();
    auto placed = writer.Exec(kPlacehold, {encoded});
    if (!placed.ok()) return std::move(placed).error();
    auto locked = writer.Exec(kLock, {encoded});
    if (!locked.ok()) return std::move(locked).error();
    std::unordered_map<std::string_view, DurableValue> live;
    for (int i = 0; i < locked->rows(); ++i) {
      DurableValue v = ValueAt(*locked, i, 1);
      auto key = std::lower_bound(keys.begin(), keys.end(), locked->Bytes(i, 0));
      if (key == keys.end() || *key != locked->Bytes(i, 0)) continue;
      if (v.expires_at == 0 || v.expires_at > request.now) live.emplace(*key, std::move(v));
    }
    for (size_t g = 0; g < request.guards.size(); ++g) {
      const RowGuard& guard = request.guards[g];
      std::vector<std::optional<DurableValue>> rows(guard.keys.size());
      for (size_t i = 0; i < guard.keys.size(); ++i) {
        auto it = live.find(guard.keys[i]);
        if (it != live.end()) rows[i] = it->second;
      }
      (*refused)[g] = !guard.unchanged(rows);
    }
    std::unordered_set<std::string_view> written;
    for (size_t i = 0; i < request.writes.size(); ++i) {
      int guard = i < request.guard_of.size() ? request.guard_of[i] : -1;
      if (guard < 0 || !(*refused)[static_cast<size_t>(guard)]) {
        written.insert(request.writes[i].key);
      }
    }
    BinaryArray unused(kByteaOid);
    for (int i = 0; i < placed->rows(); ++i) {
      if (written.count(placed->Bytes(i, 0)) == 0) unused.Add(placed->Bytes(i, 0));
    }
    if (unused.empty()) return Ok();
    auto removed = writer.Exec(kUnplacehold, {std::move(unused).Encode()});
    if (!removed.ok()) return std::move(removed).error();
    return Ok();
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
