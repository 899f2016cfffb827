#include "store/tx_ops.h"

#include <algorithm>
#include <type_traits>
#include <variant>

#include "store/collection_ops.h"

namespace skydb::store {
namespace {

// Values one transaction may read: its results are held until they are delivered together.
constexpr size_t kMaxTransactionReadBytes = size_t{64} << 20;
// A reply's bytes besides the values it carries: its header, or an integer or status.
constexpr size_t kReplyOverheadBytes = 32;

bool Blind(const TxOp& op) {
  if (std::holds_alternative<tx::DeleteAll>(op)) return true;
  const auto* set = std::get_if<tx::Set>(&op);
  return set != nullptr && set->request.condition == SetCondition::kAlways &&
         !set->request.return_old && set->request.expiry.kind != Expiry::Kind::kKeep;
}

void PlanOp(const TxOp& op, OpPlan* plan) {
  std::visit(
      [plan](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, tx::Read>) {
          plan->keys.push_back(o.key);
          plan->reads.push_back(o.key);
          if (o.kind != ReadKind::kGet) ++plan->max_writes;
        } else if constexpr (std::is_same_v<T, tx::Set>) {
          plan->keys.push_back(o.request.key);
          if (o.request.return_old) plan->reads.push_back(o.request.key);
          ++plan->max_writes;
        } else if constexpr (std::is_same_v<T, tx::Delete> || std::is_same_v<T, tx::Exists>) {
          plan->keys.insert(plan->keys.end(), o.keys.begin(), o.keys.end());
          if (std::is_same_v<T, tx::Delete>) plan->max_writes += o.keys.size();
        } else if constexpr (std::is_same_v<T, tx::Increment>) {
          plan->keys.push_back(o.request.key);
          plan->reads.push_back(o.request.key);
          ++plan->max_writes;
        } else if constexpr (std::is_same_v<T, tx::DeleteAll>) {
          plan->all_shards = true;
        } else if constexpr (std::is_same_v<T, tx::Collection>) {
          OpPlan c = PlanCollection(o.op);
          plan->keys.insert(plan->keys.end(), c.keys.begin(), c.keys.end());
          plan->reads.insert(plan->reads.end(), c.reads.begin(), c.reads.end());
          plan->max_writes += c.max_writes;
        } else if constexpr (std::is_same_v<T, tx::Rename>) {
          plan->keys.insert(plan->keys.end(), {o.from, o.to});
          plan->reads.insert(plan->reads.end(), {o.from, o.to});
          plan->max_writes += 4;
        } else if constexpr (std::is_same_v<T, tx::Type>) {
          plan->keys.push_back(o.key);
          plan->reads.push_back(o.key);
        } else if constexpr (std::is_same_v<T, tx::Script>) {
          // What it writes is known only as it runs: it reserves queue room op by op.
          plan->keys.insert(plan->keys.end(), o.keys.begin(), o.keys.end());
          plan->reads.insert(plan->reads.end(), o.keys.begin(), o.keys.end());
        } else {
          plan->keys.push_back(o.key);
          if (std::is_same_v<T, tx::Expire>) ++plan->max_writes;
        }
      },
      op);
}

const Row* RowOf(const RowSet* rows, const std::string& key) {
  if (rows == nullptr) return nullptr;
  for (const auto& [k, row] : rows->rows) {
    if (k == key) return &row;
  }
  return nullptr;
}

uint64_t FingerprintOf(const RowSet* rows, const std::string& key) {
  const Row* row = RowOf(rows, key);
  return row != nullptr ? RowFingerprint(*row) : 0;
}

// True when a watched key was changed by any client of this store, deleted or expired since it
// was watched, or (shared coherence) its row in PostgreSQL is no longer the one it was.
bool WatchedKeyChanged(Scope& s, const std::vector<WatchList::Key>& watch, const RowSet* rows) {
  for (const auto& w : watch) {
    Shard& shard = s.ShardOf(w.key);
    s.Holds(shard);
    auto it = shard.watched.find(w.key);
    if (it == shard.watched.end() || it->second.version != w.version) return true;
    if (w.live && s.Find(shard, w.key).entry == nullptr) return true;
    if (rows != nullptr && FingerprintOf(rows, w.key) != w.row) return true;
  }
  return false;
}

// At most the bytes the transaction's reads return: what its keys hold now plus what it
// writes (a GET after a SET in the same transaction returns the new value).
size_t ReadBytes(Scope& s, const PlannedTx& tx) {
  size_t bytes = 0;
  for (size_t i = 0; i < tx.ops.size(); ++i) {
    const TxOp& op = tx.ops[i];
    if (tx.sets[i]) bytes += tx.sets[i]->value.size();
    if (const auto* c = std::get_if<tx::Collection>(&op)) {
      // At most what its keys hold, and what it writes (HSET's values).
      for (const auto& v : c->op.values) bytes += v.size();
      for (const auto& key : c->op.keys) {
        Shard& shard = s.ShardOf(key);
        s.Holds(shard);
        Found found = s.Find(shard, key);
        if (found.entry != nullptr) bytes += found.entry->value_bytes();
      }
      continue;
    }
    const std::string* key = nullptr;
    if (const auto* read = std::get_if<tx::Read>(&op)) key = &read->key;
    if (tx.sets[i] && tx.sets[i]->return_old) key = &tx.sets[i]->key;
    if (key == nullptr) continue;
    Shard& shard = s.ShardOf(*key);
    s.Holds(shard);
    Found found = s.Find(shard, *key);
    if (found.entry != nullptr && found.entry->value) bytes += found.entry->value->size();
  }
  return bytes;
}

// DEL (`del`) or EXISTS of `keys`: how many were deleted or exist.
int64_t CountKeys(Scope& s, const std::vector<std::string>& keys, bool del) {
  int64_t n = 0;
  for (const auto& key : keys) {
    Shard& shard = s.ShardOf(key);
    s.Holds(shard);
    if (del ? DeleteKey(s, shard, key) : ExistsKey(s, shard, key)) ++n;
  }
  return n;
}

std::function<void()> RunScript(Scope& s, const tx::Script& script, size_t max_value_bytes);

// Applies op `i` (its keys' shards are locked); returns the delivery of its result.
std::function<void()> ApplyOp(Scope& s, PlannedTx& tx, size_t i, size_t max_value_bytes) {
  return std::visit(
      [&](auto& o) -> std::function<void()> {
        using T = std::decay_t<decltype(o)>;
        auto deliver = [done = o.done](auto result) {
          return [done, result = std::move(result)] { done(result); };
        };
        if constexpr (std::is_same_v<T, tx::Script>) {
          return RunScript(s, o, max_value_bytes);
        } else if constexpr (std::is_same_v<T, tx::DeleteAll>) {
          return deliver(s.ClearAll());
        } else if constexpr (std::is_same_v<T, tx::Collection>) {
          return deliver(ApplyCollection(s, o.op, max_value_bytes));
        } else if constexpr (std::is_same_v<T, tx::Rename>) {
          return deliver(RenameKey(s, o.from, o.to, o.if_absent));
        } else if constexpr (std::is_same_v<T, tx::Delete> || std::is_same_v<T, tx::Exists>) {
          return deliver(CountKeys(s, o.keys, std::is_same_v<T, tx::Delete>));
        } else if constexpr (std::is_same_v<T, tx::Set>) {
          Shard& shard = s.ShardOf(o.request.key);
          s.Holds(shard);
          return deliver(SetKey(s, shard, *tx.sets[i]));
        } else if constexpr (std::is_same_v<T, tx::Increment>) {
          Shard& shard = s.ShardOf(o.request.key);
          s.Holds(shard);
          IncrOutcome outcome = IncrementKey(s, shard, o.request, max_value_bytes);
          if (!outcome.error.empty()) {
            return [done = o.done, error = std::move(outcome.error)] {
              done(Error::InvalidArgument(error));
            };
          }
          return deliver(std::move(outcome.reply));
        } else {
          Shard& shard = s.ShardOf(o.key);
          s.Holds(shard);
          if constexpr (std::is_same_v<T, tx::Read>) {
            return deliver(ReadKey(s, shard, o.key, o.kind, o.change));
          } else if constexpr (std::is_same_v<T, tx::Type>) {
            return deliver(TypeKey(s, shard, o.key));
          } else if constexpr (std::is_same_v<T, tx::Expire>) {
            return deliver(ExpireKey(s, shard, o.key, o.expiry, o.condition));
          } else {
            return deliver(TtlKey(s, shard, o.key));
          }
        }
      },
      tx.ops[i]);
}

// A script's view of its transaction: each op applied at once under the script's locks.
class ScopedScript final : public ScriptScope {
 public:
  ScopedScript(Scope& s, const std::vector<std::string>& keys, size_t max_value_bytes)
      : s_(s), keys_(keys), max_value_bytes_(max_value_bytes) {
    MakeDistinct(keys_);
  }

