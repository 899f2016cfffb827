// The Lua engine alone: Redis's RESP <-> Lua conversion rules, the sandbox and its global
// protection, error replies, the memory cap, SCRIPT KILL, the cache and SHA1s. redis.call goes
// to a table of canned replies.
#include "script/engine.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <thread>

#include "support/fakes.h"

namespace skydb::script {
namespace {

struct Fixture {
  std::vector<std::string> keys;
  std::vector<std::string> argv;
  std::map<std::string, std::string> replies;  // command name -> its RESP2 reply
  std::vector<std::vector<std::string>> calls;
  bool resp3 = false;
  size_t memory = kMaxScriptMemory;
  size_t max_reply = 0;
  RunningScript* running = nullptr;

  std::string Eval(std::string_view body) {
    RunRequest r;
    r.body = body;
    r.sha = "0123";
    r.keys = &keys;
    r.argv = &argv;
    r.resp3 = resp3;
    r.memory_limit = memory;
    r.max_reply_bytes = max_reply;
    r.running = running;
    return Run(r, [this](std::vector<std::string>& args) {
      calls.push_back(args);
      auto it = replies.find(args[0]);
      return it == replies.end() ? std::string("-ERR unknown\r\n") : it->second;
    });
  }
};

struct ConversionRow {
  const char* script;
  const char* reply;
};

TEST(ScriptEngine, LuaToRespFollowsRedisRules) {
  const ConversionRow rows[] = {
      {"return 42", ":42\r\n"},
      {"return 3.99", ":3\r\n"},
      {"return -3.99", ":-3\r\n"},
      {"return 'hello'", "$5\r\nhello\r\n"},
      {"return true", ":1\r\n"},
      {"return false", "$-1\r\n"},
      {"return nil", "$-1\r\n"},
      {"return {}", "*0\r\n"},
      {"return {1, 2, 3, 'ciao', {1, 2}}",
       "*5\r\n:1\r\n:2\r\n:3\r\n$4\r\nciao\r\n*2\r\n:1\r\n:2\r\n"},
      {"return {1, nil, 3}", "*1\r\n:1\r\n"},
      {"return {1, x = 2}", "*1\r\n:1\r\n"},
      {"return {ok = 'fine'}", "+fine\r\n"},
      {"return {err = 'ERR this is an error'}", "-ERR this is an error\r\n"},
      {"return redis.error_reply('MY_ERR_CODE custom msg')", "-MY_ERR_CODE custom msg\r\n"},
      {"return redis.error_reply('')", "-ERR\r\n"},
      {"return redis.error_reply('-X y')", "-X y\r\n"},
      {"return redis.status_reply('MY_OK')", "+MY_OK\r\n"},
      {"return {ok = 'a\\r\\nb'}", "+a  b\r\n"},
      {"return {double = 3.5}", "$3\r\n3.5\r\n"},
      {"return {map = {a = 1}}", "*2\r\n$1\r\na\r\n:1\r\n"},
      {"return {set = {a = true}}", "*1\r\n$1\r\na\r\n"},
      {"return {err = 'E', ok = 'O'}", "-E\r\n"},
  };
  for (const auto& row : rows) {
    Fixture f;
    EXPECT_EQ(f.Eval(row.script), row.reply) << row.script;
  }
}

TEST(ScriptEngine, RespThreeClientsGetTheirNullsDoublesAndMaps) {
  Fixture f;
  f.resp3 = true;
  EXPECT_EQ(f.Eval("return nil"), "_\r\n");
  EXPECT_EQ(f.Eval("return false"), "_\r\n");
  EXPECT_EQ(f.Eval("return true"), ":1\r\n");
  EXPECT_EQ(f.Eval("return {double = 3.5}"), ",3.5\r\n");
  EXPECT_EQ(f.Eval("return {map = {a = 1}}"), "%1\r\n$1\r\na\r\n:1\r\n");
  EXPECT_EQ(f.Eval("return {set = {a = true}}"), "~1\r\n$1\r\na\r\n");
}

TEST(ScriptEngine, RespToLuaFollowsRedisRules) {
  Fixture f;
  f.replies = {{"int", ":7\r\n"},
               {"bulk", "$3\r\nabc\r\n"},
               {"nil", "$-1\r\n"},
               {"nilarr", "*-1\r\n"},
               {"status", "+OK\r\n"},
               {"err", "-ERR bad\r\n"},
               {"arr", "*3\r\n:1\r\n$1\r\nx\r\n*1\r\n$-1\r\n"}};
  EXPECT_EQ(f.Eval("return type(redis.call('int')) .. redis.call('int')"), "$7\r\nnumber7\r\n");
  EXPECT_EQ(f.Eval("return redis.call('bulk')"), "$3\r\nabc\r\n");
  EXPECT_EQ(f.Eval("return redis.call('nil') == false"), ":1\r\n");
  EXPECT_EQ(f.Eval("return redis.call('nilarr') == false"), ":1\r\n");
  EXPECT_EQ(f.Eval("return redis.call('status').ok"), "$2\r\nOK\r\n");
  EXPECT_EQ(f.Eval("return redis.call('status')"), "+OK\r\n");
  EXPECT_EQ(f.Eval("return redis.pcall('err').err"), "$7\r\nERR bad\r\n");
  EXPECT_EQ(f.Eval("local t = redis.call('arr') return {#t, t[1], t[2], t[3][1] == false}"),
            "*4\r\n:3\r\n:1\r\n$1\r\nx\r\n:1\r\n");
  // redis.call raises the error reply, naming the script and line.
  EXPECT_EQ(f.Eval("\nredis.call('err')"), "-ERR bad script: 0123, on @user_script:2.\r\n");
  EXPECT_EQ(f.Eval("return redis.pcall('err')"), "-ERR bad\r\n");
}

TEST(ScriptEngine, CallArgumentsAreStringsAndIntegers) {
  Fixture f;
  f.replies = {{"set", "+OK\r\n"}};
  f.keys = {"k"};
  f.argv = {"v"};
  EXPECT_EQ(f.Eval("return redis.call('set', KEYS[1], ARGV[1], 'EX', 10, 1.5)"), "+OK\r\n");
  ASSERT_EQ(f.calls.size(), 1u);
  EXPECT_EQ(f.calls[0], (std::vector<std::string>{"set", "k", "v", "EX", "10", "1.5"}));
  EXPECT_EQ(f.Eval("return redis.pcall('set', {})"),
            "-ERR Lua redis lib command arguments must be strings or integers\r\n");
  EXPECT_EQ(f.Eval("return redis.pcall()"),
            "-ERR Please specify at least one argument for this redis lib call\r\n");
  EXPECT_EQ(f.Eval("return {KEYS[1], ARGV[1], #KEYS, #ARGV}"),
            "*4\r\n$1\r\nk\r\n$1\r\nv\r\n:1\r\n:1\r\n");
}

TEST(ScriptEngine, SandboxHasNoOsIoOrLoaders) {
  Fixture f;
  for (const char* name : {"os", "io", "require", "loadfile", "dofile", "print", "package",
                           "module", "debug", "load"}) {
    std::string reply = f.Eval(std::string("return ") + name);
    EXPECT_NE(reply.find("Script attempted to access nonexistent global variable '" +
                         std::string(name) + "'"),
              std::string::npos)
        << name << ": " << reply;
  }
  EXPECT_NE(f.Eval("return loadstring(string.dump(function() return 1 end))()")
                .find("attempt to call a nil value"),
            std::string::npos);
  EXPECT_EQ(f.Eval("return loadstring('return 1 + 1')()"), ":2\r\n");
  EXPECT_EQ(f.Eval("return string.upper('a') .. table.concat({'b'}) .. math.floor(1.5)"),
            "$3\r\nAb1\r\n");
}

TEST(ScriptEngine, GlobalsAndLibrariesAreReadOnly) {
  Fixture f;
  const char* tricks[] = {
      "a = 1",
      "setmetatable(_G, {})",
      "local g = getmetatable(_G) g.__index = {}",
      "redis = function() return 1 end",
      "_G = {}",
      "redis.call = function() return 1 end",
      "string.upper = nil",
      "rawset(_G, 'x', 1)",
      "rawset(redis, 'call', 1)",
      "setfenv(0, {})",
  };
  for (const char* trick : tricks) {
    std::string reply = f.Eval(trick);
    EXPECT_NE(reply.find("Attempt to modify a readonly table"), std::string::npos)
        << trick << ": " << reply;
  }
  EXPECT_EQ(f.Eval("local a = 1 return a"), ":1\r\n");
  EXPECT_EQ(f.Eval("local function g() return 2 end return g()"), ":2\r\n");
}

TEST(ScriptEngine, ErrorsNameTheScriptAndLine) {
  Fixture f;
  EXPECT_EQ(f.Eval("return a"),
            "-ERR user_script:1: Script attempted to access nonexistent global variable 'a' "
            "script: 0123, on @user_script:1.\r\n");
  EXPECT_EQ(f.Eval("error('boom')"),
            "-ERR user_script:1: boom script: 0123, on @user_script:1.\r\n");
  EXPECT_EQ(f.Eval("error({err = 'MY_CODE x'})"),
            "-MY_CODE x script: 0123, on @user_script:1.\r\n");
  std::string compile = f.Eval("return +");
  EXPECT_EQ(compile.rfind("-ERR Error compiling script (new function): user_script:1:", 0), 0u)
      << compile;
  EXPECT_EQ(CheckCompiles("return 1"), std::nullopt);
  EXPECT_TRUE(CheckCompiles("x ="));
}

TEST(ScriptEngine, ShebangFlags) {
  ScriptFlags flags;
  EXPECT_EQ(ParseFlags("#!lua flags=no-writes,allow-oom\nreturn 1", &flags), std::nullopt);
  EXPECT_TRUE(flags.no_writes);
  EXPECT_TRUE(ParseFlags("#!lua flags=bogus\nreturn 1", &flags));
  EXPECT_TRUE(ParseFlags("#!python\nreturn 1", &flags));
  Fixture f;
  EXPECT_EQ(f.Eval("#!lua\nreturn 1"), ":1\r\n");
  EXPECT_NE(f.Eval("#!lua\nreturn a").find("on @user_script:2."), std::string::npos);
}

TEST(ScriptEngine, MemoryIsCapped) {
  Fixture f;
  f.memory = size_t{8} << 20;
  std::string reply = f.Eval("local t = {} for i = 1, 1e8 do t[i] = string.rep('x', 100) .. i end");
  EXPECT_EQ(reply.rfind("-ERR the script ran out of memory", 0), 0u) << reply;
  reply = f.Eval("return string.rep('x', 64 * 1024 * 1024)");
  EXPECT_EQ(reply.rfind("-ERR", 0), 0u);
  EXPECT_EQ(f.Eval("return 1"), ":1\r\n");  // the next run is unaffected
}

TEST(ScriptEngine, DeepTablesAndLargeRepliesAreRefused) {
  Fixture f;
  EXPECT_EQ(f.Eval("local t = {} local c = t for i = 1, 10000 do c[1] = {} c = c[1] end return t"),
            "-ERR reached lua stack limit\r\n");
  f.max_reply = 1000;
  EXPECT_EQ(f.Eval("return string.rep('x', 2000)").rfind("-ERR the script's reply is larger", 0),
            0u);
}

// Runs a script that loops forever, even inside pcall, under a watchdog on a fake clock;
// `stop` runs 100 ms into it on another thread. Returns the script's reply.
std::string LoopUntil(const std::function<void(RunningScript&, testing::FakeClock&)>& stop) {
  testing::FakeClock clock;
  Watchdog watchdog(clock);
  auto running = watchdog.Start();
  Fixture f;
  f.running = running.get();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop(*running, clock);
  });
  std::string reply = f.Eval("while true do pcall(function() while true do end end) end");
  stopper.join();
  watchdog.Finish(running);
  return reply;
}

