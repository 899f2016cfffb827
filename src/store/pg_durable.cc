// The PostgreSQL durable layer: one libpq connection per writer partition, per loader and for
// the sweeper. A batch is ONE statement (data-modifying CTEs over unnest() of binary arrays),
// so it costs one round trip and one COMMIT (one WAL flush) however many rows it carries.
// Keys and values travel as binary bytea: no escaping, every byte value round-trips.
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>

#include "pgconn/pgconn.h"
#include "skydb/durable.h"

namespace skydb::store {
namespace {

constexpr unsigned kByteaOid = 17;
constexpr unsigned kInt8Oid = 20;
constexpr int64_t kSweeperLockKey = 0x736b7964625377;  // "skydbSw": one sweeper per database

// Value writes: the whole of the common batch's statement, and the first CTE of the general one.
#define SKYDB_UPSERT_SQL                                                      \
  "INSERT INTO sky_sessions AS s (id, data, expires_at, expiry_bucket) "      \
  "SELECT u.id, u.data, NULLIF(u.exp, 0), NULLIF(u.exp, 0) / 3600000 "        \
  "FROM unnest($1::bytea[], $2::bytea[], $3::int8[]) AS u(id, data, exp) "    \
  "ON CONFLICT (id) DO UPDATE SET data = excluded.data, "                     \
  "expires_at = excluded.expires_at, expiry_bucket = excluded.expiry_bucket"

// A batch with deletes or deadline-only changes: one statement of three data-modifying CTEs.
const char* const kCommitSql =
    "WITH up AS (" SKYDB_UPSERT_SQL " RETURNING 1), "
    "del AS (DELETE FROM sky_sessions WHERE id = ANY($4::bytea[]) RETURNING 1), "
    "touch AS (UPDATE sky_sessions AS s "
    "SET expires_at = NULLIF(t.exp, 0), expiry_bucket = NULLIF(t.exp, 0) / 3600000 "
    "FROM unnest($5::bytea[], $6::int8[]) AS t(id, exp) WHERE s.id = t.id RETURNING 1) "
    "SELECT (SELECT count(*) FROM up), (SELECT count(*) FROM del), (SELECT count(*) FROM touch)";

// The common batch — value writes only — as a plain upsert: a third of the executor work of
// the three-CTE statement per commit.
const char* const kUpsertOnlySql = SKYDB_UPSERT_SQL;
#undef SKYDB_UPSERT_SQL

const char* const kReadSql =
    "SELECT data, COALESCE(expires_at, 0) FROM sky_sessions "
    "WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)";

const char* const kReadManySql =
    "SELECT id, data, COALESCE(expires_at, 0) FROM sky_sessions "
    "WHERE id = ANY($1::bytea[]) AND (expires_at IS NULL OR expires_at > $2)";

const char* const kCountSql =
    "SELECT count(*), count(expires_at) FROM sky_sessions "
    "WHERE expires_at IS NULL OR expires_at > $1";

// SCAN for shared coherence: keyset pagination over a 60-bit hash of the key, so the cursor is
// a number (as Redis clients expect) and rows added or removed meanwhile shift nothing.
const char* const kScanSql =
    "SELECT id, h FROM (SELECT id, ('x' || substr(md5(id), 1, 15))::bit(60)::int8 AS h"
    " FROM sky_sessions WHERE expires_at IS NULL OR expires_at > $1) AS k"
    " WHERE h >= $2 ORDER BY h LIMIT $3";

const char* const kIndexSql =
    "SELECT id, COALESCE(expires_at, 0), octet_length(data) FROM sky_sessions "
    "WHERE expires_at IS NULL OR expires_at > $1";

// Uses the partial index on expiry_bucket; the expires_at filter keeps rows of the current
// bucket that are still live. SKIP LOCKED: never waits on a row a writer holds.
const char* const kSweepSql =
    "DELETE FROM sky_sessions WHERE id IN ("
    " SELECT id FROM sky_sessions"
    " WHERE expiry_bucket <= $1 / 3600000 AND expires_at <= $1"
    " LIMIT $2 FOR UPDATE SKIP LOCKED)";

void PutInt32(std::string& buf, int32_t v) {
  uint32_t n = htonl(static_cast<uint32_t>(v));
  buf.append(reinterpret_cast<const char*>(&n), 4);
}

void PutInt64(std::string& buf, int64_t v) {
  uint32_t hi = htonl(static_cast<uint32_t>(static_cast<uint64_t>(v) >> 32));
  uint32_t lo = htonl(static_cast<uint32_t>(static_cast<uint64_t>(v) & 0xffffffffu));
  buf.append(reinterpret_cast<const char*>(&hi), 4);
  buf.append(reinterpret_cast<const char*>(&lo), 4);
}

int64_t GetInt64(const char* p) {
  uint32_t hi, lo;
  std::memcpy(&hi, p, 4);
  std::memcpy(&lo, p + 4, 4);
  return static_cast<int64_t>((static_cast<uint64_t>(ntohl(hi)) << 32) | ntohl(lo));
}

// A one-dimensional array in PostgreSQL's binary wire format.
class BinaryArray {
 public:
  explicit BinaryArray(unsigned element_oid) : oid_(element_oid) {}
  void Add(std::string_view bytes) {
    PutInt32(body_, static_cast<int32_t>(bytes.size()));
    body_.append(bytes);
    ++count_;
  }
  void AddInt64(int64_t v) {
    PutInt32(body_, 8);
    PutInt64(body_, v);
    ++count_;
  }
  bool empty() const { return count_ == 0; }
  std::string Encode() const {
    std::string out;
    PutInt32(out, count_ == 0 ? 0 : 1);  // dimensions
    PutInt32(out, 0);                    // no NULLs
    PutInt32(out, static_cast<int32_t>(oid_));
    if (count_ != 0) {
      PutInt32(out, count_);
      PutInt32(out, 1);  // lower bound
    }
    out += body_;
    return out;
  }