  Status Apply(std::vector<TxOp> ops) override {
    OpPlan plan;
    PlannedTx tx = PlanTransaction(std::move(ops), nullptr, &plan);
    if (std::optional<Error> refused = Refusal(plan, tx)) {
      for (auto& op : tx.ops) std::visit([&](auto& o) { o.done(*refused); }, op);
      return *refused;
    }
    for (size_t i = 0; i < tx.ops.size(); ++i) ApplyOp(s_, tx, i, max_value_bytes_)();
    return Ok();
  }

 private:
  std::optional<Error> Refusal(const OpPlan& plan, const PlannedTx& tx) {
    for (size_t i = 0; i < tx.ops.size(); ++i) {
      if (std::holds_alternative<tx::Script>(tx.ops[i])) {
        return Error::InvalidArgument("This Redis command is not allowed from script");
      }
      if (tx.sets[i] && tx.sets[i]->value.size() > max_value_bytes_) {
        return Error::InvalidArgument("value is " + std::to_string(tx.sets[i]->value.size()) +
                                      " bytes; the limit (store.max_value_bytes) is " +
                                      std::to_string(max_value_bytes_));
      }
    }
    if (plan.all_shards)
      return Error::InvalidArgument("This Redis command is not allowed from script");
    for (const auto& key : plan.keys) {
      if (!std::binary_search(keys_.begin(), keys_.end(), key)) {
        return Error::InvalidArgument(
            "Script attempted to access a key not declared in KEYS (skydb runs a script under "
            "the locks of the keys it declares)");
      }
    }
    if (!s_.ReserveMore(plan.max_writes)) {
      return Error::Unavailable("write queue full; the script's command was not applied");
    }
    return std::nullopt;
  }

