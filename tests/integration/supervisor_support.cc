#include "supervisor_support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "base/strings.h"
#include "cli_support.h"
#include "skydb/env.h"

namespace skydb::testing {

std::string TestUser() {
  const char* user = std::getenv("SKYDB_TEST_USER");
  return user != nullptr && *user != '\0' ? user : "skydbtest";
}

std::vector<std::string> AsServiceUser(std::vector<std::string> args) {
  if (::geteuid() == 0) {
    args.push_back("--user");
    args.push_back(TestUser());
  }
  return args;
}

TestRoot::TestRoot() {
  std::string templ = "/tmp/skydb-sup-XXXXXX";
  char* made = ::mkdtemp(templ.data());
  path_ = made != nullptr ? made : "";
  if (!path_.empty()) ::chmod(path_.c_str(), 0755);  // the cluster user must traverse it
}

TestRoot::~TestRoot() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

namespace {

// With a wrapper (e.g. a program that execs its arguments), SKYDB_BINARY and `args` follow it.
std::vector<std::string> WrappedArgs(const std::vector<std::string>& args,
                                     const std::vector<std::string>& wrapper) {
  if (wrapper.empty()) return args;
  std::vector<std::string> out(wrapper.begin() + 1, wrapper.end());
  out.push_back(SKYDB_BINARY);
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

}  // namespace

DaemonProcess::DaemonProcess(const std::vector<std::string>& args,
                             const std::map<std::string, std::optional<std::string>>& env,
                             const std::vector<std::string>& wrapper)
    : DaemonProcess(wrapper.empty() ? std::string(SKYDB_BINARY) : wrapper.front(),
                    WrappedArgs(args, wrapper), env) {}

DaemonProcess::DaemonProcess(const std::string& program, const std::vector<std::string>& args,
                             const std::map<std::string, std::optional<std::string>>& env) {
  ChildSpec spec;
  spec.argv.push_back(program);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = env;
  if (spec.env.count("SKYDB_CONFIG") == 0) spec.env["SKYDB_CONFIG"] = "";
  // Daemons of tests running side by side must not race for the default HTTP port; tests of
  // the endpoints pass --set http.port=N, which wins over the environment.
  if (spec.env.count("SKYDB_HTTP_PORT") == 0) spec.env["SKYDB_HTTP_PORT"] = "0";
  spec.parent_death_signal = SIGKILL;  // a crashed test binary takes its daemons with it
  auto child = NewRealChildLauncher()->Spawn(spec, [this](std::string_view line) {
    std::lock_guard lock(mu_);
    log_.append(line).append("\n");
  });
  if (child.ok()) child_ = std::move(child).value();
}

DaemonProcess::~DaemonProcess() {
  if (!child_ || child_->TryWait()) return;
  (void)child_->Signal(SIGTERM);
  if (!child_->WaitFor(std::chrono::seconds(20))) {
    (void)child_->Signal(SIGKILL);
    child_->WaitFor(std::chrono::seconds(5));
  }
}

std::string DaemonProcess::Log() const {
  std::lock_guard lock(mu_);
  return log_;
}

bool DaemonProcess::WaitLogContains(const std::string& text,
                                    std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!LogContains(text)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::optional<ExitStatus> DaemonProcess::WaitExit(std::chrono::milliseconds timeout) {
  if (!child_) return ExitStatus{};
  auto status = child_->WaitFor(timeout);
  if (status) child_->WaitOutputClosed(std::chrono::seconds(2));
  return status;
}

std::optional<ExitStatus> DaemonProcess::WaitProcessExit(std::chrono::milliseconds timeout) {
  if (!child_) return ExitStatus{};
  return child_->WaitFor(timeout);
}

std::string DaemonProcess::StopCleanly(std::chrono::milliseconds timeout) {
  Status signalled = Signal(SIGTERM);
  if (!signalled.ok()) return "SIGTERM failed: " + signalled.error().message;
  auto status = WaitExit(timeout);
  if (!status) {
    return "still running " + std::to_string(timeout.count()) + " ms after SIGTERM\n" + Log();
  }
  if (status->exit_code != 0) {
    return "exit status " + std::to_string(status->exit_code) + "\n" + Log();
  }
  return "";
}

std::optional<supervisor::StatusRecord> ReadStatus(const std::string& dir) {
  auto text = NewRealFileSystem()->ReadFile(dir + "/run/skydb.status.json");
  if (!text.ok()) return std::nullopt;
  auto record = supervisor::ParseStatusJson(*text);
  if (!record.ok()) return std::nullopt;
  return *record;
}

bool WaitReady(const std::string& dir, std::chrono::milliseconds timeout, int min_restarts,
               pid_t daemon_pid) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto status = ReadStatus(dir);
    if (status && status->state == "ready" && status->restarts >= min_restarts &&
        (daemon_pid == 0 || status->daemon_pid == daemon_pid)) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::vector<pid_t> PostgresProcessesOf(const std::string& pgdata) {
  std::vector<pid_t> pids;
  std::error_code ec;
  auto canonical = std::filesystem::weakly_canonical(pgdata, ec).string();
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::error_code link_ec;
    auto cwd = std::filesystem::read_symlink(entry.path() / "cwd", link_ec);
    if (!link_ec && cwd.string() == canonical) pids.push_back(std::stoi(name));
  }
  return pids;
}

std::string Psql(const std::string& dir, const std::string& sql) {
  CliRun run = RunSkydb({"psql", "--data-dir", dir, "-Atc", sql});
  if (run.exit_code != 0) return "ERROR: " + run.err;
  return std::string(Trim(run.out));
}

std::string PsqlAsTestUser(const std::string& dir, const std::string& sql) {
  CommandSpec spec;
  spec.argv = {"/usr/bin/setpriv",
               "--reuid=" + TestUser(),
               "--regid=" + TestUser(),
               "--init-groups",
               SKYDB_BINARY,
               "psql",
               "--data-dir",
               dir,
               "-Atc",
               sql};
  spec.env["SKYDB_CONFIG"] = "";
  auto run = NewRealProcessRunner()->Run(spec);
  if (!run.ok()) return "ERROR: " + run.error().message;
  if (run->exit_code != 0) return "ERROR: " + run->err;
  return std::string(Trim(run->out));
}

std::string Fingerprint(const std::string& dir) {
  std::vector<std::string> lines;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0) continue;
    lines.push_back(entry.path().string() + " " + std::to_string(st.st_size) + " " +
                    std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) +
                    " " + std::to_string(st.st_mode));
  }
  std::sort(lines.begin(), lines.end());
  return Join(lines, "\n");
}

