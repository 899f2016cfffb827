#include "store/op_runner.h"

#include <algorithm>

namespace skydb::store {

void MakeDistinct(std::vector<std::string>& keys) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
}

OpRunner::OpRunner(const RunnerOptions& options, Clock& clock, MemoryTier& tier,
                   GroupCommitter* committer, Coherence& coherence)
    : options_(options), clock_(clock), tier_(tier), committer_(committer), coherence_(coherence) {
  options_.scope.track_inflight = committer_ != nullptr && coherence_.TracksInflight();
}

bool OpRunner::ReplyWaitsForCommit() const {
  if (committer_ == nullptr) return false;
  if (options_.durability == Durability::kSync) return true;
  return committer_->OldestPendingAge() > options_.async_max_lag;
}

Status OpRunner::Reserve(size_t writes) {
  if (closing_) return Error::Unavailable("the store is shutting down; retry on the next daemon");
  if (committer_ != nullptr) {
    if (committer_->Reserve(writes)) return Ok();
    ++queue_full_;
    return Error::Unavailable(committer_->QueueFullMessage());
  }
  uint64_t cap = tier_.max_memory_bytes();
  if (cap != 0 && tier_.memory_bytes() > cap) {
    return Error::Unavailable(
        "OOM command not allowed when used memory > 'maxmemory' "
        "(memory-only store at store.max_memory)");
  }
  return Ok();
}

void OpRunner::Queue(Scope& scope, const OpPlan& plan, const RowSet* rows, Decided decided,
                     std::shared_ptr<CommitGuard>* guard, std::shared_ptr<Waiter>* unit_waiter) {
  WriteUnit unit{std::move(scope.writes()), scope.waiter(), scope.delete_all()};
  if (rows != nullptr) unit.guard = coherence_.GuardFor(plan, rows);
  if (unit.guard) {
    unit.guard->decided = std::move(decided);
    if (!unit.waiter) unit.waiter = std::make_shared<Waiter>(clock_.Now(), nullptr);
  }
  if (unit.waiter) unit.waiter->set_enqueued(clock_.Now());
  *guard = unit.guard;
  *unit_waiter = unit.waiter;
  committer_->Enqueue(std::move(unit));
}

}  // namespace skydb::store
