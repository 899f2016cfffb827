// The RESP server over real unix sockets in a temp dir: ordering of out-of-order store
// completions, pipelined writes reaching the store together, drain on shutdown, limits, the
// socket file's handling, and option validation.
#include <arpa/inet.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "resp/server_internal.h"
#include "skydb/durable.h"
#include "skydb/resp.h"
#include "skydb/store.h"
#include "support/fake_durable.h"
#include "support/fakes.h"

namespace skydb {
namespace {

// Holds GET and SET callbacks until the test releases them, from another thread, in any order.
class HeldStore final : public SessionStore {
 public:
  void Get(std::string key, StoreCallback<std::optional<std::string>> done) override {
    std::lock_guard<std::mutex> lock(mu_);
    gets_.push_back({std::move(key), std::move(done)});
  }
  void Set(SetRequest, StoreCallback<SetReply> done) override {
    std::lock_guard<std::mutex> lock(mu_);
    sets_.push_back(std::move(done));
  }
  void GetEx(std::string, std::optional<Expiry>,
             StoreCallback<std::optional<std::string>> done) override {
    done(std::optional<std::string>());
  }
  void GetDel(std::string, StoreCallback<std::optional<std::string>> done) override {
    done(std::optional<std::string>());
  }
  void Delete(std::vector<std::string>, StoreCallback<int64_t> done) override { done(0); }
  void Exists(std::vector<std::string>, StoreCallback<int64_t> done) override { done(0); }
  void Expire(std::string, Expiry, ExpireCondition, StoreCallback<bool> done) override {
    done(false);
  }
  void Increment(IncrRequest, StoreCallback<IncrReply> done) override { done(IncrReply{}); }
  void DeleteAll(StoreCallback<int64_t> done) override {
    whole_keyspace_calls_ += held_sets() == 0 ? 1 : 1000;  // 1000: it overtook a held SET
    done(int64_t{0});
  }
  void Ttl(std::string, StoreCallback<TtlReply> done) override { done(TtlReply{}); }
  void Scan(uint64_t, std::string, size_t, std::optional<ValueType>,
            StoreCallback<ScanReply> done) override {
    whole_keyspace_calls_ += held_sets() == 0 ? 1 : 1000;
    done(ScanReply{});
  }
  // FLUSHALL and SCAN calls; each counts 1000 instead of 1 if a SET was held when it came.
  int whole_keyspace_calls() const { return whole_keyspace_calls_.load(); }
  int64_t Count() const override { return 0; }
  StoreStats Stats() const override { return {}; }
  Status Close(std::chrono::milliseconds) override { return Ok(); }

