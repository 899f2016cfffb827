// RespParser: a table of inputs with their commands or error, each fed whole, split at every
// byte boundary, and one byte at a time; every way must give the same result.
#include "resp/parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace skydb::resp {
namespace {

using Commands = std::vector<std::vector<std::string>>;

struct Outcome {
  Outcome(Commands c = {}, std::string e = "", bool mid = false)  // NOLINT: table shorthand
      : commands(std::move(c)), error(std::move(e)), mid_command(mid) {}
  Commands commands;
  std::string error;         // empty: no error
  bool mid_command = false;  // input ended inside a command
  bool operator==(const Outcome& o) const {
    return commands == o.commands && error == o.error && mid_command == o.mid_command;
  }
};

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  os << "{";
  for (const auto& c : o.commands) {
    os << "[";
    for (const auto& a : c) os << "'" << a << "' ";
    os << "] ";
  }
  return os << "error='" << o.error << "' mid=" << o.mid_command << "}";
}

ParserLimits TestLimits() {
  ParserLimits limits;
  limits.max_bulk_bytes = 16;
  limits.max_multibulk_length = 8;
  limits.max_query_buffer = 100;
  limits.max_inline_bytes = 40;
  return limits;
}

// Feeds `pieces` in order, collecting commands until an error.
Outcome FeedPieces(const std::vector<std::string_view>& pieces) {
  RespParser parser(TestLimits());
  Outcome out;
  for (std::string_view piece : pieces) {
    while (!piece.empty() && out.error.empty()) {
      ParseStatus status = parser.Feed(piece);
      if (status == ParseStatus::kCommand) out.commands.push_back(parser.args());
      if (status == ParseStatus::kError) out.error = parser.error();
    }
  }
  out.mid_command = out.error.empty() && parser.buffered_bytes() > 0;
  return out;
}

struct Case {
  std::string name;
  std::string input;
  Outcome expected;
};

