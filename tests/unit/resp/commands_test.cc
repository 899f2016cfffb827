// The command layer against a memory store with a fake clock: argument validation, reply
// shapes and Redis's error texts, without sockets.
#include "resp/commands.h"

#include <gtest/gtest.h>

#include <future>
#include <initializer_list>

#include "resp/command_table.h"
#include "skydb/store.h"
#include "support/fakes.h"
#include "unit/resp/commands_fixture.h"

namespace skydb::resp {
namespace {

TEST_F(CommandsTest, ConnectionCommands) {
  EXPECT_EQ(Run({"PING"}), "+PONG\r\n");
  EXPECT_EQ(Run({"ping", "hi"}), "$2\r\nhi\r\n");
  EXPECT_EQ(Run({"PING", "a", "b"}), "-ERR wrong number of arguments for 'ping' command\r\n");
  EXPECT_EQ(Run({"ECHO", "x"}), "$1\r\nx\r\n");
  EXPECT_EQ(Run({"ECHO"}), "-ERR wrong number of arguments for 'echo' command\r\n");
  EXPECT_EQ(Run({"SELECT", "0"}), kOk);
  EXPECT_EQ(Run({"SELECT", "1"}), "-ERR DB index is out of range\r\n");
  EXPECT_EQ(Run({"SELECT", "x"}), kNotInt);
  EXPECT_EQ(Run({"CLIENT", "GETNAME"}), kNull);
  EXPECT_EQ(Run({"CLIENT", "SETNAME", "web-1"}), kOk);
  EXPECT_EQ(Run({"CLIENT", "GETNAME"}), "$5\r\nweb-1\r\n");
  EXPECT_EQ(Run({"CLIENT", "SETNAME", "a b"}),
            "-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
  EXPECT_EQ(Run({"CLIENT", "ID"}), ":7\r\n");
  EXPECT_EQ(Run({"CLIENT", "SETINFO", "LIB-NAME", "redis-py"}), kOk);
  EXPECT_EQ(Run({"CLIENT", "SETINFO", "color", "x"}), "-ERR Unrecognized option 'color'\r\n");
  EXPECT_EQ(Run({"CLIENT", "GETNAME", "x"}),
            "-ERR wrong number of arguments for 'client|getname' command\r\n");
  EXPECT_EQ(Run({"CLIENT", "NOSUCH"}), "-ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.\r\n");
  EXPECT_EQ(Run({"QUIT"}), kOk);
  EXPECT_TRUE(client_.close_after_reply);
}

// CLIENT LIST / INFO / KILL with Redis 7's errors. Without a server the executor knows this
// client alone (tests/unit/resp/server_test.cc and the integration tests cover a server's).
TEST_F(CommandsTest, ClientListInfoKill) {
  Run({"CLIENT", "SETNAME", "web-1"});
  const std::string line =
      "id=7 addr= laddr= fd=-1 name=web-1 age=0 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 "
      "multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 "
      "tot-mem=0 events=r cmd=NULL user=default redir=-1 resp=2 lib-name= lib-ver=\n";
  EXPECT_EQ(Run({"CLIENT", "INFO"}), Bulk(line));
  EXPECT_EQ(Run({"CLIENT", "LIST"}), Bulk(line));
  EXPECT_EQ(Run({"CLIENT", "LIST", "ID", "7", "8"}), Bulk(line));
  EXPECT_EQ(Run({"CLIENT", "LIST", "ID", "8"}), "$0\r\n\r\n");
  EXPECT_EQ(Run({"CLIENT", "LIST", "TYPE", "pubsub"}), "$0\r\n\r\n");
  EXPECT_EQ(Run({"CLIENT", "LIST", "TYPE", "normal"}), Bulk(line));
  EXPECT_EQ(Run({"CLIENT", "LIST", "TYPE", "master"}), "$0\r\n\r\n");
  EXPECT_EQ(Run({"CLIENT", "LIST", "TYPE", "foo"}), "-ERR Unknown client type 'foo'\r\n");
  EXPECT_EQ(Run({"CLIENT", "LIST", "ID", "abc"}), "-ERR Invalid client ID\r\n");
  EXPECT_EQ(Run({"CLIENT", "LIST", "foo"}), kSyntax);
  EXPECT_EQ(Run({"CLIENT", "INFO", "x"}),
            "-ERR wrong number of arguments for 'client|info' command\r\n");
  EXPECT_EQ(Run({"CLIENT", "KILL"}),
            "-ERR wrong number of arguments for 'client|kill' command\r\n");
  EXPECT_EQ(Run({"CLIENT", "KILL", "1.2.3.4:5"}), "-ERR No such client\r\n");
  EXPECT_EQ(Run({"CLIENT", "KILL", "ID", "99"}), ":0\r\n");
  EXPECT_EQ(Run({"CLIENT", "KILL", "ADDR", "1.2.3.4:5", "SKIPME", "no"}), ":0\r\n");
  EXPECT_EQ(Run({"CLIENT", "KILL", "ID", "x"}), "-ERR client-id should be greater than 0\r\n");
  EXPECT_EQ(Run({"CLIENT", "KILL", "ID", "1", "2"}), kSyntax);
  EXPECT_EQ(Run({"CLIENT", "KILL", "TYPE", "foo"}), "-ERR Unknown client type 'foo'\r\n");
  EXPECT_EQ(Run({"CLIENT", "KILL", "SKIPME", "maybe"}), kSyntax);
  client_.proto = Proto::kResp3;  // a verbatim string, as Redis 7 answers a RESP3 client
  std::string verbatim = "=" + std::to_string(line.size() + 4) + "\r\ntxt:" + line;
  verbatim.replace(verbatim.find("resp=2"), 6, "resp=3");
  EXPECT_EQ(Run({"CLIENT", "INFO"}), verbatim + "\r\n");
}

TEST_F(CommandsTest, HelloAnswersInTheProtocolItSelects) {
  std::string hello = Run({"HELLO"});
  EXPECT_EQ(hello.substr(0, 4), "*14\r");
  EXPECT_NE(hello.find("$5\r\nproto\r\n:2\r\n"), std::string::npos);
  EXPECT_EQ(Run({"HELLO", "4"}), "-NOPROTO unsupported protocol version\r\n");
  EXPECT_EQ(Run({"HELLO", "x"}), "-ERR Protocol version is not an integer or out of range\r\n");
  EXPECT_EQ(Run({"HELLO", "2", "SETNAME", "n"}).substr(0, 4), "*14\r");
  EXPECT_EQ(client_.name, "n");
  EXPECT_EQ(Run({"HELLO", "2", "FOO"}), "-ERR Syntax error in HELLO option 'FOO'\r\n");
  hello = Run({"HELLO", "3"});
  EXPECT_EQ(hello.substr(0, 4), "%7\r\n");
  EXPECT_NE(hello.find("$5\r\nproto\r\n:3\r\n"), std::string::npos);
  EXPECT_EQ(client_.proto, Proto::kResp3);
  EXPECT_EQ(Run({"HELLO", "3", "FOO"}), "-ERR Syntax error in HELLO option 'FOO'\r\n");
  EXPECT_EQ(Run({"HELLO", "4"}), "-NOPROTO unsupported protocol version\r\n");
  EXPECT_EQ(client_.proto, Proto::kResp3) << "a refused HELLO changes nothing";
  EXPECT_EQ(Run({"HELLO", "2"}).substr(0, 4), "*14\r");
  EXPECT_EQ(client_.proto, Proto::kResp2);
}

// What Redis 7 sends a RESP3 client where the protocols differ.
TEST_F(CommandsTest, RespThreeRepliesUseItsTypes) {
  ASSERT_EQ(Run({"HELLO", "3"}).substr(0, 2), "%7");
  const std::string null3 = "_\r\n";
  EXPECT_EQ(Run({"GET", "missing"}), null3);
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"SET", "k", "w", "NX"}), null3);
  EXPECT_EQ(Run({"SET", "other", "w", "XX", "GET"}), null3);
  EXPECT_EQ(Run({"GETDEL", "missing"}), null3);
  EXPECT_EQ(Run({"GETEX", "missing", "EX", "0"}), null3);
  EXPECT_EQ(Run({"MGET", "k", "missing"}), "*2\r\n$1\r\nv\r\n_\r\n");
  EXPECT_EQ(Run({"CLIENT", "GETNAME"}), null3);
  EXPECT_EQ(Run({"CONFIG", "GET", "appendonly"}), "%1\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");
  EXPECT_EQ(Run({"COMMAND", "INFO", "nope"}), "*1\r\n_\r\n");
  EXPECT_EQ(Run({"COMMAND", "DOCS"}), "%0\r\n");
  EXPECT_NE(Run({"COMMAND", "INFO", "get"}).find("~1\r\n+readonly\r\n"), std::string::npos);
  EXPECT_EQ(Run({"INFO", "clients"}).substr(0, 1), "=");
  EXPECT_NE(Run({"INFO", "clients"}).find("\r\ntxt:# Clients\r\n"), std::string::npos);
  EXPECT_EQ(Run({"TTL", "k"}), ":-1\r\n");
}

