#include "store/pg_durable.h"

#include <algorithm>
#include <utility>

#include "store/pg_sql.h"

namespace skydb::store {

using pg::Int8Param;
using pg::LazyConnection;

namespace {

// The sweeper holds a session lock: under transaction pooling only a direct connection can.
bool SweeperHasSession(bool transaction_pooling, const std::string& direct_conninfo) {
  return !transaction_pooling || !direct_conninfo.empty();
}

}  // namespace

PgDurable::PgDurable(std::string conninfo, std::string description, int writers, int readers,
                     bool transaction_pooling, const std::string& direct_conninfo)
    : description_(std::move(description)),
      sweeper_(transaction_pooling && !direct_conninfo.empty() ? direct_conninfo : conninfo,
               "sweeper", SweeperHasSession(transaction_pooling, direct_conninfo)),
      sweeper_lock_(SweeperHasSession(transaction_pooling, direct_conninfo)) {
  bool named = !transaction_pooling;
  for (int i = 0; i < writers; ++i) {
    writers_.push_back(
        std::make_unique<LazyConnection>(conninfo, "writer " + std::to_string(i), named));
  }
  value_buffers_.resize(writers_.size());
  for (int i = 0; i < readers; ++i) {
    readers_.push_back(
        std::make_unique<LazyConnection>(conninfo, "reader " + std::to_string(i), named));
  }
  index_ = std::make_unique<LazyConnection>(conninfo, "index", named);
}

DurablePoolStats PgDurable::PoolStats() const {
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

namespace {

bool Excluded(const std::vector<std::string>& left_out, const std::string& key) {
  return std::binary_search(left_out.begin(), left_out.end(), key);
}

// Every write of the request belongs to a failed guard: the transaction has nothing to commit.
bool NothingKept(const DurableBackend::CommitRequest& request,
                 const std::vector<std::string>& left_out) {
  if (request.delete_all && left_out.empty()) return false;
  auto out = [&](const DurableWrite& w) { return Excluded(left_out, w.key); };
  return std::all_of(request.rows.begin(), request.rows.end(), out) &&
         std::all_of(request.fields.begin(), request.fields.end(), out) &&
         std::all_of(request.cleared.begin(), request.cleared.end(),
                     [&](const std::string& key) { return Excluded(left_out, key); });
}

// Commit's transaction after BEGIN: the guards' rows locked and checked (`refused` per guard),
// FLUSHALL's delete, then the writes of the guards that held and of no guard. `*kept` false:
// nothing was left to write, and the transaction is to be rolled back (no WAL flush).
Status TransactionBody(LazyConnection& writer, std::string& values,
                       const DurableBackend::CommitRequest& request, std::vector<bool>* refused,
                       bool* kept) {
  if (!request.guards.empty()) SKYDB_RETURN_IF_ERROR(CheckGuards(writer, request, refused));
  std::vector<std::string> left_out;
  for (size_t g = 0; g < request.guards.size(); ++g) {
    if (!(*refused)[g]) continue;
    left_out.insert(left_out.end(), request.guards[g].owns.begin(), request.guards[g].owns.end());
  }
  std::sort(left_out.begin(), left_out.end());
  if (!left_out.empty() && request.on_refused) request.on_refused(*refused);
  *kept = !(!left_out.empty() && NothingKept(request, left_out));
  if (!*kept) return Ok();
  // A FLUSHALL is a unit of its own: a failed guard is its own.
  if (request.delete_all && left_out.empty()) {
    auto deleted = writer.Exec(sql::kDeleteAll, {});
    if (!deleted.ok()) return std::move(deleted).error();
  }
  return ApplyWrites(writer, values, request, left_out);
}

bool OneStatement(const DurableBackend::CommitRequest& request) {
  return request.guards.empty() && !request.delete_all && request.cleared.empty() &&
         request.fields.empty();
}

}  // namespace

Result<DurableBackend::CommitResult> PgDurable::Commit(int writer_index,
                                                       const CommitRequest& request) {
  LazyConnection& writer = *writers_[writer_index];
  std::string& values = value_buffers_[writer_index];
  CommitResult result;
  result.refused.assign(request.guards.size(), false);
  if (OneStatement(request)) {
    Status applied = ApplyWrites(writer, values, request, {});
    if (!applied.ok()) return std::move(applied).error().Within("commit");
    return result;
  }
  auto begun = writer.Exec(sql::kBegin, {});
  if (!begun.ok()) return std::move(begun).error().Within("commit");
  bool kept = true;
  Status body = TransactionBody(writer, values, request, &result.refused, &kept);
  if (body.ok() && !kept) {
    (void)writer.Exec(sql::kRollback, {});  // it wrote nothing worth keeping
    return result;
  }
  if (body.ok()) {
    auto committed = writer.Exec(sql::kCommitTransaction, {});
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
  if (writer.open()) (void)writer.Exec(sql::kRollback, {});
  return std::move(body).error().Within("commit");
}

Result<DurableBackend::LiveCount> PgDurable::CountLive(UnixMillis now) {
  auto res = sweeper_.Exec(sql::kCount, {Int8Param(now)});
  if (!res.ok()) return std::move(res).error();
  LiveCount count;
  count.sessions = res->Int8(0, 0);
  count.expiring = res->Int8(0, 1);
  return count;
}

Result<bool> PgDurable::SessionLock(bool& held, int64_t key, const char* what) {
  if (held && sweeper_.Healthy()) return true;
  held = false;
  auto lock = sweeper_.Exec(sql::kSweepLock, {Int8Param(key)});
  if (!lock.ok()) return std::move(lock).error().Within(what);
  held = lock->Bool(0, 0);
  return held;
}

Result<bool> PgDurable::SweeperLock() {
  if (!sweeper_lock_) return true;
  return SessionLock(holds_sweeper_lock_, sql::kSweeperLockKey, "sweep");
}

Result<bool> PgDurable::AnnouncerLock(Announcing what) {
  if (what == Announcing::kExpiredFields) {
    return SessionLock(holds_fields_announcer_lock_, sql::kFieldsAnnouncerLockKey,
                       "announcing expired hash fields");
  }
  return SessionLock(holds_announcer_lock_, sql::kAnnouncerLockKey, "announcing expired keys");
}

void PgDurable::StopAnnouncing(Announcing what) {
  bool fields = what == Announcing::kExpiredFields;
  bool& held = fields ? holds_fields_announcer_lock_ : holds_announcer_lock_;
  if (!std::exchange(held, false) || !sweeper_.Healthy()) return;
  int64_t key = fields ? sql::kFieldsAnnouncerLockKey : sql::kAnnouncerLockKey;
  auto unlocked = sweeper_.Exec(sql::kUnlock, {Int8Param(key)});
  if (unlocked.ok()) return;
  sweeper_.Close();  // a session's locks go with it
  holds_sweeper_lock_ = holds_announcer_lock_ = holds_fields_announcer_lock_ = false;
}

Result<std::vector<std::string>> PgDurable::ExpiredBetween(UnixMillis after, UnixMillis upto,
                                                           int limit) {
  std::vector<std::string> keys;
  // Without a session (transaction pooling, no direct connection) every daemon would announce:
  // none does.
  if (!sweeper_lock_) return keys;
  SKYDB_ASSIGN_OR_RETURN(bool announcer, AnnouncerLock(Announcing::kExpiredKeys));
  if (!announcer) return keys;  // another daemon announces
  auto res =
      sweeper_.Exec(sql::kExpiredBetween, {Int8Param(after), Int8Param(upto), Int8Param(limit)});
  if (!res.ok()) return std::move(res).error().Within("expired keys");
  for (int i = 0; i < res->rows(); ++i) keys.emplace_back(res->Bytes(i, 0));
  return keys;
}

Result<std::vector<ExpiredFields>> PgDurable::FieldsExpiredBetween(UnixMillis after,
                                                                   UnixMillis upto, int limit) {
  std::vector<ExpiredFields> hashes;
  if (!sweeper_lock_) return hashes;  // as ExpiredBetween: without a session none announces
  SKYDB_ASSIGN_OR_RETURN(bool announcer, AnnouncerLock(Announcing::kExpiredFields));
  if (!announcer) return hashes;
  auto res = sweeper_.Exec(sql::kFieldsExpiredBetween,
                           {Int8Param(after), Int8Param(upto), Int8Param(limit)});
  if (!res.ok()) return std::move(res).error().Within("expired hash fields");
  for (int i = 0; i < res->rows(); ++i) {
    hashes.push_back(ExpiredFields{std::string(res->Bytes(i, 0)), res->Bool(i, 1)});
  }
  return hashes;
}

Result<int64_t> PgDurable::SweepExpired(UnixMillis now, int limit) {
  SKYDB_ASSIGN_OR_RETURN(bool sweeper, SweeperLock());
  if (!sweeper) return int64_t{0};  // another daemon sweeps this database
  auto res = sweeper_.Exec(sql::kSweep, {Int8Param(now), Int8Param(limit)});
  if (!res.ok()) return std::move(res).error().Within("sweep");
  auto fields = sweeper_.Exec(sql::kSweepFields, {Int8Param(now), Int8Param(limit)});
  if (!fields.ok()) return std::move(fields).error().Within("sweep of hash fields");
  return static_cast<int64_t>(res->AffectedRows());
}

}  // namespace skydb::store

namespace skydb {

std::unique_ptr<DurableBackend> NewPostgresDurable(const std::string& conninfo,
                                                   const std::string& description, int writers,
                                                   int readers, bool transaction_pooling,
                                                   const std::string& direct_conninfo) {
  return std::make_unique<store::PgDurable>(conninfo, description, writers, readers,
                                            transaction_pooling, direct_conninfo);
}

}  // namespace skydb
