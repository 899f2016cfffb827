// The templates of op_runner.h: OpRunner::Run, Execute and Reply, and GatedRun, an operation
// that waits in its keys' gates. Included by op_runner.h only.
#pragma once

#include <spdlog/spdlog.h>

#include "store/op_runner.h"

namespace skydb::store {

// How often an operation may fetch again because its value left memory before it gives up. A
// guarded commit refused by another daemon's writes starts again until it has been refused for
// store.write_timeout: a key other daemons write without pause can take many tries.
inline constexpr int kMaxFetches = 3;

template <typename T, typename Apply>
class GatedRun final : public GatedOp {
 public:
  GatedRun(OpRunner& runner, OpPlan plan, Apply apply, StoreCallback<T> done)
      : GatedOp(plan.keys),
        runner_(runner),
        plan_(std::move(plan)),
        apply_(std::move(apply)),
        done_(std::move(done)) {}

 protected:
  void Start() override { Attempt(); }
  void Fail(Error error) override { done_(std::move(error)); }

 private:
  std::shared_ptr<GatedRun> Self() {
    return std::static_pointer_cast<GatedRun>(shared_from_this());
  }
  MemoryTier& tier() { return runner_.tier_; }

  // Fetches what the operation needs, or runs it at once if nothing.
  void Attempt() {
    Fetch fetch;
    std::optional<typename OpRunner::Executed<T>> executed;
    std::vector<std::shared_ptr<GatedOp>> ready;
    {
      ShardLocks locks(tier(), plan_.keys, plan_.all_shards);
      fetch = runner_.coherence_.WhatToFetch(locks, plan_);
      if (fetch.empty()) executed = RunLocked(locks, nullptr, &ready);
    }
    if (!executed) return Read(std::move(fetch));
    Finish(std::move(*executed), std::move(ready));
  }

  void Read(Fetch fetch) {
    ++fetches_;
    runner_.coherence_.Read(std::move(fetch),
                            [self = Self()](Result<Fetch> f) { self->Fetched(std::move(f)); });
  }

  void Fetched(Result<Fetch> fetched) {
    if (!fetched.ok()) return LeaveWith(std::move(fetched).error());
    Fetch again;
    std::optional<typename OpRunner::Executed<T>> executed;
    std::vector<std::shared_ptr<GatedOp>> ready;
    {
      ShardLocks locks(tier(), plan_.keys, plan_.all_shards);
      const RowSet* rows = runner_.coherence_.Install(locks, *fetched);
      // Filled and run under the same locks: nothing can evict the value in between.
      if (rows == nullptr) again = runner_.coherence_.WhatToFetch(locks, plan_);
      if (again.empty()) executed = RunLocked(locks, rows, &ready);
    }
    if (executed) return Finish(std::move(*executed), std::move(ready));
    if (fetches_ >= kMaxFetches) {
      return LeaveWith(Error::Unavailable(
          "a value kept leaving memory while it was loaded; raise store.max_memory"));
    }
    Read(std::move(again));
  }

  // Runs under `locks`; leaves the gates unless a guarded commit keeps them.
  typename OpRunner::Executed<T> RunLocked(const ShardLocks& locks, const RowSet* rows,
                                           std::vector<std::shared_ptr<GatedOp>>* ready)
      REQUIRES(locks) {
    decided_ = false;
    auto executed = runner_.template Execute<T>(
        locks, plan_, apply_, rows,
        [self = Self()](CommitGuard::Outcome outcome) { self->Decided(outcome); });
    if (!executed.guard) *ready = KeyGates::Leave(locks, tier(), *this);
    return executed;
  }

