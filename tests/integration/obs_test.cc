// Observability against the real daemon: HTTP endpoints over real PostgreSQL 15 (root, the
// cluster run by SKYDB_TEST_USER), sd_notify into a real AF_UNIX datagram socket passed as
// NOTIFY_SOCKET, the journal log format, and the start-up errors an operator can cause.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/strings.h"
#include "cli_support.h"
#include "notify_socket.h"
#include "skydb/env.h"
#include "supervisor_support.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

struct HttpReply {
  int status = 0;  // 0: no answer
  std::string body;
};

HttpReply Get(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(5, 0);
  auto res = client.Get(path.c_str());
  if (!res) return {};
  return {res->status, res->body};
}

// GET over a unix socket with a plain HTTP/1.1 request; status 0 when nothing answers.
HttpReply GetUnix(const std::string& socket_path, const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return {};
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: skydb\r\nConnection: close\r\n\r\n";
  (void)!::write(fd, request.data(), request.size());
  std::string response;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) response.append(buf, n);
  ::close(fd);
  HttpReply reply;
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return reply;
  reply.status = std::stoi(response.substr(9, 3));
  size_t body = response.find("\r\n\r\n");
  if (body != std::string::npos) reply.body = response.substr(body + 4);
  return reply;
}

// Polls `path` until it answers 200 or the timeout passes; the last reply.
HttpReply WaitOkUnix(const std::string& socket_path, const std::string& path, seconds timeout) {
  HttpReply reply;
  for (auto deadline = Clock::now() + timeout; Clock::now() < deadline;) {
    reply = GetUnix(socket_path, path);
    if (reply.status == 200) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return reply;
}

HttpReply WaitHealthyUnix(const std::string& socket_path, seconds timeout) {
  return WaitOkUnix(socket_path, "/healthz", timeout);
}

// The value of the sample line starting with `series` ("name{labels}"), or -1.
double Sample(const std::string& metrics, const std::string& series) {
  std::istringstream in(metrics);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

// One RESP command over the unix socket; the reply's first line ("+OK", ":3").
std::string Resp(const std::string& socket_path, const std::vector<std::string>& args) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "connect failed";
  }
  std::string request = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) request += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  (void)!::write(fd, request.data(), request.size());
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string reply;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') reply += c;
  ::close(fd);
  if (!reply.empty() && reply.back() == '\r') reply.pop_back();
  return reply;
}

class ObsIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (the cluster runs as " << TestUser() << ")";
    if (!LookupUser(TestUser()).ok()) GTEST_SKIP() << "no user " << TestUser();
    dir_ = root_.Dir("d");
    port_ = FreePort();
  }

  std::unique_ptr<DaemonProcess> Serve(const std::vector<std::string>& wrapper = {}) {
    std::vector<std::string> args = {"--set",      "http.port=" + std::to_string(port_),
                                     "serve",      "--embed",
                                     "--data-dir", dir_,
                                     "--user",     TestUser()};
    return std::make_unique<DaemonProcess>(
        args, std::map<std::string, std::optional<std::string>>{}, wrapper);
  }

  std::string Metrics() { return Get(port_, "/metrics").body; }

  // Polls /metrics until `series` has a value satisfying `ok`.
  bool WaitSample(const std::string& series, const std::function<bool(double)>& ok,
                  seconds timeout) {
    auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      if (ok(Sample(Metrics(), series))) return true;
      std::this_thread::sleep_for(milliseconds(100));
    }
    return false;
  }

  TestRoot root_;
  std::string dir_;
  int port_ = 0;
};

