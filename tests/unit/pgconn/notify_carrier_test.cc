// The NOTIFY payload of the pub/sub carrier: every byte survives, the largest message the
// carrier accepts stays under PostgreSQL's 8000-byte payload limit, foreign payloads are
// recognised as not ours. (Delivery between daemons: tests/integration/scaling_test.cc.)
#include "pgconn/notify_carrier.h"

#include <gtest/gtest.h>

namespace skydb::pg {
namespace {

TEST(NotifyPayload, RoundTripsEveryByte) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  for (size_t cut : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{255}}) {
    std::string channel = all.substr(0, cut), message = all.substr(cut);
    auto decoded = DecodeNotifyPayload(EncodeNotifyPayload(channel, message));
    ASSERT_TRUE(decoded.has_value()) << cut;
    EXPECT_EQ(decoded->first, channel);
    EXPECT_EQ(decoded->second, message);
  }
  auto empty = DecodeNotifyPayload(EncodeNotifyPayload("", ""));
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->first, "");
}

TEST(NotifyPayload, TheLargestMessageFitsPostgresLimit) {
  std::string payload =
      EncodeNotifyPayload(std::string(kMaxNotifyMessageBytes - 1, 'c'), std::string(1, 'm'));
  EXPECT_LT(payload.size(), 8000u);  // PostgreSQL: "payload string too long" at 8000
  for (char c : payload) EXPECT_TRUE(c > ' ' && c < 127) << int(c);  // text in any encoding
}

TEST(NotifyPayload, ForeignPayloadsAreNotOurs) {
  for (const char* foreign : {"", "hello", ":abcd", "x:abcd", "9:YWJj", "1:YWJ", "1:YW=j", "1:!!!!",
                              "99999999999:YWJj"}) {
    EXPECT_FALSE(DecodeNotifyPayload(foreign).has_value()) << foreign;
  }
}

}  // namespace
}  // namespace skydb::pg
