// The hash commands (collection_ops.h), with Redis 7.4 / 8's replies: HSET, HSETNX, HGET, HMGET,
// HGETALL, HDEL, HLEN, HEXISTS, HKEYS, HVALS, HSTRLEN, HINCRBY, HINCRBYFLOAT, HSCAN,
// HRANDFIELD and the field deadlines (HEXPIRE family, HTTL, HPERSIST, HGETEX, HSETEX, HGETDEL).
#include <cmath>
#include <limits>

#include "base/strings.h"
#include "store/collection_ops.h"
#include "store/key_ops.h"

namespace skydb::store {
namespace {

using Kind = CollectionOp::Kind;

// The hash of the op's key, with its shard (locked by the operation).
struct Target {
  Shard& shard;
  Entry* entry = nullptr;
  Collection* hash = nullptr;  // null: no such key
};

Result<Target> FindHash(Scope& s, const std::string& key) {
  Shard& shard = s.ShardOf(key);
  s.Holds(shard);
  Target t{shard};
  SKYDB_ASSIGN_OR_RETURN(t.hash, FindCollection(s, shard, key, ValueType::kHash, &t.entry));
  return t;
}

const CollectionField* FieldOf(const Collection* hash, const std::string& field) {
  if (hash == nullptr) return nullptr;
  auto it = hash->fields.find(field);
  return it == hash->fields.end() ? nullptr : &it->second;
}

StoreReply BulkOrNull(const CollectionField* f) {
  return f != nullptr ? StoreReply::Bulk(f->value.str()) : StoreReply::Null();
}

// HSET / HSETNX / HMSET: how many fields were added. Writing a field's value removes its own
// deadline, as in Redis 7.4.
Result<StoreReply> HashSet(Scope& s, const CollectionOp& op, size_t max_value_bytes) {
  for (const auto& v : op.values) {
    if (v.size() > max_value_bytes) {
      return Error::InvalidArgument("value is " + std::to_string(v.size()) +
                                    " bytes; the limit (store.max_value_bytes) is " +
                                    std::to_string(max_value_bytes));
    }
  }
  SKYDB_ASSIGN_OR_RETURN(Target t, FindHash(s, op.keys[0]));
  if (op.kind == Kind::kHSetNx && FieldOf(t.hash, op.fields[0]) != nullptr) {
    return StoreReply::Integer(0);
  }
  s.Holds(t.shard);
  Entry& e = MakeCollection(s, t.shard, op.keys[0], ValueType::kHash);
  int64_t added = 0;
  for (size_t i = 0; i < op.fields.size(); ++i) {
    if (PutField(s, t.shard, e, op.keys[0], op.fields[i], op.values[i], 0)) ++added;
  }
  return StoreReply::Integer(added);
}

Result<StoreReply> HashIncrement(Scope& s, const CollectionOp& op) {
  SKYDB_ASSIGN_OR_RETURN(Target t, FindHash(s, op.keys[0]));
  const CollectionField* f = FieldOf(t.hash, op.fields[0]);
  std::string text;
  int64_t integer = 0;
  if (op.kind == Kind::kHIncrBy) {
    int64_t value = 0;
    if (f != nullptr && !ParseRedisInt64(f->value.str(), &value)) {
      return Error::InvalidArgument("hash value is not an integer");
    }
    if ((op.integer < 0 && value < 0 && op.integer < std::numeric_limits<int64_t>::min() - value) ||
        (op.integer > 0 && value > 0 && op.integer > std::numeric_limits<int64_t>::max() - value)) {
      return Error::InvalidArgument("increment or decrement would overflow");
    }
    integer = value + op.integer;
    text = std::to_string(integer);
  } else {
    long double value = 0;
    if (f != nullptr && !ParseRedisLongDouble(f->value.str(), &value)) {
      return Error::InvalidArgument("hash value is not a float");
    }
    value += op.real;
    if (std::isnan(value) || std::isinf(value)) {
      return Error::InvalidArgument("increment would produce NaN or Infinity");
    }
    text = FormatRedisLongDouble(value);
  }
  UnixMillis keeps = f != nullptr ? f->expires_at : 0;
  s.Holds(t.shard);
  Entry& e = MakeCollection(s, t.shard, op.keys[0], ValueType::kHash);
  PutField(s, t.shard, e, op.keys[0], op.fields[0], text, keeps);
  if (op.kind == Kind::kHIncrBy) return StoreReply::Integer(integer);
  return StoreReply::Bulk(text);
}

Result<StoreReply> HashDelete(Scope& s, const CollectionOp& op) {
  SKYDB_ASSIGN_OR_RETURN(Target t, FindHash(s, op.keys[0]));
  std::vector<StoreReply> values;
  int64_t removed = 0;
  for (const auto& field : op.fields) {
    const CollectionField* f = FieldOf(t.hash, field);
    if (op.kind == Kind::kHGetDel) values.push_back(BulkOrNull(f));
    if (f == nullptr) continue;
    bool last = t.hash->fields.size() == 1;  // then the key goes with it, entry and all
    s.Holds(t.shard);
    RemoveField(s, t.shard, *t.entry, op.keys[0], field);
    ++removed;
    if (last) t.hash = nullptr;
  }
  if (op.kind == Kind::kHGetDel) return StoreReply::Array(std::move(values));
  return StoreReply::Integer(removed);
}

// HRANDFIELD key [count [WITHVALUES]]: a negative count may repeat fields.
StoreReply RandomFields(const Collection* hash, const CollectionOp& op) {
  if (!op.has_count) {
    if (hash == nullptr) return StoreReply::Null();
    auto it = hash->fields.begin();
    std::advance(it, static_cast<long>(Random()() % hash->fields.size()));
    return StoreReply::Bulk(it->first);
  }
  std::vector<StoreReply> out;
  if (hash == nullptr || op.integer == 0) return StoreReply::Array({});
  std::vector<const std::pair<const std::string, CollectionField>*> all;
  for (const auto& f : hash->fields) all.push_back(&f);
  auto add = [&](const auto* f) {
    out.push_back(StoreReply::Bulk(f->first));
    if (op.with_values) out.push_back(StoreReply::Bulk(f->second.value.str()));
  };
  if (op.integer < 0) {
    for (int64_t i = 0; i < -op.integer; ++i) add(all[Random()() % all.size()]);
  } else {
    std::shuffle(all.begin(), all.end(), Random());
    for (size_t i = 0; i < all.size() && i < static_cast<size_t>(op.integer); ++i) add(all[i]);
  }
  return op.with_values ? StoreReply::Pairs(std::move(out)) : StoreReply::Array(std::move(out));
}

}  // namespace

Result<StoreReply> ApplyHashRead(Scope& s, const CollectionOp& op);
Result<StoreReply> ApplyHashDeadlines(Scope& s, const CollectionOp& op, size_t max_value_bytes);

Result<StoreReply> ApplyHash(Scope& s, const CollectionOp& op, size_t max_value_bytes) {
  switch (op.kind) {
    case Kind::kHSet:
    case Kind::kHSetNx:
      return HashSet(s, op, max_value_bytes);
    case Kind::kHIncrBy:
    case Kind::kHIncrByFloat:
      return HashIncrement(s, op);
    case Kind::kHDel:
    case Kind::kHGetDel:
      return HashDelete(s, op);
    case Kind::kHRandField: {
      SKYDB_ASSIGN_OR_RETURN(Target t, FindHash(s, op.keys[0]));
      return RandomFields(t.hash, op);
    }
    case Kind::kHExpire:
    case Kind::kHTtl:
    case Kind::kHPersist:
    case Kind::kHGetEx:
    case Kind::kHSetEx:
      return ApplyHashDeadlines(s, op, max_value_bytes);
    default:
      return ApplyHashRead(s, op);
  }
}

// The hash commands that only read: HGET, HMGET, HGETALL, HLEN, HEXISTS, HKEYS, HVALS, HSTRLEN,
// HSCAN.
Result<StoreReply> ApplyHashRead(Scope& s, const CollectionOp& op) {
  SKYDB_ASSIGN_OR_RETURN(Target t, FindHash(s, op.keys[0]));
  const Collection* h = t.hash;
  std::vector<StoreReply> items;
  switch (op.kind) {
    case Kind::kHGet:
      return BulkOrNull(FieldOf(h, op.fields[0]));
    case Kind::kHMGet:
      for (const auto& f : op.fields) items.push_back(BulkOrNull(FieldOf(h, f)));
      return StoreReply::Array(std::move(items));
    case Kind::kHLen:
      return StoreReply::Integer(h == nullptr ? 0 : static_cast<int64_t>(h->fields.size()));
    case Kind::kHExists:
      return StoreReply::Integer(FieldOf(h, op.fields[0]) != nullptr ? 1 : 0);
    case Kind::kHStrLen: {
      const CollectionField* f = FieldOf(h, op.fields[0]);
      return StoreReply::Integer(f == nullptr ? 0 : static_cast<int64_t>(f->value.size()));
    }
    case Kind::kHScan:
      return ScanCollection(h, op, op.with_values);
    default:
      break;
  }
  if (h != nullptr) {
    for (const auto& [name, field] : h->fields) {
      if (op.kind != Kind::kHVals) items.push_back(StoreReply::Bulk(name));
      if (op.kind != Kind::kHKeys) items.push_back(StoreReply::Bulk(field.value.str()));
    }
  }
  if (op.kind == Kind::kHGetAll) return StoreReply::Map(std::move(items));
  return StoreReply::Array(std::move(items));
}

}  // namespace skydb::store