 private:
  unsigned oid_;
  int32_t count_ = 0;
  std::string body_;
};

struct PgConnFree {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct PgResultFree {
  void operator()(PGresult* r) const { PQclear(r); }
};
using ConnPtr = std::unique_ptr<PGconn, PgConnFree>;
using ResultPtr = std::unique_ptr<PGresult, PgResultFree>;

bool ReadOnly(PGconn* conn) {
  auto on = [conn](const char* name) {
    const char* v = PQparameterStatus(conn, name);
    return v != nullptr && std::strcmp(v, "on") == 0;
  };
  return on("in_hot_standby") || on("default_transaction_read_only");
}

std::string Trimmed(const char* message) {
  std::string s = message != nullptr ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// One connection, reopened on demand: a broken connection is replaced at the next use, at
// once (no lock-out), so a restarted PostgreSQL is picked up by the first retry.
class Slot {
 public:
  Slot(std::string conninfo, std::string name) : conninfo_(std::move(conninfo)), name_(name) {}

  Result<PGconn*> Get() {
    if (conn_ && PQstatus(conn_.get()) == CONNECTION_OK) {
      if (!ReadOnly(conn_.get())) return conn_.get();
      // The server says (PostgreSQL 14+ reports it) that it became a standby or read-only:
      // a failover happened; find the read-write server among the hosts again.
      spdlog::warn("store: the server of the {} connection became read-only; reconnecting",
                   name_);
    }
    prepared_.clear();
    // Defaults first, then the operator's string (URI or keywords, several hosts allowed),
    // which overrides them: a read-write server is required (a standby or a read-only server
    // is skipped for the next host), and an unreachable host costs at most connect_timeout.
    const char* const keywords[] = {"application_name", "connect_timeout",
                                    "target_session_attrs", "options", "dbname", nullptr};
    const char* const values[] = {"skydb", "10", "read-write", pg::kSearchPathOption,
                                  conninfo_.c_str(), nullptr};
    conn_.reset(PQconnectdbParams(keywords, values, /*expand_dbname=*/1));
    if (PQstatus(conn_.get()) != CONNECTION_OK) {
      std::string why = Trimmed(PQerrorMessage(conn_.get()));
      Reset();
      return Error::Unavailable("cannot connect to PostgreSQL (" + name_ + "): " + why);
    }
    open_ = true;
    return conn_.get();
  }
  void Reset() {
    conn_.reset();
    prepared_.clear();
    open_ = false;
  }
  // For metrics, from any thread.
  bool open() const { return open_.load(std::memory_order_relaxed); }
  bool busy() const { return busy_.load(std::memory_order_relaxed); }

  // Runs a parameterised statement; binary parameters, binary results. With `prepared_as`,
  // the statement is prepared once per connection under that name (no parse and plan per
  // call: it matters for the commit statement, which runs once per batch).
  Result<ResultPtr> Exec(const char* sql, const std::vector<std::string>& params,
                         const std::vector<unsigned>& types, const char* prepared_as = nullptr) {
    SKYDB_ASSIGN_OR_RETURN(PGconn * conn, Get());
    std::vector<Oid> oids(types.begin(), types.end());
    if (prepared_as != nullptr && prepared_.count(prepared_as) == 0) {
      ResultPtr made(PQprepare(conn, prepared_as, sql, static_cast<int>(oids.size()), oids.data()));
      if (PQresultStatus(made.get()) != PGRES_COMMAND_OK) return Failure(conn, made.get());
      prepared_.insert(prepared_as);
    }
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    for (const auto& p : params) {
      values.push_back(p.data());
      lengths.push_back(static_cast<int>(p.size()));
      formats.push_back(1);
    }
    busy_ = true;
    ResultPtr res(prepared_as != nullptr
                      ? PQexecPrepared(conn, prepared_as, static_cast<int>(params.size()),
                                       values.data(), lengths.data(), formats.data(), 1)
                      : PQexecParams(conn, sql, static_cast<int>(params.size()), oids.data(),
                                     values.data(), lengths.data(), formats.data(), 1));
    busy_ = false;
    if (ReadOnly(conn)) {
      // The server reported, with this very result, that it turned read-only: what it
      // answered may already be stale, as a new primary may be taking writes.
      Reset();
      return Error::Unavailable("the server became read-only (a standby, or "
                                "default_transaction_read_only): reconnecting to find the "
                                "read-write primary among the hosts");
    }
    ExecStatusType status = PQresultStatus(res.get());
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) return Failure(conn, res.get());
    return res;
  }

  PGconn* raw() { return conn_.get(); }

 private:
  Error Failure(PGconn* conn, const PGresult* res) {
    std::string why = Trimmed(res != nullptr ? PQresultErrorMessage(res) : PQerrorMessage(conn));
    const char* state = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    if (state != nullptr && std::strcmp(state, "25006") == 0) {
      // read_only_sql_transaction: this server became a standby or read-only. Reconnecting
      // lets libpq find the read-write server among the connection string's hosts.
      Reset();
      return Error::Unavailable(why + " (SQLSTATE 25006: the server is read-only; reconnecting "
                                      "to find a read-write primary among the hosts)");
    }
    if (PQstatus(conn) != CONNECTION_OK) Reset();
    return Error::Unavailable(why);
  }

  std::string conninfo_;
  std::string name_;
  ConnPtr conn_;
  std::set<std::string> prepared_;  // statement names prepared on conn_
  std::atomic<bool> open_{false};
  std::atomic<bool> busy_{false};
};

std::string Int64Param(int64_t v) {
  std::string s;
  PutInt64(s, v);
  return s;
}

class PgDurable final : public DurableBackend {
 public:
  PgDurable(std::string conninfo, std::string description, int writers, int readers)
      : description_(std::move(description)), sweeper_(conninfo, "sweeper") {
    for (int i = 0; i < writers; ++i) {
      writers_.push_back(std::make_unique<Slot>(conninfo, "writer " + std::to_string(i)));
    }
    for (int i = 0; i < readers; ++i) {
      readers_.push_back(std::make_unique<Slot>(conninfo, "reader " + std::to_string(i)));
    }
    index_ = std::make_unique<Slot>(conninfo, "index");
  }

