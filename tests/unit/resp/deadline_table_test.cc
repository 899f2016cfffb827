// Every command that takes a time, at 0, 1, max−1, max and beyond, against a tiered store over
// the fake durable layer: the reply is Redis's, and the key's state survives a restart exactly
// as the reply promised (a deadline too far to represent never wraps into the past).
#include <gtest/gtest.h>

#include <future>
#include <limits>

#include "resp/commands.h"
#include "skydb/durable.h"
#include "skydb/store.h"
#include "support/fake_durable.h"
#include "support/fakes.h"

namespace skydb::resp {
namespace deadline_table {  // its own names: other protocol tests define kOk, Cases()
namespace {

const std::string kMax = std::to_string(std::numeric_limits<int64_t>::max());
const std::string kMaxMinus1 = std::to_string(std::numeric_limits<int64_t>::max() - 1);
const std::string kBeyond = "9223372036854775808";

enum class After { kLive, kGone, kUnchanged };  // the key's state after the command

struct TimeCase {
  std::vector<std::string> command;  // "k" is the key; it holds "v" (no TTL) before, if `existing`
  bool existing;
  std::string reply;  // exact RESP reply, or a prefix ending in '*'
  After after;
};

std::string Invalid(const char* name) {
  return "-ERR invalid expire time in '" + std::string(name) + "' command\r\n";
}
const std::string kNotInt = "-ERR value is not an integer or out of range\r\n";
const std::string kOk = "+OK\r\n";
const std::string kOne = ":1\r\n";
const std::string kValue = "$1\r\nv\r\n";

std::vector<TimeCase> Cases() {
  using A = After;
  std::vector<TimeCase> c;
  auto add = [&](std::vector<std::string> cmd, bool existing, std::string reply, After after) {
    c.push_back({std::move(cmd), existing, std::move(reply), after});
  };
  // SET ... EX / PX / EXAT / PXAT
  add({"SET", "k", "v", "EX", "0"}, false, Invalid("set"), A::kUnchanged);
  add({"SET", "k", "v", "EX", "1"}, false, kOk, A::kLive);
  add({"SET", "k", "v", "EX", kMaxMinus1}, false, Invalid("set"), A::kUnchanged);
  add({"SET", "k", "v", "EX", kMax}, false, Invalid("set"), A::kUnchanged);
  add({"SET", "k", "v", "EX", kBeyond}, false, kNotInt, A::kUnchanged);
  add({"SET", "k", "v", "PX", "0"}, false, Invalid("set"), A::kUnchanged);
  add({"SET", "k", "v", "PX", "1"}, false, kOk, A::kLive);
  add({"SET", "k", "v", "PX", kMaxMinus1}, false, Invalid("set"), A::kUnchanged);
  add({"SET", "k", "v", "PX", kMax}, false, Invalid("set"), A::kUnchanged);
  add({"SET", "k", "v", "EXAT", "0"}, false, Invalid("set"), A::kUnchanged);
  add({"SET", "k", "v", "EXAT", "1"}, true, kOk, A::kGone);
  add({"SET", "k", "v", "EXAT", kMaxMinus1}, false, Invalid("set"), A::kUnchanged);
  add({"SET", "k", "v", "PXAT", "0"}, false, Invalid("set"), A::kUnchanged);
  add({"SET", "k", "v", "PXAT", "1"}, true, kOk, A::kGone);
  add({"SET", "k", "v", "PXAT", kMaxMinus1}, false, kOk, A::kLive);
  add({"SET", "k", "v", "PXAT", kMax}, false, kOk, A::kLive);
  add({"SET", "k", "v", "PXAT", kBeyond}, false, kNotInt, A::kUnchanged);
  // SETEX / PSETEX
  add({"SETEX", "k", "0", "v"}, false, Invalid("setex"), A::kUnchanged);
  add({"SETEX", "k", "1", "v"}, false, kOk, A::kLive);
  add({"SETEX", "k", kMaxMinus1, "v"}, false, Invalid("setex"), A::kUnchanged);
  add({"SETEX", "k", kMax, "v"}, false, Invalid("setex"), A::kUnchanged);
  add({"SETEX", "k", kBeyond, "v"}, false, kNotInt, A::kUnchanged);
  add({"PSETEX", "k", "0", "v"}, false, Invalid("psetex"), A::kUnchanged);
  add({"PSETEX", "k", "1", "v"}, false, kOk, A::kLive);
  add({"PSETEX", "k", kMax, "v"}, false, Invalid("psetex"), A::kUnchanged);
  // EXPIRE family on an existing key
  add({"EXPIRE", "k", "0"}, true, kOne, A::kGone);
  add({"EXPIRE", "k", "1"}, true, kOne, A::kLive);
  add({"EXPIRE", "k", kMaxMinus1}, true, Invalid("expire"), A::kUnchanged);
  add({"EXPIRE", "k", kMax}, true, Invalid("expire"), A::kUnchanged);
  add({"EXPIRE", "k", kBeyond}, true, kNotInt, A::kUnchanged);
  add({"PEXPIRE", "k", "0"}, true, kOne, A::kGone);
  add({"PEXPIRE", "k", "1"}, true, kOne, A::kLive);
  add({"PEXPIRE", "k", kMaxMinus1}, true, Invalid("pexpire"), A::kUnchanged);
  add({"PEXPIRE", "k", kMax}, true, Invalid("pexpire"), A::kUnchanged);
  add({"EXPIREAT", "k", "0"}, true, kOne, A::kGone);
  add({"EXPIREAT", "k", "1"}, true, kOne, A::kGone);
  add({"EXPIREAT", "k", kMaxMinus1}, true, Invalid("expireat"), A::kUnchanged);
  add({"EXPIREAT", "k", kMax}, true, Invalid("expireat"), A::kUnchanged);
  add({"PEXPIREAT", "k", "0"}, true, kOne, A::kGone);
  add({"PEXPIREAT", "k", "1"}, true, kOne, A::kGone);
  add({"PEXPIREAT", "k", kMaxMinus1}, true, kOne, A::kLive);
  add({"PEXPIREAT", "k", kMax}, true, kOne, A::kLive);
  add({"PEXPIREAT", "k", kBeyond}, true, kNotInt, A::kUnchanged);
  // GETEX on an existing key
  add({"GETEX", "k", "EX", "0"}, true, Invalid("getex"), A::kUnchanged);
  add({"GETEX", "k", "EX", "1"}, true, kValue, A::kLive);
  add({"GETEX", "k", "EX", kMax}, true, Invalid("getex"), A::kUnchanged);
  add({"GETEX", "k", "PX", "1"}, true, kValue, A::kLive);
  add({"GETEX", "k", "PX", kMax}, true, Invalid("getex"), A::kUnchanged);
  add({"GETEX", "k", "EXAT", "1"}, true, kValue, A::kGone);
  add({"GETEX", "k", "PXAT", "1"}, true, kValue, A::kGone);
  add({"GETEX", "k", "PXAT", kMaxMinus1}, true, kValue, A::kLive);
  add({"GETEX", "k", "PXAT", kMax}, true, kValue, A::kLive);
  add({"GETEX", "k", "PXAT", kBeyond}, true, kNotInt, A::kUnchanged);
  return c;
}

class DeadlineTableTest : public ::testing::TestWithParam<TimeCase> {
 protected:
  void Open() {
    store_.reset();
    TieredOptions options;
    options.memory.default_ttl = std::chrono::milliseconds(0);  // Redis semantics
    auto made = NewTieredStore(options, clock_, std::make_unique<testing::FakeDurable>(state_));
    ASSERT_TRUE(made.ok());
    store_ = std::move(made).value();
    executor_ = std::make_unique<CommandExecutor>(ExecutorConfig{}, *store_, clock_, counters_);
  }
  void TearDown() override {
    if (store_) (void)store_->Close(std::chrono::seconds(5));
  }
  std::string Run(std::vector<std::string> args) {
    auto promise = std::make_shared<std::promise<std::string>>();
    auto future = promise->get_future();
    executor_->Execute(client_, std::move(args),
                       [promise](std::string reply) { promise->set_value(std::move(reply)); });
    if (future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) return "timeout";
    return future.get();
  }

