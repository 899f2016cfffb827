// The write statements of one commit (pg_durable.h): the rows in one statement, then the
// fields, and the guards' checks.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "store/pg_durable.h"
#include "store/pg_sql.h"

namespace skydb::store {
namespace {

using WriteKind = DurableWrite::Kind;
using pg::BinaryArray;
using pg::kByteaOid;
using pg::kInt8Oid;
using pg::LazyConnection;

bool LeftOut(const std::vector<std::string>& left_out, const std::string& key) {
  return !left_out.empty() && std::binary_search(left_out.begin(), left_out.end(), key);
}

// The arrays of the rows' statement: upserts (a string's value or a hash's or set's own row),
// deletes and deadline-only touches.
struct RowArrays {
  BinaryArray up_ids{kByteaOid}, up_data{kByteaOid}, up_exp{kInt8Oid}, up_kind{kInt8Oid},
      up_ver{kInt8Oid};
  BinaryArray del_ids{kByteaOid}, touch_ids{kByteaOid}, touch_exp{kInt8Oid}, touch_ver{kInt8Oid};

  // Each value is copied once here and once by libpq, never regrown.
  void Reserve(const std::vector<DurableWrite>& rows) {
    size_t upserts = 0, key_bytes = 0, value_bytes = 0;
    for (const auto& w : rows) {
      if (w.kind != WriteKind::kUpsert && w.kind != WriteKind::kCollection) continue;
      ++upserts;
      key_bytes += w.key.size();
      value_bytes += w.value.size();
    }
    up_ids.Reserve(upserts, key_bytes);
    up_data.Reserve(upserts, value_bytes);
    for (auto* ints : {&up_exp, &up_kind, &up_ver}) ints->Reserve(upserts, 8 * upserts);
  }

  void Add(const DurableWrite& w) {
    if (w.kind == WriteKind::kUpsert || w.kind == WriteKind::kCollection) {
      up_ids.Add(w.key);
      up_data.Add(w.kind == WriteKind::kUpsert ? std::string_view(w.value.str()) : "");
      up_exp.AddInt64(w.expires_at);
      up_kind.AddInt64(w.kind == WriteKind::kUpsert ? 0 : static_cast<int64_t>(w.type));
      up_ver.AddInt64(static_cast<int64_t>(w.version));
    } else if (w.kind == WriteKind::kDelete) {
      del_ids.Add(w.key);
    } else if (w.kind == WriteKind::kTouch) {
      touch_ids.Add(w.key);
      touch_exp.AddInt64(w.expires_at);
      touch_ver.AddInt64(static_cast<int64_t>(w.version));
    }
  }

  bool upserts_only() const { return del_ids.empty() && touch_ids.empty(); }

  // Params()'s index of up_data's encoding.
  static constexpr size_t kValuesParam = 1;

