// Keys whose values are not in memory, each way a value leaves it: idle eviction, the memory
// cap, and shared coherence (another daemon may have written, so every read goes to the table).
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "harnesses.h"

namespace skydb::testing {

enum class Cold { kIdleEvicted, kOverMemoryCap, kShared };

inline const char* ColdName(Cold cold) {
  switch (cold) {
    case Cold::kIdleEvicted:
      return "idle-evicted";
    case Cold::kOverMemoryCap:
      return "evicted by store.max_memory";
    case Cold::kShared:
      return "shared coherence";
  }
  return "?";
}

// A test-name part for a (Cold, Durability) parameter.
inline std::string ColdCaseName(Cold cold, Durability durability) {
  std::string name = cold == Cold::kIdleEvicted     ? "IdleEvicted"
                     : cold == Cold::kOverMemoryCap ? "OverMemoryCap"
                                                    : "Shared";
  return name + (durability == Durability::kSync ? "Sync" : "Async");
}

inline TieredOptions ColdOptions(Cold cold, Durability durability) {
  TieredOptions o = FakeOptions(durability, cold == Cold::kShared);
  if (cold == Cold::kIdleEvicted) o.memory.idle_evict = std::chrono::milliseconds(1000);
  if (cold == Cold::kOverMemoryCap) o.memory.max_memory_bytes = 1;
  return o;
}

// Every row read of the fake takes a little while, as PostgreSQL's does.
inline void SlowReads(FakeDurableState& state) {
  std::lock_guard<std::mutex> lock(state.mu);
  state.after_read = [](const std::string&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
}

// Waits until what was written is committed (async too) and no value is left in memory.
inline void LeaveMemory(FakeTieredHarness& h, Cold cold) {
  ASSERT_TRUE(WaitFor([&] { return h.store().Stats().queue_depth == 0; }));
  if (cold == Cold::kIdleEvicted) h.clock().Advance(std::chrono::milliseconds(2000));
  if (cold != Cold::kShared) {
    ASSERT_TRUE(WaitFor([&] { return h.store().Stats().cached_values == 0; }));
  }
}

// `key` holds "5" (EX 1000 s), committed, and its value is out of memory.
inline void MakeCold(FakeTieredHarness& h, Cold cold, const std::string& key) {
  ASSERT_TRUE(h.Set(key, "5", Expiry::At(h.NowMs() + 1000000)).ok());
  LeaveMemory(h, cold);
}

}  // namespace skydb::testing