TEST(ScriptEngine, KillStopsALoopingScriptEvenInsidePcall) {
  std::string reply = LoopUntil([](RunningScript& running, auto&) { running.killed.store(true); });
  EXPECT_EQ(reply.rfind("-ERR Script killed by user with SCRIPT KILL...", 0), 0u) << reply;
}

TEST(ScriptEngine, AScriptThatDidNotWriteStopsAfterSixtySecondsOfTheWatchdogsClock) {
  std::string reply = LoopUntil([](RunningScript&, testing::FakeClock& clock) {
    clock.Advance(kReadOnlyTimeLimit + std::chrono::milliseconds(1));
  });
  EXPECT_EQ(reply.rfind("-ERR Script killed: it ran 60 s without writing", 0), 0u) << reply;
}

TEST(ScriptEngine, WatchdogIsBusyOnlyPastTheThresholdAndKillsOnlyScriptsThatDidNotWrite) {
  testing::FakeClock clock;
  Watchdog watchdog(clock);
  EXPECT_FALSE(watchdog.Busy());
  EXPECT_EQ(watchdog.Kill(), Watchdog::KillOutcome::kNotBusy);
  auto a = watchdog.Start();
  EXPECT_FALSE(watchdog.Busy());
  EXPECT_EQ(watchdog.Kill(), Watchdog::KillOutcome::kNotBusy);
  clock.Advance(kBusyThreshold - std::chrono::milliseconds(1));
  EXPECT_FALSE(watchdog.Busy());
  clock.Advance(std::chrono::milliseconds(1));
  EXPECT_TRUE(watchdog.Busy());
  a->wrote = true;
  EXPECT_EQ(watchdog.Kill(), Watchdog::KillOutcome::kUnkillable);
  a->wrote = false;
  EXPECT_EQ(watchdog.Kill(), Watchdog::KillOutcome::kKilled);
  EXPECT_TRUE(a->killed);
  EXPECT_FALSE(watchdog.Busy());
  watchdog.Finish(a);
}

TEST(ScriptEngine, Sha1AndCache) {
  EXPECT_EQ(Sha1Hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  Fixture f;
  EXPECT_EQ(f.Eval("return redis.sha1hex('')"),
            "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n");
  ScriptCache cache;
  EXPECT_TRUE(cache.Add("a", "return 1", false));
  EXPECT_TRUE(cache.Add("b", "return 2", true));
  EXPECT_EQ(cache.Find("a"), "return 1");
  EXPECT_TRUE(cache.Contains("b"));
  EXPECT_FALSE(cache.Contains("c"));
  cache.Clear();
  EXPECT_FALSE(cache.Contains("a"));
  EXPECT_EQ(cache.size(), 0u);
  for (size_t i = 0; i < ScriptCache::kMaxScripts + 5; ++i) {
    ASSERT_TRUE(cache.Add("e" + std::to_string(i), "return 1", false));
  }
  EXPECT_EQ(cache.size(), ScriptCache::kMaxScripts);
  EXPECT_FALSE(cache.Contains("e0"));  // the oldest EVAL'd script went first
  EXPECT_TRUE(cache.Contains("e" + std::to_string(ScriptCache::kMaxScripts + 4)));
}

}  // namespace
}  // namespace skydb::script
