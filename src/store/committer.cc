#include "store/committer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace skydb::store {
namespace {

size_t ItemBytes(const std::vector<QueuedWrite>& writes) {
  size_t bytes = 0;
  for (const auto& w : writes) bytes += WriteBytes(w.write);
  return bytes;
}

}  // namespace

GroupCommitter::GroupCommitter(const CommitterOptions& options, Clock& clock,
                               DurableBackend& durable, CommitListener& listener)
    : options_(options), clock_(clock), durable_(durable), listener_(listener) {
  options_.writers = std::max(1, options_.writers);
  options_.overlap_rows = std::max<size_t>(1, options_.overlap_rows);
  options_.overlap_bytes = std::max<size_t>(1, options_.overlap_bytes);
  MutexLock lock(mu_);
  committing_since_.resize(static_cast<size_t>(options_.writers));
  held_.resize(static_cast<size_t>(options_.writers));
}

GroupCommitter::~GroupCommitter() {
  if (started_ && !stopped_) (void)Stop(clock_.Now());
}

void GroupCommitter::Start() {
  for (int i = 0; i < options_.writers; ++i) {
    writers_.emplace_back([this, i] { WriterLoop(i); });
  }
  watcher_ = std::thread([this] { DeadlineWatcherLoop(); });
  started_ = true;
}

uint64_t GroupCommitter::Stop(Clock::TimePoint deadline) {
  if (!started_ || stopped_) return queued_.load();
  stopped_ = true;
  give_up_at_ns_ = SteadyNs(deadline);
  stopping_ = true;
  { MutexLock lock(mu_); }
  work_cv_.NotifyAll();
  retry_cv_.NotifyAll();
  for (auto& t : writers_) {
    if (t.joinable()) t.join();
  }
  { MutexLock lock(watcher_mu_); }
  watcher_cv_.NotifyAll();
  if (watcher_.joinable()) watcher_.join();
  return queued_.load();
}

bool GroupCommitter::Reserve(size_t n) {
  uint64_t now = queued_.load();
  do {
    if (now + n > options_.queue_max_writes) return false;
  } while (!queued_.compare_exchange_weak(now, now + n));
  return true;
}

void GroupCommitter::Release(size_t n) { queued_ -= n; }

std::string GroupCommitter::QueueFullMessage() const {
  return "write queue full (" + std::to_string(options_.queue_max_writes) +
         " writes waiting for PostgreSQL); nothing was applied; retry later";
}

std::string GroupCommitter::TimeoutMessage(const std::string& cause) const {
  return "write not committed within store.write_timeout (" +
         std::to_string(options_.write_timeout.count()) + " ms): " + cause;
}

void GroupCommitter::Enqueue(WriteUnit unit) {
  if (unit.writes.empty() && !unit.delete_all) {
    if (unit.waiter) unit.waiter->Fire(Ok());
    return;
  }
  std::shared_ptr<Waiter> waiter = unit.waiter;
  Push(QueueItem{std::move(unit)}, std::move(waiter));
}

void GroupCommitter::Push(QueueItem item, std::shared_ptr<Waiter> waiter) {
  bool wake = false;
  item.bytes = ItemBytes(item.unit.writes);  // outside the queue's lock
  {
    MutexLock lock(mu_);
    bool was_ready = ReadyLocked();
    // Every queued unit waited for a running commit; this one may not.
    if (blocked_ && !BlockedLocked(item, {})) blocked_ = false;
    size_t before = queued_writes_, bytes_before = queued_bytes_;
    item.enqueued = clock_.Now();
    queued_writes_ += item.unit.writes.size();
    queued_bytes_ += item.bytes;
    queue_.push_back(std::move(item));
    if (waiter) waiters_.push_back(std::move(waiter));
    UpdateOldest();
    // A gathering writer waits for a full batch too.
    bool was_full = before >= options_.batch_max_rows || bytes_before >= options_.batch_max_bytes;
    wake = (!was_ready && ReadyLocked()) || (options_.gather && !was_full && FullLocked());
  }
  if (wake) work_cv_.NotifyOne();
}

bool GroupCommitter::ReadyLocked() const {
  if (queue_.empty() || running_alone_ || blocked_) return false;
  if (running_ == 0) return true;
  return running_ < options_.writers &&
         (queued_writes_ >= options_.overlap_rows || queued_bytes_ >= options_.overlap_bytes);
}

bool GroupCommitter::FullLocked() const {
  return queued_writes_ >= options_.batch_max_rows || queued_bytes_ >= options_.batch_max_bytes;
}

