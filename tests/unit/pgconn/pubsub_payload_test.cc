// The pub/sub carrier's wire format and decisions, without PostgreSQL: base64 of every byte,
// which daemons a message reaches, how a batch packs into NOTIFY payloads (every payload under
// PostgreSQL's limit, ASCII only, order kept, large messages as table rows), and how a payload
// reads back for each daemon. (Delivery between real daemons: tests/integration.)
#include "pgconn/pubsub_payload.h"

#include <gtest/gtest.h>

#include <map>

namespace skydb::pg::pubsub {
namespace {

// Redis's glob for these tests: '*' at the end only.
bool PrefixGlob(std::string_view pattern, std::string_view channel) {
  if (!pattern.empty() && pattern.back() == '*') {
    return channel.substr(0, pattern.size() - 1) == pattern.substr(0, pattern.size() - 1);
  }
  return pattern == channel;
}

std::string AllBytes() {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  return all;
}

TEST(PubSubBase64, RoundTripsEveryByteAtEveryLength) {
  std::string all = AllBytes() + AllBytes();
  for (size_t n = 0; n <= all.size(); ++n) {
    std::string in = all.substr(all.size() - n);
    std::string encoded = Base64(in);
    EXPECT_EQ(encoded.size(), (n + 2) / 3 * 4);
    auto decoded = Unbase64(encoded);
    ASSERT_TRUE(decoded.has_value()) << n;
    EXPECT_EQ(*decoded, in) << n;
  }
  for (const char* bad : {"A", "AB=", "A===", "AB=C", "!!!!", "AA=A", "====", "A\nBC"}) {
    EXPECT_FALSE(Unbase64(bad).has_value()) << bad;
  }
}

TEST(PubSubReach, SumsChannelsAndMatchingPatternsPerDaemon) {
  std::vector<RegistryRow> rows = {
      {7, false, "news", 2},  {7, true, "n*", 1},  {9, true, "ne*", 3},
      {9, false, "other", 5}, {11, true, "x*", 4}, {12, false, "news", 0},
  };
  auto reach = ComputeReach(rows, {"news", "other", "zzz", "x1"}, PrefixGlob);
  ASSERT_EQ(reach.size(), 4u);
  EXPECT_EQ(reach[0], (Reach{6, {7, 9}}));  // 2 + 1 on 7, 3 on 9; 12 has none
  EXPECT_EQ(reach[1], (Reach{5, {9}}));
  EXPECT_EQ(reach[2], (Reach{}));
  EXPECT_EQ(reach[3], (Reach{4, {11}}));
}

// What each daemon reads from a batch's payloads, and the table rows, as a table per daemon.
struct Received {
  std::vector<std::string> inline_messages;  // "channel=message"
  std::vector<uint64_t> table_seqs;
};
std::map<uint64_t, Received> ReadAll(const EncodedBatch& batch, const std::vector<uint64_t>& who,
                                     uint64_t publisher) {
  std::map<uint64_t, Received> out;
  for (const auto& payload : batch.payloads) {
    EXPECT_LE(payload.size(), kMaxPayloadBytes);
    for (char c : payload) EXPECT_TRUE(c == '\n' || (c >= ' ' && c < 127)) << int(c);
    for (uint64_t me : who) {
      auto n = DecodePayload(payload, me);
      EXPECT_TRUE(n.has_value());
      if (!n) continue;
      EXPECT_EQ(n->publisher, publisher);
      for (auto& r : n->records) {
        if (r.in_table) {
          out[me].table_seqs.push_back(r.seq);
        } else {
          out[me].inline_messages.push_back(r.channel + "=" + r.message);
        }
      }
    }
  }
  return out;
}

TEST(PubSubBatch, SmallMessagesTravelInlineInOrderToTheirDaemonsOnly) {
  std::vector<uint64_t> both = {0xabc, 0x1234567890abcdef}, one = {0xabc};
  std::string binary("\0\r\n\xff x", 6);
  std::vector<OutMessage> messages = {{"a", "1", &both},
                                      {"b", binary, &one},
                                      {"a", "", &both},
                                      {std::string_view("c\0", 2), "3", &one}};
  uint64_t seq = 5;
  EncodedBatch batch = EncodeBatch(42, &seq, messages);
  EXPECT_EQ(seq, 5u);  // nothing went to the table
  EXPECT_TRUE(batch.rows.empty());
  ASSERT_EQ(batch.payloads.size(), 1u);
  auto got = ReadAll(batch, {0xabc, 0x1234567890abcdef, 0x99}, 42);
  EXPECT_EQ(got[0xabc].inline_messages,
            (std::vector<std::string>{"a=1", "b=" + binary, "a=", std::string("c\0", 2) + "=3"}));
  EXPECT_EQ(got[0x1234567890abcdef].inline_messages, (std::vector<std::string>{"a=1", "a="}));
  EXPECT_TRUE(got[0x99].inline_messages.empty());  // listed nowhere: reads nothing
}

TEST(PubSubBatch, LargeMessagesBecomeRowsAndKeepTheirPlaceAmongSmallOnes) {
  std::vector<uint64_t> readers = {3, 4};
  std::string big5000(5000, 'b'), big6000(6000, 'c'), huge(1 << 20, 'h');
  std::vector<OutMessage> messages = {{"ch", "first", &readers}, {"ch", big5000, &readers},
                                      {"ch", big6000, &readers}, {"ch", "middle", &readers},
                                      {"ch", huge, &readers},    {"ch", "last", &readers}};
  uint64_t seq = 1;
  EncodedBatch batch = EncodeBatch(8, &seq, messages);
  ASSERT_EQ(batch.rows.size(), 2u);  // 5,000 bytes fit a payload inline; 6,000 do not
  EXPECT_EQ(batch.rows[0].seq, 1u);
  EXPECT_EQ(batch.rows[0].readers, 2u);
  EXPECT_EQ(batch.rows[0].message, big6000);
  EXPECT_EQ(batch.rows[1].seq, 2u);
  EXPECT_EQ(batch.rows[1].message.size(), huge.size());
  EXPECT_EQ(seq, 3u);
  // The order a reader sees: inline and table records interleaved as published.
  std::vector<std::string> order;
  for (const auto& payload : batch.payloads) {
    auto n = DecodePayload(payload, 4);
    ASSERT_TRUE(n.has_value());
    for (auto& r : n->records) {
      order.push_back(r.in_table ? "t" + std::to_string(r.seq) + ":" + std::to_string(r.bytes)
                                 : r.message.substr(0, 6));
    }
  }
  EXPECT_EQ(order, (std::vector<std::string>{"first", "bbbbbb", "t1:6002", "middle", "t2:1048578",
                                             "last"}));
}

TEST(PubSubBatch, ManyMessagesSplitIntoPayloadsUnderTheLimit) {
  std::vector<uint64_t> readers = {1};
  std::vector<std::string> texts;
  for (int i = 0; i < 500; ++i)
    texts.push_back("message " + std::to_string(i) + std::string(90, 'x'));
  std::vector<OutMessage> messages;
  for (const auto& t : texts) messages.push_back({"sky:live:topic:t", t, &readers});
  uint64_t seq = 1;
  EncodedBatch batch = EncodeBatch(2, &seq, messages);
  EXPECT_GT(batch.payloads.size(), 5u);
  auto got = ReadAll(batch, {1}, 2);
  ASSERT_EQ(got[1].inline_messages.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(got[1].inline_messages[i], "sky:live:topic:t=" + texts[i]);
  }
}

TEST(PubSubBatch, ATableRecordForMoreDaemonsThanAPayloadListsIsSplit) {
  std::vector<uint64_t> readers;
  for (uint64_t d = 1; d <= 1000; ++d) readers.push_back(0x1000000000000000 + d);
  std::string big(7000, 'z');
  std::vector<OutMessage> messages = {{"c", big, &readers}};
  uint64_t seq = 1;
  EncodedBatch batch = EncodeBatch(5, &seq, messages);
  ASSERT_EQ(batch.rows.size(), 1u);
  EXPECT_EQ(batch.rows[0].readers, 1000u);
  EXPECT_GT(batch.payloads.size(), 1u);
  auto got = ReadAll(batch, readers, 5);
  for (uint64_t d : readers) EXPECT_EQ(got[d].table_seqs, std::vector<uint64_t>{1}) << d;
}

TEST(PubSubPayload, ForeignOrDamagedPayloadsAreRefusedWhole) {
  std::vector<uint64_t> readers = {1};
  std::vector<OutMessage> messages = {{"a", "b", &readers}, {"c", "d", &readers}};
  uint64_t seq = 1;
  std::string good = EncodeBatch(2, &seq, messages).payloads.at(0);
  ASSERT_TRUE(DecodePayload(good, 1).has_value());
  for (size_t cut = 0; cut + 1 < good.size(); ++cut) {  // every truncation
    auto n = DecodePayload(good.substr(0, cut), 1);
    EXPECT_TRUE(!n.has_value() || n->records.size() < 2) << cut;
  }
  for (const char* foreign :
       {"", "hello", "5:YWJj", "skydb1 ", "skydb1 2 1\nm1 YQ==", "skydb1 2 1\nx1 YQ== Yg==\n",
        "skydb1 2 1\nm12 YQ== Yg==\n", "skydb1 2 1\nm1 YQ= Yg==\n", "skydb1 zz 1\nm1 YQ== Yg==\n",
        "skydb1 2 \nm1 YQ== Yg==\n", "skydb1 2 1\nt1 q 5\n"}) {
    EXPECT_FALSE(DecodePayload(foreign, 1).has_value()) << foreign;
  }
}

}  // namespace
}  // namespace skydb::pg::pubsub