TEST_F(CommandsTest, MultiQueuesAndExecRepliesWithEveryResult) {
  EXPECT_EQ(Run({"EXEC"}), "-ERR EXEC without MULTI\r\n");
  EXPECT_EQ(Run({"DISCARD"}), "-ERR DISCARD without MULTI\r\n");
  EXPECT_EQ(Run({"SET", "gone", "x"}), kOk);
  EXPECT_EQ(Run({"MULTI"}), kOk);
  EXPECT_EQ(Run({"MULTI"}), "-ERR MULTI calls can not be nested\r\n");
  EXPECT_EQ(Run({"WATCH", "k"}), "-ERR WATCH inside MULTI is not allowed\r\n");
  EXPECT_EQ(Run({"SET", "k", "v"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"GET", "k"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"SET", "k", "w", "BOGUS"}), "+QUEUED\r\n");  // a run-time error, as in Redis
  EXPECT_EQ(Run({"MGET", "k", "none"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"DEL", "gone"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"PING"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"TTL", "k"}), "+QUEUED\r\n");
  ClientState other;
  EXPECT_EQ(RunAs(other, {"GET", "k"}), kNull) << "another client saw a queued write";
  EXPECT_EQ(Run({"EXEC"}),
            "*7\r\n+OK\r\n$1\r\nv\r\n-ERR syntax error\r\n*2\r\n$1\r\nv\r\n$-1\r\n:1\r\n"
            "+PONG\r\n:-1\r\n");
  EXPECT_EQ(RunAs(other, {"GET", "k"}), "$1\r\nv\r\n");
  EXPECT_EQ(Run({"MULTI"}), kOk);
  EXPECT_EQ(Run({"EXEC"}), "*0\r\n");
  EXPECT_EQ(Run({"MULTI"}), kOk);
  EXPECT_EQ(Run({"SET", "d", "v"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"DISCARD"}), kOk);
  EXPECT_EQ(Run({"EXEC"}), "-ERR EXEC without MULTI\r\n");
  EXPECT_EQ(Run({"GET", "d"}), kNull);
}

TEST_F(CommandsTest, CountersAndExpiryConditionsRunInsideATransaction) {
  EXPECT_EQ(Run({"MULTI"}), kOk);
  for (auto cmd : std::vector<std::vector<std::string>>{{"SET", "n", "5"},
                                                        {"INCR", "n"},
                                                        {"INCRBY", "n", "10"},
                                                        {"SET", "s", "x"},
                                                        {"INCR", "s"},
                                                        {"EXPIRE", "n", "100", "NX"},
                                                        {"EXPIRE", "n", "50", "GT"}}) {
    auto promise = std::make_shared<std::promise<std::string>>();
    executor_->Execute(client_, cmd, [promise](std::string r) { promise->set_value(r); });
    EXPECT_EQ(promise->get_future().get(), "+QUEUED\r\n");
  }
  EXPECT_EQ(Run({"EXEC"}),
            "*7\r\n+OK\r\n:6\r\n:16\r\n+OK\r\n-ERR value is not an integer or out of range\r\n"
            ":1\r\n:0\r\n");
  EXPECT_EQ(Run({"GET", "n"}), "$2\r\n16\r\n");
}

TEST_F(CommandsTest, AnErrorWhileQueuingDiscardsTheTransaction) {
  for (auto bad : std::vector<std::vector<std::string>>{{"NOSUCH", "x"}, {"GET"}}) {
    EXPECT_EQ(Run({"MULTI"}), kOk);
    EXPECT_EQ(Run({"SET", "k", "v"}), "+QUEUED\r\n");
    auto promise = std::make_shared<std::promise<std::string>>();
    executor_->Execute(client_, bad, [promise](std::string r) { promise->set_value(r); });
    EXPECT_EQ(promise->get_future().get()[0], '-');
    EXPECT_EQ(Run({"SET", "k2", "v"}), "+QUEUED\r\n");
    EXPECT_EQ(Run({"EXEC"}), "-EXECABORT Transaction discarded because of previous errors.\r\n");
    EXPECT_EQ(Run({"GET", "k"}), kNull) << "a discarded transaction applied a write";
    EXPECT_EQ(Run({"EXEC"}), "-ERR EXEC without MULTI\r\n");
  }
}