  testing::FakeClock clock_;
  std::shared_ptr<testing::FakeDurableState> state_ = std::make_shared<testing::FakeDurableState>();
  std::unique_ptr<SessionStore> store_;
  ServerCounters counters_;
  std::unique_ptr<CommandExecutor> executor_;
  ClientState client_;
};

TEST_P(DeadlineTableTest, ReplyAsRedisAndTheStateSurvivesARestart) {
  const TimeCase& c = GetParam();
  Open();
  if (c.existing) {
    ASSERT_EQ(Run({"SET", "k", "v"}), kOk);
  }
  EXPECT_EQ(Run(c.command), c.reply);
  (void)store_->Close(std::chrono::seconds(5));
  Open();  // a restart: only what PostgreSQL holds comes back
  std::string get = Run({"GET", "k"});
  std::string pttl = Run({"PTTL", "k"});
  switch (c.after) {
    case After::kLive:
      EXPECT_EQ(get, kValue);
      EXPECT_NE(pttl, ":-2\r\n");
      EXPECT_NE(pttl, ":-1\r\n");
      break;
    case After::kGone:
      EXPECT_EQ(get, "$-1\r\n");
      EXPECT_EQ(pttl, ":-2\r\n");
      break;
    case After::kUnchanged:
      EXPECT_EQ(get, c.existing ? kValue : "$-1\r\n");
      EXPECT_EQ(pttl, c.existing ? ":-1\r\n" : ":-2\r\n");
      break;
  }
}

std::string CaseName(const ::testing::TestParamInfo<TimeCase>& param_info) {
  std::string name;
  for (const auto& part : param_info.param.command) {
    if (part == "k" || part == "v") continue;
    if (!name.empty()) name += "_";
    if (part == kMax) {
      name += "Max";
    } else if (part == kMaxMinus1) {
      name += "MaxMinus1";
    } else if (part == kBeyond) {
      name += "Beyond";
    } else {
      name += part;
    }
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryTimedCommand, DeadlineTableTest, ::testing::ValuesIn(Cases()),
                         CaseName);

}  // namespace
}  // namespace deadline_table
}  // namespace skydb::resp
