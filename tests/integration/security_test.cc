// Bad input and security against real daemons (docs/security.md): oversized input gets
// its documented error; every byte value round-trips through PostgreSQL and a restart; 10,000
// clients are held and the one over the limit is told why; trickling (slowloris) clients do not
// slow others; clients that do not read their replies cannot exhaust the daemon's memory; nothing
// listens on TCP unless configured; sockets and directories have their documented modes; a
// world-writable DIR is refused; the password appears nowhere; failed AUTHs are counted and slowed.
// Run as root (the cluster runs as SKYDB_TEST_USER).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "cli_support.h"
#include "resp_client.h"
#include "skydb/env.h"
#include "skydb/status_file.h"
#include "supervisor_support.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

// ---- raw sockets ----------------------------------------------------------------------------

// A connected, blocking unix socket with 10 s send/receive timeouts; -1 on failure.
int ConnectUnix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads until `want` bytes, EOF ("<eof>" appended) or the socket's timeout.
std::string ReadUpTo(int fd, size_t want) {
  std::string out;
  char buffer[65536];
  while (out.size() < want) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n == 0) return out + "<eof>";
    if (n < 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

// One "$<n>\r\n<n bytes>\r\n" reply (INFO's), or what arrived before the timeout.
std::string ReadBulk(int fd) {
  std::string head;
  char c = 0;
  while (head.size() < 32 && ::recv(fd, &c, 1, 0) == 1 && c != '\n') head.push_back(c);
  if (head.empty() || head[0] != '$') return head;
  return ReadUpTo(fd, std::strtoull(head.c_str() + 1, nullptr, 10) + 2);
}

// One request on a fresh connection; the whole answer up to EOF or `want` bytes.
std::string Exchange(const std::string& socket, const std::string& request, size_t want = 4096) {
  int fd = ConnectUnix(socket);
  if (fd < 0) return "<connect failed>";
  std::string reply = SendAll(fd, request) ? ReadUpTo(fd, want) : "<send failed>";
  ::close(fd);
  return reply;
}

std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

std::string Command(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) out += Bulk(a);
  return out;
}

// ---- /proc ----------------------------------------------------------------------------------

// Inodes of TCP sockets in LISTEN state (IPv4 and IPv6) in this network namespace.
std::set<std::string> TcpListenInodes() {
  std::set<std::string> inodes;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (state == "0A") inodes.insert(inode);
    }
  }
  return inodes;
}

// How many of `pid`'s descriptors are TCP listening sockets.
int TcpListenersOf(pid_t pid) {
  std::set<std::string> listening = TcpListenInodes();
  int count = 0;
  std::error_code ec;
  for (const auto& fd :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code link_ec;
    std::string target = std::filesystem::read_symlink(fd.path(), link_ec).string();
    if (link_ec || target.rfind("socket:[", 0) != 0) continue;
    std::string inode = target.substr(8, target.size() - 9);
    if (listening.count(inode) > 0) ++count;
  }
  return count;
}

uint32_t ModeOf(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0xFFFFFFFF;
  return st.st_mode & 07777;
}

std::string InfoField(const std::string& info, const std::string& field) {
  size_t at = info.find(field + ":");
  if (at == std::string::npos) return "<missing " + field + ">";
  size_t start = at + field.size() + 1;
  return info.substr(start, info.find('\r', start) - start);
}

bool RootWithTestUser() { return ::geteuid() == 0 && LookupUser(TestUser()).ok(); }

// ---- a memory-store daemon: no PostgreSQL, for the connection-level tests --------------------

std::unique_ptr<DaemonProcess> StartMemory(const std::string& dir,
                                           const std::vector<std::string>& sets = {}) {
  std::vector<std::string> args;
  for (const auto& set : sets) {
    args.push_back("--set");
    args.push_back(set);
  }
  for (const char* a : {"serve", "--store", "memory", "--data-dir"}) args.push_back(a);
  args.push_back(dir);
  return std::make_unique<DaemonProcess>(AsServiceUser(args));
}

class MemoryDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = root_.Dir("m"); }
  void Start(const std::vector<std::string>& sets = {}) {
    daemon_ = StartMemory(dir_, sets);
    ASSERT_TRUE(WaitForPong(StoreSocket(dir_), seconds(30))) << daemon_->Log();
  }
  TestRoot root_;
  std::string dir_;
  std::unique_ptr<DaemonProcess> daemon_;
};