  size_t held_gets() {
    std::lock_guard<std::mutex> lock(mu_);
    return gets_.size();
  }
  size_t held_sets() {
    std::lock_guard<std::mutex> lock(mu_);
    return sets_.size();
  }
  // Answers every held GET with its key, last first, on a new thread.
  void ReleaseGetsInReverse() {
    std::vector<std::pair<std::string, StoreCallback<std::optional<std::string>>>> gets;
    {
      std::lock_guard<std::mutex> lock(mu_);
      gets.swap(gets_);
    }
    std::thread([gets = std::move(gets)]() mutable {
      for (auto it = gets.rbegin(); it != gets.rend(); ++it)
        it->second(std::optional<std::string>(it->first));
    }).join();
  }
  // Answers every held GET with `value`, in order, on a new thread.
  void ReleaseGetsWith(const std::string& value) {
    std::vector<std::pair<std::string, StoreCallback<std::optional<std::string>>>> gets;
    {
      std::lock_guard<std::mutex> lock(mu_);
      gets.swap(gets_);
    }
    std::thread([&value, gets = std::move(gets)] {
      for (const auto& get : gets) get.second(std::optional<std::string>(value));
    }).join();
  }
  void ReleaseSets() {
    std::vector<StoreCallback<SetReply>> sets;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sets.swap(sets_);
    }
    std::thread([sets = std::move(sets)] {
      for (const auto& done : sets) done(SetReply{true, std::nullopt});
    }).join();
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<std::string, StoreCallback<std::optional<std::string>>>> gets_;
  std::vector<StoreCallback<SetReply>> sets_;
  std::atomic<int> whole_keyspace_calls_{0};
};

bool WaitFor(const std::function<bool()>& condition) {
  for (int i = 0; i < 500; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/skydb-resp-unit-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    options_.unix_path = dir_ + "/skydb.sock";
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Start(SessionStore& store) {
    auto made = NewRespServer(options_, store, clock_);
    ASSERT_TRUE(made.ok()) << made.error().message;
    server_ = std::move(made).value();
  }

  int Connect() {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", options_.unix_path.c_str());
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    timeval timeout{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    return fd;
  }

  // A client on the server's TCP port, over loopback.
  int ConnectTcp() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->tcp_port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    return fd;
  }

  static void Send(int fd, const std::string& bytes) {
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

  // Reads until `expected_size` bytes arrived, EOF ("<eof>" appended) or the 5 s timeout.
  static std::string Read(int fd, size_t expected_size) {
    std::string out;
    char buffer[65536];
    while (out.size() < expected_size) {
      ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n == 0) return out + "<eof>";
      if (n < 0) break;
      out.append(buffer, static_cast<size_t>(n));
    }
    return out;
  }

  // One bulk string reply's contents ("<error>" if the reply is not one).
  static std::string ReadBulk(int fd) {
    std::string header;
    char c = 0;
    while (header.size() < 32 && ::recv(fd, &c, 1, 0) == 1 && c != '\n') header.push_back(c);
    if (header.empty() || header[0] != '$') return "<error>" + header;
    std::string body = Read(fd, std::strtoul(header.c_str() + 1, nullptr, 10) + 2);
    return body.substr(0, body.size() - 2);
  }

  // INFO's acl_access_denied_auth, read over a fresh authenticated connection; -1 on failure.
  int AuthFailures() {
    int fd = Connect();
    Send(fd, "AUTH " + options_.requirepass + "\r\nINFO stats\r\n");
    std::string info = Read(fd, 200);
    ::close(fd);
    const std::string field = "acl_access_denied_auth:";
    size_t at = info.find(field);
    return at == std::string::npos ? -1 : std::atoi(info.c_str() + at + field.size());
  }

  std::string dir_;
  RespServerOptions options_;
  testing::FakeClock clock_;
  std::unique_ptr<RespServer> server_;
  std::unique_ptr<SessionStore> store_for_client_tests_ =
      NewMemoryStore(MemoryTierOptions{}, clock_);
};

TEST_F(ServerTest, RepliesInRequestOrderWhenTheStoreAnswersOutOfOrder) {
  HeldStore store;
  Start(store);
  int fd = Connect();
  Send(fd, "GET a\r\nGET b\r\nPING\r\nGET c\r\n");
  ASSERT_TRUE(WaitFor([&] { return store.held_gets() == 3; }));
  store.ReleaseGetsInReverse();
  std::string expected = "$1\r\na\r\n$1\r\nb\r\n+PONG\r\n$1\r\nc\r\n";
  EXPECT_EQ(Read(fd, expected.size()), expected);
  ::close(fd);
}

TEST_F(ServerTest, PipelinedSetsAllReachTheStoreBeforeAnyIsAnswered) {
  HeldStore store;
  Start(store);
  int fd = Connect();
  std::string pipeline;
  for (int i = 0; i < 100; ++i) pipeline += "SET k" + std::to_string(i) + " v\r\n";
  Send(fd, pipeline);
  EXPECT_TRUE(WaitFor([&] { return store.held_sets() == 100; }));  // one group commit's worth
  store.ReleaseSets();
  std::string expected;
  for (int i = 0; i < 100; ++i) expected += "+OK\r\n";
  EXPECT_EQ(Read(fd, expected.size()), expected);
  ::close(fd);
}

// Over the tiered store (fake durable layer, sync durability): replies come from writer
// threads after COMMIT, and a pipeline of SETs is committed in a few batches, not one each.
TEST_F(ServerTest, PipelinedSetsShareGroupCommits) {
  TieredOptions tiered;
  tiered.durability = Durability::kSync;
  tiered.flush_interval = std::chrono::milliseconds(1);
  auto state = std::make_shared<testing::FakeDurableState>();
  state->hold_commits = true;  // let the whole pipeline queue up behind the first commit
  auto store = NewTieredStore(tiered, clock_, std::make_unique<testing::FakeDurable>(state));
  ASSERT_TRUE(store.ok()) << store.error().message;
  Start(**store);
  int fd = Connect();
  std::string pipeline;
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    pipeline += "SET session:" + std::to_string(i) + " value\r\n";
    expected += "+OK\r\n";
  }
  Send(fd, pipeline);
  ASSERT_TRUE(WaitFor([&] { return (*store)->Stats().writes == 200; }));
  {
    std::lock_guard<std::mutex> lock(state->mu);
    state->hold_commits = false;
  }
  state->cv.notify_all();
  EXPECT_EQ(Read(fd, expected.size()), expected);
  std::lock_guard<std::mutex> lock(state->mu);
  EXPECT_EQ(state->log.size(), 200U);
  EXPECT_LE(state->batch_sizes.size(), 8U);  // per writer: the held batch, then the rest
  ::close(fd);
  server_.reset();
  EXPECT_TRUE((*store)->Close(std::chrono::seconds(5)).ok());
}

// The store orders one key's commands; a command over the whole keyspace waits for every
// earlier command of its connection to answer, so a pipelined FLUSHALL or SCAN never takes
// effect before the writes sent ahead of it.
TEST_F(ServerTest, AWholeKeyspaceCommandWaitsForTheCommandsPipelinedBeforeIt) {
  HeldStore store;
  options_.allow_flush = true;
  Start(store);
  int fd = Connect();
  Send(fd, "SET a 1\r\nFLUSHALL\r\nSET b 2\r\nSCAN 0\r\n");
  ASSERT_TRUE(WaitFor([&] { return store.held_sets() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(store.whole_keyspace_calls(), 0) << "FLUSHALL ran before the SET sent ahead of it";
  EXPECT_EQ(store.held_sets(), 1u) << "a command after the held FLUSHALL ran before it";
  store.ReleaseSets();
  ASSERT_TRUE(WaitFor([&] { return store.held_sets() == 1; }));  // SET b, after FLUSHALL
  EXPECT_EQ(store.whole_keyspace_calls(), 1);
  store.ReleaseSets();
  std::string expected = "+OK\r\n+OK\r\n+OK\r\n*2\r\n$1\r\n0\r\n*0\r\n";
  EXPECT_EQ(Read(fd, expected.size()), expected);
  EXPECT_EQ(store.whole_keyspace_calls(), 2);
  ::close(fd);
}

TEST_F(ServerTest, ShutdownDrainsRequestsInFlight) {
  HeldStore store;
  Start(store);
  int fd = Connect();
  Send(fd, "GET a\r\n");
  ASSERT_TRUE(WaitFor([&] { return store.held_gets() == 1; }));
  std::thread stopper([&] { server_->Shutdown(std::chrono::seconds(5)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  store.ReleaseGetsInReverse();
  stopper.join();
  EXPECT_EQ(Read(fd, 100), "$1\r\na\r\n<eof>");
  EXPECT_FALSE(std::filesystem::exists(options_.unix_path));
  ::close(fd);
}

TEST_F(ServerTest, ProtocolErrorRepliesThenCloses) {
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  int fd = Connect();
  Send(fd, "PING\r\n*1\r\n$abc\r\n");
  EXPECT_EQ(Read(fd, 1000), "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n<eof>");
  ::close(fd);
  EXPECT_EQ(server_->Stats().protocol_errors, 1U);
}

// The server reads once per readiness event when a read comes back short; what the client
// sends later, its end of input included, arrives with the next event.
TEST_F(ServerTest, AClientThatStopsSendingGetsEveryReplyThenTheClose) {
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  int fd = Connect();
  Send(fd, "SET a 1\r\nGET a\r\n");
  ASSERT_EQ(::shutdown(fd, SHUT_WR), 0);
  EXPECT_EQ(Read(fd, 1000), "+OK\r\n$1\r\n1\r\n<eof>");
  ::close(fd);
}

TEST_F(ServerTest, APipelineLongerThanOneReadIsAnsweredWhole) {
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  int fd = Connect();
  std::string pipeline, expected;
  for (int i = 0; i < 1000; ++i) {  // about 130 KB: more than one 64 KB read
    pipeline += "SET k" + std::to_string(i) + " " + std::string(100, 'v') + "\r\n";
    expected += "+OK\r\n";
  }
  Send(fd, pipeline + "GET k999\r\n");
  expected += "$100\r\n" + std::string(100, 'v') + "\r\n";
  EXPECT_EQ(Read(fd, expected.size()), expected);
  ::close(fd);
}

TEST_F(ServerTest, OversizedValueRefusedAtItsHeader) {
  options_.max_bulk_bytes = 1024;
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  int fd = Connect();
  Send(fd, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1025\r\n");  // the value itself is never sent
  EXPECT_EQ(Read(fd, 1000), "-ERR Protocol error: invalid bulk length\r\n<eof>");
  ::close(fd);
}

TEST_F(ServerTest, MaxClientsRefusesTheExtraConnection) {
  options_.max_clients = 1;
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  int first = Connect();
  Send(first, "PING\r\n");
  EXPECT_EQ(Read(first, 7), "+PONG\r\n");
  int second = Connect();
  EXPECT_EQ(Read(second, 1000), "-ERR max number of clients reached\r\n<eof>");
  EXPECT_EQ(server_->Stats().rejected_connections, 1U);
  ::close(second);
  ::close(first);
}

// ---- reply memory: what a client that does not read its replies can make the server hold ----

std::string Repeat(const std::string& command, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += command;
  return out;
}

std::string BulkOf(const std::string& value) {
  return "$" + std::to_string(value.size()) + "\r\n" + value + "\r\n";
}

// 64 pipelined GETs of a 256 KiB value are 16 MiB of replies, four times the output limit:
// the connection is no longer read while it holds more than the soft limit, so the replies are
// built as the client takes them and a client that reads late still gets every one.
TEST_F(ServerTest, PipelinedGetsOfALargeValueWaitForTheClientToRead) {
  options_.max_output_buffer = 4 << 20;
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  const std::string value(256 << 10, 'v');
  int fd = Connect();
  Send(fd, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n" + BulkOf(value));
  ASSERT_EQ(Read(fd, 5), "+OK\r\n");
  Send(fd, Repeat("GET k\r\n", 64));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the client reads nothing
  std::string expected = Repeat(BulkOf(value), 64);
  std::string got = Read(fd, expected.size());
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected) << "the replies differ; the end: "
                               << got.substr(got.size() > 20 ? got.size() - 20 : 0);
  ::close(fd);
}

// A GET whose value alone exceeds max_output_buffer is refused with an error; the value stays
// and the connection goes on.
TEST_F(ServerTest, AGetLargerThanTheOutputLimitIsRefusedWithAnError) {
  options_.max_output_buffer = 1 << 20;
  options_.max_bulk_bytes = 2 << 20;
  MemoryTierOptions memory;
  memory.max_value_bytes = 2 << 20;
  auto store = NewMemoryStore(memory, clock_);
  Start(*store);
  const std::string value((1 << 20) + 1, 'v');
  int fd = Connect();
  Send(fd, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n" + BulkOf(value));
  ASSERT_EQ(Read(fd, 5), "+OK\r\n");
  Send(fd, "GET k\r\nEXISTS k\r\n");
  const std::string error =
      "-ERR the reply would exceed the output buffer limit (resp.max_output_buffer = 1048576 "
      "bytes)\r\n";
  EXPECT_EQ(Read(fd, error.size() + 4), error + ":1\r\n");
  ::close(fd);
}

// An MGET whose reply alone exceeds max_output_buffer is refused with an error as its values
// arrive; the values gathered so far are dropped and the connection goes on.
TEST_F(ServerTest, AnMgetLargerThanTheOutputLimitIsRefusedWithAnError) {
  options_.max_output_buffer = 4 << 20;
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  const std::string value(256 << 10, 'v');
  int fd = Connect();
  Send(fd, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n" + BulkOf(value));
  ASSERT_EQ(Read(fd, 5), "+OK\r\n");
  Send(fd, "MGET" + Repeat(" k", 32) + "\r\nPING\r\n");  // 8 MiB
  const std::string error =
      "-ERR the reply would exceed the output buffer limit (resp.max_output_buffer = 4194304 "
      "bytes); ask for fewer keys at a time\r\n";
  EXPECT_EQ(Read(fd, error.size() + 7), error + "+PONG\r\n");
  ::close(fd);
}

// So is an EXEC whose replies together exceed it: nothing of it is sent but the error.
TEST_F(ServerTest, AnExecLargerThanTheOutputLimitIsRefusedWithAnError) {
  options_.max_output_buffer = 4 << 20;
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  const std::string value(256 << 10, 'v');
  int fd = Connect();
  Send(fd, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n" + BulkOf(value));
  ASSERT_EQ(Read(fd, 5), "+OK\r\n");
  std::string queued;
  for (int i = 0; i < 32; ++i) queued += "+QUEUED\r\n";
  Send(fd, "MULTI" + std::string("\r\n") + Repeat("GET k\r\n", 32) + "EXEC\r\nPING\r\n");
  const std::string error =
      "-ERR the reply would exceed the output buffer limit (resp.max_output_buffer = 4194304 "
      "bytes); split the transaction\r\n";
  EXPECT_EQ(Read(fd, 5 + queued.size() + error.size() + 7),
            "+OK\r\n" + queued + error + "+PONG\r\n");
  ::close(fd);
}

// Collects the process's log lines while it lives. Create it before the server starts and
// destroy it after the server stopped: the logger's sink list is not thread-safe to change.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(512)) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  int Count(const std::string& text) const {
    auto lines = sink_->last_formatted();
    return static_cast<int>(std::count_if(lines.begin(), lines.end(), [&](const std::string& l) {
      return l.find(text) != std::string::npos;
    }));
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

// Replies completed on a store thread are claimed before they are built: the first one that
// would pass max_output_buffer closes the client (which reads nothing), the cause is logged
// and every byte held for it is released.
TEST_F(ServerTest, StoreRepliesPastTheOutputLimitCloseTheClient) {
  LogCapture log;
  options_.max_output_buffer = 4 << 20;
  HeldStore store;
  Start(store);
  int fd = Connect();
  Send(fd, Repeat("GET k\r\n", 8));
  ASSERT_TRUE(WaitFor([&] { return store.held_gets() == 8; }));
  store.ReleaseGetsWith(std::string(1 << 20, 'v'));  // 8 MiB of replies
  std::string got = Read(fd, 64 << 20);
  ASSERT_GE(got.size(), 5U);
  EXPECT_EQ(got.substr(got.size() - 5), "<eof>");
  EXPECT_LT(got.size(), 4U << 20);
  ASSERT_TRUE(WaitFor([&] { return server_->Stats().reply_bytes == 0; }))
      << server_->Stats().reply_bytes << " reply bytes still counted";
  EXPECT_EQ(server_->Stats().reply_limit_disconnects, 1U);
  int other = Connect();
  Send(other, "PING\r\n");
  EXPECT_EQ(Read(other, 7), "+PONG\r\n");
  ::close(other);
  ::close(fd);
  server_.reset();
  EXPECT_EQ(log.Count("output buffer limit (resp.max_output_buffer = 4194304 bytes) reached: "
                      "the client does not read its replies"),
            1);
}

// All clients together may hold max_reply_memory: the client whose reply would pass it is
// closed; the one holding replies it will read is not, and gets every byte.
TEST_F(ServerTest, TheServerWideReplyLimitClosesTheClientThatWouldPassIt) {
  LogCapture log;
  options_.max_output_buffer = 8 << 20;
  options_.max_reply_memory = 8 << 20;
  HeldStore store;
  Start(store);
  const std::string value(1 << 20, 'v');
  int first = Connect();
  Send(first, Repeat("GET k\r\n", 5));
  ASSERT_TRUE(WaitFor([&] { return store.held_gets() == 5; }));
  store.ReleaseGetsWith(value);  // ~5 MiB held for `first`, less what its socket took
  ASSERT_TRUE(WaitFor([&] { return server_->Stats().reply_bytes > (4U << 20); }));
  int second = Connect();
  Send(second, Repeat("GET k\r\n", 5));
  ASSERT_TRUE(WaitFor([&] { return store.held_gets() == 5; }));
  store.ReleaseGetsWith(value);
  std::string got = Read(second, 64 << 20);
  EXPECT_EQ(got.substr(got.size() - 5), "<eof>");
  EXPECT_LT(got.size(), 5U << 20);
  EXPECT_EQ(Read(first, 5 * BulkOf(value).size()), Repeat(BulkOf(value), 5));
  EXPECT_EQ(server_->Stats().reply_limit_disconnects, 1U);
  ::close(first);
  ::close(second);
  server_.reset();
  EXPECT_EQ(log.Count("reply memory limit (resp.max_reply_memory = 8388608 bytes) reached"), 1);
}

// True when `fd` has bytes to read (or EOF) within `ms` of real time.
bool Readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

TEST(AuthFailureDelayTest, DoublesFrom100msUpTo5s) {
  using std::chrono::milliseconds;
  EXPECT_EQ(resp::AuthFailureDelay(1), milliseconds(100));
  EXPECT_EQ(resp::AuthFailureDelay(2), milliseconds(200));
  EXPECT_EQ(resp::AuthFailureDelay(6), milliseconds(3200));
  EXPECT_EQ(resp::AuthFailureDelay(7), milliseconds(5000));
  EXPECT_EQ(resp::AuthFailureDelay(4000000000U), milliseconds(5000));
}

const std::string kWrongPass = "-WRONGPASS invalid username-password pair or user is disabled.\r\n";

// A cached GET's reply is built straight into the output only when every earlier reply has
// gone there: in a pipeline, and behind a failed AUTH's delayed error, replies keep request order.
TEST_F(ServerTest, CachedGetRepliesKeepRequestOrder) {
  options_.requirepass = "right-password";
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  int fd = Connect();
  Send(fd, "AUTH right-password\r\nSET k v\r\nGET k\r\nGET missing\r\nPING\r\nGET k\r\n");
  const std::string value = "$1\r\nv\r\n";
  const std::string first = "+OK\r\n+OK\r\n" + value + "$-1\r\n+PONG\r\n" + value;
  EXPECT_EQ(Read(fd, first.size()), first);
  Send(fd, "AUTH wrong\r\nGET k\r\nGET k\r\n");  // a failed AUTH leaves the client signed in
  ASSERT_TRUE(WaitFor([&] { return AuthFailures() == 1; }));
  EXPECT_FALSE(Readable(fd, 300)) << "a GET was answered before the delayed AUTH error";
  clock_.Advance(std::chrono::milliseconds(100));
  EXPECT_EQ(Read(fd, kWrongPass.size() + 2 * value.size()), kWrongPass + value + value);
  ::close(fd);
}

// A failed AUTH holds that connection (its reply and its later requests) on a timer of the
// server's clock; other clients are served meanwhile; failures are counted.
TEST_F(ServerTest, FailedAuthIsCountedAndSlowedWithoutBlockingOthers) {
  options_.requirepass = "right-password";
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  int guesser = Connect();
  Send(guesser, "AUTH wrong-1\r\nPING\r\n");
  ASSERT_TRUE(WaitFor([&] { return AuthFailures() == 1; }));
  EXPECT_FALSE(Readable(guesser, 300)) << "the failed AUTH was answered without a delay";
  int other = Connect();
  Send(other, "PING\r\n");
  EXPECT_EQ(Read(other, 32), "-NOAUTH Authentication required.\r\n");
  const std::string noauth = "-NOAUTH Authentication required.\r\n";
  clock_.Advance(std::chrono::milliseconds(100));
  EXPECT_EQ(Read(guesser, kWrongPass.size() + noauth.size()), kWrongPass + noauth);

  Send(guesser, "AUTH wrong-2\r\n");  // the second failure waits 200 ms
  ASSERT_TRUE(WaitFor([&] { return AuthFailures() == 2; }));
  clock_.Advance(std::chrono::milliseconds(100));
  EXPECT_FALSE(Readable(guesser, 300));
  clock_.Advance(std::chrono::milliseconds(100));
  EXPECT_EQ(Read(guesser, kWrongPass.size()), kWrongPass);

  Send(guesser, "AUTH right-password\r\nPING\r\n");  // success is never delayed
  EXPECT_EQ(Read(guesser, 12), "+OK\r\n+PONG\r\n");
  EXPECT_EQ(AuthFailures(), 2);
  ::close(other);
  ::close(guesser);
}

// The first failed AUTH of a connection is logged with the client's address (Redis's "ip:port"
// of CLIENT LIST), never with the password.
TEST_F(ServerTest, AFailedAuthIsLoggedWithThePeersAddress) {
  LogCapture log;
  options_.requirepass = "right-password";
  options_.tcp_enabled = true;
  options_.tcp_port = 0;
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  int fd = ConnectTcp();
  sockaddr_in local{};
  socklen_t local_len = sizeof local;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len), 0);
  Send(fd, "AUTH guessed-password\r\n");
  ASSERT_TRUE(WaitFor([&] { return AuthFailures() == 1; }));
  clock_.Advance(std::chrono::milliseconds(100));
  EXPECT_EQ(Read(fd, kWrongPass.size()), kWrongPass);
  ::close(fd);
  server_.reset();
  std::string peer = "127.0.0.1:" + std::to_string(ntohs(local.sin_port));
  EXPECT_EQ(log.Count(" addr=" + peer + ": AUTH failed (wrong password)"), 1);
  EXPECT_EQ(log.Count("guessed-password"), 0);
}

// Each command's time from dispatch to reply, on the server's clock, lands in its bucket of
// that command's histogram: a GET the store held 3 ms, a PING answered at once.
TEST_F(ServerTest, EachCommandsLatencyIsInItsHistogram) {
  HeldStore store;
  Start(store);
  int fd = Connect();
  Send(fd, "PING\r\nGET k\r\n");
  EXPECT_EQ(Read(fd, 7), "+PONG\r\n");
  ASSERT_TRUE(WaitFor([&] { return store.held_gets() == 1; }));
  clock_.Advance(std::chrono::microseconds(3000));
  store.ReleaseGetsWith("v");
  EXPECT_EQ(Read(fd, 7), "$1\r\nv\r\n");
  ::close(fd);
  RespServerStats stats = server_->Stats();
  std::map<std::string, HistogramSnapshot> by_name(stats.command_seconds.begin(),
                                                   stats.command_seconds.end());
  ASSERT_EQ(by_name.count("get"), 1u);
  ASSERT_EQ(by_name.count("ping"), 1u);
  const HistogramSnapshot& get = by_name["get"];
  ASSERT_EQ(get.bounds.size(), resp::CommandStats::kLatencyBoundsUsec.size());
  ASSERT_EQ(get.counts.size(), get.bounds.size() + 1);
  EXPECT_EQ(get.count, 1u);
  EXPECT_DOUBLE_EQ(get.sum, 0.003);
  for (size_t b = 0; b < get.counts.size(); ++b) {
    // 3 ms: above the 2.5 ms bound, within the 5 ms one.
    bool in = b < get.bounds.size() && get.bounds[b] == 0.005;
    EXPECT_EQ(get.counts[b], in ? 1u : 0u) << "bucket " << b;
  }
  EXPECT_EQ(by_name["ping"].counts[0], 1u);
  EXPECT_EQ(by_name["ping"].count, 1u);
}

TEST(CommandStatsTest, BucketBoundsAreInclusive) {
  using resp::CommandStats;
  EXPECT_EQ(CommandStats::BucketOf(0), 0u);
  EXPECT_EQ(CommandStats::BucketOf(50), 0u);
  EXPECT_EQ(CommandStats::BucketOf(51), 1u);
  EXPECT_EQ(CommandStats::BucketOf(5'000'000), CommandStats::kBuckets - 2);
  EXPECT_EQ(CommandStats::BucketOf(5'000'001), CommandStats::kBuckets - 1);
  CommandStats stats;
  stats.AddUsec(3, 120);
  stats.AddUsec(3, 9'000'000);
  HistogramSnapshot h = stats.Latency(3);
  EXPECT_EQ(h.count, 2u);
  EXPECT_EQ(h.counts[2], 1u);
  EXPECT_EQ(h.counts.back(), 1u);
  EXPECT_DOUBLE_EQ(h.sum, 9.00012);
  EXPECT_EQ(stats.Latency(4).count, 0u);
}

TEST_F(ServerTest, IdleClientsAreClosed) {
  options_.idle_timeout = std::chrono::milliseconds(1000);
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  int fd = Connect();
  Send(fd, "PING\r\n");
  EXPECT_EQ(Read(fd, 7), "+PONG\r\n");
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_EQ(Read(fd, 100), "<eof>");
  ::close(fd);
}

TEST_F(ServerTest, SocketModeAndStaleFile) {
  // A socket file nobody listens on is stale and replaced.
  int stale = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", options_.unix_path.c_str());
  ASSERT_EQ(::bind(stale, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ::close(stale);
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  struct stat st {};
  ASSERT_EQ(::stat(options_.unix_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660U);
  // A live server's socket is not taken over.
  auto second = NewRespServer(options_, *store, clock_);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("already listening"), std::string::npos);
}

TEST_F(ServerTest, SocketGroup) {
  struct group* own = ::getgrgid(::getegid());
  ASSERT_NE(own, nullptr);
  options_.unix_group = own->gr_name;
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  struct stat st {};
  ASSERT_EQ(::stat(options_.unix_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, ::getegid());
  server_.reset();
  options_.unix_group = "no-such-group-skydb";
  auto made = NewRespServer(options_, *store, clock_);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message.find("does not exist"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(options_.unix_path));  // nothing left behind
}

TEST_F(ServerTest, RefusesAPathThatIsNotASocket) {
  std::FILE* file = std::fopen(options_.unix_path.c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fclose(file);
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  auto made = NewRespServer(options_, *store, clock_);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message.find("is not a socket"), std::string::npos);
}

TEST_F(ServerTest, TcpOnLoopback) {
  options_.tcp_enabled = true;
  options_.tcp_port = 0;
  options_.threads = 2;
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  ASSERT_GT(server_->tcp_port(), 0);
  int fd = ConnectTcp();
  Send(fd, "SET a b\r\nGET a\r\n");
  EXPECT_EQ(Read(fd, 12), "+OK\r\n$1\r\nb\r\n");
  ::close(fd);
}

// A message is never written inside or ahead of an earlier reply: it waits behind a GET still
// at the store, and the subscribe confirmation (in its request's slot) comes first.
TEST_F(ServerTest, PubSubMessagesFollowEarlierRepliesAndTheConfirmation) {
  HeldStore store;
  Start(store);
  int subscriber = Connect();
  Send(subscriber, "HELLO 3\r\n");
  ASSERT_EQ(Read(subscriber, 1).substr(0, 2), "%7");
  int publisher = Connect();
  Send(subscriber, "GET k\r\nSUBSCRIBE ch\r\n");
  ASSERT_TRUE(WaitFor([&] { return store.held_gets() == 1; }));
  const std::string numsub = "*2\r\n$2\r\nch\r\n:1\r\n";
  ASSERT_TRUE(WaitFor([&] {
    Send(publisher, "PUBSUB NUMSUB ch\r\n");
    return Read(publisher, numsub.size()) == numsub;
  }));
  Send(publisher, "PUBLISH ch hello\r\n");
  EXPECT_EQ(Read(publisher, 4), ":1\r\n");
  store.ReleaseGetsWith("v");
  std::string expected = "$1\r\nv\r\n>3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n" +
                         std::string(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n");
  EXPECT_EQ(Read(subscriber, expected.size()), expected);
  ::close(subscriber);
  ASSERT_TRUE(WaitFor([&] {  // a closed subscriber leaves the hub
    Send(publisher, "PUBLISH ch x\r\n");
    return Read(publisher, 4) == ":0\r\n";
  }));
  ::close(publisher);
}

// A PUBLISH encodes its message once for every subscriber: a RESP3 subscriber gets it as a
// push without changing what a RESP2 subscriber of the same channel gets, in either order.
TEST_F(ServerTest, OneMessageReachesRespTwoAndRespThreeSubscribersInTheirOwnFrames) {
  auto store = NewMemoryStore(MemoryTierOptions{}, clock_);
  Start(*store);
  const std::string confirmation = "3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n";
  std::vector<std::pair<int, char>> subscribers;  // fd, the frame's first byte
  for (int i = 0; i < 8; ++i) {
    int fd = Connect();
    const char kind = i % 2 == 0 ? '>' : '*';
    if (kind == '>') {
      Send(fd, "HELLO 3\r\n");
      ASSERT_EQ(Read(fd, 1).substr(0, 2), "%7");
    }
    Send(fd, "SUBSCRIBE ch\r\n");
    ASSERT_EQ(Read(fd, confirmation.size() + 1), kind + confirmation);
    subscribers.emplace_back(fd, kind);
  }
  int publisher = Connect();
  Send(publisher, "PUBLISH ch hello\r\nPUBLISH ch again\r\n");
  EXPECT_EQ(Read(publisher, 8), ":8\r\n:8\r\n");
  const std::string hello = "3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n";
  const std::string again = "3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nagain\r\n";
  for (auto [fd, kind] : subscribers) {
    EXPECT_EQ(Read(fd, 2 * (hello.size() + 1)), kind + hello + kind + again);
    ::close(fd);
  }
  ::close(publisher);
}

// A subscriber that does not read is closed at its output limit, the reason logged with its id;
// the publisher's replies keep coming meanwhile (PUBLISH never waits for a subscriber).
TEST_F(ServerTest, ASlowSubscriberIsClosedWithoutSlowingThePublisher) {
  LogCapture log;
  options_.max_output_buffer = 1 << 20;
  options_.threads = 2;  // subscriber and publisher on different loops
  HeldStore store;
  Start(store);
  int slow = Connect();
  int small = 4096;
  ::setsockopt(slow, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  Send(slow, "SUBSCRIBE ch\r\n");
  std::string confirmation = "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n";
  ASSERT_EQ(Read(slow, confirmation.size()), confirmation);
  int publisher = Connect();
  const std::string publish = "PUBLISH ch " + std::string(16 << 10, 'm') + "\r\n";
  auto started = std::chrono::steady_clock::now();
  std::string replies;
  for (int i = 0; i < 256; ++i) {  // 4 MiB of messages for a client that reads nothing
    Send(publisher, publish);
    replies += Read(publisher, 4);
  }
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_EQ(replies.substr(0, 4), ":1\r\n");
  // Closed: no longer a receiver. The close runs on the subscriber's loop, which a loaded
  // machine (TSan, ctest -j2) may not have scheduled by the publisher's last round trip.
  EXPECT_TRUE(WaitFor([&] {
    Send(publisher, "PUBLISH ch x\r\n");
    return Read(publisher, 4) == ":0\r\n";
  }));
  EXPECT_EQ(server_->Stats().reply_limit_disconnects, 1U);
  std::string got = Read(slow, 64 << 20);
  EXPECT_EQ(got.substr(got.size() - 5), "<eof>");
  ::close(slow);
  ::close(publisher);
  server_.reset();
  EXPECT_EQ(log.Count("output buffer limit (resp.max_output_buffer = 1048576 bytes) reached"), 1);
}

// CLIENT LIST sees the connections of every loop; KILL closes another loop's client; the old
// form may kill the caller, which gets its +OK first.
TEST_F(ServerTest, ClientListAndKillReachEveryLoop) {
  options_.threads = 2;
  Start(*store_for_client_tests_);
  int a = Connect(), b = Connect(), c = Connect();
  Send(b, "CLIENT ID\r\nSUBSCRIBE news\r\n");
  std::string b_id = Read(b, 4 + 33).substr(1, 1);  // ":N\r\n" and the confirmation
  Send(a, "CLIENT LIST\r\n");
  std::string list = ReadBulk(a);
  EXPECT_EQ(std::count(list.begin(), list.end(), '\n'), 3) << list;
  EXPECT_NE(list.find("addr=" + options_.unix_path + ":0 laddr=" + options_.unix_path + ":0"),
            std::string::npos);
  EXPECT_NE(list.find("id=" + b_id + " "), std::string::npos);
  EXPECT_NE(list.find("cmd=client|list"), std::string::npos);
  Send(a, "CLIENT LIST TYPE pubsub\r\n");
  std::string pubsub = ReadBulk(a);
  EXPECT_EQ(std::count(pubsub.begin(), pubsub.end(), '\n'), 1) << pubsub;
  EXPECT_NE(pubsub.find("id=" + b_id + " "), std::string::npos);
  EXPECT_NE(pubsub.find("flags=PU db=0 sub=1 psub=0"), std::string::npos);
  Send(a, "CLIENT KILL ID " + b_id + "\r\n");
  EXPECT_EQ(Read(a, 4), ":1\r\n");
  EXPECT_EQ(Read(b, 1), "<eof>");
  Send(a, "CLIENT KILL " + options_.unix_path + ":0\r\n");  // a and c
  EXPECT_EQ(Read(a, 100), "+OK\r\n<eof>");
  EXPECT_EQ(Read(c, 1), "<eof>");
  ::close(a);
  ::close(b);
  ::close(c);
}

TEST(RespOptions, Validation) {
  RespServerOptions o;
  EXPECT_FALSE(ValidateRespOptions(o).ok());  // nothing to listen on
  o.unix_path = "/tmp/x.sock";
  EXPECT_TRUE(ValidateRespOptions(o).ok());
  o.tcp_enabled = true;
  o.tcp_host = "0.0.0.0";
  Status remote = ValidateRespOptions(o);
  ASSERT_FALSE(remote.ok());
  EXPECT_NE(remote.error().message.find("allow_remote"), std::string::npos);
  o.allow_remote = true;
  Status no_password = ValidateRespOptions(o);
  ASSERT_FALSE(no_password.ok());
  EXPECT_NE(no_password.error().message.find("requires requirepass"), std::string::npos);
  o.requirepass = "pw";
  EXPECT_TRUE(ValidateRespOptions(o).ok());
  o.max_query_buffer = o.max_bulk_bytes;
  EXPECT_FALSE(ValidateRespOptions(o).ok());
  o.max_query_buffer = RespServerOptions{}.max_query_buffer;
  o.max_reply_memory = o.max_output_buffer - 1;
  Status reply_memory = ValidateRespOptions(o);
  ASSERT_FALSE(reply_memory.ok());
  EXPECT_NE(reply_memory.error().message.find("max_reply_memory must be at least"),
            std::string::npos);
}

}  // namespace
}  // namespace skydb
