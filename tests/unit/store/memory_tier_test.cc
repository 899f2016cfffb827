// The memory tier's LRU (linked through the entries) and its lookups by a precomputed hash.
#include "store/memory_tier.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "support/fakes.h"

namespace skydb::store {
namespace {

using testing::FakeClock;

constexpr size_t kValueBytes = 100;

// `n` keys that live in one shard, so their LRU order is one list's.
std::vector<std::string> KeysOfOneShard(size_t n) {
  std::vector<std::string> keys;
  int shard = ShardOf(KeyHash("sess:0"));
  for (int i = 0; keys.size() < n; ++i) {
    std::string key = "sess:" + std::to_string(i);
    if (ShardOf(KeyHash(key)) == shard) keys.push_back(key);
  }
  return keys;
}

// An evictable tier whose cap is `over` bytes below what `keys` with cached values take.
TierOptions CappedBelow(const std::vector<std::string>& keys, uint64_t over) {
  TierOptions o;
  o.evictable = true;
  uint64_t use = 0;
  for (const auto& key : keys) use += kEntryOverheadBytes + key.size() + kValueBytes;
  o.memory.max_memory_bytes = use - over;
  return o;
}

bool Cached(MemoryTier& tier, const std::string& key) {
  Shard& shard = tier.ShardFor(KeyHash(key));
  MutexLock lock(shard.mu);
  Found found = tier.Lookup(shard, key, tier.WallMs());
  return found.entry != nullptr && found.entry->value.has_value();
}

// `n` keys of one shard, each with a clean cached value, cached in order (the first is the least
// recent), in a tier capped `over` bytes below what they take.
class CappedTierTest : public ::testing::Test {
 protected:
  void Fill(size_t n, uint64_t over) {
    k = KeysOfOneShard(n);
    tier_ = std::make_unique<MemoryTier>(CappedBelow(k, over), clock_);
    shard_ = &tier_->ShardFor(KeyHash(k[0]));
    MutexLock lock(shard_->mu);
    for (const auto& key : k) {
      tier_->SetValue(*shard_, tier_->Insert(*shard_, key), std::string(kValueBytes, 'v'));
    }
  }

  FakeClock clock_;
  std::vector<std::string> k;
  std::unique_ptr<MemoryTier> tier_;
  Shard* shard_ = nullptr;
};

TEST_F(CappedTierTest, EvictsTheLeastRecentCleanValuesFirstAndNeverADirtyOne) {
  Fill(4, 150);  // 150 bytes over: two 100-byte values must go
  MemoryTier& tier = *tier_;
  Shard& shard = *shard_;
  {
    MutexLock lock(shard.mu);
    tier.Touch(shard, *tier.Lookup(shard, k[0], tier.WallMs()).entry);  // LRU: 1 2 3 0
    tier.MarkDirty(shard, *tier.Lookup(shard, k[1], tier.WallMs()).entry, 7, nullptr);  // 2 3 0
  }
  ASSERT_TRUE(tier.OverMemoryCap());
  tier.EvictForMemory();
  EXPECT_FALSE(tier.OverMemoryCap());
  EXPECT_EQ(tier.counters().evictions_memory.load(), 2u);
  EXPECT_TRUE(Cached(tier, k[1])) << "a dirty value was evicted";
  EXPECT_FALSE(Cached(tier, k[2]));
  EXPECT_FALSE(Cached(tier, k[3]));
  EXPECT_TRUE(Cached(tier, k[0])) << "the most recently used value was evicted";

  // Committed, k[1] is clean again and the newest; touched, k[0] is newer still.
  tier.OnCommitted(HashedKey{k[1], KeyHash(k[1])}, 7);
  {
    MutexLock lock(shard.mu);
    tier.Touch(shard, *tier.Lookup(shard, k[0], tier.WallMs()).entry);  // LRU: 1 0
    tier.SetValue(shard, *tier.Lookup(shard, k[2], tier.WallMs()).entry,
                  std::string(kValueBytes, 'w'));  // LRU: 1 0 2
  }
  ASSERT_TRUE(tier.OverMemoryCap());
  tier.EvictForMemory();
  EXPECT_EQ(tier.counters().evictions_memory.load(), 3u);
  EXPECT_FALSE(Cached(tier, k[1]));
  EXPECT_TRUE(Cached(tier, k[0]));
  EXPECT_TRUE(Cached(tier, k[2]));
}

// An entry leaving memory leaves the LRU too: what is evicted next is still a live entry.
TEST_F(CappedTierTest, ARemovedEntryLeavesTheLru) {
  Fill(3, 50);
  MemoryTier& tier = *tier_;
  Shard& shard = *shard_;
  {
    MutexLock lock(shard.mu);
    tier.Remove(shard, k[1], 0, nullptr);  // from the middle of the LRU
    tier.Remove(shard, k[0], 0, nullptr);  // its oldest
    // Newest, and 50 bytes over the cap: one eviction, the oldest value left (k[2]'s).
    size_t over_by_50 = kEntryOverheadBytes + k[1].size() + kValueBytes + 50 + kValueBytes;
    tier.SetValue(shard, tier.Insert(shard, k[0]), std::string(over_by_50, 'v'));
  }
  ASSERT_TRUE(tier.OverMemoryCap());
  tier.EvictForMemory();
  EXPECT_EQ(tier.counters().evictions_memory.load(), 1u);
  EXPECT_FALSE(Cached(tier, k[2]));
  EXPECT_TRUE(Cached(tier, k[0]));
  EXPECT_EQ(tier.count(), 2);
}

// A lookup by a key and its precomputed hash finds what a lookup by the key finds.
TEST(MemoryTierTest, LookupByHashedKeyFindsTheSameEntry) {
  FakeClock clock;
  MemoryTier tier(TierOptions{}, clock);
  for (int i = 0; i < 1000; ++i) {
    std::string key = "sess:" + std::to_string(i);
    Shard& shard = tier.ShardFor(KeyHash(key));
    MutexLock lock(shard.mu);
    tier.SetValue(shard, tier.Insert(shard, key), key);
  }
  for (int i = 0; i < 1100; ++i) {
    std::string key = "sess:" + std::to_string(i);
    Shard& shard = tier.ShardFor(KeyHash(key));
    MutexLock lock(shard.mu);
    Found by_key = tier.Lookup(shard, key, tier.WallMs());
    Found by_hash = tier.Lookup(shard, HashedKey{key, KeyHash(key)}, tier.WallMs());
    EXPECT_EQ(by_key.entry, by_hash.entry) << i;
    EXPECT_EQ(by_key.entry != nullptr, i < 1000) << i;
    if (by_hash.entry != nullptr) {
      EXPECT_EQ(by_hash.entry->value->str(), key);
    }
  }
}

}  // namespace
}  // namespace skydb::store