// Descriptors are per process: the test lowers its own soft limit before starting the daemon
// (which inherits it) to prove the daemon raises its own, then raises it back to hold 10,001.
TEST_F(MemoryDaemonTest, TenThousandClientsHeldAndTheNextOneToldWhy) {
  constexpr int kClients = 10000;
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max < kClients + 200) GTEST_SKIP() << "hard RLIMIT_NOFILE " << saved.rlim_max;
  rlimit low = saved;
  low.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  daemon_ = StartMemory(dir_, {"resp.max_clients=" + std::to_string(kClients)});
  rlimit high = saved;
  high.rlim_cur = saved.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &high), 0);
  std::string socket = StoreSocket(dir_);
  ASSERT_TRUE(WaitForPong(socket, seconds(30))) << daemon_->Log();
  EXPECT_TRUE(daemon_->WaitLogContains("open-file limit raised from 1024 to", seconds(5)))
      << daemon_->Log();

  std::vector<int> fds;
  fds.reserve(kClients);
  for (int i = 0; i < kClients; ++i) {
    int fd = ConnectUnix(socket);
    ASSERT_GE(fd, 0) << "connection " << i << ": " << std::strerror(errno);
    fds.push_back(fd);
  }
  // Every one is served: all send PING, then every PONG is read.
  for (int fd : fds) ASSERT_TRUE(SendAll(fd, "PING\r\n"));
  int ponged = 0;
  for (int fd : fds) ponged += ReadUpTo(fd, 7) == "+PONG\r\n" ? 1 : 0;
  EXPECT_EQ(ponged, kClients);

  // The connection over the limit is told why at once and closed: a request sent after the
  // close fails (EPIPE), so this client only reads.
  int over_fd = ConnectUnix(socket);
  ASSERT_GE(over_fd, 0) << std::strerror(errno);
  std::string over = ReadUpTo(over_fd, 4096);
  ::close(over_fd);
  EXPECT_EQ(over, "-ERR max number of clients reached\r\n<eof>");
  ASSERT_TRUE(SendAll(fds[0], "INFO clients\r\nINFO stats\r\n"));
  std::string info = ReadBulk(fds[0]) + ReadBulk(fds[0]);
  EXPECT_EQ(InfoField(info, "connected_clients"), std::to_string(kClients)) << info;
  EXPECT_EQ(InfoField(info, "rejected_connections"), "1") << info;
  for (int fd : fds) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
}

// CPU seconds (user + system) `pid` has used, from /proc/PID/stat.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;  // state .. cmajflt (fields 3-13)
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// With a hard descriptor limit far below resp.max_clients, the clients the daemon cannot hold
// are told why and closed; it neither crashes nor spins on its listener, and serves the rest.
TEST_F(MemoryDaemonTest, OutOfDescriptorsRefusesWithAnErrorAndDoesNotSpin) {
  Start();
  std::string socket = StoreSocket(dir_);
  // Lowered from outside, after start-up raised it, by the service user the daemon now runs as
  // (root may lack CAP_SYS_RESOURCE over another user's process).
  CommandSpec lower;
  lower.argv = {"/usr/bin/prlimit", "--pid", std::to_string(daemon_->pid()), "--nofile=64:64"};
  auto service_user = LookupUser(TestUser());
  ASSERT_TRUE(service_user.ok());
  lower.run_as = *service_user;
  auto lowered = NewRealProcessRunner()->Run(lower);
  ASSERT_TRUE(lowered.ok() && lowered->exit_code == 0)
      << (lowered.ok() ? lowered->err : lowered.error().message);

  constexpr int kClients = 100;
  std::vector<int> fds;
  for (int i = 0; i < kClients; ++i) {
    int fd = ConnectUnix(socket);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
  }
  int served = 0, refused = 0;
  for (int fd : fds) {
    (void)SendAll(fd, "PING\r\n");
    std::string reply = ReadUpTo(fd, 7);
    if (reply == "+PONG\r\n") ++served;
    if (reply.rfind("-ERR max number of clients reached (the server is out of file descriptors)",
                    0) == 0) {
      ++refused;
    }
  }
  EXPECT_GE(served, 20);
  EXPECT_GE(refused, 1);
  EXPECT_EQ(served + refused, kClients);
  double before = CpuSeconds(daemon_->pid());
  std::this_thread::sleep_for(seconds(1));
  EXPECT_LT(CpuSeconds(daemon_->pid()) - before, 0.3) << "the loop spins";
  for (int fd : fds) ::close(fd);
  EXPECT_TRUE(WaitForPong(socket, seconds(10))) << "served again once descriptors are free";
  EXPECT_TRUE(daemon_->LogContains("resp: out of file descriptors")) << daemon_->Log();
}

// Hundreds of clients each holding a half-sent command and adding one byte now and then never
// delay a normal client: the loop never waits for anyone's bytes.
TEST_F(MemoryDaemonTest, TricklingClientsDoNotSlowOthers) {
  Start();
  std::string socket = StoreSocket(dir_);
  constexpr int kTricklers = 300;
  const std::string command = Command({"SET", "slow", std::string(200, 'v')});
  std::vector<int> tricklers;
  for (int i = 0; i < kTricklers; ++i) {
    int fd = ConnectUnix(socket);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, command.substr(0, 20)));
    tricklers.push_back(fd);
  }
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    for (size_t at = 20; at < command.size() && !stop; ++at) {
      for (int fd : tricklers) (void)SendAll(fd, command.substr(at, 1));
      std::this_thread::sleep_for(milliseconds(20));
    }
  });

  auto client = RespClient::Connect(socket, seconds(5));
  ASSERT_TRUE(client.ok());
  std::vector<double> latencies_ms;
  for (int i = 0; i < 300; ++i) {
    auto start = SteadyClock::now();
    auto set = client->Command({"SET", "fast" + std::to_string(i), "v"});
    ASSERT_TRUE(set.ok() && set->IsOk());
    auto get = client->Command({"GET", "fast" + std::to_string(i)});
    ASSERT_TRUE(get.ok() && get->text == "v");
    latencies_ms.push_back(
        std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count());
    std::this_thread::sleep_for(milliseconds(5));
  }
  stop = true;
  trickle.join();
  std::sort(latencies_ms.begin(), latencies_ms.end());
  double p50 = latencies_ms[latencies_ms.size() / 2];
  double worst = latencies_ms.back();
  RecordProperty("normal_client_p50_ms", std::to_string(p50));
  RecordProperty("normal_client_max_ms", std::to_string(worst));
  // Generous for a shared 2-core machine under ASan; a blocked loop takes seconds.
  EXPECT_LT(p50, 20.0);
  EXPECT_LT(worst, 250.0);
  // The tricklers are still connected, neither served early nor dropped.
  auto info = client->Command({"INFO", "clients"});
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(InfoField(info->text, "connected_clients"), std::to_string(kTricklers + 1));
  for (int fd : tricklers) ::close(fd);
}

