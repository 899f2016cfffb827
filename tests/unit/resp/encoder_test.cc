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

TEST(Encoder, NewlinesCannotBreakFraming) {
  EXPECT_EQ(ErrorReply("ERR a\r\nb"), "-ERR a  b\r\n");
  EXPECT_EQ(Simple("x\ny"), "+x y\r\n");
}

}  // namespace
}  // namespace skydb::resp