  std::string Describe() const override { return description_; }

  DurablePoolStats PoolStats() const override {
    DurablePoolStats s;
    auto count = [&s](const Slot& slot) {
      ++s.size;
      s.open += slot.open() ? 1 : 0;
      s.busy += slot.busy() ? 1 : 0;
    };
    for (const auto& w : writers_) count(*w);
    for (const auto& r : readers_) count(*r);
    count(sweeper_);
    return s;
  }

  Status CommitBatch(int partition, const std::vector<DurableWrite>& writes) override {
    BinaryArray up_ids(kByteaOid), up_data(kByteaOid), up_exp(kInt8Oid);
    BinaryArray del_ids(kByteaOid), touch_ids(kByteaOid), touch_exp(kInt8Oid);
    for (const auto& w : writes) {
      switch (w.kind) {
        case DurableWrite::Kind::kUpsert:
          up_ids.Add(w.key);
          up_data.Add(w.value);
          up_exp.AddInt64(w.expires_at);
          break;
        case DurableWrite::Kind::kDelete: del_ids.Add(w.key); break;
        case DurableWrite::Kind::kTouch:
          touch_ids.Add(w.key);
          touch_exp.AddInt64(w.expires_at);
          break;
      }
    }
    static const std::vector<unsigned> kTypes = {1001, 1001, 1016, 1001, 1001, 1016};
    if (del_ids.empty() && touch_ids.empty()) {
      static const std::vector<unsigned> kUpsertTypes(kTypes.begin(), kTypes.begin() + 3);
      auto res = writers_[partition]->Exec(
          kUpsertOnlySql, {up_ids.Encode(), up_data.Encode(), up_exp.Encode()}, kUpsertTypes,
          "skydb_upsert");
      if (!res.ok()) return std::move(res).error().Within("commit");
      return Ok();
    }
    std::vector<std::string> params = {up_ids.Encode(),  up_data.Encode(),   up_exp.Encode(),
                                       del_ids.Encode(), touch_ids.Encode(), touch_exp.Encode()};
    auto res = writers_[partition]->Exec(kCommitSql, params, kTypes, "skydb_commit");
    if (!res.ok()) return std::move(res).error().Within("commit");
    return Ok();
  }