// Oversized and malformed input gets the documented error, then the connection is closed.
TEST_F(MemoryDaemonTest, OversizedAndNestedInputGetsTheDocumentedErrors) {
  Start();
  std::string socket = StoreSocket(dir_);
  const std::string mib(1 << 20, 'x');
  EXPECT_EQ(Exchange(socket, Command({"SET", "big", mib}), 5), "+OK\r\n");  // the limit itself
  // A value one byte above store.max_value_bytes is refused at its header, before it is sent.
  EXPECT_EQ(Exchange(socket, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$1048577\r\n"),
            "-ERR Protocol error: invalid bulk length\r\n<eof>");
  EXPECT_EQ(Exchange(socket, Command({"SET", std::string(512, 'k'), "v"}), 5), "+OK\r\n");
  const std::string long_key = "-ERR key is 513 bytes; the limit is 512\r\n+PONG\r\n";
  EXPECT_EQ(
      Exchange(socket, Command({"SET", std::string(513, 'k'), "v"}) + "PING\r\n", long_key.size()),
      long_key);
  EXPECT_EQ(Exchange(socket, "*1048577\r\n"),
            "-ERR Protocol error: invalid multibulk length\r\n<eof>");
  EXPECT_EQ(Exchange(socket, "*2\r\n*1\r\n$4\r\nPING\r\n"),
            "-ERR Protocol error: expected '$', got '*'\r\n<eof>");
  EXPECT_EQ(Exchange(socket, std::string(70000, 'a')),
            "-ERR Protocol error: too big inline request\r\n<eof>");
  EXPECT_EQ(Exchange(socket, "*1\r\n$99999999999999999999999\r\n"),
            "-ERR Protocol error: invalid bulk length\r\n<eof>");
  // The daemon is unharmed.
  EXPECT_EQ(RedisCli(socket, {"GET", "big"}).size(), mib.size());
}

// A /proc/PID/status field in kB ("VmHWM"), or -1.
long StatusKb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

// Reads `count` replies that must each be Bulk(value), streaming (nothing kept); how many
// matched before a mismatch, EOF or the socket's timeout.
int ReadRepeatedBulk(int fd, const std::string& value, int count) {
  const std::string expected = Bulk(value);
  std::string pending;
  char buffer[1 << 16];
  int matched = 0;
  while (matched < count) {
    while (pending.size() >= expected.size()) {
      if (pending.compare(0, expected.size(), expected) != 0) return matched;
      pending.erase(0, expected.size());
      if (++matched == count) return matched;
    }
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return matched;
    pending.append(buffer, static_cast<size_t>(n));
  }
  return matched;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// Replies a client asks for but does not read are bounded (docs/security.md): under a 1.5 GB
// address-space limit, 1,024 pipelined GETs of a 1 MiB value (1 GiB of replies) and one MGET
// naming it 4,096 times (4 GiB) neither exhaust the daemon nor slow a third client. The GETs
// are answered as the client reads them; the MGET gets an error naming resp.max_output_buffer.
TEST_F(MemoryDaemonTest, ClientsThatDoNotReadTheirRepliesCannotExhaustMemory) {
  // The daemon under the limit must not be an ASan build (ASan reserves terabytes of address
  // space): tools/test.sh points SKYDB_TEST_UNSANITIZED_BINARY at the package's GCC build.
  const char* unsanitized = std::getenv("SKYDB_TEST_UNSANITIZED_BINARY");
  if (kAddressSanitizer && unsanitized == nullptr) {
    GTEST_SKIP() << "an ASan daemon reserves more address space than the limit; set "
                    "SKYDB_TEST_UNSANITIZED_BINARY to a build without it";
  }
  if (!std::filesystem::exists("/usr/bin/prlimit")) GTEST_SKIP() << "no /usr/bin/prlimit";
  std::vector<std::string> args = {"--as=1610612736", "--",
                                   unsanitized != nullptr ? unsanitized : SKYDB_BINARY};
  for (const std::string& arg : AsServiceUser({"serve", "--store", "memory", "--data-dir", dir_})) {
    args.push_back(arg);
  }
  daemon_ = std::make_unique<DaemonProcess>("/usr/bin/prlimit", args,
                                            std::map<std::string, std::optional<std::string>>{});
  std::string socket = StoreSocket(dir_);
  ASSERT_TRUE(WaitForPong(socket, seconds(30))) << daemon_->Log();
  const std::string mib(1 << 20, 'v');
  ASSERT_EQ(Exchange(socket, Command({"SET", "big", mib}), 5), "+OK\r\n");

  int reader_late = ConnectUnix(socket);
  ASSERT_GE(reader_late, 0);
  std::string gets;
  for (int i = 0; i < 1024; ++i) gets += Command({"GET", "big"});
  ASSERT_TRUE(SendAll(reader_late, gets));  // 22 KB asking for 1 GiB; nothing read yet

  std::vector<std::string> mget = {"MGET"};
  mget.resize(4097, "big");
  const std::string refused =
      "-ERR the reply would exceed the output buffer limit (resp.max_output_buffer = 67108864 "
      "bytes); ask for fewer keys at a time\r\n";
  EXPECT_EQ(Exchange(socket, Command(mget), refused.size()), refused);

  std::this_thread::sleep_for(milliseconds(500));
  ASSERT_FALSE(daemon_->WaitExit(milliseconds(0)).has_value()) << daemon_->Log();
  auto other = RespClient::Connect(socket, seconds(5));
  ASSERT_TRUE(other.ok());
  auto pong = other->Command({"PING"});
  EXPECT_TRUE(pong.ok() && pong->text == "PONG");
  auto value = other->Command({"GET", "big"});
  EXPECT_TRUE(value.ok() && value->text == mib);
  long peak_kb = StatusKb(daemon_->pid(), "VmHWM");
  RecordProperty("daemon_peak_rss_kb", std::to_string(peak_kb));
  EXPECT_LT(peak_kb, 256 * 1024) << "the daemon's peak resident memory";

  // The late reader loses nothing: every reply is built as it takes the previous ones.
  EXPECT_EQ(ReadRepeatedBulk(reader_late, mib, 1024), 1024);
  ::close(reader_late);
  EXPECT_TRUE(daemon_->LogContains("MGET of 4096 keys refused")) << daemon_->Log();
  EXPECT_TRUE(daemon_->LogContains("resp.max_output_buffer = 67108864 bytes")) << daemon_->Log();
  EXPECT_EQ(daemon_->StopCleanly(seconds(10)), "");
}

// Nothing listens on TCP by default; the control shows the check sees a configured listener.
TEST_F(MemoryDaemonTest, TcpListenerOnlyWhenConfigured) {
  Start();
  EXPECT_EQ(TcpListenersOf(daemon_->pid()), 0);
  daemon_.reset();
  Start({"resp.tcp_port=0", "resp.bind=127.0.0.1"});
  EXPECT_EQ(TcpListenersOf(daemon_->pid()), 0);
  daemon_.reset();
  Start({"resp.tcp_port=16391"});
  EXPECT_EQ(TcpListenersOf(daemon_->pid()), 1) << "the check must see a configured listener";
}

TEST_F(MemoryDaemonTest, RefusesADataDirWritableByOthers) {
  for (uint32_t mode : {0777u, 0770u, 0702u}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(dir_.c_str(), mode), 0);
    CliRun run = RunSkydb(AsServiceUser({"serve", "--store", "memory", "--data-dir", dir_}));
    EXPECT_EQ(run.exit_code, 1);
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", mode);
    EXPECT_NE(run.err.find(dir_ + " has mode " + octal +
                           ", writable by other users; fix it with: chmod 0700 " + dir_),
              std::string::npos)
        << run.err;
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/run")) << "nothing is created in a refused DIR";
    std::filesystem::remove_all(dir_);
  }
}

// A non-empty directory that is not a skydb data dir is refused and left as it was; DIR and
// DIR/run wider than 0700 are set to 0700 (they used to be accepted and left readable). The
// same code prepares DIR for --database-url.
TEST_F(MemoryDaemonTest, RefusesAForeignDirUntouchedAndTightensItsOwn) {
  ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  { std::ofstream(dir_ + "/app.db") << "rows"; }
  std::string before = Fingerprint(dir_);
  {
    auto refused = StartMemory(dir_);
    auto status = refused->WaitExit(seconds(10));
    ASSERT_TRUE(status.has_value()) << "a foreign DIR was served\n" << refused->Log();
    EXPECT_EQ(status->exit_code, 1);
    EXPECT_TRUE(refused->LogContains(dir_ + " is not empty and is not a skydb data directory "
                                            "(it holds app.db)"))
        << refused->Log();
  }
  EXPECT_EQ(Fingerprint(dir_), before);
  EXPECT_EQ(ModeOf(dir_), 0755u);

  std::filesystem::remove(dir_ + "/app.db");
  ASSERT_EQ(::mkdir((dir_ + "/run").c_str(), 0755), 0);
  ASSERT_EQ(::chmod((dir_ + "/run").c_str(), 0755), 0);
  Start();
  EXPECT_EQ(ModeOf(dir_), 0700u);
  EXPECT_EQ(ModeOf(dir_ + "/run"), 0700u);
  EXPECT_TRUE(daemon_->LogContains(dir_ + " had mode 0755; set it to 0700")) << daemon_->Log();
}

// ---- the embedded daemon: PostgreSQL behind the store -----------------------------------------

// The whole HTTP/1.0 response to GET `path` on 127.0.0.1:`port`, or "" if nothing answered.
std::string HttpGet(int port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buf[65536];
      ssize_t n;
      while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) response.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return response;
}

