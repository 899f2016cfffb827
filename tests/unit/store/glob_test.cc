#include <gtest/gtest.h>

#include "skydb/store.h"

namespace skydb {
namespace {

struct GlobCase {
  const char* pattern;
  const char* text;
  bool match;
};

TEST(GlobMatchTest, RedisSemantics) {
  const GlobCase cases[] = {
      {"", "", true},
      {"", "a", false},
      {"*", "", true},
      {"*", "anything", true},
      {"session:*", "session:1", true},
      {"session:*", "sess", false},
      {"h?llo", "hello", true},
      {"h?llo", "hllo", false},
      {"h[ae]llo", "hallo", true},
      {"h[ae]llo", "hillo", false},
      {"h[^e]llo", "hallo", true},
      {"h[^e]llo", "hello", false},
      {"h[a-c]llo", "hbllo", true},
      {"h[a-c]llo", "hdllo", false},
      {"h\\*llo", "h*llo", true},
      {"h\\*llo", "hello", false},
      {"*a*b*", "xxaxxbxx", true},
      {"*a*b", "ab", true},
      {"*a*b", "ba", false},
      {"a*", "b", false},
      {"[", "[", false},
      {"[a", "a", true},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(GlobMatch(c.pattern, c.text), c.match) << c.pattern << " vs " << c.text;
  }
}

}  // namespace
}  // namespace skydb
