// The reads of the PostgreSQL durable layer (pg_durable.h): rows, with the fields of the hashes
// and sets among them; SCAN's pages; the key index at start.
#include <unordered_map>

#include "store/pg_durable.h"
#include "store/pg_sql.h"

namespace skydb::store {
namespace {

using pg::BinaryArray;
using pg::Int8Param;
using pg::kByteaOid;
using pg::LazyConnection;
using pg::QueryResult;
using pg::Statement;

// A read that failed because its connection broke or turned read-only (a failover) is retried
// at once on a fresh connection, so a client sees an error only if that fails too.
Result<QueryResult> ExecRetryingOnce(LazyConnection& conn, const Statement& statement,
                                     const std::vector<std::string>& params) {
  auto res = conn.Exec(statement, params);
  if (res.ok() || conn.open()) return res;
  return conn.Exec(statement, params);
}

}  // namespace

Status PgDurable::ReadFields(LazyConnection& conn, const std::vector<std::string>& keys,
                             std::vector<std::optional<DurableValue>>& rows, UnixMillis now) {
  BinaryArray ids(kByteaOid);
  std::unordered_map<std::string_view, size_t> slot_of;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!rows[i] || rows[i]->type == ValueType::kString) continue;
    ids.Add(keys[i]);
    slot_of.emplace(keys[i], i);
  }
  if (slot_of.empty()) return Ok();
  auto res = ExecRetryingOnce(conn, sql::kReadFields, {std::move(ids).Encode(), Int8Param(now)});
  if (!res.ok()) return std::move(res).error().Within("read fields");
  for (int i = 0; i < res->rows(); ++i) {
    auto found = slot_of.find(res->Bytes(i, 0));
    if (found == slot_of.end()) continue;
    rows[found->second]->fields.push_back(
        {std::string(res->Bytes(i, 1)), std::string(res->Bytes(i, 2)), res->Int8(i, 3)});
  }
  // A hash or set whose every field is gone (their own deadlines passed) is gone too.
  for (auto& [key, slot] : slot_of) {
    if (rows[slot]->fields.empty()) rows[slot].reset();
  }
  return Ok();
}

Result<std::optional<DurableValue>> PgDurable::Read(int reader, const std::string& key,
                                                    UnixMillis now) {
  auto res = ExecRetryingOnce(Reader(reader), sql::kRead, {key, Int8Param(now)});
  if (!res.ok()) return std::move(res).error().Within("read");
  std::vector<std::optional<DurableValue>> rows(1);
  if (res->rows() > 0) rows[0] = RowValueAt(*res, 0, 0);
  SKYDB_RETURN_IF_ERROR(ReadFields(Reader(reader), {key}, rows, now));
  return std::move(rows[0]);
}

Result<std::vector<std::optional<DurableValue>>> PgDurable::ReadMany(
    int reader, const std::vector<std::string>& keys, UnixMillis now) {
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
  auto res = ExecRetryingOnce(Reader(reader), sql::kReadMany, {ids.Encode(), Int8Param(now)});
  if (!res.ok()) return std::move(res).error().Within("read");
  std::vector<std::optional<DurableValue>> rows(keys.size());
  for (int i = 0; i < res->rows(); ++i) {
    auto found = slot_of.find(res->Bytes(i, 0));
    if (found == slot_of.end()) continue;
    rows[found->second] = RowValueAt(*res, i, 1);
  }
  SKYDB_RETURN_IF_ERROR(ReadFields(Reader(reader), keys, rows, now));
  return rows;
}

Result<ScanReply> PgDurable::ScanKeys(int reader, uint64_t cursor, size_t count, UnixMillis now,
                                      std::optional<ValueType> type) {
  // One row more than asked, to know whether the last hash is complete and where to go on.
  int64_t kind = type ? static_cast<int64_t>(*type) : -1;
  auto res = Reader(reader).Exec(sql::kScan,
                                 {Int8Param(now), Int8Param(static_cast<int64_t>(cursor)),
                                  Int8Param(static_cast<int64_t>(count) + 1), Int8Param(kind)});
  if (!res.ok()) return std::move(res).error();
  const QueryResult& r = *res;
  int n = r.rows();
  ScanReply reply;
  auto hash_at = [&](int i) { return static_cast<uint64_t>(r.Int8(i, 1)); };
  int keep = n;
  if (n > static_cast<int>(count)) {
    // The page is full: stop before the hash of the extra row, so that hash is read whole next
    // time (keys sharing it are returned together).
    uint64_t next = hash_at(n - 1);
    keep = 0;
    while (keep < n && hash_at(keep) < next) ++keep;
    if (keep == 0) keep = n;  // every row shares one hash: return them all (60 bits: rare)
    reply.next_cursor = keep < n ? hash_at(keep) : hash_at(n - 1) + 1;
  }
  for (int i = 0; i < keep; ++i) reply.keys.emplace_back(r.Bytes(i, 0));
  return reply;
}

Status PgDurable::LoadIndex(UnixMillis now, const std::function<void(IndexEntry entry)>& visit) {
  Status loaded = index_->ForEachRow(sql::kIndex, {Int8Param(now)}, [&](const QueryResult& row) {
    visit({std::string(row.Bytes(0, 0)), row.Int8(0, 1), static_cast<size_t>(row.Int4(0, 2)),
           static_cast<ValueType>(row.Int4(0, 3))});
  });
  index_->Close();  // only needed at start
  if (!loaded.ok()) return std::move(loaded).error().Within("load index");
  return Ok();
}

}  // namespace skydb::store
