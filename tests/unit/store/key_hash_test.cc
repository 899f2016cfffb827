#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "store/shard.h"

namespace skydb::store {
namespace {

// Every byte counts, wherever it is: in a whole eight-byte word or in the tail, and the length
// too (a key and the same key with a NUL added differ).
TEST(KeyHashTest, EveryByteAndTheLengthChangeTheHash) {
  for (size_t length = 1; length <= 40; ++length) {
    std::string key(length, 'k');
    uint64_t base = KeyHash(key);
    for (size_t i = 0; i < length; ++i) {
      std::string changed = key;
      changed[i] = 'j';
      EXPECT_NE(KeyHash(changed), base) << "length " << length << ", byte " << i;
    }
    EXPECT_NE(KeyHash(key + std::string(1, '\0')), base) << "length " << length;
  }
  EXPECT_EQ(KeyHash("session:abc"), KeyHash(std::string("session:abc")));
}

// Sequential session keys spread over the shards (the top bits) about evenly.
TEST(KeyHashTest, SequentialKeysSpreadOverTheShards) {
  constexpr int kKeys = 256 * 400;
  std::vector<int> per_shard(kShardCount, 0);
  for (int i = 0; i < kKeys; ++i) ++per_shard[ShardOf(KeyHash("sess:" + std::to_string(i)))];
  int fewest = *std::min_element(per_shard.begin(), per_shard.end());
  int most = *std::max_element(per_shard.begin(), per_shard.end());
  EXPECT_GT(fewest, 300);  // 400 each on average; a binomial spread stays within ±100 here
  EXPECT_LT(most, 500);
  std::set<uint64_t> distinct;
  for (int i = 0; i < kKeys; ++i) distinct.insert(KeyHash("sess:" + std::to_string(i)));
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kKeys));
}

}  // namespace
}  // namespace skydb::store
