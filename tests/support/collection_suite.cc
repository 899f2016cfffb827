// The behavioural suite's hashes and sets (StoreBehaviour): what each command answers, that a
// command on a key of another type is refused and changes nothing, and that what a restart
// brings back is exactly what was acknowledged, fields and members included.
#include <algorithm>
#include <sstream>

#include "support/store_suite.h"

namespace skydb::testing {

using Kind = CollectionOp::Kind;

Result<StoreReply> StoreHarness::Collection(Kind kind, std::vector<std::string> keys,
                                            std::vector<std::string> fields,
                                            std::vector<std::string> values) {
  CollectionOp op;
  op.kind = kind;
  op.keys = std::move(keys);
  op.fields = std::move(fields);
  op.values = std::move(values);
  return Collection(std::move(op));
}
Result<StoreReply> StoreHarness::Collection(CollectionOp op) {
  return Await<StoreReply>([&](auto cb) { store().Collection(op, cb); });
}
Result<std::optional<KeyInfo>> StoreHarness::TypeOf(const std::string& key) {
  return Await<std::optional<KeyInfo>>([&](auto cb) { store().Type(key, cb); });
}
Result<bool> StoreHarness::Rename(const std::string& from, const std::string& to, bool nx) {
  return Await<bool>([&](auto cb) { store().Rename(from, to, nx, cb); });
}

std::string ShowReply(const Result<StoreReply>& reply) {
  if (!reply.ok()) return "error: " + reply.error().message;
  const StoreReply& r = *reply;
  switch (r.type) {
    case StoreReply::Type::kInteger:
      return std::to_string(r.integer);
    case StoreReply::Type::kBulk:
      return "\"" + r.bulk + "\"";
    case StoreReply::Type::kStatus:
      return "+" + r.bulk;
    case StoreReply::Type::kNull:
      return "nil";
    default:
      break;
  }
  std::vector<std::string> parts;
  if (r.type == StoreReply::Type::kMap) {
    for (size_t i = 0; i + 1 < r.elements.size(); i += 2) {
      parts.push_back(ShowReply(r.elements[i]) + ":" + ShowReply(r.elements[i + 1]));
    }
  } else {
    for (const auto& e : r.elements) parts.push_back(ShowReply(e));
  }
  if (r.type != StoreReply::Type::kArray) std::sort(parts.begin(), parts.end());
  std::ostringstream out;
  out << (r.type == StoreReply::Type::kArray ? "[" : "{");
  for (size_t i = 0; i < parts.size(); ++i) out << (i ? " " : "") << parts[i];
  out << (r.type == StoreReply::Type::kArray ? "]" : "}");
  return out.str();
}

namespace {

const std::string kWrongTypeText =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
const std::string kWrongType = "error: " + kWrongTypeText;

// Restarts a durable backend; what it brings back must be what `check` expects either way.
void RestartIfDurable(StoreHarness& h) {
  if (h.durable()) h.Restart();
}

TEST_P(StoreBehaviour, HashFieldsAnswerAsRedisAndSurviveARestart) {
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHSet, {"h"}, {"a", "b", "c"}, {"1", "2", "3"})), "3");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHSet, {"h"}, {"a", "d"}, {"10", "4"})), "1");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHGet, {"h"}, {"a"})), "\"10\"");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHMGet, {"h"}, {"a", "zz"})), "[\"10\" nil]");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHDel, {"h"}, {"b", "zz"})), "1");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHLen, {"h"})), "3");
  CollectionOp incr;
  incr.kind = Kind::kHIncrBy;
  incr.keys = {"h"};
  incr.fields = {"d"};
  incr.integer = 5;
  EXPECT_EQ(ShowReply(h().Collection(incr)), "9");
  const std::string all = "{\"a\":\"10\" \"c\":\"3\" \"d\":\"9\"}";
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHGetAll, {"h"})), all);
  RestartIfDurable(h());
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHGetAll, {"h"})), all);
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHGet, {"h"}, {"b"})), "nil");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHExists, {"h"}, {"c"})), "1");
  ExpectCount(1);
}

