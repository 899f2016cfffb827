// The set commands (collection_ops.h), with Redis 7's replies: SADD, SREM, SMEMBERS, SISMEMBER,
// SMISMEMBER, SCARD, SPOP, SRANDMEMBER, SSCAN, SMOVE, SINTER, SUNION, SDIFF, their STORE forms
// and SINTERCARD. A missing key is an empty set.
#include <algorithm>
#include <set>

#include "store/collection_ops.h"
#include "store/key_ops.h"

namespace skydb::store {
namespace {

using Kind = CollectionOp::Kind;

struct SetOf {
  Shard* shard;
  Entry* entry = nullptr;
  Collection* members = nullptr;  // null: empty (no such key)
};

Result<SetOf> FindSet(Scope& s, const std::string& key) {
  Shard& shard = s.ShardOf(key);
  s.Holds(shard);
  SetOf set{&shard};
  SKYDB_ASSIGN_OR_RETURN(set.members, FindCollection(s, shard, key, ValueType::kSet, &set.entry));
  return set;
}

bool Has(const SetOf& set, const std::string& member) {
  return set.members != nullptr && set.members->fields.count(member) != 0;
}

std::vector<std::string> Members(const SetOf& set) {
  std::vector<std::string> out;
  if (set.members == nullptr) return out;
  for (const auto& [m, unused] : set.members->fields) out.push_back(m);
  return out;
}

StoreReply AsSet(const std::vector<std::string>& members) {
  std::vector<StoreReply> out;
  for (const auto& m : members) out.push_back(StoreReply::Bulk(m));
  return StoreReply::Set(std::move(out));
}

Result<StoreReply> Add(Scope& s, const CollectionOp& op) {
  SKYDB_ASSIGN_OR_RETURN(SetOf set, FindSet(s, op.keys[0]));
  Shard& shard = *set.shard;
  s.Holds(shard);
  Entry& e = MakeCollection(s, shard, op.keys[0], ValueType::kSet);
  int64_t added = 0;
  for (const auto& m : op.fields) {
    if (e.collection->fields.count(m) != 0) continue;
    PutField(s, shard, e, op.keys[0], m, "", 0);
    ++added;
  }
  return StoreReply::Integer(added);
}

// SREM, and SPOP's removals: how many of `members` were there.
int64_t RemoveMembers(Scope& s, SetOf& set, const std::string& key,
                      const std::vector<std::string>& members) {
  int64_t removed = 0;
  for (const auto& m : members) {
    if (!Has(set, m)) continue;
    bool last = set.members->fields.size() == 1;
    Shard& shard = *set.shard;
    s.Holds(shard);
    RemoveField(s, shard, *set.entry, key, m);
    ++removed;
    if (last) set.members = nullptr;
  }
  return removed;
}

// SRANDMEMBER (a negative count may repeat members) and SPOP's choice.
std::vector<std::string> Pick(const SetOf& set, int64_t count) {
  std::vector<std::string> all = Members(set);
  std::vector<std::string> out;
  if (all.empty()) return out;
  if (count < 0) {
    for (int64_t i = 0; i < -count; ++i) out.push_back(all[Random()() % all.size()]);
    return out;
  }
  std::shuffle(all.begin(), all.end(), Random());
  all.resize(std::min(all.size(), static_cast<size_t>(count)));
  return all;
}

Result<StoreReply> PopOrRandom(Scope& s, const CollectionOp& op) {
  SKYDB_ASSIGN_OR_RETURN(SetOf set, FindSet(s, op.keys[0]));
  int64_t count = op.has_count ? op.integer : 1;
  if (op.kind == Kind::kSPop && count < 0) count = 0;
  std::vector<std::string> chosen = Pick(set, count);
  if (op.kind == Kind::kSPop) RemoveMembers(s, set, op.keys[0], chosen);
  if (op.has_count) {
    std::vector<StoreReply> out;
    for (auto& m : chosen) out.push_back(StoreReply::Bulk(std::move(m)));
    return op.kind == Kind::kSPop ? StoreReply::Set(std::move(out))
                                  : StoreReply::Array(std::move(out));
  }
  return chosen.empty() ? StoreReply::Null() : StoreReply::Bulk(chosen[0]);
}

Result<StoreReply> Move(Scope& s, const CollectionOp& op) {
  SKYDB_ASSIGN_OR_RETURN(SetOf from, FindSet(s, op.keys[0]));
  SKYDB_ASSIGN_OR_RETURN(SetOf to, FindSet(s, op.keys[1]));
  const std::string& m = op.fields[0];
  if (!Has(from, m)) return StoreReply::Integer(0);
  if (op.keys[0] == op.keys[1]) return StoreReply::Integer(1);
  RemoveMembers(s, from, op.keys[0], {m});
  if (!Has(to, m)) {
    Shard& shard = *to.shard;
    s.Holds(shard);
    Entry& e = MakeCollection(s, shard, op.keys[1], ValueType::kSet);
    PutField(s, shard, e, op.keys[1], m, "", 0);
  }
  return StoreReply::Integer(1);
}

// SINTER / SUNION / SDIFF over the sources (every key after the destination for the STORE
// forms), sorted; WRONGTYPE if one is not a set.
Result<std::vector<std::string>> Combine(Scope& s, const CollectionOp& op, size_t first) {
  bool inter =
      op.kind == Kind::kSInter || op.kind == Kind::kSInterStore || op.kind == Kind::kSInterCard;
  bool diff = op.kind == Kind::kSDiff || op.kind == Kind::kSDiffStore;
  std::set<std::string> acc;
  for (size_t i = first; i < op.keys.size(); ++i) {
    SKYDB_ASSIGN_OR_RETURN(SetOf set, FindSet(s, op.keys[i]));
    std::vector<std::string> members = Members(set);
    std::set<std::string> these(members.begin(), members.end());
    if (i == first) {
      acc = std::move(these);
    } else if (inter) {
      std::erase_if(acc, [&](const std::string& m) { return these.count(m) == 0; });
    } else if (diff) {
      std::erase_if(acc, [&](const std::string& m) { return these.count(m) != 0; });
    } else {
      acc.insert(these.begin(), these.end());
    }
  }
  return std::vector<std::string>(acc.begin(), acc.end());
}

Result<StoreReply> CombineCommand(Scope& s, const CollectionOp& op) {
  bool store = op.kind == Kind::kSInterStore || op.kind == Kind::kSUnionStore ||
               op.kind == Kind::kSDiffStore;
  SKYDB_ASSIGN_OR_RETURN(std::vector<std::string> members, Combine(s, op, store ? 1 : 0));
  if (op.kind == Kind::kSInterCard) {
    size_t n = members.size();
    if (op.integer > 0) n = std::min(n, static_cast<size_t>(op.integer));
    return StoreReply::Integer(static_cast<int64_t>(n));
  }
  if (!store) return AsSet(members);
  if (!s.ReserveMore(members.size())) {
    return Error::Unavailable("write queue full; nothing was applied; retry later");
  }
  Shard& shard = s.ShardOf(op.keys[0]);
  s.Holds(shard);
  StoreSet(s, shard, op.keys[0], members);
  return StoreReply::Integer(static_cast<int64_t>(members.size()));
}

}  // namespace

Result<StoreReply> ApplySet(Scope& s, const CollectionOp& op) {
  switch (op.kind) {
    case Kind::kSAdd:
      return Add(s, op);
    case Kind::kSRem: {
      SKYDB_ASSIGN_OR_RETURN(SetOf set, FindSet(s, op.keys[0]));
      return StoreReply::Integer(RemoveMembers(s, set, op.keys[0], op.fields));
    }
    case Kind::kSPop:
    case Kind::kSRandMember:
      return PopOrRandom(s, op);
    case Kind::kSMove:
      return Move(s, op);
    case Kind::kSMembers:
    case Kind::kSIsMember:
    case Kind::kSMIsMember:
    case Kind::kSCard:
    case Kind::kSScan:
      break;
    default:
      return CombineCommand(s, op);
  }
  SKYDB_ASSIGN_OR_RETURN(SetOf set, FindSet(s, op.keys[0]));
  switch (op.kind) {
    case Kind::kSMembers:
      return AsSet(Members(set));
    case Kind::kSIsMember:
      return StoreReply::Integer(Has(set, op.fields[0]) ? 1 : 0);
    case Kind::kSMIsMember: {
      std::vector<StoreReply> out;
      for (const auto& m : op.fields) out.push_back(StoreReply::Integer(Has(set, m) ? 1 : 0));
      return StoreReply::Array(std::move(out));
    }
    case Kind::kSCard:
      return StoreReply::Integer(
          set.members == nullptr ? 0 : static_cast<int64_t>(set.members->fields.size()));
    default:
      return ScanCollection(set.members, op, false);
  }
}

}  // namespace skydb::store