TEST_F(CommandsTest, WatchedKeyChangedMakesExecNil) {
  ClientState other;
  EXPECT_EQ(Run({"SET", "k", "1"}), kOk);
  EXPECT_EQ(Run({"WATCH", "k", "absent"}), kOk);
  EXPECT_EQ(RunAs(other, {"SET", "k", "2"}), kOk);
  EXPECT_EQ(Run({"MULTI"}), kOk);
  EXPECT_EQ(Run({"SET", "k", "3"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"EXEC"}), "*-1\r\n");
  EXPECT_EQ(Run({"GET", "k"}), "$1\r\n2\r\n");
  // EXEC unwatched everything: the same transaction now applies.
  EXPECT_EQ(RunAs(other, {"SET", "k", "4"}), kOk);
  EXPECT_EQ(Run({"MULTI"}), kOk);
  EXPECT_EQ(Run({"SET", "k", "3"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"EXEC"}), "*1\r\n+OK\r\n");
  // UNWATCH and DISCARD forget the keys too; a client's own write inside EXEC is no change.
  EXPECT_EQ(Run({"WATCH", "k"}), kOk);
  EXPECT_EQ(Run({"UNWATCH"}), kOk);
  EXPECT_EQ(RunAs(other, {"SET", "k", "5"}), kOk);
  EXPECT_EQ(Run({"MULTI"}), kOk);
  EXPECT_EQ(Run({"GET", "k"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"EXEC"}), "*1\r\n$1\r\n5\r\n");
  EXPECT_EQ(Run({"WATCH", "absent"}), kOk);
  EXPECT_EQ(RunAs(other, {"SET", "absent", "now"}), kOk);
  EXPECT_EQ(Run({"HELLO", "3"}).substr(0, 2), "%7");
  EXPECT_EQ(Run({"MULTI"}), kOk);
  EXPECT_EQ(Run({"GET", "absent"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"EXEC"}), "_\r\n") << "RESP3's nil";
}

TEST_F(CommandsTest, MsetSetsEveryPairOrNone) {
  EXPECT_EQ(Run({"MSET", "a", "1", "b", "2"}), kOk);
  EXPECT_EQ(Run({"MGET", "a", "b"}), "*2\r\n$1\r\n1\r\n$1\r\n2\r\n");
  EXPECT_EQ(Run({"MSET", "a", "1", "b"}), "-ERR wrong number of arguments for 'mset' command\r\n");
  std::string big(100, 'x');  // the fixture's store.max_value_bytes is 64
  EXPECT_EQ(Run({"MSET", "a", "new", "c", big}).substr(0, 39),
            "-ERR the transaction applied nothing: v");
  EXPECT_EQ(Run({"GET", "a"}), "$1\r\n1\r\n") << "a refused MSET applied a pair";
  EXPECT_EQ(Run({"MULTI"}), kOk);
  EXPECT_EQ(Run({"MSET", "a", "x", "b", "y"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"GET", "b"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"EXEC"}), "*2\r\n+OK\r\n$1\r\ny\r\n");
}

TEST_F(CommandsTest, EveryCommandHasACounterSlot) {
  EXPECT_LT(AllCommands().size(), CommandStats::kUnknownSlot);
}

TEST_F(CommandsTest, UnknownCommandMatchesRedisSeven) {
  EXPECT_EQ(Run({"foo", "a", "b"}),
            "-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n");
  EXPECT_EQ(Run({"LPUSH", "l", "x"}),
            "-ERR unknown command 'LPUSH', with args beginning with: 'l' 'x' \r\n");
}

TEST_F(CommandsTest, SetAndGet) {
  EXPECT_EQ(Run({"GET", "k"}), kNull);
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"GET", "k"}), "$1\r\nv\r\n");
  EXPECT_EQ(Run({"SET", "k", "w", "NX"}), kNull);
  EXPECT_EQ(Run({"SET", "k", "w", "XX", "GET"}), "$1\r\nv\r\n");
  EXPECT_EQ(Run({"SET", "new", "w", "XX"}), kNull);
  EXPECT_EQ(Run({"SET", "new", "w", "NX", "GET"}), kNull);
  EXPECT_EQ(Run({"GET", "new"}), "$1\r\nw\r\n");
  EXPECT_EQ(Run({"TTL", "k"}), ":-1\r\n");
  EXPECT_EQ(Run({"GET"}), "-ERR wrong number of arguments for 'get' command\r\n");
  EXPECT_EQ(Run({"SET", "k"}), "-ERR wrong number of arguments for 'set' command\r\n");
}

TEST_F(CommandsTest, SetExpiryOptions) {
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "10"}), kOk);
  EXPECT_EQ(Run({"TTL", "k"}), ":10\r\n");
  EXPECT_EQ(Run({"PTTL", "k"}), ":10000\r\n");
  EXPECT_EQ(Run({"SET", "k", "v", "PX", "1500"}), kOk);
  EXPECT_EQ(Run({"TTL", "k"}), ":2\r\n");  // rounded like Redis
  EXPECT_EQ(Run({"SET", "k", "v", "EXAT", std::to_string(NowMs() / 1000 + 100)}), kOk);
  EXPECT_EQ(Run({"SET", "k", "v", "PXAT", std::to_string(NowMs() + 5000)}), kOk);
  EXPECT_EQ(Run({"SET", "k", "v2", "KEEPTTL"}), kOk);
  EXPECT_EQ(Run({"PTTL", "k"}), ":5000\r\n");
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "10", "EX", "20"}), kOk);  // same option: last wins
  EXPECT_EQ(Run({"TTL", "k"}), ":20\r\n");
  clock_.Advance(std::chrono::seconds(21));
  EXPECT_EQ(Run({"GET", "k"}), kNull);
}

TEST_F(CommandsTest, SetRejectsBadOptionsLikeRedis) {
  const std::string invalid = "-ERR invalid expire time in 'set' command\r\n";
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "0"}), invalid);
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "-1"}), invalid);
  EXPECT_EQ(Run({"SET", "k", "v", "PX", "9223372036854775807"}), invalid);
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "9223372036854775"}), invalid);
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "x"}), kNotInt);
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "01"}), kNotInt);
  EXPECT_EQ(Run({"SET", "k", "v", "NX", "XX"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "1", "PX", "1"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "KEEPTTL", "EX", "1"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "EX"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "BOGUS"}), kSyntax);
  EXPECT_EQ(Run({"GET", "k"}), kNull);
}

