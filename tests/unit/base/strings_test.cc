#include "base/strings.h"

#include <gtest/gtest.h>

namespace skydb {
namespace {

TEST(StringsTest, TrimSplitJoin) {
  EXPECT_EQ(Trim("  a b \n"), "a b");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Split("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(Join({"a", "b", "c"}, ", "), "a, b, c");
}

TEST(StringsTest, PrefixSuffixLower) {
  EXPECT_TRUE(StartsWith("postgres (PostgreSQL) 15", "postgres"));
  EXPECT_FALSE(StartsWith("pg", "postgres"));
  EXPECT_TRUE(EndsWith("skydb.toml", ".toml"));
  EXPECT_FALSE(EndsWith("a", "toml"));
  EXPECT_EQ(ToLower("MiB"), "mib");
}

TEST(StringsTest, HumanBytes) {
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(1975ULL << 20), "1.9 GiB");
  EXPECT_EQ(HumanBytes(2ULL << 30), "2 GiB");
}

}  // namespace
}  // namespace skydb