TEST_F(ObsIntegrationTest, ReadyzTurnsFrom503To200AndMetricsFollowTheStore) {
  auto d = Serve();
  // HTTP comes up before PostgreSQL (initdb takes seconds): the first answer is 503.
  HttpReply first;
  for (auto deadline = Clock::now() + seconds(20); first.status == 0 && Clock::now() < deadline;) {
    first = Get(port_, "/readyz");
    if (first.status == 0) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(first.status, 503) << first.body << d->Log();
  EXPECT_NE(first.body.find("not"), std::string::npos) << first.body;
  EXPECT_EQ(Get(port_, "/healthz").status, 200);
  HttpReply ready;
  for (auto deadline = Clock::now() + seconds(60); Clock::now() < deadline;) {
    ready = Get(port_, "/readyz");
    if (ready.status == 200) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_EQ(ready.status, 200) << ready.body << d->Log();

  std::string socket = dir_ + "/run/skydb.sock";
  std::string before = Metrics();
  EXPECT_EQ(Sample(before, "skydb_sessions_active{store=\"tiered\"}"), 0) << before;
  EXPECT_EQ(Sample(before, "sky_live_sessions_active"), 0);
  double commits = Sample(before, "skydb_store_commits_total");
  ASSERT_GE(commits, 0) << before;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Resp(socket, {"SET", "s" + std::to_string(i), "v", "EX", "600"}), "+OK");
  }
  std::string during = Metrics();
  EXPECT_EQ(Sample(during, "skydb_sessions_active{store=\"tiered\"}"), 3) << during;
  EXPECT_EQ(Sample(during, "sky_live_sessions_active"), 3);
  EXPECT_GT(Sample(during, "skydb_store_commits_total"), commits) << "sync SETs commit";
  EXPECT_GE(Sample(during, "skydb_store_writes_total"), 3);
  EXPECT_GE(Sample(during, "skydb_store_commit_duration_seconds_count"), 1);
  EXPECT_EQ(Sample(during, "skydb_resp_commands_total{command=\"set\"}"), 3);
  ASSERT_EQ(Resp(socket, {"DEL", "s0", "s1", "s2"}), ":3");
  std::string after = Metrics();
  EXPECT_EQ(Sample(after, "skydb_sessions_active{store=\"tiered\"}"), 0) << after;

  // PostgreSQL's side: up, PSS of its tree, backends once the poller has run.
  EXPECT_TRUE(WaitSample(
      "skydb_postgres_backends{state=\"idle\"}", [](double v) { return v >= 1; }, seconds(15)))
      << Metrics();
  // The health check pings at most once a second; one that failed under load shows 0 until
  // the next.
  EXPECT_TRUE(WaitSample(
      "skydb_postgres_up", [](double v) { return v == 1; }, seconds(15)))
      << Metrics();
  std::string full = Metrics();
  EXPECT_GT(Sample(full, "skydb_postgres_pss_bytes"), 1 << 20) << full;
  EXPECT_GT(Sample(full, "skydb_postgres_database_size_bytes{database=\"postgres\"}"), 0);
  EXPECT_GT(Sample(full, "skydb_resident_memory_bytes"), 0);
  EXPECT_GT(Sample(full, "skydb_setting{name=\"shared_buffers\",pinned=\"false\"}"), 0) << full;

  // The exposition passes Prometheus's own checker.
  std::string file = root_.Dir("metrics.txt");
  std::ofstream(file) << full;
  CommandSpec promtool;
  promtool.argv = {"/bin/sh", "-c", "promtool check metrics < \"$0\"", file};
  auto checked = NewRealProcessRunner()->Run(promtool);
  ASSERT_TRUE(checked.ok());
  EXPECT_EQ(checked->exit_code, 0) << "promtool (apt package prometheus, see "
                                      "tools/install-deps.sh):\n"
                                   << checked->out << checked->err;

  auto status = nlohmann::json::parse(Get(port_, "/status").body);
  EXPECT_EQ(status["ready"], true);
  EXPECT_EQ(status["cluster"]["state"], "ready");
  EXPECT_EQ(status["sessions"], 0);
  EXPECT_EQ(status["store"]["kind"], "tiered");
  EXPECT_FALSE(status["settings"].empty());
  EXPECT_EQ(d->StopCleanly(seconds(20)), "");
}