  // Replies before it launches what it freed: its reply goes first, and the launches may run a
  // long queue on this thread.
  void Finish(typename OpRunner::Executed<T> executed,
              std::vector<std::shared_ptr<GatedOp>> ready) {
    if (!executed.guard) {
      runner_.Reply(std::move(executed), done_);
      return GatedOp::LaunchAll(std::move(ready));
    }
    // The reply waits for the guard's decision (Decided), which may have come already; a commit
    // that outlives store.write_timeout undecided stalls what waits behind it.
    std::optional<CommitGuard::Outcome> early;
    {
      MutexLock lock(mu_);
      waits_ = std::move(executed.waits);
      result_ = std::move(executed.result);
      stashed_ = true;
      early = std::exchange(early_, std::nullopt);
    }
    if (early) return Settle(*early);
    DurableDone stalled = [self = Self(), run = guarded_runs_.load()](const Status& s) {
      if (!s.ok() && s.error().code == ErrorCode::kTimeout) self->Stalled(run, s.error());
    };
    if (auto fired = executed.unit_waiter->Follow(stalled); fired) stalled(*fired);
  }

  // On a writer thread: the guarded unit is decided, perhaps before Finish kept the result.
  void Decided(CommitGuard::Outcome outcome) {
    decided_ = true;
    {
      MutexLock lock(mu_);
      if (!stashed_) {
        early_ = outcome;
        return;
      }
    }
    Settle(outcome);
  }

  void Settle(CommitGuard::Outcome outcome) {
    {
      MutexLock lock(mu_);
      stashed_ = false;
    }
    if (outcome == CommitGuard::Outcome::kRefused) {
      auto now = runner_.clock_.Now();
      if (guarded_runs_++ == 0) first_refused_ = now;
      if (now - first_refused_ < runner_.options_.write_timeout) {
        fetches_ = 0;
        return Attempt();  // memory forgot the refused writes; on fresh rows again
      }
    }
    std::vector<std::shared_ptr<GatedOp>> ready;
    {
      ShardLocks locks(tier(), plan_.keys, plan_.all_shards);
      ready = KeyGates::Leave(locks, tier(), *this);
    }
    switch (outcome) {
      case CommitGuard::Outcome::kCommitted:
        break;
      case CommitGuard::Outcome::kRefused:
        SetResult(Error::Conflict(
            "other daemons kept changing its keys while it committed; nothing was applied, "
            "retry"));
        break;
      case CommitGuard::Outcome::kUnknown:
        SetResult(Error::Unavailable(
            "the connection to PostgreSQL was lost during the COMMIT: it may or may not have "
            "applied; read its keys to see"));
        break;
      case CommitGuard::Outcome::kGaveUp:
        SetResult(Error::Unavailable("the store shut down before the write committed"));
        break;
    }
    typename OpRunner::Executed<T> executed;
    {
      MutexLock lock(mu_);
      executed.result = std::move(*result_);
      executed.waits = std::move(waits_);
    }
    if (!replied_.exchange(true)) runner_.Reply(std::move(executed), done_);
    GatedOp::LaunchAll(std::move(ready));
  }

  // The guarded commit of run `run` passed store.write_timeout undecided: its reply fails, as a
  // write's does (the commit may still apply), and so does what waits behind it.
  void Stalled(int run, const Error& error) {
    Error why =
        Error::Timeout("a write to this key is not committed yet: " + error.message + "; retry");
    std::vector<std::shared_ptr<GatedOp>> behind;
    {
      ShardLocks locks(tier(), plan_.keys, plan_.all_shards);
      if (decided_ || run != guarded_runs_) return;
      behind = KeyGates::Stall(locks, tier(), *this, why);
    }
    std::vector<std::shared_ptr<GatedOp>> ready;
    for (const auto& op : behind) {
      bool withdrawn = false;
      {
        ShardLocks locks(tier(), op->keys());
        withdrawn = KeyGates::Withdraw(locks, tier(), op, &ready);
      }
      if (withdrawn) GatedOp::FailWithdrawn(op, why);
    }
    GatedOp::LaunchAll(std::move(ready));
    if (!replied_.exchange(true)) done_(error);
  }

  void SetResult(Error error) {
    MutexLock lock(mu_);
    result_ = std::move(error);
  }

  void LeaveWith(Error error) {
    std::vector<std::shared_ptr<GatedOp>> ready;
    {
      ShardLocks locks(tier(), plan_.keys, plan_.all_shards);
      ready = KeyGates::Leave(locks, tier(), *this);
    }
    if (!replied_.exchange(true)) done_(std::move(error));
    GatedOp::LaunchAll(std::move(ready));
  }