class EmbeddedSecurityTest : public ::testing::Test {
 protected:
  static constexpr const char* kPassword = "pw-Zq81xT4-never-shown";

  void SetUp() override {
    if (!RootWithTestUser()) GTEST_SKIP() << "needs root and user " << TestUser();
    dir_ = root_.Dir("d");
  }

  // The password comes from the environment, as a service would pass it (argv is world-readable
  // in /proc; the environment is not).
  std::unique_ptr<DaemonProcess> Serve(const std::vector<std::string>& sets = {}) {
    auto d = StartEmbedded(dir_, sets, {{"SKYDB_RESP_REQUIREPASS", kPassword}});
    EXPECT_TRUE(WaitDaemonReady(*d, dir_, seconds(90))) << d->Log();
    // The status file says ready when PostgreSQL is; the store socket follows shortly after.
    auto deadline = SteadyClock::now() + seconds(30);
    int fd = -1;
    while ((fd = ConnectUnix(StoreSocket(dir_))) < 0 && SteadyClock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(50));
    }
    EXPECT_GE(fd, 0) << "the store socket never accepted a connection\n" << d->Log();
    if (fd >= 0) ::close(fd);
    return d;
  }

  RespClient Client() {
    auto client = RespClient::Connect(StoreSocket(dir_), seconds(10));
    EXPECT_TRUE(client.ok());
    auto auth = client->Command({"AUTH", kPassword});
    EXPECT_TRUE(auth.ok() && auth->IsOk());
    return std::move(client).value();
  }

  TestRoot root_;
  std::string dir_;
};