void GroupCommitter::UpdateOldest() {
  Clock::TimePoint oldest{};
  for (auto t : committing_since_) {
    if (t != Clock::TimePoint{} && (oldest == Clock::TimePoint{} || t < oldest)) oldest = t;
  }
  if (!queue_.empty() && (oldest == Clock::TimePoint{} || queue_.front().enqueued < oldest)) {
    oldest = queue_.front().enqueued;
  }
  oldest_pending_ns_ = oldest == Clock::TimePoint{} ? 0 : std::max<int64_t>(1, SteadyNs(oldest));
}

Clock::Duration GroupCommitter::OldestPendingAge() const {
  int64_t oldest = oldest_pending_ns_.load(std::memory_order_relaxed);
  if (oldest == 0) return Clock::Duration::zero();
  return std::chrono::nanoseconds(std::max<int64_t>(0, SteadyNs(clock_.Now()) - oldest));
}

GroupCommitter::Taken GroupCommitter::TakeBatch(int index) {
  MutexLock lock(mu_);
  bool gathered = false;        // the gather's wait ran out
  uint64_t gathered_after = 0;  // batches_taken_ when the gather began
  while (true) {
    if (queue_.empty() && stopping_.load()) return {};
    if (!ReadyLocked()) {
      work_cv_.Wait(mu_);
      continue;
    }
    if (options_.gather && !stopping_.load() && !FullLocked()) {
      // Async: let writes gather for up to flush_interval after the oldest one arrived. The
      // injected clock says how long the oldest write has waited; the wait is a timed wait,
      // which reads no clock. Once any writer took a batch, the oldest write may be another
      // one, so the gather begins again.
      if (gathered_after != batches_taken_) {
        gathered = false;
        gathered_after = batches_taken_;
      }
      auto left = options_.flush_interval - (clock_.Now() - queue_.front().enqueued);
      if (!gathered && left > Clock::Duration::zero()) {
        gathered = !work_cv_.WaitFor(mu_, left);
        continue;
      }
    }
    Taken taken = TakeLocked(index);
    if (!taken.items.empty()) {
      if (ReadyLocked()) work_cv_.NotifyOne();  // enough is left for another writer
      return taken;
    }
    blocked_ = true;  // every queued unit waits for a running commit
  }
}

bool GroupCommitter::BlockedLocked(const QueueItem& item,
                                   const std::vector<uint64_t>& skipped) const {
  if (running_ == 0 && skipped.empty()) return false;
  for (const auto& w : item.unit.writes) {
    if (HeldLocked(w.hash)) return true;
    if (std::find(skipped.begin(), skipped.end(), w.hash) != skipped.end()) return true;
  }
  return false;
}

bool GroupCommitter::HeldLocked(uint64_t hash) const {
  for (const auto& held : held_) {
    if (std::binary_search(held.begin(), held.end(), hash)) return true;
  }
  return false;
}

// Takes, in queue order, the units a batch can take: not blocked by a running commit or by a
// unit passed over before them, within the batch's share of rows and bytes, never split.
GroupCommitter::QueueScan GroupCommitter::ScanLocked(Taken& taken) {
  constexpr size_t kMaxSkipped = 4096;  // units passed over in one scan
  size_t idle = static_cast<size_t>(options_.writers - running_);
  size_t share = (queued_writes_ + idle - 1) / idle;
  size_t limit = std::min(options_.batch_max_rows, std::max(options_.overlap_rows, share));
  size_t bytes_share = (queued_bytes_ + idle - 1) / idle;
  size_t bytes_limit =
      std::min(options_.batch_max_bytes, std::max(options_.overlap_bytes, bytes_share));
  QueueScan scan;
  std::vector<uint64_t> skipped;  // key hashes of the units passed over
  for (; scan.scanned < queue_.size(); ++scan.scanned) {
    QueueItem& item = queue_[scan.scanned];
    if (item.alone()) {
      // It commits alone: after every running commit, before anything queued after it.
      if (taken.items.empty() && scan.passed == 0 && running_ == 0) {
        taken.alone = true;
        scan.rows += item.unit.writes.size();  // what a transaction writes after its FLUSHALL
        scan.bytes += item.bytes;
        taken.items.push_back(std::move(item));
        ++scan.scanned;
      }
      break;
    }
    if (BlockedLocked(item, skipped)) {
      if (scan.passed++ == 0) scan.took.assign(scan.scanned, true);
      scan.took.push_back(false);
      for (const auto& w : item.unit.writes) skipped.push_back(w.hash);
      if (scan.passed >= kMaxSkipped) {
        ++scan.scanned;
        break;
      }
      continue;
    }
    bool fits =
        scan.rows + item.unit.writes.size() <= limit && scan.bytes + item.bytes <= bytes_limit;
    if (!taken.items.empty() && !fits) break;  // a unit is never split
    scan.rows += item.unit.writes.size();
    scan.bytes += item.bytes;
    for (const auto& w : item.unit.writes) taken.hashes.push_back(w.hash);
    taken.items.push_back(std::move(item));
    if (scan.passed > 0) scan.took.push_back(true);
  }
  return scan;
}

