// The command layer's test fixture: a CommandExecutor over a memory store with a fake clock
// (store.max_value_bytes 64, no default TTL), and Run() that answers a command's reply.
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <initializer_list>
#include <memory>
#include <string>

#include "resp/commands.h"
#include "skydb/store.h"
#include "support/fakes.h"

namespace skydb::resp {

class CommandsTest : public ::testing::Test {
 protected:
  explicit CommandsTest(std::string requirepass = "") {
    MemoryTierOptions memory;
    memory.default_ttl = std::chrono::milliseconds(0);  // Redis semantics
    memory.max_value_bytes = 64;
    store_ = NewMemoryStore(memory, clock_);
    ExecutorConfig config;
    config.requirepass = std::move(requirepass);
    config.max_clients = 10;
    executor_ = std::make_unique<CommandExecutor>(config, *store_, clock_, counters_);
    client_.id = 7;
  }

  std::string Run(std::initializer_list<std::string> args) { return RunAs(client_, args); }

  std::string RunAs(ClientState& client, std::initializer_list<std::string> args) {
    auto promise = std::make_shared<std::promise<std::string>>();
    auto future = promise->get_future();
    executor_->Execute(client, std::vector<std::string>(args),
                       [promise](std::string reply) { promise->set_value(std::move(reply)); });
    if (future.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return "timeout";
    return future.get();
  }

  UnixMillis NowMs() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               clock_.WallNow().time_since_epoch())
        .count();
  }

  testing::FakeClock clock_;
  std::unique_ptr<SessionStore> store_;
  ServerCounters counters_;
  std::unique_ptr<CommandExecutor> executor_;
  ClientState client_;
};

const std::string kOk = "+OK\r\n";
const std::string kNull = "$-1\r\n";
const std::string kSyntax = "-ERR syntax error\r\n";
const std::string kNotInt = "-ERR value is not an integer or out of range\r\n";

}  // namespace skydb::resp