// A relative http.listen is under DATA_DIR/run, which the first embedded start makes only after
// the endpoints are up; they answer from the start and keep answering once PostgreSQL is ready.
TEST_F(ObsIntegrationTest, HttpOnARelativeUnixSocketFromTheFirstEmbeddedStart) {
  DaemonProcess d({"--set", "http.listen=http.sock", "serve", "--embed", "--data-dir", dir_,
                   "--user", TestUser()});
  std::string socket = dir_ + "/run/http.sock";
  ASSERT_EQ(WaitHealthyUnix(socket, seconds(20)).status, 200) << d.Log();
  HttpReply ready = WaitOkUnix(socket, "/readyz", seconds(60));
  ASSERT_EQ(ready.status, 200) << ready.body << d.Log();
  HttpReply metrics = GetUnix(socket, "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_GE(Sample(metrics.body, "skydb_sessions_active{store=\"tiered\"}"), 0) << metrics.body;
  EXPECT_EQ(d.StopCleanly(seconds(20)), "");
}

// Sends SIGCONT to a stopped postmaster however the test ends.
struct ContinueOnExit {
  pid_t pid = 0;
  ~ContinueOnExit() {
    if (pid > 0) ::kill(pid, SIGCONT);
  }
};

TEST_F(ObsIntegrationTest, SdNotifyReadyWatchdogReloadAndStop) {
  NotifySocket notify(root_.Dir("notify.sock"));
  ASSERT_TRUE(notify.bound());
  std::string socket = dir_ + "/run/skydb.sock";
  // At the moment READY=1 arrives, the store socket must already answer.
  std::atomic<int> ready_seen{0};
  std::string pong_at_ready;
  notify.OnMessage([&](const std::string& text) {
    if (text.find("READY=1") != std::string::npos && ready_seen++ == 0) {
      pong_at_ready = Resp(socket, {"PING"});
    }
  });
  // Through env(1): the child launcher strips NOTIFY_SOCKET from the processes it starts.
  auto d = Serve({"/usr/bin/env", "NOTIFY_SOCKET=" + notify.path(), "WATCHDOG_USEC=1000000"});
  auto ready = notify.WaitFor("READY=1", seconds(60));
  ASSERT_TRUE(ready.has_value()) << d->Log();
  EXPECT_EQ(pong_at_ready, "+PONG") << "READY=1 before the RESP socket accepted connections";
  auto messages = notify.Messages();
  bool extended = false, status_before = false;
  for (size_t i = 0; i < *ready; ++i) {
    extended |= messages[i].text.find("EXTEND_TIMEOUT_USEC=") != std::string::npos;
    status_before |= messages[i].text.find("STATUS=preparing the data directory") == 0;
  }
  EXPECT_TRUE(extended) << "initdb ran without EXTEND_TIMEOUT_USEC";
  EXPECT_TRUE(status_before) << "no STATUS line during start-up";
  EXPECT_NE(messages[*ready].text.find("STATUS=serving sessions"), std::string::npos);

  // WATCHDOG=1 every 0.5 s (WatchdogSec = 1 s) while PostgreSQL answers.
  auto healthy_since = Clock::now();
  std::this_thread::sleep_for(seconds(2));
  EXPECT_GE(notify.CountSince("WATCHDOG=1", healthy_since), 3);

  auto status = ReadStatus(dir_);
  ASSERT_TRUE(status && status->postgres_pid > 0);
  ContinueOnExit resume{status->postgres_pid};
  ASSERT_EQ(::kill(status->postgres_pid, SIGSTOP), 0);
  std::this_thread::sleep_for(milliseconds(1500));  // a ping already past the postmaster
  auto stopped_since = Clock::now();
  std::this_thread::sleep_for(seconds(3));
  EXPECT_EQ(notify.CountSince("WATCHDOG=1", stopped_since), 0)
      << "WATCHDOG=1 while the postmaster was stopped";
  ASSERT_EQ(::kill(status->postgres_pid, SIGCONT), 0);
  resume.pid = 0;
  auto resumed = Clock::now();
  auto next = notify.WaitFor("WATCHDOG=1", seconds(6), notify.Messages().size());
  EXPECT_TRUE(next.has_value()) << "no WATCHDOG=1 within 6 s of SIGCONT";
  if (next) {
    RecordProperty("sigcont_to_watchdog_ms",
                   std::to_string(std::chrono::duration_cast<milliseconds>(
                                      notify.Messages()[*next].at - resumed)
                                      .count()));
  }

  size_t mark = notify.Messages().size();
  ASSERT_TRUE(d->Signal(SIGHUP).ok());
  auto reloading = notify.WaitFor("RELOADING=1", seconds(10), mark);
  ASSERT_TRUE(reloading.has_value()) << d->Log();
  std::string reload_text = notify.Messages()[*reloading].text;
  size_t usec = reload_text.find("MONOTONIC_USEC=");
  ASSERT_NE(usec, std::string::npos) << reload_text;
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(reload_text[usec + 15]))) << reload_text;
  EXPECT_TRUE(notify.WaitFor("READY=1", seconds(10), *reloading + 1).has_value());

  mark = notify.Messages().size();
  ASSERT_TRUE(d->Signal(SIGTERM).ok());
  EXPECT_TRUE(notify.WaitFor("STOPPING=1", seconds(10), mark).has_value());
  auto exited = d->WaitExit(seconds(20));
  ASSERT_TRUE(exited.has_value()) << d->Log();
  EXPECT_EQ(exited->exit_code, 0) << d->Log();
}

