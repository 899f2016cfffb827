// The committing half of the group committer (committer.h): one taken batch, retried until it
// is decided, with its guards' outcomes settled.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "store/committer.h"

namespace skydb::store {
// One batch on its way to PostgreSQL: its writes, the units' waiters and guards, and how many
// reserved writes it holds.
struct GroupCommitter::Attempt {
  struct Guarded {
    std::shared_ptr<CommitGuard> guard;
    std::shared_ptr<Waiter> waiter;
    size_t writes = 0;
    std::vector<std::string> owns;  // the keys its unit writes (no other unit of the batch does)
  };
  Batch batch;
  size_t queued = 0;
  bool delete_all = false;
  std::vector<Guarded> guarded;
  std::vector<std::shared_ptr<Waiter>> waiters;  // of the units without a guard
};

void GroupCommitter::CommitTaken(int index, Taken& taken) {
  Attempt attempt;
  std::vector<QueuedWrite> writes;
  for (auto& item : taken.items) {
    WriteUnit& unit = item.unit;
    attempt.delete_all = attempt.delete_all || unit.delete_all;
    if (unit.guard) {
      std::vector<std::string> owns;
      for (const auto& w : unit.writes) owns.push_back(w.write.key);
      std::sort(owns.begin(), owns.end());
      owns.erase(std::unique(owns.begin(), owns.end()), owns.end());
      attempt.guarded.push_back(
          {std::move(unit.guard), std::move(unit.waiter), unit.writes.size(), std::move(owns)});
    } else if (unit.waiter) {
      attempt.waiters.push_back(std::move(unit.waiter));
    }
    std::move(unit.writes.begin(), unit.writes.end(), std::back_inserter(writes));
  }
  attempt.queued = writes.size();
  attempt.batch = BuildBatch(std::move(writes));
  auto backoff = std::chrono::milliseconds(20);
  for (int number = 0;; ++number) {
    auto started = clock_.Now();
    Status failed = Ok();
    if (TryCommit(index, attempt, &failed)) {
      Committed(attempt, started);
      if (number > 0) {
        MutexLock lock(mu_);
        last_error_.clear();
      }
      return;
    }
    FailedAttempt(attempt, failed, number);
    if (attempt.queued == 0 && attempt.guarded.empty() && attempt.waiters.empty()) return;
    if (!WaitBeforeRetry(backoff)) continue;
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

namespace {

// Moves the writes of the keys in `gone` (sorted) from `batch` into the returned batch.
Batch TakeKeys(Batch& batch, const std::vector<std::string>& gone) {
  auto is_gone = [&](const std::string& key) {
    return std::binary_search(gone.begin(), gone.end(), key);
  };
  auto split = [&](std::vector<DurableWrite>& from, std::vector<DurableWrite>& to) {
    std::vector<DurableWrite> kept;
    for (auto& w : from) (is_gone(w.key) ? to : kept).push_back(std::move(w));
    from.swap(kept);
  };
  Batch taken;
  split(batch.rows, taken.rows);
  split(batch.fields, taken.fields);
  std::vector<std::string> cleared;
  for (auto& key : batch.cleared)
    (is_gone(key) ? taken.cleared : cleared).push_back(std::move(key));
  batch.cleared.swap(cleared);
  Batch left;
  for (size_t i = 0; i < batch.keys.size(); ++i) {
    Batch& to = is_gone(batch.keys[i]) ? taken : left;
    to.keys.push_back(std::move(batch.keys[i]));
    to.seqs.push_back(batch.seqs[i]);
    to.hashes.push_back(batch.hashes[i]);
  }
  batch.keys = std::move(left.keys);
  batch.seqs = std::move(left.seqs);
  batch.hashes = std::move(left.hashes);
  return taken;
}

}  // namespace

bool GroupCommitter::TryCommit(int index, Attempt& attempt, Status* failed) {
  DurableBackend::CommitRequest request;
  request.rows = std::move(attempt.batch.rows);
  request.cleared = std::move(attempt.batch.cleared);
  request.fields = std::move(attempt.batch.fields);
  request.delete_all = attempt.delete_all;
  request.now =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_.WallNow().time_since_epoch())
          .count();
  for (const auto& g : attempt.guarded) {
    request.guards.push_back(g.guard->check);
    request.guards.back().owns = g.owns;
  }
  // A refused unit runs again while this transaction commits the rest: waiting for the COMMIT
  // would let another daemon's next write on its keys go first every time.
  bool early = false;
  std::vector<std::string> settled_early;
  request.on_refused = [&](const std::vector<bool>& refused) {
    early = true;
    settled_early = SettleUngranted(attempt, refused, false);
  };
  auto result = durable_.Commit(index, request);
  attempt.batch.rows = std::move(request.rows);
  attempt.batch.cleared = std::move(request.cleared);
  attempt.batch.fields = std::move(request.fields);
  if (!settled_early.empty()) TakeKeys(attempt.batch, settled_early);  // their writes too
  if (!result.ok()) {
    *failed = std::move(result).error();
    return false;
  }
  std::vector<bool> refused = std::move(result->refused);
  if (early) refused.assign(attempt.guarded.size(), false);
  bool any_refused = std::find(refused.begin(), refused.end(), true) != refused.end();
  if (any_refused || result->unknown) SettleUngranted(attempt, refused, result->unknown);
  if (!result->unknown) return true;
  if (attempt.batch.keys.empty() && !attempt.delete_all && attempt.waiters.empty()) return true;
  // What had no guard is committed again: its writes are idempotent.
  *failed = Error::Unavailable("the connection to PostgreSQL was lost during COMMIT");
  return false;
}

std::vector<std::string> GroupCommitter::SettleUngranted(Attempt& attempt,
                                                         const std::vector<bool>& refused,
                                                         bool unknown) {
  std::vector<Attempt::Guarded> kept, settled;
  std::vector<std::string> gone;
  for (size_t i = 0; i < attempt.guarded.size(); ++i) {
    if (!unknown && !refused[i]) {
      kept.push_back(std::move(attempt.guarded[i]));
    } else {
      gone.insert(gone.end(), attempt.guarded[i].owns.begin(), attempt.guarded[i].owns.end());
      settled.push_back(std::move(attempt.guarded[i]));
    }
  }
  attempt.guarded = std::move(kept);
  // A FLUSHALL is a unit of its own: refused, nothing of it is left.
  if (!settled.empty()) attempt.delete_all = attempt.delete_all && !attempt.guarded.empty();
  std::sort(gone.begin(), gone.end());
  Batch forgotten = TakeKeys(attempt.batch, gone);
  listener_.OnNotCommitted(forgotten);
  Error why = unknown
                  ? Error::Unavailable(
                        "the connection to PostgreSQL was lost during the COMMIT: it may or "
                        "may not have applied; read its keys to see")
                  : Error::Conflict("another daemon changed a key it read; nothing was applied");
  for (auto& g : settled) {
    attempt.queued -= g.writes;
    queued_ -= g.writes;
    g.guard->decided(unknown ? CommitGuard::Outcome::kUnknown : CommitGuard::Outcome::kRefused);
    if (g.waiter) g.waiter->Fire(why);
  }
  return gone;
}

void GroupCommitter::Committed(Attempt& attempt, Clock::TimePoint started) {
  if (!attempt.batch.keys.empty() || attempt.delete_all) Count(attempt, started);
  listener_.OnCommitted(attempt.batch);
  queued_ -= attempt.queued;
  for (auto& g : attempt.guarded) g.guard->decided(CommitGuard::Outcome::kCommitted);
  for (auto& g : attempt.guarded) {
    if (g.waiter) g.waiter->Fire(Ok());
  }
  for (auto& w : attempt.waiters) w->Fire(Ok());
}

void GroupCommitter::Count(const Attempt& attempt, Clock::TimePoint started) {
  last_commit_ns_ =
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.Now() - started).count();
  commit_seconds_hist_.Observe(static_cast<double>(last_commit_ns_.load()) / 1e9);
  batch_rows_hist_.Observe(static_cast<double>(attempt.batch.keys.size()));
  ++commits_;
  committed_rows_ += attempt.batch.writes();
}

void GroupCommitter::FailedAttempt(Attempt& attempt, const Status& failed, int number) {
  ++failed_commits_;
  if (number == 0 || number % 50 == 0) {
    spdlog::warn("store: commit of {} writes failed (attempt {}), retrying: {}",
                 attempt.batch.writes(), number + 1, failed.error().message);
  }
  {
    MutexLock lock(mu_);
    last_error_ = failed.error().message;
  }
  auto now = clock_.Now();
  bool giving_up = stopping_.load() && SteadyNs(now) >= give_up_at_ns_.load();
  auto time_out = [&](const std::shared_ptr<Waiter>& w) {
    if (w && (giving_up || now - w->enqueued() >= options_.write_timeout)) {
      w->Fire(Error::Timeout(TimeoutMessage(failed.error().message)), &write_timeouts_);
    }
  };
  for (auto& w : attempt.waiters) time_out(w);
  for (auto& g : attempt.guarded) time_out(g.waiter);
  if (!giving_up) return;
  spdlog::error("store: shutting down with {} writes not committed: {}", attempt.batch.writes(),
                failed.error().message);
  queued_ -= attempt.queued;
  attempt.queued = 0;
  for (auto& g : attempt.guarded) g.guard->decided(CommitGuard::Outcome::kGaveUp);
  attempt.guarded.clear();
  attempt.waiters.clear();
}

void GroupCommitter::Finished(int index, const Taken& taken) {
  bool wake_all = stopping_.load(), wake = false;
  {
    MutexLock lock(mu_);
    held_[static_cast<size_t>(index)].clear();
    --running_;
    if (taken.alone) running_alone_ = false;
    blocked_ = false;
    committing_since_[static_cast<size_t>(index)] = Clock::TimePoint{};
    UpdateOldest();
    wake = ReadyLocked();
  }
  if (wake_all) {
    work_cv_.NotifyAll();  // a writer waiting for an empty queue may stop now
  } else if (wake) {
    work_cv_.NotifyOne();
  }
}

}  // namespace skydb::store