TEST_F(CommandsTest, SetExPSetExGetExGetDel) {
  EXPECT_EQ(Run({"SETEX", "k", "5", "v"}), kOk);
  EXPECT_EQ(Run({"TTL", "k"}), ":5\r\n");
  EXPECT_EQ(Run({"SETEX", "k", "0", "v"}), "-ERR invalid expire time in 'setex' command\r\n");
  EXPECT_EQ(Run({"SETEX", "k", "x", "v"}), kNotInt);
  EXPECT_EQ(Run({"PSETEX", "k", "-1", "v"}), "-ERR invalid expire time in 'psetex' command\r\n");
  EXPECT_EQ(Run({"PSETEX", "k", "2500", "v"}), kOk);
  EXPECT_EQ(Run({"PTTL", "k"}), ":2500\r\n");
  EXPECT_EQ(Run({"GETEX", "k", "PERSIST"}), "$1\r\nv\r\n");
  EXPECT_EQ(Run({"TTL", "k"}), ":-1\r\n");
  EXPECT_EQ(Run({"GETEX", "k", "EX", "9"}), "$1\r\nv\r\n");
  EXPECT_EQ(Run({"TTL", "k"}), ":9\r\n");
  EXPECT_EQ(Run({"GETEX", "k"}), "$1\r\nv\r\n");
  EXPECT_EQ(Run({"TTL", "k"}), ":9\r\n");
  EXPECT_EQ(Run({"GETEX", "k", "EX", "1", "PERSIST"}), kSyntax);
  EXPECT_EQ(Run({"GETEX", "k", "EX", "0"}), "-ERR invalid expire time in 'getex' command\r\n");
  EXPECT_EQ(Run({"GETEX", "missing", "EX", "5"}), kNull);
  EXPECT_EQ(Run({"GETDEL", "k"}), "$1\r\nv\r\n");
  EXPECT_EQ(Run({"GETDEL", "k"}), kNull);
}

// GET answered in place from memory: a value, and a missing key in each protocol's null.
TEST_F(CommandsTest, GetAnswersInTheClientsProtocol) {
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"GET", "k"}), "$1\r\nv\r\n");
  EXPECT_EQ(Run({"GET", "missing"}), kNull);
  client_.proto = Proto::kResp3;
  EXPECT_EQ(Run({"GET", "k"}), "$1\r\nv\r\n");
  EXPECT_EQ(Run({"GET", "missing"}), "_\r\n");
  EXPECT_EQ(Run({"SET", "e", "", "PX", "5"}), kOk);
  clock_.Advance(std::chrono::milliseconds(10));
  EXPECT_EQ(Run({"GET", "e"}), "_\r\n");  // expired
}

// Redis 7's getexCommand looks the key up before it validates the expiry: a missing key is
// nil whatever the expiry says; only syntax errors come first.
TEST_F(CommandsTest, GetExOnAMissingKeyIsNilBeforeTheExpiryIsChecked) {
  const std::string invalid = "-ERR invalid expire time in 'getex' command\r\n";
  EXPECT_EQ(Run({"GETEX", "missing", "EX", "0"}), kNull);
  EXPECT_EQ(Run({"GETEX", "missing", "PX", "-5"}), kNull);
  EXPECT_EQ(Run({"GETEX", "missing", "EX", "x"}), kNull);
  EXPECT_EQ(Run({"GETEX", "missing", "EX", "9223372036854775807"}), kNull);
  EXPECT_EQ(Run({"GETEX", "missing", "EX", "1", "PERSIST"}), kSyntax);
  EXPECT_EQ(Run({"GETEX", "missing", "EX"}), kSyntax);
  EXPECT_EQ(Run({"SET", "k", "v", "EX", "100"}), kOk);
  EXPECT_EQ(Run({"GETEX", "k", "EX", "0"}), invalid);
  EXPECT_EQ(Run({"GETEX", "k", "PXAT", "-1"}), invalid);
  EXPECT_EQ(Run({"GETEX", "k", "EX", "x"}), kNotInt);
  EXPECT_EQ(Run({"TTL", "k"}), ":100\r\n");  // a refused GETEX changes nothing
}

TEST_F(CommandsTest, MultiKeyCommands) {
  Run({"SET", "a", "1"});
  Run({"SET", "b", "2"});
  EXPECT_EQ(Run({"MGET", "a", "x", "b"}), "*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n");
  EXPECT_EQ(Run({"EXISTS", "a", "a", "x"}), ":2\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":2\r\n");
  EXPECT_EQ(Run({"DEL", "a", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"UNLINK", "b"}), ":1\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":0\r\n");
  EXPECT_EQ(Run({"DBSIZE", "x"}), "-ERR wrong number of arguments for 'dbsize' command\r\n");
  EXPECT_EQ(Run({"MGET"}), "-ERR wrong number of arguments for 'mget' command\r\n");
}

TEST_F(CommandsTest, ExpireFamily) {
  Run({"SET", "k", "v"});
  EXPECT_EQ(Run({"EXPIRE", "k", "100"}), ":1\r\n");
  EXPECT_EQ(Run({"TTL", "k"}), ":100\r\n");
  EXPECT_EQ(Run({"PEXPIRE", "k", "1234"}), ":1\r\n");
  EXPECT_EQ(Run({"PTTL", "k"}), ":1234\r\n");
  EXPECT_EQ(Run({"EXPIREAT", "k", std::to_string(NowMs() / 1000 + 50)}), ":1\r\n");
  EXPECT_EQ(Run({"PEXPIREAT", "k", std::to_string(NowMs() + 700)}), ":1\r\n");
  EXPECT_EQ(Run({"PTTL", "k"}), ":700\r\n");
  EXPECT_EQ(Run({"PERSIST", "k"}), ":1\r\n");
  EXPECT_EQ(Run({"PERSIST", "k"}), ":0\r\n");
  EXPECT_EQ(Run({"EXPIRE", "missing", "10"}), ":0\r\n");
  EXPECT_EQ(Run({"TTL", "missing"}), ":-2\r\n");
  EXPECT_EQ(Run({"PTTL", "missing"}), ":-2\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "x"}), kNotInt);
  EXPECT_EQ(Run({"EXPIRE", "k", "99999999999999999"}),
            "-ERR invalid expire time in 'expire' command\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "10", "FOO"}), "-ERR Unsupported option FOO\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "-1"}), ":1\r\n");  // a past deadline deletes the key
  EXPECT_EQ(Run({"EXISTS", "k"}), ":0\r\n");
}

// Redis 7's NX/XX/GT/LT, with its texts checked against redis-server 7.0.
TEST_F(CommandsTest, ExpireConditions) {
  const std::string kNxConflict =
      "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n";
  const std::string kGtLt = "-ERR GT and LT options at the same time are not compatible\r\n";
  Run({"SET", "k", "v"});
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "NX", "XX"}), kNxConflict);
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "nx", "GT"}), kNxConflict);
  EXPECT_EQ(Run({"PEXPIRE", "k", "100", "LT", "NX"}), kNxConflict);
  EXPECT_EQ(Run({"EXPIREAT", "k", "100", "GT", "LT"}), kGtLt);
  EXPECT_EQ(Run({"EXPIRE", "k", "x", "FOO"}), "-ERR Unsupported option FOO\r\n");  // options first
  EXPECT_EQ(Run({"TTL", "k"}), ":-1\r\n") << "a refused command changes nothing";
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "XX"}), ":0\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "GT"}), ":0\r\n");  // no TTL is an infinite one
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "NX", "NX"}), ":1\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "50", "NX"}), ":0\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "200", "LT"}), ":0\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "200", "xx", "gt"}), ":1\r\n");
  EXPECT_EQ(Run({"PEXPIRE", "k", "5000", "LT"}), ":1\r\n");
  EXPECT_EQ(Run({"PTTL", "k"}), ":5000\r\n");
  EXPECT_EQ(Run({"EXPIRE", "missing", "10", "LT"}), ":0\r\n");
  Run({"SET", "p", "v"});
  EXPECT_EQ(Run({"EXPIRE", "p", "-1", "GT"}), ":0\r\n");
  EXPECT_EQ(Run({"EXISTS", "p"}), ":1\r\n");
  EXPECT_EQ(Run({"EXPIRE", "p", "-1", "LT"}), ":1\r\n");
  EXPECT_EQ(Run({"EXISTS", "p"}), ":0\r\n");
}

