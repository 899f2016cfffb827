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

// libpq's messages as PQerrorMessage and PQresultErrorMessage return them, folded to one line.
TEST(StringsTest, FoldLinesMakesLibpqMessagesOneLine) {
  struct Row {
    const char* in;
    const char* out;
  } rows[] = {
      {"", ""},
      {"one line\n", "one line"},
      {"connection to server on socket \"/x/.s.PGSQL.5432\" failed: No such file or directory\n"
       "\tIs the server running locally and accepting connections on that socket?\n",
       "connection to server on socket \"/x/.s.PGSQL.5432\" failed: No such file or directory; "
       "Is the server running locally and accepting connections on that socket?"},
      {"ERROR:  relation \"nope\" does not exist\nLINE 1: SELECT * FROM nope\n"
       "                      ^\n",
       "ERROR:  relation \"nope\" does not exist; LINE 1: SELECT * FROM nope"},
      {"a\r\n\r\n  b  \n\n", "a; b"},
      {"x ^ y\n^", "x ^ y"},
  };
  for (const Row& row : rows) EXPECT_EQ(FoldLines(row.in), row.out) << row.in;
}

TEST(StringsTest, PrefixSuffixLower) {
  EXPECT_TRUE(StartsWith("postgres (PostgreSQL) 15", "postgres"));
  EXPECT_FALSE(StartsWith("pg", "postgres"));
  EXPECT_TRUE(EndsWith("skydb.toml", ".toml"));
  EXPECT_FALSE(EndsWith("a", "toml"));
  EXPECT_EQ(ToLower("MiB"), "mib");
}

TEST(StringsTest, IsValidUtf8) {
  for (const char* ok : {"", "plain /srv/sky", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                         "\xf4\x8f\xbf\xbf"}) {
    EXPECT_TRUE(IsValidUtf8(ok)) << ok;
  }
  for (const char* bad :
       {"\xff", "/d\xfex", "\xc3", "\x80", "\xc0\xaf" /* overlong '/' */, "\xe0\x80\xaf",
        "\xed\xa0\x80" /* surrogate */, "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xe2\x82"}) {
    EXPECT_FALSE(IsValidUtf8(bad)) << bad;
  }
}

TEST(StringsTest, ParseVersionNumbers) {
  EXPECT_EQ(ParseVersionNumbers("2.36"), (std::vector<int>{2, 36}));
  EXPECT_EQ(ParseVersionNumbers("2.3.4"), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(ParseVersionNumbers("15"), (std::vector<int>{15}));
  EXPECT_EQ(ParseVersionNumbers("2147483647"), (std::vector<int>{2147483647}));
  for (const char* bad : {"", ".", "2.", ".2", "2..3", "2.x", "x", "-1", "+1", " 2", "2 ",
                          "2147483648", "2.99999999999"}) {
    EXPECT_EQ(ParseVersionNumbers(bad), std::nullopt) << bad;
  }
}

TEST(StringsTest, HumanBytes) {
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(1975ULL << 20), "1.9 GiB");
  EXPECT_EQ(HumanBytes(2ULL << 30), "2 GiB");
}

}  // namespace
}  // namespace skydb