  Result<std::optional<DurableValue>> Read(int reader, const std::string& key,
                                           UnixMillis now) override {
    Slot& slot = *readers_[static_cast<size_t>(reader) % readers_.size()];
    auto res = ExecRetryingOnce(slot, kReadSql, {key, Int64Param(now)}, {kByteaOid, kInt8Oid});
    if (!res.ok()) return std::move(res).error().Within("read");
    PGresult* r = res->get();
    if (PQntuples(r) == 0) return std::optional<DurableValue>();
    DurableValue v;
    v.value.assign(PQgetvalue(r, 0, 0), static_cast<size_t>(PQgetlength(r, 0, 0)));
    v.expires_at = GetInt64(PQgetvalue(r, 0, 1));
    return std::optional<DurableValue>(std::move(v));
  }

  Result<std::vector<std::optional<DurableValue>>> ReadMany(
      int reader, const std::vector<std::string>& keys, UnixMillis now) override {
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
    Slot& slot = *readers_[static_cast<size_t>(reader) % readers_.size()];
    auto res = ExecRetryingOnce(slot, kReadManySql, {ids.Encode(), Int64Param(now)},
                                {1001, kInt8Oid}, "skydb_read_many");
    if (!res.ok()) return std::move(res).error().Within("read");
    std::vector<std::optional<DurableValue>> rows(keys.size());
    PGresult* r = res->get();
    for (int i = 0; i < PQntuples(r); ++i) {
      std::string_view id(PQgetvalue(r, i, 0), static_cast<size_t>(PQgetlength(r, i, 0)));
      auto found = slot_of.find(id);
      if (found == slot_of.end()) continue;
      DurableValue v;
      v.value.assign(PQgetvalue(r, i, 1), static_cast<size_t>(PQgetlength(r, i, 1)));
      v.expires_at = GetInt64(PQgetvalue(r, i, 2));
      rows[found->second] = std::move(v);
    }
    return rows;
  }

  Result<LiveCount> CountLive(UnixMillis now) override {
    auto res = sweeper_.Exec(kCountSql, {Int64Param(now)}, {kInt8Oid});
    if (!res.ok()) return std::move(res).error();
    LiveCount count;
    count.sessions = GetInt64(PQgetvalue(res->get(), 0, 0));
    count.expiring = GetInt64(PQgetvalue(res->get(), 0, 1));
    return count;
  }

