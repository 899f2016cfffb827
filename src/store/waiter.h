// Waiter: the completion of one queued unit of writes, as the write's own reply and every reply
// that depends on it see it.
//
// A waiter fires exactly once: from the committer after its unit's COMMIT (Ok) or when it gives
// up at shutdown, or from the deadline watcher once store.write_timeout has passed (Timeout) —
// even while the commit is still blocked on a PostgreSQL that does not answer. Readers of a key
// whose latest write is not committed Follow() that write's waiter, so no reply reflects an
// uncommitted write; the reply runs when the waiter fires, with its status.
//
// Thread-safety: every method may be called from any thread. Callbacks run on the thread that
// fires the waiter, never under the waiter's lock; a caller holding a shard lock must not run a
// callback itself (Follow hands a fired status back instead of running `then`).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "skydb/env.h"
#include "skydb/mutex.h"
#include "skydb/result.h"

namespace skydb::store {

using DurableDone = std::function<void(Status)>;

class Waiter {
 public:
  Waiter(Clock::TimePoint enqueued, DurableDone done)
      : enqueued_(enqueued.time_since_epoch().count()), done_(std::move(done)) {}

  // Sets the reply; only before the waiter is queued (nothing can fire it yet).
  void SetDone(DurableDone done) {
    MutexLock lock(mu_);
    done_ = std::move(done);
  }

  // When its unit was handed to the committer: store.write_timeout counts from here. Set again
  // at the hand-over, so a unit that took long to apply (a long script) is not timed by it.
  Clock::TimePoint enqueued() const {
    return Clock::TimePoint(Clock::TimePoint::duration(enqueued_.load(std::memory_order_relaxed)));
  }
  void set_enqueued(Clock::TimePoint when) {
    enqueued_.store(when.time_since_epoch().count(), std::memory_order_relaxed);
  }
  bool fired() const { return fired_.load(std::memory_order_acquire); }

  // True if this call fired it. `counted`, if given, is incremented before any reply runs, so
  // whoever sees a reply also sees the count.
  bool Fire(const Status& status, std::atomic<uint64_t>* counted = nullptr) {
    DurableDone done;
    std::vector<DurableDone> followers;
    {
      MutexLock lock(mu_);
      if (fired_.load(std::memory_order_relaxed)) return false;
      status_ = status;
      fired_.store(true, std::memory_order_release);
      done.swap(done_);
      followers.swap(followers_);
    }
    if (counted != nullptr) ++*counted;
    if (done) done(status);
    for (auto& f : followers) f(status);
    return true;
  }

  // Takes `then` (moves it out) to run when this waiter fires and returns nullopt; if it has
  // fired already, returns the status it fired with and leaves `then` to the caller.
  std::optional<Status> Follow(DurableDone& then) {
    MutexLock lock(mu_);
    if (fired_.load(std::memory_order_relaxed)) return status_;
    followers_.push_back(std::move(then));
    return std::nullopt;
  }

 private:
  std::atomic<Clock::TimePoint::rep> enqueued_;
  std::atomic<bool> fired_{false};
  Mutex mu_;
  DurableDone done_ GUARDED_BY(mu_);
  std::vector<DurableDone> followers_ GUARDED_BY(mu_);
  Status status_ GUARDED_BY(mu_);
};

// Runs `then` once every waiter in `waiters` has fired: Ok if all committed, else the first
// error. `then` runs at once (on this thread) when the list is empty or all have fired.
void AfterAll(const std::vector<std::shared_ptr<Waiter>>& waiters, DurableDone then);

}  // namespace skydb::store
