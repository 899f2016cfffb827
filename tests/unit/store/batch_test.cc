// BuildBatch, the group commit's fold: one row per key, the latest write wins, a deadline-only
// change keeps a value written before it in the same batch, and each row carries the last seq
// folded into it.
#include "store/batch.h"

#include <gtest/gtest.h>

#include "store/shard.h"

namespace skydb::store {
namespace {

using Kind = DurableWrite::Kind;

// Every key hashes to 0 here: the fold must tell keys apart by the keys themselves.
QueuedWrite W(Kind kind, const std::string& key, const std::string& value, UnixMillis exp,
              uint64_t seq) {
  return {DurableWrite::Of(kind, key, value, exp), seq, 0};
}

DurableWrite D(Kind kind, const std::string& key, const std::string& value, UnixMillis exp) {
  return DurableWrite::Of(kind, key, value, exp);
}

struct FoldCase {
  const char* name;
  std::vector<QueuedWrite> in;
  std::vector<DurableWrite> rows;
  std::vector<uint64_t> seqs;
};

class BuildBatchTest : public ::testing::TestWithParam<FoldCase> {};

TEST_P(BuildBatchTest, FoldsAsSpecified) {
  const FoldCase& c = GetParam();
  Batch batch = BuildBatch(c.in);
  ASSERT_EQ(batch.rows.size(), c.rows.size());
  ASSERT_EQ(batch.seqs, c.seqs);
  for (size_t i = 0; i < c.rows.size(); ++i) {
    EXPECT_EQ(batch.rows[i].kind, c.rows[i].kind) << i;
    EXPECT_EQ(batch.rows[i].key, c.rows[i].key) << i;
    EXPECT_EQ(batch.rows[i].value, c.rows[i].value) << i;
    EXPECT_EQ(batch.rows[i].expires_at, c.rows[i].expires_at) << i;
  }
}

const std::string kLong(40, 'k');  // a heap-allocated key: the index must not dangle

INSTANTIATE_TEST_SUITE_P(
    Table, BuildBatchTest,
    ::testing::Values(
        FoldCase{"Empty", {}, {}, {}},
        FoldCase{"DistinctKeysKeepTheirOrder",
                 {W(Kind::kUpsert, "a", "1", 0, 1), W(Kind::kUpsert, "b", "2", 5, 2)},
                 {D(Kind::kUpsert, "a", "1", 0), D(Kind::kUpsert, "b", "2", 5)},
                 {1, 2}},
        FoldCase{"LatestValueWins",
                 {W(Kind::kUpsert, "a", "1", 0, 1), W(Kind::kUpsert, "a", "2", 9, 3)},
                 {D(Kind::kUpsert, "a", "2", 9)},
                 {3}},
        FoldCase{"TouchAfterUpsertKeepsTheValue",
                 {W(Kind::kUpsert, "a", "v", 10, 1), W(Kind::kTouch, "a", "", 20, 2)},
                 {D(Kind::kUpsert, "a", "v", 20)},
                 {2}},
        FoldCase{"DeleteAfterUpsertDeletes",
                 {W(Kind::kUpsert, "a", "v", 10, 1), W(Kind::kDelete, "a", "", 0, 2)},
                 {D(Kind::kDelete, "a", "", 0)},
                 {2}},
        FoldCase{"UpsertAfterDeleteWrites",
                 {W(Kind::kDelete, "a", "", 0, 1), W(Kind::kUpsert, "a", "new", 0, 2)},
                 {D(Kind::kUpsert, "a", "new", 0)},
                 {2}},
        FoldCase{"TouchAloneStaysDeadlineOnly",
                 {W(Kind::kTouch, "a", "", 30, 4), W(Kind::kTouch, "a", "", 40, 5)},
                 {D(Kind::kTouch, "a", "", 40)},
                 {5}},
        FoldCase{
            "InterleavedLongKeysOneRowEach",
            {W(Kind::kUpsert, kLong + "1", "x", 0, 1), W(Kind::kUpsert, kLong + "2", "y", 0, 2),
             W(Kind::kTouch, kLong + "1", "", 7, 3), W(Kind::kUpsert, kLong + "2", "z", 0, 4),
             W(Kind::kDelete, kLong + "3", "", 0, 5)},
            {D(Kind::kUpsert, kLong + "1", "x", 7), D(Kind::kUpsert, kLong + "2", "z", 0),
             D(Kind::kDelete, kLong + "3", "", 0)},
            {3, 4, 5}}),
    [](const ::testing::TestParamInfo<FoldCase>& param_info) {
      return std::string(param_info.param.name);
    });

// Each row keeps its writes' hash, which the memory tier is told the commit of; keys whose
// hashes collide in the fold's table (or are equal) stay separate rows.
TEST(BuildBatchHashesTest, RowsKeepTheirKeysHashes) {
  std::vector<QueuedWrite> in;
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) keys.push_back("sess:" + std::to_string(i));
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 300; ++i) {
      uint64_t hash = i % 3 == 0 ? 42 : KeyHash(keys[i]);  // a third share one hash
      in.push_back({D(Kind::kUpsert, keys[i], std::to_string(round), 0),
                    static_cast<uint64_t>(round * 300 + i + 1), hash});
    }
  }
  Batch batch = BuildBatch(in);
  ASSERT_EQ(batch.rows.size(), 300u);
  ASSERT_EQ(batch.hashes.size(), 300u);
  for (size_t i = 0; i < 300; ++i) {
    EXPECT_EQ(batch.rows[i].key, keys[i]);
    EXPECT_EQ(batch.rows[i].value, "1") << i;
    EXPECT_EQ(batch.seqs[i], 300 + i + 1);
    EXPECT_EQ(batch.hashes[i], i % 3 == 0 ? 42 : KeyHash(keys[i]));
  }
}

}  // namespace
}  // namespace skydb::store
