// Transactions (MULTI/EXEC) and WATCH on the memory tier: what a transaction touches, how its
// operations apply through one Scope (key_ops.h), and whether a WATCHed key changed. No I/O;
// the store (tiered_store.cc) runs them through the OpRunner as one operation.
//
// Thread-safety: functions taking a Scope run under its shard locks.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "skydb/store.h"
#include "store/key_ops.h"
#include "store/op_plan.h"
#include "store/scope.h"

namespace skydb::store {

// A transaction's operations with each SET's value held once (SetArgs), so that it may run
// again (a refused guarded commit) without copying them.
struct PlannedTx {
  std::vector<TxOp> ops;
  std::vector<std::optional<SetArgs>> sets;  // aligned with ops: the SETs' arguments
  std::shared_ptr<WatchList> watched;        // read when it applies: a WATCH may still run
};

// A transaction's result: whether it applied, and each op's reply, delivered in order once the
// unit is acknowledged.
struct TxOutcome {
  bool applied = false;
  std::optional<Error> refused;  // nothing applied, and why
  std::vector<std::function<void()>> deliveries;
};

// Moves the SETs' values out of `ops`; fills the plan (its keys include the WATCHed names).
PlannedTx PlanTransaction(std::vector<TxOp> ops, std::shared_ptr<WatchList> watched, OpPlan* plan);

// Applies the transaction whole, or nothing when a WATCHed key changed or a limit refuses it
// (`admit`: the reply budget; values read bounded by kMaxTransactionReadBytes).
TxOutcome ApplyTransaction(Scope& s, PlannedTx& tx, const RowSet* rows, size_t max_value_bytes,
                           const ReplyAdmission& admit);

// WATCH: records `keys` as they are now (their change count; with rows, their fingerprint) in
// `into`, unless it was emptied since its names were added at `epoch`.
void WatchKeys(Scope& s, const std::vector<std::string>& keys, WatchList& into, uint64_t epoch,
               const RowSet* rows);
// UNWATCH: forgets one watcher of each key.
void UnwatchKeys(const ShardLocks& locks, MemoryTier& tier, const std::vector<std::string>& keys)
    REQUIRES(locks);

}  // namespace skydb::store