TEST_F(CommandsTest, SetNxTypeKeys) {
  EXPECT_EQ(Run({"SETNX", "k", "v"}), ":1\r\n");
  EXPECT_EQ(Run({"SETNX", "k", "w"}), ":0\r\n");
  EXPECT_EQ(Run({"GET", "k"}), "$1\r\nv\r\n");
  EXPECT_EQ(Run({"SETNX", "k"}), "-ERR wrong number of arguments for 'setnx' command\r\n");
  EXPECT_EQ(Run({"TYPE", "k"}), "+string\r\n");
  EXPECT_EQ(Run({"TYPE", "missing"}), "+none\r\n");
  EXPECT_EQ(Run({"TYPE"}), "-ERR wrong number of arguments for 'type' command\r\n");
  EXPECT_EQ(Run({"KEYS", "*"}), "*1\r\n$1\r\nk\r\n");
  for (int i = 0; i < 2500; ++i) Run({"SET", "many:" + std::to_string(i), "v"});
  std::string all = Run({"KEYS", "*"});
  EXPECT_EQ(all.substr(0, 7), "*2501\r\n") << "every key once, over several SCAN pages";
  EXPECT_EQ(Run({"KEYS", "many:1?"}).substr(0, 5), "*10\r\n");
  EXPECT_EQ(Run({"KEYS", "nothing*"}), "*0\r\n");
  EXPECT_EQ(Run({"KEYS"}), "-ERR wrong number of arguments for 'keys' command\r\n");
  EXPECT_EQ(Run({"KEYS", "a", "b"}), "-ERR wrong number of arguments for 'keys' command\r\n");
}

// Replies and errors as redis-server 7.0 gives them.
TEST_F(CommandsTest, IntegerCounters) {
  EXPECT_EQ(Run({"INCR", "n"}), ":1\r\n");
  EXPECT_EQ(Run({"INCRBY", "n", "41"}), ":42\r\n");
  EXPECT_EQ(Run({"DECR", "n"}), ":41\r\n");
  EXPECT_EQ(Run({"DECRBY", "n", "-9"}), ":50\r\n");
  EXPECT_EQ(Run({"GET", "n"}), "$2\r\n50\r\n");
  EXPECT_EQ(Run({"TTL", "n"}), ":-1\r\n");  // default_ttl is 0 here: Redis's semantics
  Run({"SET", "t", "1", "EX", "100"});
  EXPECT_EQ(Run({"INCR", "t"}), ":2\r\n");
  EXPECT_EQ(Run({"TTL", "t"}), ":100\r\n") << "INCR keeps the deadline";
  Run({"SET", "s", "abc"});
  EXPECT_EQ(Run({"INCR", "s"}), kNotInt);
  EXPECT_EQ(Run({"INCRBY", "n", "x"}), kNotInt);
  EXPECT_EQ(Run({"INCRBY", "n", "01"}), kNotInt);
  Run({"SET", "max", "9223372036854775807"});
  EXPECT_EQ(Run({"INCR", "max"}), "-ERR increment or decrement would overflow\r\n");
  EXPECT_EQ(Run({"DECRBY", "n", "-9223372036854775808"}), "-ERR decrement would overflow\r\n");
  EXPECT_EQ(Run({"GET", "max"}), "$19\r\n9223372036854775807\r\n");
  EXPECT_EQ(Run({"INCR"}), "-ERR wrong number of arguments for 'incr' command\r\n");
  EXPECT_EQ(Run({"INCRBY", "n"}), "-ERR wrong number of arguments for 'incrby' command\r\n");
}

TEST_F(CommandsTest, FloatCounter) {
  const std::string kNotFloat = "-ERR value is not a valid float\r\n";
  Run({"SET", "f", "10.5"});
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "0.1"}), "$4\r\n10.6\r\n");
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "5.0e3"}), "$22\r\n5010.60000000000000009\r\n");
  EXPECT_EQ(Run({"INCRBYFLOAT", "g", "0x10"}), "$2\r\n16\r\n");
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "inf"}), "-ERR increment would produce NaN or Infinity\r\n");
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "nan"}), kNotFloat);
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", " 1"}), kNotFloat);
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "1 "}), kNotFloat);
  Run({"SET", "s", "abc"});
  EXPECT_EQ(Run({"INCRBYFLOAT", "s", "1"}), kNotFloat);
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "1", "2"}),
            "-ERR wrong number of arguments for 'incrbyfloat' command\r\n");
  ASSERT_EQ(Run({"HELLO", "3"}).substr(0, 2), "%7");
  EXPECT_EQ(Run({"INCRBYFLOAT", "g", "1"}), "$2\r\n17\r\n") << "a bulk string in RESP3 too";
}

TEST_F(CommandsTest, Scan) {
  for (int i = 0; i < 25; ++i) Run({"SET", "s:" + std::to_string(i), "v"});
  Run({"SET", "other", "v"});
  std::set<std::string> seen;
  std::string cursor = "0";
  for (int rounds = 0; rounds < 100; ++rounds) {
    std::string reply = Run({"SCAN", cursor, "MATCH", "s:*", "COUNT", "7"});
    ASSERT_EQ(reply.substr(0, 4), "*2\r\n");
    size_t len_end = reply.find("\r\n", 4);
    size_t cursor_len = std::stoul(reply.substr(5, len_end - 5));
    cursor = reply.substr(len_end + 2, cursor_len);
    for (size_t pos = reply.find("s:"); pos != std::string::npos; pos = reply.find("s:", pos + 1)) {
      seen.insert(reply.substr(pos, reply.find('\r', pos) - pos));
    }
    if (cursor == "0") break;
  }
  EXPECT_EQ(seen.size(), 25U);
  EXPECT_EQ(Run({"SCAN", "x"}), "-ERR invalid cursor\r\n");
}