  Result<ScanReply> ScanKeys(int reader, uint64_t cursor, size_t count,
                             UnixMillis now) override {
    Slot& slot = *readers_[static_cast<size_t>(reader) % readers_.size()];
    // One row more than asked, to know whether the last hash is complete and where to go on.
    auto res = slot.Exec(kScanSql,
                         {Int64Param(now), Int64Param(static_cast<int64_t>(cursor)),
                          Int64Param(static_cast<int64_t>(count) + 1)},
                         {kInt8Oid, kInt8Oid, kInt8Oid});
    if (!res.ok()) return std::move(res).error();
    PGresult* r = res->get();
    int n = PQntuples(r);
    ScanReply reply;
    auto hash_at = [&](int i) { return static_cast<uint64_t>(GetInt64(PQgetvalue(r, i, 1))); };
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
    for (int i = 0; i < keep; ++i) {
      reply.keys.emplace_back(PQgetvalue(r, i, 0), static_cast<size_t>(PQgetlength(r, i, 0)));
    }
    return reply;
  }

  Status LoadIndex(UnixMillis now,
                   const std::function<void(std::string, UnixMillis, size_t)>& visit) override {
    SKYDB_ASSIGN_OR_RETURN(PGconn * conn, index_->Get());
    std::string param = Int64Param(now);
    const char* values[] = {param.data()};
    int lengths[] = {8};
    int formats[] = {1};
    Oid types[] = {kInt8Oid};
    if (PQsendQueryParams(conn, kIndexSql, 1, types, values, lengths, formats, 1) != 1 ||
        PQsetSingleRowMode(conn) != 1) {
      return Error::Unavailable("load index: " + Trimmed(PQerrorMessage(conn)));
    }
    std::string failure;
    while (PGresult* raw = PQgetResult(conn)) {
      ResultPtr r(raw);
      ExecStatusType st = PQresultStatus(raw);
      if (st == PGRES_SINGLE_TUPLE) {
        uint32_t len_be;
        std::memcpy(&len_be, PQgetvalue(raw, 0, 2), 4);
        visit(std::string(PQgetvalue(raw, 0, 0), static_cast<size_t>(PQgetlength(raw, 0, 0))),
              GetInt64(PQgetvalue(raw, 0, 1)), ntohl(len_be));
      } else if (st != PGRES_TUPLES_OK && failure.empty()) {
        failure = Trimmed(PQresultErrorMessage(raw));
      }
    }
    index_->Reset();  // only needed at start
    if (!failure.empty()) return Error::Unavailable("load index: " + failure);
    return Ok();
  }

  Result<int64_t> SweepExpired(UnixMillis now, int limit) override {
    if (!holds_sweeper_lock_ || sweeper_.raw() == nullptr ||
        PQstatus(sweeper_.raw()) != CONNECTION_OK) {
      holds_sweeper_lock_ = false;
      auto lock = sweeper_.Exec("SELECT pg_try_advisory_lock($1)", {Int64Param(kSweeperLockKey)},
                                {kInt8Oid});
      if (!lock.ok()) return std::move(lock).error().Within("sweep");
      holds_sweeper_lock_ = *PQgetvalue(lock->get(), 0, 0) != 0;
      if (!holds_sweeper_lock_) return int64_t{0};  // another daemon sweeps this database
    }
    auto res = sweeper_.Exec(kSweepSql, {Int64Param(now), Int64Param(limit)},
                             {kInt8Oid, kInt8Oid});
    if (!res.ok()) return std::move(res).error().Within("sweep");
    return static_cast<int64_t>(std::strtoll(PQcmdTuples(res->get()), nullptr, 10));
  }

 private:
  // A read that failed because its connection broke or turned read-only (a failover) is
  // retried at once on a fresh connection, so a client sees an error only if that fails too.
  static Result<ResultPtr> ExecRetryingOnce(Slot& slot, const char* sql,
                                            const std::vector<std::string>& params,
                                            const std::vector<unsigned>& types,
                                            const char* prepared_as = nullptr) {
    auto res = slot.Exec(sql, params, types, prepared_as);
    if (res.ok() || slot.open()) return res;
    return slot.Exec(sql, params, types, prepared_as);
  }

  std::string description_;
  std::vector<std::unique_ptr<Slot>> writers_;
  std::vector<std::unique_ptr<Slot>> readers_;
  std::unique_ptr<Slot> index_;
  Slot sweeper_;
  bool holds_sweeper_lock_ = false;
};

}  // namespace
}  // namespace skydb::store

namespace skydb {

std::unique_ptr<DurableBackend> NewPostgresDurable(const std::string& conninfo,
                                                   const std::string& description, int writers,
                                                   int readers) {
  return std::make_unique<store::PgDurable>(conninfo, description, writers, readers);
}

}  // namespace skydb