std::vector<Case> Cases() {
  return {
      {"array", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", {{{"GET", "k"}}}},
      {"pipeline",
       "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n",
       {{{"PING"}, {"ECHO", ""}}}},
      {"binary bulk",
       std::string("*1\r\n$5\r\na\r\n\0b\r\n", 15),
       {{{std::string("a\r\n\0b", 5)}}}},
      {"inline", "PING\r\n", {{{"PING"}}}},
      {"inline lf only", "SET a b\n", {{{"SET", "a", "b"}}}},
      {"inline spaces", "  GET   key  \r\n", {{{"GET", "key"}}}},
      {"inline quotes", "SET \"a b\" 'c d' \"\\x41\\n\"\r\n", {{{"SET", "a b", "c d", "A\n"}}}},
      {"inline single escape", "ECHO 'it\\'s'\r\n", {{{"ECHO", "it's"}}}},
      {"inline nul separates", std::string("A\0B\r\n", 5), {{{"A", "B"}}}},
      {"inline too many args",
       "a b c d e f g h i\r\n",
       {{}, "Protocol error: too many arguments in inline request"}},
      {"empty lines skipped", "\r\n\r\nPING\r\n", {{{"PING"}}}},
      {"empty arrays skipped", "*0\r\n*-1\r\nPING\r\n", {{{"PING"}}}},
      {"mixed", "PING\r\n*1\r\n$4\r\nPING\r\nECHO x\r\n", {{{"PING"}, {"PING"}, {"ECHO", "x"}}}},
      {"partial array", "*2\r\n$3\r\nGET\r\n", {{}, "", true}},
      {"partial inline", "GET k", {{}, "", true}},
      {"bad multibulk", "*x\r\n", {{}, "Protocol error: invalid multibulk length"}},
      {"multibulk too long", "*9\r\n", {{}, "Protocol error: invalid multibulk length"}},
      {"multibulk no cr", "*1\n", {{}, "Protocol error: invalid multibulk length"}},
      {"bad bulk length", "*1\r\n$x\r\n", {{}, "Protocol error: invalid bulk length"}},
      {"negative bulk", "*1\r\n$-1\r\n", {{}, "Protocol error: invalid bulk length"}},
      {"sign only bulk", "*1\r\n$-\r\n", {{}, "Protocol error: invalid bulk length"}},
      {"plus sign bulk", "*1\r\n$+1\r\n", {{}, "Protocol error: invalid bulk length"}},
      {"bulk length then garbage", "*1\r\n$1x\r\n", {{}, "Protocol error: invalid bulk length"}},
      {"leading zeros", "*01\r\n$03\r\nabc\r\n", {{{"abc"}}}},
      {"minus zero array skipped", "*-0\r\nPING\r\n", {{{"PING"}}}},
      {"19 digits, leading zeros", "*0000000000000000001\r\n$4\r\nPING\r\n", {{{"PING"}}}},
      {"19-digit bulk length overflows",
       "*1\r\n$9999999999999999999\r\n",
       {{}, "Protocol error: invalid bulk length"}},
      {"18-digit bulk length",
       "*1\r\n$999999999999999999\r\n",
       {{}, "Protocol error: invalid bulk length"}},
      {"bulk above max refused at header",
       "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$17\r\n",
       {{}, "Protocol error: invalid bulk length"}},
      {"expected dollar", "*1\r\nfoo\r\n", {{}, "Protocol error: expected '$', got 'f'"}},
      {"expected dollar nonprint", "*1\r\n\r\n", {{}, "Protocol error: expected '$', got ' '"}},
      {"missing crlf after bulk",
       "*1\r\n$1\r\nabc\r\n",
       {{}, "Protocol error: expected CRLF after bulk data"}},
      {"unbalanced quotes", "SET \"a b\r\n", {{}, "Protocol error: unbalanced quotes in request"}},
      {"glued quote", "SET \"a\"b\r\n", {{}, "Protocol error: unbalanced quotes in request"}},
      {"inline too long", std::string(41, 'a'), {{}, "Protocol error: too big inline request"}},
      {"header too long",
       "*" + std::string(41, '1'),
       {{}, "Protocol error: too big mbulk count string"}},
      {"query buffer limit",
       "*8\r\n$16\r\n" + std::string(16, 'a') + "\r\n$16\r\n" + std::string(16, 'a') +
           "\r\n$16\r\n" + std::string(16, 'a') + "\r\n$16\r\n" + std::string(16, 'a') +
           "\r\n$16\r\n" + std::string(16, 'a') + "\r\n$16\r\n",
       {{}, "Protocol error: command exceeds the query buffer limit"}},
      {"command before error",
       "PING\r\n*1\r\n$x\r\n",
       {{{"PING"}}, "Protocol error: invalid bulk length"}},
  };
}

class ParserTable : public ::testing::TestWithParam<Case> {};

TEST_P(ParserTable, Whole) { EXPECT_EQ(FeedPieces({GetParam().input}), GetParam().expected); }

TEST_P(ParserTable, SplitAtEveryByteBoundary) {
  std::string_view input = GetParam().input;
  for (size_t cut = 0; cut <= input.size(); ++cut) {
    EXPECT_EQ(FeedPieces({input.substr(0, cut), input.substr(cut)}), GetParam().expected)
        << "cut at " << cut;
  }
}

TEST_P(ParserTable, OneByteAtATime) {
  std::string_view input = GetParam().input;
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < input.size(); ++i) bytes.push_back(input.substr(i, 1));
  EXPECT_EQ(FeedPieces(bytes), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(Cases, ParserTable, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           std::string name;
                           for (char c : param_info.param.name) name += std::isalnum(c) ? c : '_';
                           return name;
                         });

TEST(Parser, LeavesTheNextCommandUnconsumed) {
  RespParser parser;
  std::string_view input = "PING\r\nECHO a\r\n";
  ASSERT_EQ(parser.Feed(input), ParseStatus::kCommand);
  EXPECT_EQ(input, "ECHO a\r\n");
}

// Arguments' storage is reused from one command to the next (keys longer than the inline
// capacity, shorter and longer than before, moved out by the caller or left in place): each
// command still gets exactly its own bytes.
TEST(Parser, ReusedArgumentStorageHoldsOnlyEachCommandsBytes) {
  const std::string long_key(20, 'a'), shorter_key(17, 'b'), huge_key(200, 'c');
  auto command = [](const std::string& name, const std::string& key) {
    return "*2\r\n$" + std::to_string(name.size()) + "\r\n" + name + "\r\n$" +
           std::to_string(key.size()) + "\r\n" + key + "\r\n";
  };
  std::string stream = command("GET", long_key) + command("GET", shorter_key) +
                       command("DEL", huge_key) + "EXISTS " + shorter_key + "\r\n" +
                       command("GET", long_key) + command("GET", "");
  const std::vector<std::vector<std::string>> expected = {
      {"GET", long_key},       {"GET", shorter_key}, {"DEL", huge_key},
      {"EXISTS", shorter_key}, {"GET", long_key},    {"GET", ""}};
  for (bool move_out : {false, true}) {
    RespParser parser;
    std::vector<std::vector<std::string>> got;
    for (size_t i = 0; i < stream.size(); ++i) {  // one byte at a time
      std::string_view piece(stream.data() + i, 1);
      if (parser.Feed(piece) != ParseStatus::kCommand) continue;
      if (move_out) {
        got.push_back(std::move(parser.args()));
      } else {
        got.push_back(parser.args());
      }
    }
    EXPECT_EQ(got, expected) << (move_out ? "moved out" : "left in place");
  }
}

TEST(Parser, RefusesInputAfterAnErrorUntilReset) {
  RespParser parser;
  std::string_view bad = "*x\r\n";
  ASSERT_EQ(parser.Feed(bad), ParseStatus::kError);
  std::string_view good = "PING\r\n";
  EXPECT_EQ(parser.Feed(good), ParseStatus::kError);
  parser.Reset();
  EXPECT_EQ(parser.Feed(good), ParseStatus::kCommand);
}

TEST(Parser, DoesNotBufferAnOversizedValue) {
  ParserLimits limits;
  limits.max_bulk_bytes = 1 << 20;
  RespParser parser(limits);
  std::string_view header = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n";
  EXPECT_EQ(parser.Feed(header), ParseStatus::kError);
  EXPECT_EQ(parser.error(), "Protocol error: invalid bulk length");
}

TEST(InlineArgs, SplitsLikeRedisCli) {
  std::vector<std::string> args;
  ASSERT_TRUE(SplitInlineArgs("a \"b\\tc\" 'd\"e' \"\\x4g\"", &args));
  EXPECT_EQ(args, (std::vector<std::string>{"a", "b\tc", "d\"e", "x4g"}));
  EXPECT_FALSE(SplitInlineArgs("'open", &args));
  ASSERT_TRUE(SplitInlineArgs("", &args));
  EXPECT_TRUE(args.empty());
}

}  // namespace
}  // namespace skydb::resp