// Redis parses the cursor with strtoul: a sign is allowed and "-1" wraps to the largest
// cursor, which is past every key (an empty last page); leading spaces, trailing junk, other
// bases and values beyond 64 bits are invalid.
TEST_F(CommandsTest, ScanCursorFollowsStrtoul) {
  Run({"SET", "k", "v"});
  const std::string empty_page = "*2\r\n$1\r\n0\r\n*0\r\n";
  const std::string invalid = "-ERR invalid cursor\r\n";
  EXPECT_EQ(Run({"SCAN", "-1"}), empty_page);
  EXPECT_EQ(Run({"SCAN", "18446744073709551615"}), empty_page);
  EXPECT_EQ(Run({"SCAN", "+0"}), "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n");
  EXPECT_EQ(Run({"SCAN", "-0"}), "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n");
  EXPECT_EQ(Run({"SCAN", ""}), "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n");
  for (const char* bad : {"x", " 1", "1 ", "1x", "0x10", "-", "+", "--1", "18446744073709551616",
                          "-18446744073709551616"}) {
    EXPECT_EQ(Run({"SCAN", bad}), invalid) << "'" << bad << "'";
  }
  EXPECT_EQ(Run({"SCAN", "0", "COUNT", "0"}), kSyntax);
  EXPECT_EQ(Run({"SCAN", "0", "COUNT", "x"}), kNotInt);
  EXPECT_EQ(Run({"SCAN", "0", "MATCH"}), kSyntax);
  EXPECT_EQ(Run({"SCAN", "0", "FOO", "1"}), kSyntax);
  std::string hashes = Run({"SCAN", "0", "TYPE", "hash", "COUNT", "1000"});
  EXPECT_NE(hashes.find("*0\r\n"), std::string::npos);
}

TEST_F(CommandsTest, InfoSections) {
  Run({"SET", "k", "v"});
  std::string all = Run({"INFO"});
  for (const char* section : {"# Server\r\n", "# Clients\r\n", "# Memory\r\n", "# Persistence\r\n",
                              "# Stats\r\n", "# Keyspace\r\n"}) {
    EXPECT_NE(all.find(section), std::string::npos) << section;
  }
  EXPECT_NE(all.find("store_kind:memory\r\n"), std::string::npos);
  EXPECT_NE(all.find("store_durability:"), std::string::npos);
  EXPECT_NE(all.find("store_last_commit_seconds:"), std::string::npos);
  Run({"SET", "k2", "v", "EX", "100"});
  std::string keyspace = Run({"INFO", "keyspace"});
  EXPECT_EQ(keyspace, "$34\r\n# Keyspace\r\ndb0:keys=2,expires=1\r\n\r\n");
  EXPECT_EQ(Run({"INFO", "nosuchsection"}), "$0\r\n\r\n");
}