TEST_P(StoreBehaviour, SetMembersAnswerAsRedisAndSurviveARestart) {
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSAdd, {"s"}, {"x", "y", "z", "x"})), "3");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSRem, {"s"}, {"y", "nope"})), "1");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSAdd, {"t"}, {"z", "w"})), "2");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSInter, {"s", "t"})), "{\"z\"}");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSUnionStore, {"u", "s", "t"})), "3");
  RestartIfDurable(h());
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSMembers, {"s"})), "{\"x\" \"z\"}");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSMembers, {"u"})), "{\"w\" \"x\" \"z\"}");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSIsMember, {"s"}, {"y"})), "0");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSCard, {"t"})), "2");
}

TEST_P(StoreBehaviour, ACommandOnAnotherTypeIsRefusedAndChangesNothing) {
  ASSERT_TRUE(h().Set("str", "v", Expiry::None()).ok());
  ASSERT_EQ(ShowReply(h().Collection(Kind::kHSet, {"h"}, {"f"}, {"1"})), "1");
  ASSERT_EQ(ShowReply(h().Collection(Kind::kSAdd, {"s"}, {"m"})), "1");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHSet, {"str"}, {"f"}, {"1"})), kWrongType);
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSAdd, {"h"}, {"m"})), kWrongType);
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHGetAll, {"s"})), kWrongType);
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSInterStore, {"dest", "s", "str"})), kWrongType);
  auto get = h().Get("h");
  ASSERT_FALSE(get.ok());
  EXPECT_EQ(get.error().message, kWrongTypeText);
  EXPECT_FALSE(h().Incr("s", 1).ok());
  RestartIfDurable(h());
  EXPECT_EQ(*h().Get("str"), "v");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHGetAll, {"h"})), "{\"f\":\"1\"}");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSMembers, {"s"})), "{\"m\"}");
  EXPECT_EQ(*h().Exists({"dest"}), 0);
}

TEST_P(StoreBehaviour, TypeNamesWhatAKeyHoldsAndRenameMovesIt) {
  ASSERT_TRUE(h().Set("str", "v", Expiry::None()).ok());
  ASSERT_EQ(ShowReply(h().Collection(Kind::kHSet, {"h"}, {"f", "g"}, {"1", "2"})), "2");
  ASSERT_EQ(ShowReply(h().Collection(Kind::kSAdd, {"s"}, {"m"})), "1");
  EXPECT_EQ((*h().TypeOf("str"))->type, ValueType::kString);
  EXPECT_EQ((*h().TypeOf("h"))->type, ValueType::kHash);
  EXPECT_EQ((*h().TypeOf("s"))->type, ValueType::kSet);
  EXPECT_FALSE(h().TypeOf("none")->has_value());
  UnixMillis deadline = h().NowMs() + 100000;
  ASSERT_TRUE(*h().Expire("h", Expiry::At(deadline)));
  EXPECT_TRUE(*h().Rename("h", "h2", false));
  EXPECT_FALSE(*h().Rename("s", "str", /*nx=*/true));
  EXPECT_FALSE(h().Rename("none", "x", false).ok());
  RestartIfDurable(h());
  EXPECT_EQ(*h().Exists({"h"}), 0);
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHGetAll, {"h2"})), "{\"f\":\"1\" \"g\":\"2\"}");
  auto ttl = h().Ttl("h2");
  ASSERT_TRUE(ttl.ok());
  EXPECT_EQ(ttl->state, TtlReply::State::kExpiring);
  EXPECT_EQ(ttl->remaining_ms, deadline - h().NowMs());
  EXPECT_EQ((*h().TypeOf("str"))->type, ValueType::kString);
}

