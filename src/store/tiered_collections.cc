// TieredStore's entry points for hashes, sets, TYPE and RENAME (the operations themselves are
// in collection_ops.h and key_ops.h).
#include "store/collection_ops.h"
#include "store/key_ops.h"
#include "store/tiered_store.h"

namespace skydb::store {

void TieredStore::Type(std::string key, StoreCallback<std::optional<KeyInfo>> done) {
  OpPlan plan{{key}, {key}, 0};
  runner_->Run<std::optional<KeyInfo>>(
      std::move(plan),
      [key = std::move(key)](Scope& s) {
        Shard& shard = s.ShardOf(key);
        s.Holds(shard);
        return TypeKey(s, shard, key);
      },
      std::move(done));
}

void TieredStore::Rename(std::string from, std::string to, bool if_absent,
                         StoreCallback<bool> done) {
  Status sizes = CheckKey(to, options_.memory);
  if (!sizes.ok()) return done(std::move(sizes).error());
  OpPlan plan{{from, to}, {from, to}, 4};
  MakeDistinct(plan.keys);
  MakeDistinct(plan.reads);
  runner_->Run<bool>(
      std::move(plan),
      [from = std::move(from), to = std::move(to), if_absent](Scope& s) {
        return RenameKey(s, from, to, if_absent);
      },
      std::move(done));
}

void TieredStore::Collection(CollectionOp op, StoreCallback<StoreReply> done) {
  for (const auto& key : op.keys) {
    Status sizes = CheckKey(key, options_.memory);
    if (!sizes.ok()) return done(std::move(sizes).error());
  }
  OpPlan plan = PlanCollection(op);
  runner_->Run<StoreReply>(
      std::move(plan),
      [op = std::move(op), max = options_.memory.max_value_bytes](Scope& s) {
        return ApplyCollection(s, op, max);
      },
      std::move(done));
}

}  // namespace skydb::store