TEST_F(EmbeddedSecurityTest, RefusesADataDirWritableByOthers) {
  ASSERT_EQ(::mkdir(dir_.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  auto d = StartEmbedded(dir_);
  auto status = d->WaitExit(seconds(60));
  ASSERT_TRUE(status.has_value()) << d->Log();
  EXPECT_EQ(status->exit_code, 1);
  EXPECT_TRUE(d->LogContains(dir_ +
                             " has mode 0777, writable by other users; fix it with: "
                             "chmod 0700 " +
                             dir_))
      << d->Log();
  EXPECT_TRUE(std::filesystem::is_empty(dir_)) << "nothing is created in a refused DIR";
  EXPECT_EQ(ModeOf(dir_), 0777u) << "skydb never changes a refused DIR";
}

// A directory of another user's (here nobody's) holding an app's database is refused, left with
// its owner, mode and contents (it used to be chowned to the cluster user and taken over); an
// empty DIR of mode 0755 becomes 0700, as documented, with run/ and runtime/.
TEST_F(EmbeddedSecurityTest, ForeignDirRefusedUntouchedAndOwnDirTightened) {
  auto nobody = LookupUser("nobody");
  if (!nobody.ok()) GTEST_SKIP() << "no user nobody";
  ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  { std::ofstream(dir_ + "/app.db") << "the app's rows"; }
  ASSERT_EQ(::chown((dir_ + "/app.db").c_str(), nobody->uid, nobody->gid), 0);
  ASSERT_EQ(::chown(dir_.c_str(), nobody->uid, nobody->gid), 0);
  std::string before = Fingerprint(dir_);
  auto refused = StartEmbedded(dir_);
  auto status = refused->WaitExit(seconds(60));
  ASSERT_TRUE(status.has_value()) << refused->Log();
  EXPECT_EQ(status->exit_code, 1);
  EXPECT_TRUE(refused->LogContains(
      "is not empty and is not a skydb data directory (it holds app.db); skydb will not take it "
      "over"))
      << refused->Log();
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, nobody->uid) << "a refused DIR is never chowned";
  EXPECT_EQ(ModeOf(dir_), 0755u);
  EXPECT_EQ(Fingerprint(dir_), before);

  dir_ = root_.Dir("own");
  ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  auto d = Serve();
  EXPECT_EQ(ModeOf(dir_), 0700u);
  EXPECT_EQ(ModeOf(dir_ + "/run"), 0700u);
  EXPECT_EQ(ModeOf(dir_ + "/runtime"), 0700u);
  EXPECT_TRUE(d->LogContains(dir_ + " had mode 0755; set it to 0700")) << d->Log();
}

TEST_F(EmbeddedSecurityTest, NoTcpListenersAndDocumentedPermissions) {
  auto d = Serve();
  auto status = ReadStatus(dir_);
  ASSERT_TRUE(status && status->postgres_pid > 0);
  EXPECT_EQ(TcpListenersOf(d->pid()), 0);
  std::vector<pid_t> postgres = PostgresProcessesOf(dir_ + "/pgdata");
  ASSERT_FALSE(postgres.empty());
  for (pid_t pid : postgres) EXPECT_EQ(TcpListenersOf(pid), 0) << "postgres pid " << pid;
  EXPECT_EQ(Psql(dir_, "SHOW listen_addresses"), "");

  EXPECT_EQ(ModeOf(dir_), 0700u);
  EXPECT_EQ(ModeOf(dir_ + "/run"), 0700u);
  EXPECT_EQ(ModeOf(dir_ + "/pgdata"), 0700u);
  EXPECT_EQ(ModeOf(dir_ + "/run/skydb.sock"), 0660u);
  EXPECT_EQ(ModeOf(dir_ + "/run/.s.PGSQL.5432"), 0700u);
  EXPECT_EQ(Psql(dir_, "SHOW unix_socket_permissions"), "0700");
}

// Root does its start-up work and is gone: the daemon's uids are all the service user's, so
// the RESP and HTTP parsers never run as root; every file in DIR belongs to the service user;
// the service user reaches the store socket; and a link the cluster user plants where the
// status file's temporary copy used to go (its old, guessable name) is never followed — the
// root-only file it points at is untouched after the status file is rewritten many times.
TEST_F(EmbeddedSecurityTest, RootIsDroppedForGoodAndNothingInDirIsRoots) {
  std::string secret_dir = root_.Dir("secret-dir");
  ASSERT_EQ(::mkdir(secret_dir.c_str(), 0700), 0);
  std::string secret = secret_dir + "/root-only";
  { std::ofstream(secret) << "root's own"; }
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  auto d = Serve();
  auto user = LookupUser(TestUser());
  ASSERT_TRUE(user.ok());
  std::ifstream status("/proc/" + std::to_string(d->pid()) + "/status");
  std::string line;
  int uid_lines = 0;
  while (std::getline(status, line)) {
    if (line.rfind("Uid:", 0) != 0 && line.rfind("Gid:", 0) != 0) continue;
    std::istringstream ids(line.substr(4));
    unsigned id = 0;
    uint32_t want = line[0] == 'U' ? user->uid : user->gid;
    while (ids >> id) EXPECT_EQ(id, want) << line;
    ++uid_lines;
  }
  EXPECT_EQ(uid_lines, 2);
  // The planted link, at the name the old temporary file had, then many rewrites of the file.
  std::string planted = dir_ + "/run/skydb.status.json.tmp." + std::to_string(d->pid());
  ASSERT_EQ(::symlink(secret.c_str(), planted.c_str()), 0);
  pid_t postmaster = ReadStatus(dir_)->postgres_pid;
  ASSERT_EQ(::kill(postmaster, SIGKILL), 0);  // the supervisor restarts it, rewriting the file
  auto deadline = SteadyClock::now() + seconds(60);
  while (SteadyClock::now() < deadline) {
    auto now = ReadStatus(dir_);
    if (now && now->state == "ready" && now->postgres_pid != postmaster) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_NE(ReadStatus(dir_)->postgres_pid, postmaster) << d->Log();
  std::ifstream kept(secret);
  std::string contents((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  EXPECT_EQ(contents, "root's own");
  EXPECT_EQ(ModeOf(secret), 0600u);
  ::unlink(planted.c_str());
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_)) {
    struct stat st {};
    ASSERT_EQ(::lstat(entry.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, user->uid) << entry.path() << " is not the service user's";
  }
  CommandSpec ping;
  ping.argv = {"/usr/bin/redis-cli", "-s", StoreSocket(dir_), "PING"};
  ping.env["REDISCLI_AUTH"] = kPassword;
  ping.run_as = *user;
  auto pong = NewRealProcessRunner()->Run(ping);
  ASSERT_TRUE(pong.ok());
  EXPECT_NE(pong->out.find("PONG"), std::string::npos) << pong->out << pong->err;
}

// Every byte value, quotes, backslashes, NUL and SQL-looking text, in keys and values, written
// through the daemon into PostgreSQL and read back from PostgreSQL after a restart.
TEST_F(EmbeddedSecurityTest, EveryByteRoundTripsThroughPostgresAndARestart) {
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  std::string reversed(all_bytes.rbegin(), all_bytes.rend());
  std::vector<std::pair<std::string, std::string>> pairs = {
      {all_bytes, reversed + reversed},
      {std::string("\0", 1), std::string("\0\0\0", 3)},
      {"quote'\"`", "it's \"quoted\" `twice`"},
      {"back\\slash\\\\", "\\x00\\\\N\\."},
      {"sql'); DROP TABLE sky_sessions; --", "'; SELECT pg_sleep(10); --"},
      {"$1 %s %n {}", "E'\\000' $$dollar$$ \r\n*1\r\n$4\r\nPING\r\n"},
      {"utf8 \xc3\xa9 and invalid \xff\xfe", std::string(1 << 16, '\xff')},
  };
  for (int b = 0; b < 256; ++b) {
    pairs.push_back(
        {"byte-" + std::string(1, static_cast<char>(b)), std::string(3, static_cast<char>(b))});
  }
  {
    auto d = Serve();
    RespClient client = Client();
    for (const auto& [key, value] : pairs) {
      auto set = client.Command({"SET", key, value, "EX", "3600"});
      ASSERT_TRUE(set.ok() && set->IsOk()) << (set.ok() ? set->text : set.error().message);
    }
    ASSERT_TRUE(d->Signal(SIGTERM).ok());
    auto exited = d->WaitExit(seconds(30));
    ASSERT_TRUE(exited.has_value() && exited->exit_code == 0) << d->Log();
  }
  auto d = Serve();
  EXPECT_EQ(Psql(dir_, "SELECT count(*) FROM sky_sessions"), std::to_string(pairs.size()));
  RespClient client = Client();
  for (const auto& [key, value] : pairs) {
    auto get = client.Command({"GET", key});
    ASSERT_TRUE(get.ok());
    EXPECT_EQ(get->type, RespReply::Type::kBulk);
    EXPECT_TRUE(get->text == value) << "key of " << key.size() << " bytes came back different";
  }
  auto info = client.Command({"INFO", "stats"});
  ASSERT_TRUE(info.ok());
  EXPECT_NE(InfoField(info->text, "keyspace_misses"), "0") << "the reads went to PostgreSQL";
}

// The password is in none of: the daemon's log, INFO, CONFIG GET, any reply, `config show`,
// `status`, the status file, or the errors of a mistyped or invalid setting. Failed AUTHs are
// counted in INFO and each one on a connection takes longer; other clients are not slowed.
TEST_F(EmbeddedSecurityTest, PasswordNeverShownAndFailedAuthCountedAndSlowed) {
  int http_port = FreePort();
  auto d = Serve({"http.port=" + std::to_string(http_port)});
  std::string socket = StoreSocket(dir_);
  EXPECT_EQ(Exchange(socket, "GET a\r\n", 34), "-NOAUTH Authentication required.\r\n");

  auto guesser = RespClient::Connect(socket, seconds(10));
  ASSERT_TRUE(guesser.ok());
  auto start = SteadyClock::now();
  for (int i = 0; i < 3; ++i) {
    auto reply = guesser->Command({"AUTH", std::string("guess-") + std::to_string(i)});
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(reply->text, "WRONGPASS invalid username-password pair or user is disabled.");
  }
  auto guessing = SteadyClock::now() - start;
  EXPECT_GE(guessing, milliseconds(100 + 200 + 400)) << "three failures, 100+200+400 ms";
  auto bystander_start = SteadyClock::now();
  RespClient client = Client();
  EXPECT_LT(SteadyClock::now() - bystander_start, milliseconds(200))
      << "other clients are not slowed";

  std::string replies;
  for (const std::vector<std::string>& cmd :
       std::vector<std::vector<std::string>>{{"INFO", "everything"},
                                             {"CONFIG", "GET", "*"},
                                             {"CLIENT", "GETNAME"},
                                             {"HELLO", "2"},
                                             {"COMMAND", "INFO", "auth"},
                                             {"AUTH", "default", "wrong"},
                                             {"HELLO", "2", "AUTH", "default", "wrong"}}) {
    auto reply = client.Command(cmd);
    ASSERT_TRUE(reply.ok());
    replies += reply->text + "\n";
    for (const auto& e : reply->elements) replies += e.text + "\n";
  }
  EXPECT_EQ(replies.find(kPassword), std::string::npos) << replies;
  auto info = client.Command({"INFO", "stats"});
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(InfoField(info->text, "acl_access_denied_auth"), "5") << info->text;

  std::map<std::string, std::optional<std::string>> env = {{"SKYDB_RESP_REQUIREPASS", kPassword}};
  std::string shown;
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"config", "show"},
           {"status", "--data-dir", dir_},
           {"status", "--data-dir", dir_, "--json"},
           {"--set", std::string("resp.requirepas=") + kPassword, "config", "show"},
           {"--set", "resp.max_clients=0", "config", "show"}}) {
    CliRun run = RunSkydb(args, env);
    shown += run.out + run.err;
  }
  TempDir config_dir;
  std::string bad_file = config_dir.Write("c.toml", "[resp]\nrequirepass = 98765432123\n");
  CliRun wrong_type = RunSkydb({"--config", bad_file, "config", "check"});
  EXPECT_EQ(wrong_type.exit_code, 2);
  EXPECT_EQ(wrong_type.err.find("98765432123"), std::string::npos) << wrong_type.err;
  EXPECT_NE(shown.find("requirepass = \"<redacted>\""), std::string::npos) << shown;
  EXPECT_NE(shown.find("--set resp.requirepas=<redacted>"), std::string::npos) << shown;
  EXPECT_EQ(shown.find(kPassword), std::string::npos) << shown;

  std::ifstream status_file(dir_ + "/run/skydb.status.json");
  std::string status_text((std::istreambuf_iterator<char>(status_file)), {});
  EXPECT_FALSE(status_text.empty());
  EXPECT_EQ(status_text.find(kPassword), std::string::npos);

  // The HTTP endpoints: /status carries the configuration's effect, /metrics every figure.
  for (const char* path : {"/status", "/metrics", "/readyz", "/healthz"}) {
    std::string response = HttpGet(http_port, path);
    EXPECT_NE(response.find("200 OK"), std::string::npos) << path << "\n" << response;
    EXPECT_EQ(response.find(kPassword), std::string::npos) << path;
  }

  ASSERT_TRUE(d->Signal(SIGTERM).ok());
  ASSERT_TRUE(d->WaitExit(seconds(30)).has_value());
  EXPECT_TRUE(d->LogContains("AUTH failed (wrong password)")) << d->Log();
  EXPECT_EQ(d->Log().find(kPassword), std::string::npos) << d->Log();
}

