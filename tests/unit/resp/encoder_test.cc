#include "resp/encoder.h"

#include <gtest/gtest.h>

namespace skydb::resp {
namespace {

TEST(Encoder, EncodesEachReplyType) {
  EXPECT_EQ(Simple("OK"), "+OK\r\n");
  EXPECT_EQ(ErrorReply("ERR syntax error"), "-ERR syntax error\r\n");
  EXPECT_EQ(Integer(-2), ":-2\r\n");
  EXPECT_EQ(Integer(INT64_MIN), ":-9223372036854775808\r\n");
  EXPECT_EQ(Bulk(std::string("a\0b", 3)), std::string("$3\r\na\0b\r\n", 9));
  EXPECT_EQ(Bulk(""), "$0\r\n\r\n");
  EXPECT_EQ(NullBulk(), "$-1\r\n");
  EXPECT_EQ(OptionalBulk(std::nullopt), "$-1\r\n");
  EXPECT_EQ(OptionalBulk(std::string("v")), "$1\r\nv\r\n");
  std::string out;
  AppendArrayHeader(out, 2);
  AppendBulk(out, "a");
  AppendNullBulk(out);
  EXPECT_EQ(out, "*2\r\n$1\r\na\r\n$-1\r\n");
  out.clear();
  AppendNullArray(out);
  AppendBulkArray(out, {});
  EXPECT_EQ(out, "*-1\r\n*0\r\n");
}

// Each RESP3 type, and what the same element is in RESP2 (as Redis 7 writes both).
TEST(Encoder, RespThreeTypesAndTheirRespTwoForms) {
  auto both = [](auto append) {
    std::string two, three;
    append(two, Proto::kResp2);
    append(three, Proto::kResp3);
    return std::make_pair(two, three);
  };
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(both([](std::string& o, Proto p) { AppendNull(o, p); }), P("$-1\r\n", "_\r\n"));
  EXPECT_EQ(both([](std::string& o, Proto p) { AppendMapHeader(o, 2, p); }), P("*4\r\n", "%2\r\n"));
  EXPECT_EQ(both([](std::string& o, Proto p) { AppendSetHeader(o, 3, p); }), P("*3\r\n", "~3\r\n"));
  EXPECT_EQ(both([](std::string& o, Proto p) { AppendPushHeader(o, 3, p); }),
            P("*3\r\n", ">3\r\n"));
  EXPECT_EQ(both([](std::string& o, Proto p) { AppendDouble(o, 1.5, p); }),
            P("$3\r\n1.5\r\n", ",1.5\r\n"));
  EXPECT_EQ(both([](std::string& o, Proto p) { AppendDouble(o, 0.1, p); }),
            P("$19\r\n0.10000000000000001\r\n", ",0.10000000000000001\r\n"));
  EXPECT_EQ(both([](std::string& o, Proto p) { AppendDouble(o, -1.0 / 0.0, p); }),
            P("$4\r\n-inf\r\n", ",-inf\r\n"));
  EXPECT_EQ(both([](std::string& o, Proto p) { AppendBoolean(o, true, p); }),
            P(":1\r\n", "#t\r\n"));
  EXPECT_EQ(both([](std::string& o, Proto p) { AppendBoolean(o, false, p); }),
            P(":0\r\n", "#f\r\n"));
  EXPECT_EQ(both([](std::string& o, Proto p) { AppendVerbatim(o, "a:1", p); }),
            P("$3\r\na:1\r\n", "=7\r\ntxt:a:1\r\n"));
  EXPECT_EQ(Null(Proto::kResp3), "_\r\n");
  EXPECT_EQ(OptionalBulk(std::nullopt, Proto::kResp3), "_\r\n");
  EXPECT_EQ(OptionalBulk(std::string("v"), Proto::kResp3), "$1\r\nv\r\n");
}

TEST(Encoder, NewlinesCannotBreakFraming) {
  EXPECT_EQ(ErrorReply("ERR a\r\nb"), "-ERR a  b\r\n");
  EXPECT_EQ(Simple("x\ny"), "+x y\r\n");
}

}  // namespace
}  // namespace skydb::resp
