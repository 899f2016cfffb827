// What hash and set commands share (collection_ops.h): planning, finding and changing a key's
// collection, HSCAN/SSCAN.
#include "store/collection_ops.h"

#include <algorithm>

#include "store/key_ops.h"

namespace skydb::store {
namespace {

using Kind = CollectionOp::Kind;

bool IsHash(Kind k) { return k <= Kind::kHGetDel; }

bool Writes(Kind k) {
  switch (k) {
    case Kind::kHSet:
    case Kind::kHSetNx:
    case Kind::kHDel:
    case Kind::kHIncrBy:
    case Kind::kHIncrByFloat:
    case Kind::kHExpire:
    case Kind::kHPersist:
    case Kind::kHGetEx:
    case Kind::kHSetEx:
    case Kind::kHGetDel:
    case Kind::kSAdd:
    case Kind::kSRem:
    case Kind::kSPop:
    case Kind::kSMove:
    case Kind::kSInterStore:
    case Kind::kSUnionStore:
    case Kind::kSDiffStore:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::mt19937_64& Random() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  return random;
}

OpPlan PlanCollection(const CollectionOp& op) {
  OpPlan plan;
  plan.keys = op.keys;
  plan.reads = op.keys;
  MakeDistinct(plan.keys);
  MakeDistinct(plan.reads);
  // Per field a field write, per key its row and a clear.
  if (Writes(op.kind)) plan.max_writes = op.fields.size() + 2 * op.keys.size();
  if (op.kind == Kind::kSPop)
    plan.max_writes += static_cast<size_t>(std::max<int64_t>(op.integer, 1));
  return plan;
}

Result<StoreReply> ApplyCollection(Scope& s, const CollectionOp& op, size_t max_value_bytes) {
  if (IsHash(op.kind)) return ApplyHash(s, op, max_value_bytes);
  return ApplySet(s, op);
}

Result<Collection*> FindCollection(Scope& s, Shard& shard, const std::string& key, ValueType type,
                                   Entry** entry) {
  Found found = s.Find(shard, key);
  *entry = found.entry;
  if (found.entry == nullptr) {
    s.Depend(found);
    return static_cast<Collection*>(nullptr);
  }
  if (found.entry->type != type) return WrongType();
  s.Depend(found);
  s.tier().Touch(shard, *found.entry);
  s.Holds(shard);
  s.tier().DropExpiredFields(shard, *found.entry, s.now());
  if (found.entry->collection->fields.empty()) return static_cast<Collection*>(nullptr);
  return found.entry->collection.get();
}

Entry& MakeCollection(Scope& s, Shard& shard, const std::string& key, ValueType type) {
  Found found = s.Find(shard, key);
  if (found.entry != nullptr && found.entry->type == type && found.entry->collection) {
    return *found.entry;
  }
  Entry& e = found.entry != nullptr ? *found.entry : s.tier().Insert(shard, key);
  UnixMillis deadline =
      found.entry != nullptr ? e.expires_at : s.ResolveDeadline(Expiry::Default(), nullptr);
  s.tier().SetDeadline(shard, e, deadline);
  s.tier().SetCollection(shard, e, type, std::make_unique<Collection>());
  return e;
}

bool PutField(Scope& s, Shard& shard, Entry& e, const std::string& key, const std::string& field,
              std::string value, UnixMillis expires_at) {
  Collection& c = *e.collection;
  auto [it, fresh] = c.fields.try_emplace(field);
  int64_t before =
      fresh ? 0
            : static_cast<int64_t>(field.size() + it->second.value.size() + kFieldOverheadBytes);
  SharedValue shared(std::move(value));  // memory and the queued write hold the same bytes
  s.WriteField(shard, e, key, field, shared, expires_at);
  it->second.value = std::move(shared);
  it->second.expires_at = expires_at;
  c.NoteFieldDeadline(expires_at);
  s.tier().CollectionResized(
      e,
      static_cast<int64_t>(field.size() + it->second.value.size() + kFieldOverheadBytes) - before);
  return fresh;
}

bool RemoveField(Scope& s, Shard& shard, Entry& e, const std::string& key,
                 const std::string& field) {
  Collection& c = *e.collection;
  auto it = c.fields.find(field);
  if (it == c.fields.end()) return false;
  s.tier().CollectionResized(
      e, -static_cast<int64_t>(field.size() + it->second.value.size() + kFieldOverheadBytes));
  c.fields.erase(it);
  if (c.fields.empty()) {
    s.WriteDelete(shard, key);  // an emptied hash or set is gone
  } else {
    s.WriteFieldDelete(shard, e, key, field);
  }
  return true;
}

void StoreSet(Scope& s, Shard& shard, const std::string& key,
              const std::vector<std::string>& members) {
  Found found = s.Find(shard, key);
  if (found.entry != nullptr) s.WriteDelete(shard, key);  // whatever it held goes first
  if (members.empty()) return;
  Entry& e = MakeCollection(s, shard, key, ValueType::kSet);
  for (const auto& m : members) PutField(s, shard, e, key, m, "", 0);
}

StoreReply ScanCollection(const Collection* c, const CollectionOp& op, bool values) {
  std::vector<std::pair<uint64_t, const std::string*>> order;
  if (c != nullptr) {
    for (const auto& [name, field] : c->fields) {
      uint64_t h = KeyHash(name);
      if (h >= op.cursor) order.emplace_back(h, &name);
    }
  }
  std::sort(order.begin(), order.end());
  std::vector<StoreReply> items;
  uint64_t next = 0;
  size_t count = std::max<size_t>(op.count, 1);
  for (size_t i = 0; i < order.size(); ++i) {
    // Fields sharing a hash come together, so none is skipped between calls.
    if (i >= count && order[i].first != order[i - 1].first) {
      next = order[i].first;
      break;
    }
    const std::string& name = *order[i].second;
    if (!op.pattern.empty() && !GlobMatch(op.pattern, name)) continue;
    items.push_back(StoreReply::Bulk(name));
    if (values) items.push_back(StoreReply::Bulk(c->fields.at(name).value.str()));
  }
  return StoreReply::Array(
      {StoreReply::Bulk(std::to_string(next)), StoreReply::Array(std::move(items))});
}

}  // namespace skydb::store