TEST_P(StoreBehaviour, ACollectionEmptiedOrReplacedLeavesNothingBehind) {
  ASSERT_EQ(ShowReply(h().Collection(Kind::kHSet, {"h"}, {"old1", "old2"}, {"1", "2"})), "2");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHDel, {"h"}, {"old1", "old2"})), "2");
  EXPECT_EQ(*h().Exists({"h"}), 0);
  ASSERT_EQ(ShowReply(h().Collection(Kind::kHSet, {"r"}, {"gone"}, {"x"})), "1");
  ASSERT_TRUE(h().Set("r", "a string now", Expiry::None()).ok());
  ASSERT_EQ(ShowReply(h().Collection(Kind::kSAdd, {"d"}, {"gone"})), "1");
  ASSERT_EQ(*h().Del({"d"}), 1);
  ASSERT_EQ(ShowReply(h().Collection(Kind::kSAdd, {"d"}, {"new"})), "1");
  RestartIfDurable(h());
  EXPECT_EQ(*h().Exists({"h"}), 0);
  EXPECT_EQ(*h().Get("r"), "a string now");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSMembers, {"d"})), "{\"new\"}");
  ExpectCount(2);
}

TEST_P(StoreBehaviour, HashFieldsPastTheirDeadlineAreGone) {
  ASSERT_EQ(ShowReply(h().Collection(Kind::kHSet, {"h"}, {"a", "b"}, {"1", "2"})), "2");
  CollectionOp expire;
  expire.kind = Kind::kHExpire;
  expire.keys = {"h"};
  expire.fields = {"a", "zz"};
  expire.expiry = Expiry::At(h().NowMs() + 5000);
  EXPECT_EQ(ShowReply(h().Collection(expire)), "[1 -2]");
  RestartIfDurable(h());
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHLen, {"h"})), "2");
  h().clock().Advance(std::chrono::seconds(6));
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHGetAll, {"h"})), "{\"b\":\"2\"}");
  RestartIfDurable(h());
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHGetAll, {"h"})), "{\"b\":\"2\"}");
}

TEST_P(StoreBehaviour, ATransactionOfCollectionWritesIsAppliedWhole) {
  std::vector<Result<StoreReply>> replies(3, Error::Internal("not answered"));
  std::vector<TxOp> ops;
  for (int i = 0; i < 3; ++i) {
    CollectionOp op;
    op.kind = i == 2 ? Kind::kSAdd : Kind::kHSet;
    op.keys = {i == 2 ? "tx:s" : "tx:h"};
    op.fields = {"f" + std::to_string(i)};
    if (i != 2) op.values = {"v"};
    ops.emplace_back(tx::Collection{
        std::move(op), [&replies, i](Result<StoreReply> r) { replies[i] = std::move(r); }});
  }
  auto applied = Await<bool>([&](auto cb) { h().store().Transact(std::move(ops), nullptr, cb); });
  ASSERT_TRUE(applied.ok() && *applied);
  for (const auto& r : replies) EXPECT_EQ(ShowReply(r), "1");
  RestartIfDurable(h());
  EXPECT_EQ(ShowReply(h().Collection(Kind::kHGetAll, {"tx:h"})), "{\"f0\":\"v\" \"f1\":\"v\"}");
  EXPECT_EQ(ShowReply(h().Collection(Kind::kSMembers, {"tx:s"})), "{\"f2\"}");
}

TEST_P(StoreBehaviour, SessionSizedFieldValuesRoundTrip) {
  std::string blob;
  for (int i = 0; i < 37 * 1024; ++i) blob.push_back(static_cast<char>(i * 7));
  ASSERT_EQ(ShowReply(h().Collection(Kind::kHSet, {"sess"}, {"blob", "n"}, {blob, "1"})), "2");
  RestartIfDurable(h());
  auto got = h().Collection(Kind::kHGet, {"sess"}, {"blob"});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->bulk, blob);
}

}  // namespace
}  // namespace skydb::testing