  OpRunner& runner_;
  const OpPlan plan_;
  Apply apply_;
  StoreCallback<T> done_;
  int fetches_ = 0;
  std::atomic<int> guarded_runs_{0};
  Clock::TimePoint first_refused_;  // by the decision thread of the first refusal
  std::atomic<bool> decided_{false};
  std::atomic<bool> replied_{false};  // done_ ran (a stalled guarded run replies early)
  // A guarded run's result and waits, held until its guard is decided; its decision, if it came
  // before they were kept.
  Mutex mu_;
  bool stashed_ GUARDED_BY(mu_) = false;
  std::optional<CommitGuard::Outcome> early_ GUARDED_BY(mu_);
  std::optional<Result<T>> result_ GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Waiter>> waits_ GUARDED_BY(mu_);
};

template <typename T, typename Apply>
void OpRunner::Run(OpPlan plan, Apply apply, StoreCallback<T> done) {
  std::optional<Executed<T>> executed;
  std::optional<Error> stalled;
  std::shared_ptr<GatedOp> gated;
  bool launch = false;
  {
    ShardLocks locks(tier_, plan.keys, plan.all_shards);
    KeyGates::Check check = KeyGates::Inspect(locks, tier_, plan.keys);
    if (check.stalled) {
      stalled = std::move(check.stalled);
    } else if (!check.gated && coherence_.WhatToFetch(locks, plan).empty()) {
      tier_.counters().hits += plan.reads.size();
      executed = Execute<T>(locks, plan, apply, nullptr, nullptr);
    } else {
      gated = std::make_shared<GatedRun<T, Apply>>(*this, std::move(plan), std::move(apply),
                                                   std::move(done));
      launch = KeyGates::Join(locks, tier_, gated);
    }
  }
  if (stalled) return done(std::move(*stalled));
  if (executed) return Reply(std::move(*executed), done);
  if (launch) GatedOp::LaunchAll({std::move(gated)});
}

template <typename T, typename Apply>
OpRunner::Executed<T> OpRunner::Execute(const ShardLocks& locks, const OpPlan& plan, Apply& apply,
                                        const RowSet* rows, Decided decided) {
  if (plan.max_writes > 0) {
    Status room = Reserve(plan.max_writes);
    if (!room.ok()) return Executed<T>{std::move(room).error(), {}, nullptr, nullptr, false};
  }
  // A guarded unit's reply always waits: its guard may still refuse it.
  Scope scope(
      tier_, locks, options_.scope, tier_.WallMs(), clock_.Now(), rows,
      committer_ ? std::function<uint64_t()>([c = committer_] { return c->NextSeq(); }) : nullptr,
      rows != nullptr || ReplyWaitsForCommit());
  if (committer_) {
    scope.set_reserve_more([c = committer_](size_t n) { return c->Reserve(n); });
  }
  Executed<T> out{apply(scope), {}, nullptr, nullptr, false};  // no "not run" error built
  size_t queued = scope.writes().size();
  size_t reserved = plan.max_writes + scope.reserved_more();
  if (committer_ && reserved > queued) committer_->Release(reserved - queued);
  // A plan's bound is the queue's admission, not its accounting: writes beyond it still count.
  if (committer_ && queued > reserved) committer_->Added(queued - reserved);
  writes_ += scope.applied_writes();
  out.waits = std::move(scope.depends());
  if (queued > 0 || scope.delete_all()) {
    Queue(scope, plan, rows, std::move(decided), &out.guard, &out.unit_waiter);
    out.queued = true;
    if (!out.guard && out.unit_waiter && scope.waits()) out.waits.push_back(out.unit_waiter);
  }
  return out;
}

template <typename T>
void OpRunner::Reply(Executed<T>&& executed, const StoreCallback<T>& done) {
  if (executed.queued && tier_.OverMemoryCap()) tier_.EvictForMemory();
  if (!executed.result.ok()) return done(std::move(executed.result).error());
  if (executed.waits.empty()) return done(std::move(executed.result).value());
  AfterAll(executed.waits, [done, result = std::move(executed.result).value()](const Status& s) {
    if (s.ok()) return done(result);
    done(s.error());
  });
}

}  // namespace skydb::store