std::unique_ptr<DaemonProcess> StartEmbedded(
    const std::string& dir, const std::vector<std::string>& sets,
    const std::map<std::string, std::optional<std::string>>& env) {
  std::vector<std::string> args = {"--set", "supervisor.backoff_initial=100ms"};
  for (const auto& set : sets) {
    args.push_back("--set");
    args.push_back(set);
  }
  for (const char* a : {"serve", "--embed", "--data-dir"}) args.push_back(a);
  args.push_back(dir);
  args.push_back("--user");
  args.push_back(TestUser());
  return std::make_unique<DaemonProcess>(args, env);
}

bool WaitDaemonReady(DaemonProcess& d, const std::string& dir, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (WaitReady(dir, std::chrono::milliseconds(100), 0, d.pid())) return true;
    if (d.WaitExit(std::chrono::milliseconds(1))) return false;
  }
  return false;
}

std::string RedisCli(const std::string& socket, const std::vector<std::string>& args) {
  CommandSpec spec;
  spec.argv = {"/usr/bin/redis-cli", "-s", socket};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::seconds(10);
  auto out = NewRealProcessRunner()->Run(spec);
  if (!out.ok()) return "ERROR: " + out.error().message;
  std::string text = out->out;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

bool WaitForPong(const std::string& socket, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (RedisCli(socket, {"PING"}) == "PONG") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

CommandOutput RunAsUser(const RunAs& user, std::vector<std::string> argv,
                        std::map<std::string, std::optional<std::string>> env) {
  CommandSpec spec;
  spec.argv = std::move(argv);
  spec.env = std::move(env);
  spec.env["PGCONNECT_TIMEOUT"] = "5";
  spec.run_as = user;
  spec.working_dir = "/";
  spec.timeout = std::chrono::milliseconds(30000);
  auto out = NewRealProcessRunner()->Run(spec);
  if (!out.ok()) return CommandOutput{-1, 0, "", out.error().message};
  return *out;
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace skydb::testing
