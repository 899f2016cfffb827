// Hash fields' own deadlines (Redis 7.4 and 8): HEXPIRE/HPEXPIRE/HEXPIREAT/HPEXPIREAT, HTTL,
// HPTTL, HPERSIST, HGETEX, HSETEX. A field past its deadline is gone: memory drops it as it is
// found, PostgreSQL's reads skip it and the sweeper deletes it.
#include "store/collection_ops.h"
#include "store/key_ops.h"

namespace skydb::store {
namespace {

using Kind = CollectionOp::Kind;

// The hash of `key` and its shard; null collection when absent.
struct Hash {
  Shard* shard;
  Entry* entry = nullptr;
  Collection* fields = nullptr;
};

const CollectionField* FieldOf(const Hash& h, const std::string& name) {
  if (h.fields == nullptr) return nullptr;
  auto it = h.fields->fields.find(name);
  return it == h.fields->fields.end() ? nullptr : &it->second;
}

Result<Hash> FindHashFields(Scope& s, const std::string& key) {
  Shard& shard = s.ShardOf(key);
  s.Holds(shard);
  Hash h{&shard};
  SKYDB_ASSIGN_OR_RETURN(h.fields, FindCollection(s, shard, key, ValueType::kHash, &h.entry));
  return h;
}

// Gives field `name` of `h` the deadline `when` (0: none) or, when `when` has passed, deletes it.
// Returns HEXPIRE's 1 or 2.
int64_t SetFieldDeadline(Scope& s, Hash& h, const std::string& key, const std::string& name,
                         UnixMillis when) {
  Shard& shard = *h.shard;
  s.Holds(shard);
  if (when != 0 && when <= s.now()) {
    bool last = h.fields->fields.size() == 1;
    RemoveField(s, shard, *h.entry, key, name);
    if (last) h.fields = nullptr;
    return 2;
  }
  std::string value = h.fields->fields.at(name).value.str();
  PutField(s, shard, *h.entry, key, name, std::move(value), when);
  return 1;
}

StoreReply Expire(Scope& s, const CollectionOp& op, Hash& h) {
  std::vector<StoreReply> out;
  UnixMillis when = s.ResolveDeadline(*op.expiry, nullptr);
  for (const auto& name : op.fields) {
    const CollectionField* f = FieldOf(h, name);
    if (f == nullptr) {
      out.push_back(StoreReply::Integer(-2));
    } else if (!ConditionHolds(op.condition, f->expires_at, when)) {
      out.push_back(StoreReply::Integer(0));
    } else {
      out.push_back(StoreReply::Integer(SetFieldDeadline(s, h, op.keys[0], name, when)));
    }
  }
  return StoreReply::Array(std::move(out));
}

StoreReply TtlOrPersist(Scope& s, const CollectionOp& op, Hash& h) {
  std::vector<StoreReply> out;
  for (const auto& name : op.fields) {
    const CollectionField* f = FieldOf(h, name);
    if (f == nullptr) {
      out.push_back(StoreReply::Integer(-2));
    } else if (f->expires_at == 0) {
      out.push_back(StoreReply::Integer(-1));
    } else if (op.kind == Kind::kHPersist) {
      out.push_back(StoreReply::Integer(SetFieldDeadline(s, h, op.keys[0], name, 0)));
    } else {
      int64_t left = f->expires_at - s.now();
      out.push_back(StoreReply::Integer(op.millis ? left : (left + 500) / 1000));
    }
  }
  return StoreReply::Array(std::move(out));
}

// HGETEX: each field's value, then its new deadline (PERSIST removes it).
StoreReply GetEx(Scope& s, const CollectionOp& op, Hash& h) {
  std::vector<StoreReply> out;
  std::vector<std::string> present;
  for (const auto& name : op.fields) {
    const CollectionField* f = FieldOf(h, name);
    out.push_back(f != nullptr ? StoreReply::Bulk(f->value.str()) : StoreReply::Null());
    if (f != nullptr) present.push_back(name);
  }
  if (op.expiry) {
    UnixMillis when = s.ResolveDeadline(*op.expiry, nullptr);
    for (const auto& name : present) {
      if (h.fields == nullptr) break;
      SetFieldDeadline(s, h, op.keys[0], name, when);
    }
  }
  return StoreReply::Array(std::move(out));
}

// HSETEX: every field, or (FNX: none exists / FXX: all exist) none; 1 when set.
StoreReply SetEx(Scope& s, const CollectionOp& op, Hash& h) {
  size_t existing = 0;
  for (const auto& name : op.fields) {
    if (h.fields != nullptr && h.fields->fields.count(name) != 0) ++existing;
  }
  if ((op.fields_condition == SetCondition::kIfAbsent && existing != 0) ||
      (op.fields_condition == SetCondition::kIfPresent && existing != op.fields.size())) {
    return StoreReply::Integer(0);
  }
  Shard& shard = *h.shard;
  s.Holds(shard);
  bool keep = op.expiry && op.expiry->kind == Expiry::Kind::kKeep;
  UnixMillis when = op.expiry && !keep ? s.ResolveDeadline(*op.expiry, nullptr) : 0;
  if (when != 0 && when <= s.now()) {  // set and already expired: the fields are gone
    for (const auto& name : op.fields) {
      if (FieldOf(h, name) != nullptr) SetFieldDeadline(s, h, op.keys[0], name, when);
    }
    return StoreReply::Integer(1);
  }
  Entry& e = MakeCollection(s, shard, op.keys[0], ValueType::kHash);
  for (size_t i = 0; i < op.fields.size(); ++i) {
    auto it = e.collection->fields.find(op.fields[i]);
    UnixMillis field_when = keep && it != e.collection->fields.end() ? it->second.expires_at : when;
    PutField(s, shard, e, op.keys[0], op.fields[i], op.values[i], field_when);
  }
  return StoreReply::Integer(1);
}

}  // namespace

Result<StoreReply> ApplyHashDeadlines(Scope& s, const CollectionOp& op, size_t max_value_bytes) {
  for (const auto& v : op.values) {
    if (v.size() > max_value_bytes) {
      return Error::InvalidArgument("value is " + std::to_string(v.size()) +
                                    " bytes; the limit (store.max_value_bytes) is " +
                                    std::to_string(max_value_bytes));
    }
  }
  SKYDB_ASSIGN_OR_RETURN(Hash h, FindHashFields(s, op.keys[0]));
  switch (op.kind) {
    case Kind::kHExpire:
      return Expire(s, op, h);
    case Kind::kHGetEx:
      return GetEx(s, op, h);
    case Kind::kHSetEx:
      return SetEx(s, op, h);
    default:
      return TtlOrPersist(s, op, h);
  }
}

}  // namespace skydb::store