  Scope& s_;
  std::vector<std::string> keys_;
  size_t max_value_bytes_;
};

std::function<void()> RunScript(Scope& s, const tx::Script& script, size_t max_value_bytes) {
  ScopedScript scope(s, script.keys, max_value_bytes);
  script.run(scope);
  return [done = script.done] { done(true); };
}

}  // namespace

PlannedTx PlanTransaction(std::vector<TxOp> ops, std::shared_ptr<WatchList> watched, OpPlan* plan) {
  PlannedTx tx;
  tx.sets.resize(ops.size());
  plan->blind = !watched;
  for (size_t i = 0; i < ops.size(); ++i) {
    PlanOp(ops[i], plan);
    plan->blind = plan->blind && Blind(ops[i]);
    if (auto* set = std::get_if<tx::Set>(&ops[i])) {
      const SetRequest& r = set->request;
      tx.sets[i] = SetArgs{r.key, SharedValue(std::move(set->request.value)), r.expiry, r.condition,
                           r.return_old};
    }
  }
  if (watched) {
    for (auto& name : watched->names()) plan->keys.push_back(std::move(name));
  }
  MakeDistinct(plan->keys);
  MakeDistinct(plan->reads);
  tx.ops = std::move(ops);
  tx.watched = std::move(watched);
  return tx;
}

TxOutcome ApplyTransaction(Scope& s, PlannedTx& tx, const RowSet* rows, size_t max_value_bytes,
                           const ReplyAdmission& admit) {
  TxOutcome out;
  if (tx.watched) {
    if (auto failure = tx.watched->failure()) {
      out.refused = *failure;
      return out;
    }
    if (WatchedKeyChanged(s, tx.watched->keys(), rows)) return out;
  }
  size_t read_bytes = ReadBytes(s, tx);
  if (read_bytes > kMaxTransactionReadBytes) {
    out.refused = Error::InvalidArgument("the transaction would read more than " +
                                         std::to_string(kMaxTransactionReadBytes >> 20) +
                                         " MiB of values; it applied nothing: split it");
    return out;
  }
  if (admit) {
    Status admitted = admit(read_bytes + kReplyOverheadBytes * (tx.ops.size() + 1));
    if (!admitted.ok()) {
      out.refused = std::move(admitted).error();
      return out;
    }
  }
  out.applied = true;
  for (size_t i = 0; i < tx.ops.size(); ++i) {
    out.deliveries.push_back(ApplyOp(s, tx, i, max_value_bytes));
  }
  return out;
}

void WatchKeys(Scope& s, const std::vector<std::string>& keys, WatchList& into, uint64_t epoch,
               const RowSet* rows) {
  for (const auto& key : keys) {
    Shard& shard = s.ShardOf(key);
    s.Holds(shard);
    Watched& watched = shard.watched[key];
    bool live = s.Find(shard, key).entry != nullptr;
    if (into.Add(epoch, {key, watched.version, live, FingerprintOf(rows, key)})) {
      ++watched.watchers;
    } else if (watched.watchers == 0) {
      shard.watched.erase(key);  // nobody else watches it either
    }
  }
}

void UnwatchKeys(const ShardLocks& locks, MemoryTier& tier, const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    Shard& shard = tier.ShardFor(KeyHash(key));
    locks.Holds(shard);
    auto it = shard.watched.find(key);
    if (it != shard.watched.end() && --it->second.watchers == 0) shard.watched.erase(it);
  }
}

}  // namespace skydb::store