// Root never runs a program the cluster user could have chosen: programs planted in the
// cluster user's directories and named by the files that user writes (the status file's
// bin_dir, a repository's identity, SKY_POSTGRES_BIN) are refused, each with what to do
// instead. Each planted program appends its uid to a file; no line may be root's.
class PlantedProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RootWithTestUser()) GTEST_SKIP() << "needs root and user " << TestUser();
    auto user = LookupUser(TestUser());
    ASSERT_TRUE(user.ok());
    user_ = *user;
    dir_ = root_.Dir("d");
    evil_ = dir_ + "/runtime/evil";
    ran_ = root_.Dir("ran");
    std::ofstream(ran_).flush();
    ASSERT_EQ(::chmod(ran_.c_str(), 0666), 0);
    for (const std::string& d : {dir_, dir_ + "/run", dir_ + "/runtime", evil_}) {
      ASSERT_TRUE(std::filesystem::create_directories(d)) << d;
      Give(d, 0700);
    }
    for (const char* name :
         {"psql", "pg_waldump", "pg_controldata", "postgres", "initdb", "pg_ctl"}) {
      std::string path = evil_ + "/" + name;
      std::ofstream(path) << "#!/bin/sh\nid -u >> " << ran_
                          << "\necho 'postgres (PostgreSQL) 15.9'\n";
      Give(path, 0755);
    }
  }

  void Give(const std::string& path, mode_t mode) {
    ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
    ASSERT_EQ(::chown(path.c_str(), user_.uid, user_.gid), 0) << path;
  }

  void Write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
    Give(path, 0600);
  }

  // A repository as the cluster user's daemon writes it, its identity naming evil_.
  std::string PlantRepository() {
    std::string repo = root_.Dir("repo");
    for (const std::string& d :
         {repo, repo + "/base", repo + "/base/20261201T000000Z", repo + "/wal"}) {
      std::filesystem::create_directories(d);
      Give(d, 0700);
    }
    Write(repo + "/skydb-backup.json",
          "{\"format\": 1, \"system_identifier\": \"7312\", \"pg_major\": 15, \"bin_dir\": \"" +
              evil_ + "\"}\n");
    Write(repo + "/base/20261201T000000Z.json",
          "{\"label\": \"20261201T000000Z\", \"start_time\": 1764547200, \"end_time\": "
          "1764547201, \"system_identifier\": \"7312\", \"verified\": true}\n");
    Write(repo + "/wal/000000010000000000000003", "not really WAL");
    return repo;
  }

  std::string Ran() {
    std::ifstream in(ran_);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }

  TestRoot root_;
  RunAs user_;
  std::string dir_, evil_, ran_;
};

