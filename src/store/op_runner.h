// OpRunner: how every store operation runs. Run(plan, apply, done):
//
// 1. Lock the shards of the plan's keys (ShardLocks).
// 2. If none of its keys has a gate and the coherence has nothing to fetch first (no evicted
//    value to load; with shared coherence, a blind write), run now: reserve queue room for its
//    writes (or refuse, having changed nothing), apply it through a Scope, queue its writes as
//    one unit, unlock, reply — at once, or, when the reply must wait, once the unit and every
//    uncommitted change the reply reflects have committed.
// 3. Otherwise it joins its keys' gates (key_gates.h) and, once it heads them all, fetches what
//    it needs, then runs as in 2 with its shards locked again, and leaves its gates — or, when
//    its writes commit under a guard (shared coherence), only once the guard is decided: a
//    refused guard runs it again on fresh rows.
//
// So one key's operations take effect in call order, a fill never replaces a newer value, a
// multi-key write is one unit applied whole or not at all, and no reply reflects a write that is
// not as durable as promised. An `apply` must not consume its captures (it may run again) and
// must not call into the store.
//
// Thread-safety: Run may be called from any thread; `done` runs on the caller's thread (memory
// answers), a writer thread (after COMMIT) or a reader thread (after a fetch), never under a
// lock.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "skydb/store.h"
#include "store/coherence.h"
#include "store/committer.h"
#include "store/key_gates.h"
#include "store/memory_tier.h"
#include "store/op_plan.h"
#include "store/scope.h"
#include "store/waiter.h"

namespace skydb::store {

struct RunnerOptions {
  ScopeConfig scope;
  Durability durability = Durability::kSync;
  std::chrono::milliseconds async_max_lag{100};
  std::chrono::milliseconds write_timeout{10000};  // how long guarded commits may be refused
};

class OpRunner {
 public:
  // `committer` null: the memory-only store.
  OpRunner(const RunnerOptions& options, Clock& clock, MemoryTier& tier, GroupCommitter* committer,
           Coherence& coherence);

  template <typename T, typename Apply>
  void Run(OpPlan plan, Apply apply, StoreCallback<T> done);

  // Refuses new writes from now on.
  void Close() { closing_ = true; }
  uint64_t writes() const { return writes_.load(); }
  uint64_t queue_full() const { return queue_full_.load(); }

 private:
  template <typename T, typename Apply>
  friend class GatedRun;

  // An operation's outcome once applied: its result (or why nothing was applied), what its
  // reply waits for, and the guard its writes commit under (null: none).
  template <typename T>
  struct Executed {
    Result<T> result = Error::Internal("not run");
    std::vector<std::shared_ptr<Waiter>> waits;
    std::shared_ptr<CommitGuard> guard;
    std::shared_ptr<Waiter> unit_waiter;
    bool queued = false;
  };
  using Decided = std::function<void(CommitGuard::Outcome)>;

  // Step 2 under `locks`; `rows`: what the operation fetched (shared coherence); `decided` is
  // told the outcome of a guarded unit.
  template <typename T, typename Apply>
  Executed<T> Execute(const ShardLocks& locks, const OpPlan& plan, Apply& apply, const RowSet* rows,
                      Decided decided) REQUIRES(locks);
  // Queue room for `writes`; an error when the queue is full or the store is closing.
  Status Reserve(size_t writes);
  bool ReplyWaitsForCommit() const;
  // Queues the scope's writes as one unit; returns what the reply waits for.
  void Queue(Scope& scope, const OpPlan& plan, const RowSet* rows, Decided decided,
             std::shared_ptr<CommitGuard>* guard, std::shared_ptr<Waiter>* unit_waiter);
  // After the locks are released: evicts if the unit passed the memory cap, then replies.
  template <typename T>
  void Reply(Executed<T>&& executed, const StoreCallback<T>& done);

  RunnerOptions options_;
  Clock& clock_;
  MemoryTier& tier_;
  GroupCommitter* committer_;
  Coherence& coherence_;
  std::atomic<bool> closing_{false};
  std::atomic<uint64_t> writes_{0}, queue_full_{0};
};

}  // namespace skydb::store

#include "store/gated_run.h"  // IWYU pragma: keep (the templates' definitions)
