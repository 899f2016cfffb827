#include "store/waiter.h"

namespace skydb::store {
namespace {

// Counts the waiters still to fire; the last one runs `then` with the first error, if any.
struct Join {
  explicit Join(size_t n, DurableDone t) : remaining(n), then(std::move(t)) {}
  Mutex mu;
  size_t remaining GUARDED_BY(mu);
  Status first_error GUARDED_BY(mu);
  DurableDone then;

  void Add(const Status& s) {
    Status result;
    {
      MutexLock lock(mu);
      if (!s.ok() && first_error.ok()) first_error = s;
      if (--remaining > 0) return;
      result = first_error;
    }
    then(result);
  }
};

}  // namespace

void AfterAll(const std::vector<std::shared_ptr<Waiter>>& waiters, DurableDone then) {
  if (waiters.empty()) return then(Ok());
  if (waiters.size() == 1) {
    if (auto fired = waiters.front()->Follow(then)) then(*fired);
    return;
  }
  auto join = std::make_shared<Join>(waiters.size(), std::move(then));
  for (const auto& w : waiters) {
    DurableDone add = [join](const Status& s) { join->Add(s); };
    if (auto fired = w->Follow(add)) join->Add(*fired);
  }
}

}  // namespace skydb::store