void GroupCommitter::RemoveTakenLocked(const QueueScan& scan) {
  if (scan.passed == 0) {
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(scan.scanned));
    return;
  }
  std::deque<QueueItem> left;
  for (size_t i = 0; i < queue_.size(); ++i) {
    if (i >= scan.scanned || !scan.took[i]) left.push_back(std::move(queue_[i]));
  }
  queue_.swap(left);
}

GroupCommitter::Taken GroupCommitter::TakeLocked(int index) {
  Taken taken;
  QueueScan scan = ScanLocked(taken);
  if (taken.items.empty()) return taken;
  // Held from now on (a key this scan took already is not blocked by itself).
  std::sort(taken.hashes.begin(), taken.hashes.end());
  taken.hashes.erase(std::unique(taken.hashes.begin(), taken.hashes.end()), taken.hashes.end());
  held_[static_cast<size_t>(index)].swap(taken.hashes);
  RemoveTakenLocked(scan);
  queued_writes_ -= scan.rows;
  queued_bytes_ -= scan.bytes;
  ++batches_taken_;
  ++running_;
  running_alone_ = taken.alone;
  committing_since_[static_cast<size_t>(index)] = taken.items.front().enqueued;
  UpdateOldest();
  return taken;
}

void GroupCommitter::WriterLoop(int index) {
  while (true) {
    Taken taken = TakeBatch(index);
    if (taken.items.empty()) return;
    CommitTaken(index, taken);
    Finished(index, taken);
  }
}

// A real wait (not the injected clock): backoff paces retries. Stop cuts the wait in progress
// short once; after that, retries stay paced until the stop deadline (no spin). False when
// the wait was cut short by Stop.
bool GroupCommitter::WaitBeforeRetry(std::chrono::milliseconds backoff) {
  bool was_stopping = stopping_.load();
  auto wait = backoff;
  if (was_stopping) {
    auto left = std::chrono::nanoseconds(give_up_at_ns_.load() - SteadyNs(clock_.Now()));
    wait = std::max(std::chrono::milliseconds(0),
                    std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(left)));
  }
  auto until = clock_.Now() + wait;  // the injected clock; the wait itself is a timed wait
  MutexLock lock(mu_);
  while (!(!was_stopping && stopping_.load())) {
    auto left = until - clock_.Now();
    if (left <= Clock::Duration::zero() || !retry_cv_.WaitFor(mu_, left)) return true;
  }
  return false;
}

void GroupCommitter::DeadlineWatcherLoop() {
  constexpr auto kTick = std::chrono::milliseconds(50);
  while (!stopping_.load()) {
    std::vector<std::shared_ptr<Waiter>> expired;
    std::string cause;
    {
      MutexLock lock(mu_);
      auto now = clock_.Now();
      while (!waiters_.empty()) {
        auto& front = waiters_.front();
        if (!front->fired() && now - front->enqueued() < options_.write_timeout) break;
        if (!front->fired()) expired.push_back(front);
        waiters_.pop_front();
      }
      if (!expired.empty()) {
        cause = last_error_.empty() ? "PostgreSQL has not answered the commit yet" : last_error_;
      }
    }
    for (auto& w : expired) w->Fire(Error::Timeout(TimeoutMessage(cause)), &write_timeouts_);
    MutexLock lock(watcher_mu_);
    if (!stopping_.load()) watcher_cv_.WaitFor(watcher_mu_, kTick);
  }
}

void GroupCommitter::FillStats(StoreStats& s) const {
  s.queue_depth = queued_.load();
  s.commits = commits_.load();
  s.committed_rows = committed_rows_.load();
  s.failed_commits = failed_commits_.load();
  s.write_timeouts = write_timeouts_.load();
  s.last_commit_seconds = static_cast<double>(last_commit_ns_.load()) / 1e9;
  s.commit_batch_rows = batch_rows_hist_.Snapshot();
  s.commit_seconds = commit_seconds_hist_.Snapshot();
}

}  // namespace skydb::store
