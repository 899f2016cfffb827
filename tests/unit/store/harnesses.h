// Store harnesses for unit tests: memory-only, and tiered over the fake durable layer.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "skydb/durable.h"
#include "support/fake_durable.h"
#include "support/store_suite.h"

namespace skydb::testing {

// Polls `condition` every 5 ms for up to 10 s.
inline bool WaitFor(const std::function<bool()>& condition) {
  for (int i = 0; i < 2000; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

// Holds (or releases) every commit of the fake durable layer.
inline void HoldCommits(FakeDurableState& state, bool hold) {
  {
    std::lock_guard<std::mutex> lock(state.mu);
    state.hold_commits = hold;
  }
  state.cv.notify_all();
}

// A callback's result, filled in on whatever thread answers.
template <typename T>
struct Pending {
  std::shared_ptr<std::promise<Result<T>>> promise = std::make_shared<std::promise<Result<T>>>();
  std::shared_future<Result<T>> future = promise->get_future().share();
  StoreCallback<T> cb() {
    return [p = promise](Result<T> r) { p->set_value(std::move(r)); };
  }
  bool answered(std::chrono::milliseconds wait = std::chrono::milliseconds(0)) const {
    return future.wait_for(wait) == std::future_status::ready;
  }
  Result<T> get() const {
    EXPECT_TRUE(answered(std::chrono::milliseconds(10000)));
    return future.get();
  }
};

class MemoryHarness final : public StoreHarness {
 public:
  MemoryHarness() { store_ = NewMemoryStore(MemoryTierOptions{}, clock_); }
  SessionStore& store() override { return *store_; }
  FakeClock& clock() override { return clock_; }
  bool durable() const override { return false; }
  void Restart() override { store_ = NewMemoryStore(MemoryTierOptions{}, clock_); }

 private:
  FakeClock clock_;
  std::unique_ptr<SessionStore> store_;
};

class FakeTieredHarness final : public StoreHarness {
 public:
  explicit FakeTieredHarness(TieredOptions options) : options_(options) { Open(); }
  // A second store on the same fake table (another daemon on one database).
  FakeTieredHarness(TieredOptions options, std::shared_ptr<FakeDurableState> state)
      : options_(options), state_(std::move(state)) {
    Open();
  }
  std::shared_ptr<FakeDurableState> shared_state() const { return state_; }
  ~FakeTieredHarness() override { Close(); }
  SessionStore& store() override { return *store_; }
  FakeClock& clock() override { return clock_; }
  bool durable() const override { return true; }
  bool exact_count() const override { return !options_.shared; }
  void Restart() override {
    Close();
    Open();
  }
  FakeDurableState& state() { return *state_; }
  const TieredOptions& options() const { return options_; }

 private:
  void Open() {
    auto made = NewTieredStore(options_, clock_, std::make_unique<FakeDurable>(state_));
    if (made.ok()) store_ = std::move(made).value();
  }
  void Close() {
    if (store_) (void)store_->Close(std::chrono::seconds(5));
    store_.reset();
  }

  FakeClock clock_;
  TieredOptions options_;
  std::shared_ptr<FakeDurableState> state_ = std::make_shared<FakeDurableState>();
  std::unique_ptr<SessionStore> store_;
};

inline TieredOptions FakeOptions(Durability durability, bool shared = false) {
  TieredOptions o;
  o.shared = shared;
  if (shared) o.ttl_persist_slack = std::chrono::milliseconds(0);
  o.durability = durability;
  o.flush_interval = std::chrono::milliseconds(1);
  o.memory.sweep_interval = std::chrono::milliseconds(20);
  return o;
}

}  // namespace skydb::testing