  std::vector<std::string> Params() && {
    std::vector<std::string> params;
    params.reserve(9);
    bool all = !upserts_only();
    for (auto* a : {&up_ids, &up_data, &up_exp, &up_kind, &up_ver}) {
      params.push_back(std::move(*a).Encode());
    }
    if (all) {
      for (auto* a : {&del_ids, &touch_ids, &touch_exp, &touch_ver}) {
        params.push_back(std::move(*a).Encode());
      }
    }
    return params;
  }
};

// A values buffer larger than this is not kept: one huge batch does not pin its memory.
constexpr size_t kKeptValuesBuffer = 16 << 20;

// The rows as one statement: a plain upsert when there is nothing but upserts.
Status ApplyRows(LazyConnection& writer, std::string& values, const std::vector<DurableWrite>& rows,
                 const std::vector<std::string>& left_out) {
  RowArrays arrays;
  arrays.up_data.Reuse(std::move(values));
  arrays.Reserve(rows);
  size_t written = 0;
  for (const auto& w : rows) {
    if (LeftOut(left_out, w.key)) continue;
    ++written;
    arrays.Add(w);
  }
  if (written == 0) return Ok();
  bool upserts_only = arrays.upserts_only();
  std::vector<std::string> params = std::move(arrays).Params();
  auto res = writer.Exec(upserts_only ? sql::kUpsertOnly : sql::kCommit, params);
  std::string& sent = params[RowArrays::kValuesParam];
  if (sent.capacity() <= kKeptValuesBuffer) values = std::move(sent);
  if (!res.ok()) return std::move(res).error();
  return Ok();
}

Status ApplyFields(LazyConnection& writer, const DurableBackend::CommitRequest& request,
                   const std::vector<std::string>& left_out) {
  BinaryArray cleared(kByteaOid), del_ids(kByteaOid), del_fields(kByteaOid);
  BinaryArray up_ids(kByteaOid), up_fields(kByteaOid), up_values(kByteaOid), up_exp(kInt8Oid);
  for (const auto& key : request.cleared) {
    if (!LeftOut(left_out, key)) cleared.Add(key);
  }
  for (const auto& w : request.fields) {
    if (LeftOut(left_out, w.key)) continue;
    if (w.kind == WriteKind::kFieldDelete) {
      del_ids.Add(w.key);
      del_fields.Add(w.field);
    } else {
      up_ids.Add(w.key);
      up_fields.Add(w.field);
      up_values.Add(w.value.str());
      up_exp.AddInt64(w.expires_at);
    }
  }
  if (!cleared.empty()) {
    auto res = writer.Exec(sql::kClearFields, {std::move(cleared).Encode()});
    if (!res.ok()) return std::move(res).error();
  }
  if (!del_ids.empty()) {
    auto res = writer.Exec(sql::kDeleteFields,
                           {std::move(del_ids).Encode(), std::move(del_fields).Encode()});
    if (!res.ok()) return std::move(res).error();
  }
  if (!up_ids.empty()) {
    auto res = writer.Exec(sql::kUpsertFields,
                           {std::move(up_ids).Encode(), std::move(up_fields).Encode(),
                            std::move(up_values).Encode(), std::move(up_exp).Encode()});
    if (!res.ok()) return std::move(res).error();
  }
  return Ok();
}

}  // namespace

DurableValue RowValueAt(const pg::QueryResult& r, int row, int first) {
  DurableValue v;
  v.value.assign(r.Bytes(row, first));
  v.expires_at = r.Int8(row, first + 1);
  v.type = static_cast<ValueType>(r.Int4(row, first + 2));
  v.version = static_cast<uint64_t>(r.Int8(row, first + 3));
  return v;
}

Status ApplyWrites(LazyConnection& writer, std::string& values,
                   const DurableBackend::CommitRequest& request,
                   const std::vector<std::string>& left_out) {
  SKYDB_RETURN_IF_ERROR(ApplyRows(writer, values, request.rows, left_out));
  if (request.cleared.empty() && request.fields.empty()) return Ok();
  return ApplyFields(writer, request, left_out);
}

Status CheckGuards(LazyConnection& writer, const DurableBackend::CommitRequest& request,
                   std::vector<bool>* refused) {
  std::vector<std::string_view> keys;
  for (const auto& g : request.guards) keys.insert(keys.end(), g.keys.begin(), g.keys.end());
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  BinaryArray ids(kByteaOid);
  for (const auto& key : keys) ids.Add(key);
  std::string encoded = std::move(ids).Encode();
  auto placed = writer.Exec(sql::kPlacehold, {encoded});
  if (!placed.ok()) return std::move(placed).error();
  auto locked = writer.Exec(sql::kLock, {encoded});
  if (!locked.ok()) return std::move(locked).error();
  std::unordered_map<std::string_view, DurableValue> live;
  for (int i = 0; i < locked->rows(); ++i) {
    DurableValue v = RowValueAt(*locked, i, 1);
    auto key = std::lower_bound(keys.begin(), keys.end(), locked->Bytes(i, 0));
    if (key == keys.end() || *key != locked->Bytes(i, 0)) continue;
    if (v.expires_at == 0 || v.expires_at > request.now) live.emplace(*key, std::move(v));
  }
  std::unordered_set<std::string_view> kept;  // keys some kept write writes
  for (size_t g = 0; g < request.guards.size(); ++g) {
    const DurableBackend::RowGuard& guard = request.guards[g];
    std::vector<std::optional<DurableValue>> rows(guard.keys.size());
    for (size_t i = 0; i < guard.keys.size(); ++i) {
      auto it = live.find(guard.keys[i]);
      if (it != live.end()) rows[i] = it->second;
    }
    (*refused)[g] = !guard.unchanged(rows);
  }
  std::unordered_set<std::string_view> refused_owns;
  for (size_t g = 0; g < request.guards.size(); ++g) {
    if ((*refused)[g])
      refused_owns.insert(request.guards[g].owns.begin(), request.guards[g].owns.end());
  }
  for (const auto& w : request.rows) {
    if (refused_owns.count(w.key) == 0) kept.insert(w.key);
  }
  BinaryArray unused(kByteaOid);
  for (int i = 0; i < placed->rows(); ++i) {
    if (kept.count(placed->Bytes(i, 0)) == 0) unused.Add(placed->Bytes(i, 0));
  }
  if (unused.empty()) return Ok();
  auto removed = writer.Exec(sql::kUnplacehold, {std::move(unused).Encode()});
  if (!removed.ok()) return std::move(removed).error();
  return Ok();
}

}  // namespace skydb::store