// ---- no PostgreSQL needed ---------------------------------------------------------------

std::vector<std::string> MemoryServe(const std::string& dir, int port) {
  return AsServiceUser({"--set", "http.port=" + std::to_string(port), "serve", "--store", "memory",
                        "--data-dir", dir});
}

TEST(ObsStartupErrorTest, HttpPortInUseStopsTheStartNamingTheKey) {
  TempDir tmp;
  int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &len);
  CliRun run = RunSkydb(MemoryServe(tmp.path() + "/d", ntohs(addr.sin_port)));
  ::close(holder);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.err.find("cannot listen on 127.0.0.1:" + std::to_string(ntohs(addr.sin_port))),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("http.port"), std::string::npos) << run.err;
}

// A second daemon on a taken HTTP port stops with the documented message (docs/operations.md)
// instead of sharing the port and splitting scrapes and /readyz with the first.
TEST(ObsStartupErrorTest, SecondDaemonOnTheSameHttpPortStopsAndTheFirstKeepsServing) {
  TempDir tmp;
  int port = FreePort();
  DaemonProcess first(MemoryServe(tmp.path() + "/a", port));
  HttpReply ready;
  for (auto deadline = Clock::now() + seconds(20); Clock::now() < deadline;) {
    ready = Get(port, "/readyz");
    if (ready.status == 200) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_EQ(ready.status, 200) << first.Log();

  DaemonProcess second(MemoryServe(tmp.path() + "/b", port));
  auto exited = second.WaitExit(seconds(15));
  ASSERT_TRUE(exited.has_value()) << "the second daemon is serving on a taken port\n"
                                  << second.Log();
  EXPECT_EQ(exited->exit_code, 1) << second.Log();
  EXPECT_TRUE(second.LogContains("http: cannot listen on 127.0.0.1:" + std::to_string(port)))
      << second.Log();
  EXPECT_TRUE(
      second.LogContains("set http.port to a free port, or 0 to turn the HTTP "
                         "endpoints off"))
      << second.Log();
  // Every new connection still reaches the first daemon.
  for (int i = 0; i < 20; ++i) ASSERT_EQ(Get(port, "/healthz").status, 200) << first.Log();
  EXPECT_EQ(first.StopCleanly(seconds(20)), "");
}

// A port another program holds, even one that allows sharing (SO_REUSEPORT), is refused.
TEST(ObsStartupErrorTest, HttpPortHeldWithReusePortIsRefused) {
  TempDir tmp;
  int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ASSERT_EQ(::setsockopt(holder, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one), 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  DaemonProcess d(MemoryServe(tmp.path() + "/d", port));
  auto exited = d.WaitExit(seconds(15));
  ::close(holder);
  ASSERT_TRUE(exited.has_value()) << "skydb shares a port another socket holds\n" << d.Log();
  EXPECT_EQ(exited->exit_code, 1) << d.Log();
  EXPECT_TRUE(d.LogContains("http: cannot listen on 127.0.0.1:" + std::to_string(port))) << d.Log();
}

TEST(ObsStartupErrorTest, NonLoopbackBindNeedsAllowRemote) {
  TempDir tmp;
  auto args = MemoryServe(tmp.path() + "/d", FreePort());
  args.insert(args.begin(), {"--set", "http.bind=0.0.0.0"});
  CliRun run = RunSkydb(args);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.err.find("http.allow_remote"), std::string::npos) << run.err;
}

TEST(ObsMemoryModeTest, EndpointsWithoutPostgres) {
  TempDir tmp;
  int port = FreePort();
  DaemonProcess d(MemoryServe(tmp.path() + "/d", port));
  HttpReply ready;
  for (auto deadline = Clock::now() + seconds(20); Clock::now() < deadline;) {
    ready = Get(port, "/readyz");
    if (ready.status == 200) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_EQ(ready.status, 200) << d.Log();
  std::string metrics = Get(port, "/metrics").body;
  EXPECT_EQ(Sample(metrics, "skydb_sessions_active{store=\"memory\"}"), 0) << metrics;
  EXPECT_EQ(metrics.find("skydb_postgres_"), std::string::npos) << metrics;
  EXPECT_EQ(Get(port, "/nothing").status, 404);
}

// Under systemd, stderr is the journal stream JOURNAL_STREAM names: priority prefixes, no
// timestamps. The same variable with stderr elsewhere keeps the text format.
TEST(ObsJournalTest, TheRealBinaryLogsInJournalFormatWhenStderrIsTheJournalStream) {
  TempDir tmp;
  std::string bad_dir = tmp.path() + "/open";
  ASSERT_EQ(::mkdir(bad_dir.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(bad_dir.c_str(), 0777), 0);  // refused: writable by others
  std::string log = tmp.path() + "/stderr.log";
  std::ofstream(log).close();
  struct stat st {};
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  auto run = [&](const std::string& journal_stream) {
    std::ofstream(log, std::ios::trunc).close();
    CommandSpec spec;
    spec.argv = {
        "/bin/sh",    "-c",    "exec \"$0\" serve --store memory --data-dir \"$1\" 2>>\"$2\"",
        SKYDB_BINARY, bad_dir, log};
    spec.env = {{"JOURNAL_STREAM", journal_stream}, {"SKYDB_CONFIG", ""}};
    auto out = NewRealProcessRunner()->Run(spec);
    EXPECT_TRUE(out.ok());
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  std::string journal = run(std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino));
  EXPECT_EQ(journal.rfind("<3>skydb cannot start: ", 0), 0u) << journal;
  std::string elsewhere = run("1:1");
  // "2026-11-30 12:00:00.000 error skydb cannot start: ..."
  EXPECT_EQ(elsewhere.rfind("20", 0), 0u) << elsewhere;
  EXPECT_EQ(elsewhere.find('<'), std::string::npos) << elsewhere;
  EXPECT_NE(elsewhere.find(" error skydb cannot start: "), std::string::npos) << elsewhere;
}

// Runs the real binary as systemd does: stderr appended to a file that JOURNAL_STREAM names.
// What it wrote there.
std::string RunUnderJournal(const TempDir& tmp, const std::vector<std::string>& args) {
  std::string log = tmp.path() + "/journal.log";
  std::ofstream(log, std::ios::trunc).close();
  struct stat st {};
  EXPECT_EQ(::stat(log.c_str(), &st), 0);
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c", "log=$1; shift; exec \"$0\" \"$@\" 2>>\"$log\"", SKYDB_BINARY, log};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = {{"JOURNAL_STREAM", std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)},
              {"SKYDB_CONFIG", ""}};
  EXPECT_TRUE(NewRealProcessRunner()->Run(spec).ok());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// libpq's error for a socket where nothing listens spans two lines ("... failed: No such file
// or directory", "\tIs the server running locally ...?"). Each record is one journal line with
// its priority; a continuation line without one would be filed at the journal's default.
TEST(ObsJournalTest, ALibpqErrorOfSeveralLinesIsOneJournalLineWithItsPriority) {
  TempDir tmp;
  std::string journal = RunUnderJournal(
      tmp, AsServiceUser({"--set", "http.port=0", "--set", "supervisor.start_timeout=2s", "serve",
                          "--database-url", "host=" + tmp.path() + "/nothing dbname=app",
                          "--data-dir", tmp.path() + "/d"}));
  EXPECT_NE(journal.find("; Is the server running locally"), std::string::npos) << journal;
  EXPECT_NE(journal.find("<3>skydb failed: no read-write PostgreSQL"), std::string::npos)
      << journal;
  for (const std::string& line : Split(journal, '\n')) {
    if (line.empty()) continue;
    EXPECT_TRUE(line.size() > 3 && line[0] == '<' && line[2] == '>' && line[1] >= '2' &&
                line[1] <= '7')
        << "a line without a syslog priority: '" << line << "' in\n"
        << journal;
  }
}

// log.format = "json": a failed AUTH's record names the client's address as "peer", and every
// record its component.
TEST(ObsJsonLogTest, AFailedAuthNamesThePeerInItsOwnField) {
  TempDir tmp;
  int resp_port = FreePort();
  DaemonProcess d(AsServiceUser({"--set", "log.format=json", "--set", "http.port=0", "--set",
                                 "resp.tcp_port=" + std::to_string(resp_port), "--set",
                                 "resp.requirepass=the-right-one", "serve", "--store", "memory",
                                 "--data-dir", tmp.path() + "/d"}));
  ASSERT_TRUE(d.WaitLogContains("\"component\":\"resp\"", milliseconds(20000))) << d.Log();
  int fd = -1;
  for (auto deadline = Clock::now() + seconds(20); fd < 0 && Clock::now() < deadline;) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(resp_port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      fd = -1;
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
  ASSERT_GE(fd, 0) << d.Log();
  sockaddr_in local{};
  socklen_t local_len = sizeof local;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len), 0);
  std::string auth = "AUTH a-wrong-guess\r\n";
  ASSERT_EQ(::write(fd, auth.data(), auth.size()), static_cast<ssize_t>(auth.size()));
  std::string peer = "127.0.0.1:" + std::to_string(ntohs(local.sin_port));
  EXPECT_TRUE(d.WaitLogContains("\"component\":\"resp\",\"peer\":\"" + peer + "\",\"msg\":",
                                milliseconds(10000)))
      << d.Log();
  ::close(fd);
  EXPECT_EQ(d.StopCleanly(seconds(20)), "");
  std::string log = d.Log();
  EXPECT_EQ(log.find("a-wrong-guess"), std::string::npos) << log;
  for (const std::string& line : Split(log, '\n')) {
    if (line.empty()) continue;
    auto record = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(record.is_discarded()) << "not JSON: " << line;
    EXPECT_TRUE(record.contains("component")) << line;
  }
}

// ---- HTTP on a unix socket (http.listen) ------------------------------------------------
std::vector<std::string> MemoryServeOnSocket(const std::string& dir, int port,
                                             const std::vector<std::string>& sets) {
  std::vector<std::string> args;
  for (const auto& set : sets) args.insert(args.end(), {"--set", set});
  auto serve = MemoryServe(dir, port);
  args.insert(args.end(), serve.begin(), serve.end());
  return args;
}

// A directory the daemon, dropped to the service user when started as root, may create in.
std::string SocketDir(const TempDir& tmp) {
  std::string dir = tmp.path() + "/sockets";
  ::mkdir(dir.c_str(), 0700);
  auto user = LookupUser(TestUser());
  if (::geteuid() == 0 && user.ok()) (void)::chown(dir.c_str(), user->uid, user->gid);
  return dir;
}

// The gid of the sockets the daemon creates: its own, the service user's when started as root.
gid_t DaemonGid() {
  auto user = LookupUser(TestUser());
  return ::geteuid() == 0 && user.ok() ? user->gid : ::getegid();
}

TEST(ObsHttpUnixSocketTest, ServesMetricsAndHealthzWithTheConfiguredModeAndGroup) {
  TempDir tmp;
  std::string socket = SocketDir(tmp) + "/http.sock";
  int port = FreePort();
  DaemonProcess d(MemoryServeOnSocket(
      tmp.path() + "/d", port,
      {"http.listen=" + socket, "http.socket_mode=0640", "http.socket_group=nogroup"}));
  HttpReply health = WaitHealthyUnix(socket, seconds(20));
  ASSERT_EQ(health.status, 200) << d.Log();
  EXPECT_EQ(health.body, "ok\n");
  // /healthz answers from the start; the store's metrics exist once it is open.
  ASSERT_EQ(WaitOkUnix(socket, "/readyz", seconds(20)).status, 200) << d.Log();
  HttpReply metrics = GetUnix(socket, "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(Sample(metrics.body, "skydb_sessions_active{store=\"memory\"}"), 0) << metrics.body;
  struct stat st {};
  ASSERT_EQ(::stat(socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_gid, 65534u);  // nogroup
  EXPECT_EQ(Get(port, "/healthz").status, 0) << "the endpoints also listen on TCP";
  EXPECT_EQ(d.StopCleanly(seconds(20)), "");
  EXPECT_NE(::access(socket.c_str(), F_OK), 0) << "the socket file outlived the daemon";
}

// A relative http.listen is a name under DIR/run, with the default mode 0660.
TEST(ObsHttpUnixSocketTest, RelativePathIsUnderTheRunDirectory) {
  TempDir tmp;
  std::string dir = tmp.path() + "/d";
  DaemonProcess d(MemoryServeOnSocket(dir, FreePort(), {"http.listen=http.sock"}));
  std::string socket = dir + "/run/http.sock";
  ASSERT_EQ(WaitHealthyUnix(socket, seconds(20)).status, 200) << d.Log();
  struct stat st {};
  ASSERT_EQ(::stat(socket.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(st.st_gid, DaemonGid());
  EXPECT_EQ(d.StopCleanly(seconds(20)), "");
}

// A socket file nothing answers on (a crashed daemon's) is replaced; a live one is not.
TEST(ObsHttpUnixSocketTest, StaleSocketIsReplacedAndALiveOneRefused) {
  TempDir tmp;
  std::string socket = SocketDir(tmp) + "/http.sock";
  {
    int stale = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket.c_str());
    ASSERT_EQ(::bind(stale, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ::close(stale);  // the file stays, nothing listens
    // As a crashed daemon of the same service user would have left it.
    ::chmod(socket.c_str(), 0660);
    auto user = LookupUser(TestUser());
    if (::geteuid() == 0 && user.ok()) (void)::chown(socket.c_str(), user->uid, user->gid);
  }
  DaemonProcess first(
      MemoryServeOnSocket(tmp.path() + "/a", FreePort(), {"http.listen=" + socket}));
  ASSERT_EQ(WaitHealthyUnix(socket, seconds(20)).status, 200) << first.Log();

  DaemonProcess second(
      MemoryServeOnSocket(tmp.path() + "/b", FreePort(), {"http.listen=" + socket}));
  auto exited = second.WaitExit(seconds(15));
  ASSERT_TRUE(exited.has_value()) << second.Log();
  EXPECT_EQ(exited->exit_code, 1);
  EXPECT_TRUE(second.LogContains("another server is already listening on " + socket))
      << second.Log();
  EXPECT_TRUE(second.LogContains("http.listen")) << second.Log();
  EXPECT_EQ(GetUnix(socket, "/healthz").status, 200) << "the second daemon took the socket";
  EXPECT_EQ(first.StopCleanly(seconds(20)), "");
}

TEST(ObsHttpUnixSocketTest, BadSocketSettingsAreRefusedNamingTheKey) {
  TempDir tmp;
  const std::pair<std::string, std::string> cases[] = {
      {"http.socket_mode=0999", "http.socket_mode"},
      {"http.socket_mode=04660", "http.socket_mode"},
      {"http.socket_mode=rw-rw----", "http.socket_mode"},
      {"http.listen=", "http.listen"},
  };
  for (const auto& [set, key] : cases) {
    SCOPED_TRACE(set);
    CliRun run = RunSkydb({"--set", set, "config", "check"});
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_NE(run.err.find(key), std::string::npos) << run.err;
  }
  CliRun group = RunSkydb(MemoryServeOnSocket(
      tmp.path() + "/d", FreePort(),
      {"http.listen=" + tmp.path() + "/h.sock", "http.socket_group=no-such-group"}));
  EXPECT_EQ(group.exit_code, 1) << group.err;
  EXPECT_NE(group.err.find("no-such-group"), std::string::npos) << group.err;
  EXPECT_NE(group.err.find("http.socket_group"), std::string::npos) << group.err;
}

}  // namespace
}  // namespace skydb::testing