TEST_F(PlantedProgramTest, PsqlNamedByTheStatusFileIsRefused) {
  supervisor::StatusRecord record;
  record.state = "ready";
  record.data_dir = dir_;
  record.socket_dir = dir_ + "/run";
  record.port = 5432;
  record.bin_dir = evil_;
  record.superuser = TestUser();
  record.database = "postgres";
  Write(dir_ + "/run/skydb.status.json", supervisor::RenderStatusJson(record));
  CliRun run = RunSkydb({"psql", "--data-dir", dir_, "--", "-c", "SELECT 1"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  // The first place that fails is named: /tmp (the test's root) is writable by every user.
  EXPECT_NE(run.err.find("root does not run " + evil_ + "/psql: /tmp is writable by every user"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("sudo -u " + TestUser() + " skydb psql --data-dir " + dir_),
            std::string::npos)
      << run.err;
  EXPECT_EQ(Ran(), "") << "the planted psql ran";
}

TEST_F(PlantedProgramTest, RepositoryBinariesAreNeverRunAsRoot) {
  std::string repo = PlantRepository();
  CliRun list = RunSkydb({"backup", "list", "--repo", repo});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  CliRun restore = RunSkydb(
      {"restore", "--from", repo, "--to", root_.Dir("new"), "--latest", "--user", TestUser()});
  EXPECT_EQ(restore.exit_code, 1) << restore.err;
  EXPECT_NE(restore.err.find("root does not run " + evil_ + "/pg_waldump"), std::string::npos)
      << restore.err;
  EXPECT_NE(restore.err.find("--set postgres.bin_dir=DIR"), std::string::npos) << restore.err;
  // backup list became the repository's owner first: the planted pg_waldump ran as that user.
  std::string ran = Ran();
  EXPECT_EQ(ran, std::to_string(user_.uid) + "\n") << list.out << list.err << restore.err;
}

TEST_F(PlantedProgramTest, DoctorDoesNotProbeAPlantedPostgres) {
  CliRun doctor = RunSkydb({"doctor", "--data-dir", dir_}, {{"SKY_POSTGRES_BIN", evil_}});
  EXPECT_NE((doctor.out + doctor.err).find("root does not run " + evil_ + "/postgres"),
            std::string::npos)
      << doctor.out << doctor.err;
  EXPECT_EQ(Ran(), "") << "the planted postgres ran";
}

}  // namespace
}  // namespace skydb::testing