TEST_F(CommandsTest, CommandIntrospection) {
  EXPECT_EQ(Run({"COMMAND", "COUNT"}).substr(0, 1), ":");
  EXPECT_EQ(Run({"COMMAND", "DOCS"}), "*0\r\n");
  EXPECT_EQ(Run({"COMMAND", "INFO", "get", "nope"}).substr(0, 9), "*2\r\n*10\r\n");
  EXPECT_EQ(Run({"COMMAND", "foo"}), "-ERR unknown subcommand 'foo'. Try COMMAND HELP.\r\n");
  EXPECT_EQ(Run({"COMMAND"}).substr(0, 1), "*");
  EXPECT_EQ(Run({"CONFIG", "GET", "save"}), "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
}

TEST_F(CommandsTest, StoreErrorsBecomeErrReplies) {
  std::string big(65, 'x');
  std::string reply = Run({"SET", "k", big});
  EXPECT_EQ(reply.substr(0, 5), "-ERR ");
  EXPECT_EQ(reply.find('\n'), reply.size() - 1);
}

// The documented difference from Redis: with the store's default TTL (sessions), a plain SET
// expires; KEEPTTL and PERSIST still behave as in Redis.
TEST_F(CommandsTest, CommandsAreCountedByNameForMetrics) {
  ASSERT_LT(AllCommands().size(), CommandStats::kUnknownSlot)
      << "every command needs its own counter slot";
  Run({"SET", "k", "v"});
  Run({"set", "k", "w"});
  Run({"GET", "k"});
  Run({"NOSUCH"});
  Run({"GET"});  // wrong arity still counts as a GET
  auto count = [this](const char* name) {
    const CommandSpec* spec = FindCommand(name);
    return counters_.commands->calls(static_cast<size_t>(spec - AllCommands().data()));
  };
  EXPECT_EQ(count("set"), 2u);
  EXPECT_EQ(count("get"), 2u);
  EXPECT_EQ(count("del"), 0u);
  EXPECT_EQ(counters_.commands->calls(CommandStats::kUnknownSlot), 1u);
}

TEST_F(CommandsTest, FlushIsRefusedUnlessAllowed) {
  Run({"SET", "k", "v"});
  EXPECT_EQ(Run({"FLUSHALL"}),
            "-ERR flushall is disabled: it would delete every session; set resp.allow_flush = "
            "true to allow it\r\n");
  EXPECT_EQ(Run({"FLUSHDB", "ASYNC"}),
            "-ERR flushdb is disabled: it would delete every session; set resp.allow_flush = "
            "true to allow it\r\n");
  EXPECT_EQ(Run({"FLUSHALL", "now"}), kSyntax);  // syntax first, as Redis checks it first
  EXPECT_EQ(Run({"FLUSHDB", "SYNC", "ASYNC"}), kSyntax);
  EXPECT_EQ(Run({"DBSIZE"}), ":1\r\n") << "nothing was deleted";
}

TEST(FlushCommands, DeleteEveryKeyWhenAllowed) {
  testing::FakeClock clock;
  auto store = NewMemoryStore(MemoryTierOptions{}, clock);
  ServerCounters counters;
  ExecutorConfig config;
  config.allow_flush = true;
  CommandExecutor executor(config, *store, clock, counters);
  ClientState client;
  auto run = [&](std::vector<std::string> args) {
    std::string out;
    executor.Execute(client, std::move(args), [&out](std::string r) { out = std::move(r); });
    return out;  // the memory store answers inline
  };
  for (const char* flush : {"FLUSHALL", "FLUSHDB"}) {
    for (const char* mode : {"", "ASYNC", "sync"}) {
      run({"SET", "a", "1"});
      run({"SET", "b", "2"});
      std::vector<std::string> args{flush};
      if (*mode != 0) args.emplace_back(mode);
      EXPECT_EQ(run(args), "+OK\r\n") << flush << " " << mode;
      EXPECT_EQ(run({"DBSIZE"}), ":0\r\n");
      EXPECT_EQ(run({"GET", "a"}), "$-1\r\n");
    }
  }
}

// commandstats and errorstats as Redis 7 formats them; calls, rejections (before the command
// ran) and failures (after) counted per command, errors by their first word.
TEST_F(CommandsTest, CommandAndErrorStats) {
  Run({"SET", "k", "v"});
  Run({"GET", "k"});
  Run({"GET"});          // arity: rejected
  Run({"INCR", "k"});    // not an integer: failed
  Run({"SELECT", "1"});  // failed
  Run({"AUTH", "x"});    // no password set: ERR
  Run({"NOSUCH"});       // unknown: counted as an error, not a command
  std::string info = Run({"INFO", "commandstats"});
  EXPECT_NE(info.find("\r\ncmdstat_get:calls=2,usec=0,usec_per_call=0.00,rejected_calls=1,"
                      "failed_calls=0\r\n"),
            std::string::npos)
      << info;
  EXPECT_NE(info.find("\r\ncmdstat_incr:calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,"
                      "failed_calls=1\r\n"),
            std::string::npos)
      << info;
  EXPECT_EQ(info.find("cmdstat_del"), std::string::npos) << "commands never run are left out";
  std::string errors = Run({"INFO", "errorstats"});
  EXPECT_NE(errors.find("# Errorstats\r\nerrorstat_ERR:count=5\r\n"), std::string::npos) << errors;
  EXPECT_NE(Run({"INFO", "stats"}).find("\r\ntotal_error_replies:5\r\n"), std::string::npos);
}

// Redis 7's sections and the fields its tooling reads, with the values skydb really has.
TEST_F(CommandsTest, InfoHasRedisSectionsAndFields) {
  std::string def = Run({"INFO"});
  std::vector<std::string> titles;
  for (size_t at = def.find("# "); at != std::string::npos; at = def.find("\r\n# ", at + 1)) {
    size_t start = def[at] == '#' ? at : at + 2;
    titles.push_back(def.substr(start + 2, def.find("\r\n", start) - start - 2));
  }
  EXPECT_EQ(titles, (std::vector<std::string>{"Server", "Clients", "Memory", "Persistence", "Stats",
                                              "Replication", "CPU", "Modules", "Errorstats",
                                              "Cluster", "Keyspace"}));
  EXPECT_EQ(def.find("# Commandstats"), std::string::npos) << "not in the default set";
  EXPECT_NE(Run({"INFO", "all"}).find("# Commandstats\r\n"), std::string::npos);
  EXPECT_NE(Run({"INFO", "everything"}).find("# Commandstats\r\n"), std::string::npos);
  std::string two = Run({"INFO", "cpu", "replication"});
  EXPECT_NE(two.find("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"), std::string::npos);
  EXPECT_NE(two.find("\r\nmaster_repl_offset:0\r\n"), std::string::npos);
  EXPECT_EQ(two.find("# Server"), std::string::npos);
  for (const char* field :
       {"\r\nrun_id:", "\r\nprocess_id:", "\r\nexecutable:", "\r\nos:", "\r\nuptime_in_seconds:",
        "\r\nmaxmemory:0\r\n", "\r\nmaxmemory_policy:noeviction\r\n", "\r\nused_memory_rss:",
        "\r\naof_enabled:0\r\n", "\r\nrdb_bgsave_in_progress:0\r\n", "\r\nloading:0\r\n",
        "\r\nused_cpu_sys:", "\r\nused_cpu_user_children:", "\r\nmaster_replid:",
        "\r\ntotal_error_replies:", "\r\nblocked_clients:0\r\n", "\r\ncluster_enabled:0\r\n"}) {
    EXPECT_NE(def.find(field), std::string::npos) << field;
  }
  size_t run_id = def.find("\r\nrun_id:") + 9;
  EXPECT_EQ(def.find("\r\n", run_id) - run_id, 40u);
  EXPECT_EQ(Run({"INFO"}).substr(0, 0), "");
  std::string again = Run({"INFO", "server"});
  EXPECT_NE(again.find(def.substr(run_id - 8, 48)), std::string::npos) << "run_id is stable";
}

// What prometheus-redis-exporter asks besides INFO, answered as Redis answers with no latency
// monitor and no slow log, so its scrape logs no error.
TEST_F(CommandsTest, MonitoringProbes) {
  EXPECT_EQ(Run({"LATENCY", "LATEST"}), "*0\r\n");
  EXPECT_EQ(Run({"LATENCY", "foo"}), "-ERR unknown subcommand 'foo'. Try LATENCY HELP.\r\n");
  EXPECT_EQ(Run({"SLOWLOG", "LEN"}), ":0\r\n");
  EXPECT_EQ(Run({"SLOWLOG", "GET", "1"}), "*0\r\n");
  EXPECT_EQ(Run({"SLOWLOG", "GET"}), "*0\r\n");
  EXPECT_EQ(Run({"SLOWLOG", "RESET"}), kOk);
  EXPECT_EQ(Run({"SLOWLOG", "GET", "-2"}), "-ERR count should be greater than or equal to -1\r\n");
  EXPECT_EQ(Run({"SLOWLOG", "foo"}), "-ERR unknown subcommand 'foo'. Try SLOWLOG HELP.\r\n");
  std::string all = Run({"CONFIG", "GET", "*"});
  EXPECT_EQ(all.substr(0, 5), "*36\r\n") << all;
  EXPECT_NE(all.find("$9\r\ndatabases\r\n$1\r\n1\r\n"), std::string::npos) << all;
  EXPECT_EQ(Run({"CONFIG", "GET", "APPEND*"}),
            "*4\r\n$11\r\nappendfsync\r\n$2\r\nno\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");
}

// What Redis's own tests and tools set or ask that means little here: the encoding thresholds
// are kept and shown, `save ""` is taken (and nothing else), MEMORY USAGE counts what memory
// holds.
TEST_F(CommandsTest, ProbesOfRedisToolsAndTests) {
  EXPECT_EQ(Run({"CONFIG", "SET", "hash-max-ziplist-value", "10"}), kOk);
  EXPECT_EQ(Run({"CONFIG", "GET", "hash-max-listpack-value"}),
            "*2\r\n$23\r\nhash-max-listpack-value\r\n$2\r\n10\r\n");
  EXPECT_EQ(Run({"CONFIG", "SET", "set-max-intset-entries", "-1"}),
            "-ERR CONFIG SET failed (possibly related to argument 'set-max-intset-entries') - "
            "argument must be between 0 and 9223372036854775807 inclusive\r\n");
  EXPECT_EQ(Run({"CONFIG", "SET", "save", ""}), kOk);
  EXPECT_EQ(Run({"CONFIG", "SET", "save", "900 1"}),
            "-ERR CONFIG SET failed (possibly related to argument 'save') - skydb writes no "
            "snapshots (sessions are durable in PostgreSQL): only \"\" is accepted\r\n");
  EXPECT_EQ(Run({"MEMORY", "USAGE", "missing"}), "$-1\r\n");
  EXPECT_EQ(Run({"SET", "k", "0123456789"}), kOk);
  std::string usage = Run({"MEMORY", "USAGE", "k"});
  ASSERT_EQ(usage.substr(0, 1), ":");
  EXPECT_GT(std::stoll(usage.substr(1)), 11);
  EXPECT_EQ(Run({"MEMORY", "USAGE", "k", "SAMPLES", "5"}), usage);
  EXPECT_EQ(Run({"MEMORY", "USAGE", "k", "SAMPLES"}), "-ERR syntax error\r\n");
  EXPECT_EQ(Run({"MEMORY", "STATS"}),
            "-ERR unknown subcommand or wrong number of arguments for 'STATS'. Try MEMORY "
            "HELP.\r\n");
}

// Two replies Redis's unit/type/hash found different: RESP3's HRANDFIELD WITHVALUES is an array
// of pairs, and an infinite HINCRBYFLOAT increment is refused before the hash is looked up.
TEST_F(CommandsTest, HashRepliesAsRedisSevenGivesThem) {
  EXPECT_EQ(Run({"HSET", "h", "a", "1"}), ":1\r\n");
  EXPECT_EQ(Run({"HRANDFIELD", "h", "1", "WITHVALUES"}), "*2\r\n$1\r\na\r\n$1\r\n1\r\n");
  ASSERT_EQ(Run({"HELLO", "3"}).substr(0, 2), "%7");
  EXPECT_EQ(Run({"HRANDFIELD", "h", "1", "WITHVALUES"}), "*1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n");
  EXPECT_EQ(Run({"HRANDFIELD", "h", "1"}), "*1\r\n$1\r\na\r\n");
  EXPECT_EQ(Run({"HINCRBYFLOAT", "hf", "f", "+inf"}), "-ERR value is NaN or Infinity\r\n");
  EXPECT_EQ(Run({"EXISTS", "hf"}), ":0\r\n");
}

// CONFIG SET maxmemory changes the store's cap from now on (Redis's memory units); a memory-only
// store then refuses writes past it, as Redis does.
TEST_F(CommandsTest, MaxMemoryIsSettable) {
  EXPECT_EQ(Run({"CONFIG", "SET", "maxmemory", "2mb"}), kOk);
  EXPECT_EQ(Run({"CONFIG", "GET", "maxmemory"}), "*2\r\n$9\r\nmaxmemory\r\n$7\r\n2097152\r\n");
  EXPECT_EQ(Run({"CONFIG", "SET", "maxmemory", "3K"}), kOk);
  EXPECT_EQ(Run({"CONFIG", "GET", "maxmemory"}), "*2\r\n$9\r\nmaxmemory\r\n$4\r\n3000\r\n");
  EXPECT_EQ(Run({"CONFIG", "SET", "maxmemory", "12xb"}),
            "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be "
            "a memory value\r\n");
  std::string refused;
  for (int i = 0; i < 40 && refused.empty(); ++i) {
    std::string reply = Run({"SET", "k" + std::to_string(i), std::string(60, 'x')});
    if (reply != kOk) refused = reply;
  }
  EXPECT_EQ(refused.substr(0, 5), "-OOM ") << "about 230 bytes a key: 3,000 hold 13";
  EXPECT_EQ(Run({"CONFIG", "SET", "maxmemory", "0"}), kOk);
  EXPECT_EQ(Run({"SET", "more", "x"}), kOk);
}

TEST(DefaultTtl, PlainSetGetsTheStoreDefault) {
  testing::FakeClock clock;
  auto store = NewMemoryStore(MemoryTierOptions{}, clock);  // default_ttl 30 min
  ServerCounters counters;
  CommandExecutor executor(ExecutorConfig{}, *store, clock, counters);
  ClientState client;
  auto run = [&](std::vector<std::string> args) {
    std::string out;
    executor.Execute(client, std::move(args), [&out](std::string r) { out = std::move(r); });
    return out;  // the memory store answers inline
  };
  EXPECT_EQ(run({"SET", "s", "v"}), "+OK\r\n");
  EXPECT_EQ(run({"TTL", "s"}), ":1800\r\n");
  EXPECT_EQ(run({"PERSIST", "s"}), ":1\r\n");
  EXPECT_EQ(run({"TTL", "s"}), ":-1\r\n");
}

class AuthCommandsTest : public CommandsTest {
 protected:
  AuthCommandsTest() : CommandsTest("pw") {}
};

TEST_F(AuthCommandsTest, NoAuthUntilAuthenticated) {
  EXPECT_EQ(Run({"GET", "k"}), "-NOAUTH Authentication required.\r\n");
  EXPECT_EQ(Run({"PING"}), "-NOAUTH Authentication required.\r\n");
  EXPECT_EQ(Run({"nosuch"}), "-ERR unknown command 'nosuch', with args beginning with: \r\n");
  EXPECT_EQ(Run({"AUTH", "wrong"}),
            "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  EXPECT_EQ(Run({"AUTH", "bob", "pw"}),
            "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  EXPECT_EQ(Run({"AUTH", "a", "b", "c"}), kSyntax);
  EXPECT_EQ(Run({"HELLO", "2"}).substr(0, 8), "-NOAUTH ");
  EXPECT_EQ(Run({"AUTH", "pw"}), kOk);
  EXPECT_EQ(Run({"GET", "k"}), kNull);
}

TEST_F(AuthCommandsTest, HelloCanAuthenticate) {
  EXPECT_EQ(Run({"HELLO", "2", "AUTH", "default", "bad"}),
            "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  EXPECT_EQ(Run({"HELLO", "2", "AUTH", "default", "pw"}).substr(0, 4), "*14\r");
  EXPECT_TRUE(client_.authenticated);
}

TEST_F(CommandsTest, AuthWithoutPasswordConfigured) {
  EXPECT_EQ(Run({"AUTH", "x"}),
            "-ERR AUTH <password> called without any password configured for the default "
            "user. Are you sure your configuration is correct?\r\n");
  EXPECT_EQ(Run({"AUTH", "default", "anything"}), kOk);
}

}  // namespace
}  // namespace skydb::resp
