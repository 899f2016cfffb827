// EVAL and its family against a memory store: scripts run the real commands, see their own
// writes, are refused keys they did not declare, and join MULTI/EXEC; SCRIPT's subcommands.
#include <gtest/gtest.h>

#include "unit/resp/commands_fixture.h"

namespace skydb::resp {
namespace {

const std::string kLockRelease =
    "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1]) else "
    "return 0 end";

TEST_F(CommandsTest, TheLockReleaseScriptDeletesOnlyTheOwnersLock) {
  const std::string sha = "b70c2384248f88e6b75b9f89241a180f856ad852";
  EXPECT_EQ(Run({"EVALSHA", sha, "1", "lock", "mine"}),
            "-NOSCRIPT No matching script. Please use EVAL.\r\n");
  EXPECT_EQ(Run({"SET", "lock", "mine"}), kOk);
  EXPECT_EQ(Run({"EVAL", kLockRelease, "1", "lock", "theirs"}), ":0\r\n");
  EXPECT_EQ(Run({"GET", "lock"}), "$4\r\nmine\r\n");
  EXPECT_EQ(Run({"EVALSHA", sha, "1", "lock", "mine"}), ":1\r\n");
  EXPECT_EQ(Run({"GET", "lock"}), kNull);
  EXPECT_EQ(Run({"EVALSHA", sha, "1", "lock", "mine"}), ":0\r\n");
  EXPECT_EQ(Run({"EVAL", kLockRelease, "2", "k"}),
            "-ERR Number of keys can't be greater than number of args\r\n");
  EXPECT_EQ(Run({"EVAL", kLockRelease, "-1"}), "-ERR Number of keys can't be negative\r\n");
  EXPECT_EQ(Run({"EVAL", kLockRelease, "x"}), kNotInt);
}

TEST_F(CommandsTest, ScriptsRunRealCommandsAndSeeTheirOwnWrites) {
  const std::string limiter =
      "local n = redis.call('INCR', KEYS[1]) "
      "if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end "
      "return {n, redis.call('PTTL', KEYS[1])}";
  EXPECT_EQ(Run({"EVAL", limiter, "1", "rl", "60000"}), "*2\r\n:1\r\n:60000\r\n");
  EXPECT_EQ(Run({"EVAL", limiter, "1", "rl", "60000"}), "*2\r\n:2\r\n:60000\r\n");
  EXPECT_EQ(Run({"EVAL",
                 "redis.call('HSET', KEYS[1], 'f', 'v') return redis.call('HGETALL', "
                 "KEYS[1])",
                 "1", "h"}),
            "*2\r\n$1\r\nf\r\n$1\r\nv\r\n");
  EXPECT_EQ(Run({"EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "s"}), kOk);
  EXPECT_EQ(Run({"EVAL", "return redis.call('TYPE', KEYS[1])", "1", "h"}), "+hash\r\n");
  EXPECT_EQ(Run({"EVAL", "return redis.call('get', KEYS[1])", "1", "nope"}), kNull);
  EXPECT_EQ(Run({"EVAL", "return redis.pcall('incr', KEYS[1])", "1", "h"}).substr(0, 10),
            "-WRONGTYPE");
  EXPECT_EQ(Run({"EVAL", "return redis.call('MSET', KEYS[1], 'a', KEYS[2], 'b')", "2", "m1", "m2"}),
            kOk);
  EXPECT_EQ(Run({"MGET", "m1", "m2"}), "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  EXPECT_EQ(Run({"EVAL", "return redis.call('ping')", "0"}), "+PONG\r\n");
}

TEST_F(CommandsTest, AScriptMayTouchOnlyTheKeysItDeclares) {
  std::string reply = Run({"EVAL", "return redis.call('SET', 'other', 'x')", "1", "k"});
  EXPECT_EQ(reply.rfind("-ERR Script attempted to access a key not declared in KEYS", 0), 0u)
      << reply;
  EXPECT_EQ(Run({"GET", "other"}), kNull);
  // MSET is refused whole when one of its keys is undeclared.
  reply = Run({"EVAL", "return redis.pcall('MSET', KEYS[1], 'a', 'undeclared', 'b')", "1", "k"});
  EXPECT_EQ(reply.rfind("-ERR Script attempted", 0), 0u) << reply;
  EXPECT_EQ(Run({"EXISTS", "k", "undeclared"}), ":0\r\n");
  EXPECT_EQ(Run({"EVAL", "return redis.pcall('KEYS', '*')", "0"}),
            "-ERR This Redis command is not allowed from script\r\n");
  EXPECT_EQ(Run({"EVAL", "return redis.pcall('FLUSHALL')", "0"}),
            "-ERR This Redis command is not allowed from script\r\n");
  EXPECT_EQ(Run({"EVAL", "return redis.pcall('EVAL', 'return 1', '0')", "0"}),
            "-ERR This Redis command is not allowed from script\r\n");
  EXPECT_EQ(Run({"EVAL", "return redis.pcall('nosuch')", "0"}),
            "-ERR Unknown Redis command called from script\r\n");
  EXPECT_EQ(Run({"EVAL", "return redis.pcall('incr')", "0"}),
            "-ERR Wrong number of args calling Redis command from script\r\n");
}

TEST_F(CommandsTest, AnErrorAfterAWriteKeepsTheWriteAsRedisDoes) {
  std::string reply = Run({"EVAL", "redis.call('SET', KEYS[1], 'x') error('late')", "1", "k"});
  EXPECT_EQ(reply.rfind("-ERR user_script:1: late", 0), 0u) << reply;
  EXPECT_EQ(Run({"GET", "k"}), "$1\r\nx\r\n");
}

TEST_F(CommandsTest, ReadOnlyScriptsMayNotWrite) {
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "k"}), "$1\r\nv\r\n");
  std::string reply = Run({"EVAL_RO", "return redis.call('DEL', KEYS[1])", "1", "k"});
  EXPECT_EQ(reply.rfind("-ERR Write commands are not allowed from read-only scripts.", 0), 0u)
      << reply;
  reply = Run({"EVAL", "#!lua flags=no-writes\nreturn redis.call('DEL', KEYS[1])", "1", "k"});
  EXPECT_EQ(reply.rfind("-ERR Write commands are not allowed from read-only scripts.", 0), 0u);
  EXPECT_EQ(Run({"GET", "k"}), "$1\r\nv\r\n");
}

TEST_F(CommandsTest, ScriptLoadExistsFlush) {
  std::string loaded = Run({"SCRIPT", "LOAD", "return 7"});
  ASSERT_EQ(loaded.size(), 47u) << loaded;
  std::string sha = loaded.substr(5, 40);
  EXPECT_EQ(Run({"EVALSHA", sha, "0"}), ":7\r\n");
  EXPECT_EQ(Run({"EVALSHA_RO", sha, "0"}), ":7\r\n");
  EXPECT_EQ(Run({"SCRIPT", "EXISTS", sha, "0000"}), "*2\r\n:1\r\n:0\r\n");
  EXPECT_NE(Run({"INFO", "memory"}).find("number_of_cached_scripts:1\r\n"), std::string::npos);
  EXPECT_EQ(Run({"SCRIPT", "FLUSH"}), kOk);
  EXPECT_NE(Run({"INFO", "memory"}).find("number_of_cached_scripts:0\r\n"), std::string::npos);
  EXPECT_EQ(Run({"SCRIPT", "EXISTS", sha}), "*1\r\n:0\r\n");
  EXPECT_EQ(Run({"EVALSHA", sha, "0"}), "-NOSCRIPT No matching script. Please use EVAL.\r\n");
  EXPECT_EQ(Run({"SCRIPT", "FLUSH", "ASYNC"}), kOk);
  EXPECT_EQ(Run({"SCRIPT", "FLUSH", "later"}),
            "-ERR SCRIPT FLUSH only support SYNC|ASYNC option\r\n");
  EXPECT_EQ(Run({"SCRIPT", "LOAD", "return +"}).rfind("-ERR Error compiling script", 0), 0u);
  EXPECT_EQ(Run({"SCRIPT", "KILL"}), "-NOTBUSY No scripts in execution right now.\r\n");
  EXPECT_EQ(Run({"SCRIPT", "NOPE"}), "-ERR unknown subcommand 'NOPE'. Try SCRIPT HELP.\r\n");
  EXPECT_EQ(Run({"SCRIPT", "HELP"}).substr(0, 4), "*11\r");
}

TEST_F(CommandsTest, ScriptsJoinMultiExec) {
  EXPECT_EQ(Run({"MULTI"}), kOk);
  EXPECT_EQ(Run({"SET", "k", "1"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"EVAL", "return redis.call('INCR', KEYS[1])", "1", "k"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"GET", "k"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"EXEC"}), "*3\r\n+OK\r\n:2\r\n$1\r\n2\r\n");
}

}  // namespace
}  // namespace skydb::resp
