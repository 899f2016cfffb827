// Fakes for the supervisor's seams: child launcher, host ops, PostgreSQL probe and an initdb
// runner that writes a cluster into a FakeFileSystem. Not thread-safe; one test at a time.
#pragma once

#include <signal.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "skydb/process.h"
#include "skydb/supervisor.h"
#include "support/fakes.h"

namespace skydb::testing {

// A child whose fate the test scripts: it exits at `exit_at` (if set), honours the signals in
// `obeys` by exiting, and records every signal it receives.
class FakeChild final : public ChildProcess {
 public:
  FakeChild(FakeClock& clock, pid_t pid) : clock_(clock), pid_(pid) {}
  pid_t pid() const override { return pid_; }
  Status Signal(int sig) override {
    signals.push_back(sig);
    if (on_signal) on_signal(sig);
    if (obeys.count(sig) != 0 && !exit_at) exit_at = clock_.Now();
    return Ok();
  }
  std::optional<ExitStatus> TryWait() override {
    if (exit_at && clock_.Now() >= *exit_at) return status;
    return std::nullopt;
  }
  std::optional<ExitStatus> WaitFor(std::chrono::milliseconds timeout) override {
    if (exit_at && *exit_at <= clock_.Now() + timeout) {
      if (*exit_at > clock_.Now()) clock_.Advance(*exit_at - clock_.Now());
      return status;
    }
    clock_.Advance(timeout);
    return std::nullopt;
  }
  bool WaitOutputClosed(std::chrono::milliseconds) override { return true; }

  std::optional<Clock::TimePoint> exit_at;
  ExitStatus status{0, 0};
  std::set<int> obeys = {SIGINT, SIGQUIT};
  std::vector<int> signals;
  std::function<void(int)> on_signal;

 private:
  FakeClock& clock_;
  pid_t pid_;
};

class FakeLauncher final : public ChildLauncher {
 public:
  explicit FakeLauncher(FakeClock& clock) : clock_(clock) {}
  Result<std::unique_ptr<ChildProcess>> Spawn(const ChildSpec& spec, LineSink sink) override {
    specs.push_back(spec);
    spawn_times.push_back(clock_.Now());
    if (!spawn_error.empty()) return Error::Io(spawn_error);
    auto child = std::make_unique<FakeChild>(clock_, next_pid++);
    if (configure) configure(*child, static_cast<int>(specs.size()));
    for (const auto& line : stderr_lines) sink(line);
    children.push_back(child.get());
    return std::unique_ptr<ChildProcess>(std::move(child));
  }
  FakeChild* last() { return children.empty() ? nullptr : children.back(); }

  // Called for each new child with its 1-based spawn number.
  std::function<void(FakeChild&, int)> configure;
  std::vector<std::string> stderr_lines;
  std::string spawn_error;
  std::vector<ChildSpec> specs;
  std::vector<Clock::TimePoint> spawn_times;
  std::vector<FakeChild*> children;  // owned by the supervisor; valid while it holds them
  pid_t next_pid = 1000;

 private:
  FakeClock& clock_;
};

class FakeHostOps final : public HostOps {
 public:
  pid_t SelfPid() const override { return 4242; }
  Status Chown(const std::string& path, uid_t uid, gid_t gid) override {
    if (!chown_error.empty()) return Error::Permission(chown_error);
    chowned[path] = uid;
    chgrped[path] = gid;
    return Ok();
  }
  Result<std::shared_ptr<void>> LockExclusive(const std::string& path) override {
    if (held.count(path) != 0) {
      return Error::Conflict("another skydb (pid " + std::to_string(held[path]) +
                             ") is already running on this data directory");
    }
    held[path] = SelfPid();
    return std::shared_ptr<void>(new int(0), [this, path](void* p) {
      delete static_cast<int*>(p);
      held.erase(path);
    });
  }
  bool ProcessExists(pid_t pid) override { return alive.count(pid) != 0; }
  Status Kill(pid_t pid, int sig) override {
    kills.emplace_back(pid, sig);
    if (sig == SIGINT && !ignore_sigint) alive.erase(pid);
    if (sig == SIGQUIT) alive.erase(pid);
    return Ok();
  }
  long ClockTicksPerSecond() const override { return 100; }
  uid_t EffectiveUid() const override { return euid; }
  Status DropPrivileges(const RunAs& user, const std::vector<gid_t>&) override {
    dropped_to.push_back(user.name);
    euid = user.uid;
    return Ok();
  }
  uid_t euid = 1000;
  std::vector<std::string> dropped_to;

  std::map<std::string, uid_t> chowned;
  std::map<std::string, gid_t> chgrped;
  std::string chown_error;  // when set, every Chown fails with it
  std::map<std::string, pid_t> held;
  std::set<pid_t> alive;
  bool ignore_sigint = false;
  std::vector<std::pair<pid_t, int>> kills;
};

// Answers PQping from the launcher's current child: ok while it runs (after `ready_after`).
class FakeProbe final : public PgProbe {
 public:
  FakeProbe(FakeClock& clock, FakeLauncher& launcher) : clock_(clock), launcher_(launcher) {}
  Ping PingServer(const std::string& conninfo) override {
    conninfos.push_back(conninfo);
    if (forced) return *forced;
    FakeChild* child = launcher_.last();
    if (child == nullptr || child->TryWait()) return Ping::kNoResponse;
    return clock_.Now() - launcher_.spawn_times.back() >= ready_after ? Ping::kOk
                                                                      : Ping::kRejecting;
  }
  Result<int> Migrate(const std::string&, const std::vector<Migration>& m) override {
    ++migrate_calls;
    SKYDB_RETURN_IF_ERROR(Step("migrate"));
    if (!migrate_error.empty()) return Error::Unavailable(migrate_error);
    return static_cast<int>(m.size());
  }
  Result<std::string> ServerVersion(const std::string&) override {
    SKYDB_RETURN_IF_ERROR(Step("server_version"));
    return std::string("15.18");
  }
  Status EnsureAppDatabase(const std::string&, const AppDatabase& app,
                           const std::string&) override {
    SKYDB_RETURN_IF_ERROR(Step("app_database"));
    ensured_apps.push_back(app);
    return Ok();
  }
  Status SyncAccess(const std::string&, const AccessTarget& target) override {
    SKYDB_RETURN_IF_ERROR(Step("access"));
    synced_access.push_back(target.pgdata);
    return Ok();
  }
  // Each preparation step ("server_version", "migrate", "app_database", "access") asks `on_step`
  // first; an error it returns is the step's.
  Status Step(const std::string& step) { return on_step ? on_step(step) : Ok(); }

  std::function<Status(const std::string&)> on_step;
  std::optional<Ping> forced;
  Clock::Duration ready_after{std::chrono::milliseconds(300)};
  int migrate_calls = 0;
  std::string migrate_error;
  std::vector<AppDatabase> ensured_apps;
  std::vector<std::string> synced_access;  // target.pgdata of each SyncAccess
  std::vector<std::string> conninfos;

 private:
  FakeClock& clock_;
  FakeLauncher& launcher_;
};

// initdb writes PG_VERSION and a postgresql.conf into the fake file system; `postgres -C`
// (PostgreSQL's check of its configuration files) answers `check`.
class FakeInitdbRunner final : public ProcessRunner {
 public:
  explicit FakeInitdbRunner(FakeFileSystem& fs) : fs_(fs) {}
  Result<CommandOutput> Run(const CommandSpec& spec) override {
    if (spec.argv.at(0).size() >= 9 &&
        spec.argv[0].compare(spec.argv[0].size() - 9, 9, "/postgres") == 0) {
      checks.push_back(spec);
      checked_confs.push_back(*fs_.ReadFile(spec.argv.at(2) + "/skydb.conf"));
      if (on_check) on_check();
      if (!check_error.empty()) return Error::Io(check_error);
      return check;
    }
    specs.push_back(spec);
    if (exit_code != 0) return CommandOutput{exit_code, 0, "", "initdb: error: boom"};
    const std::string& pgdata = spec.argv.at(2);
    fs_.AddFile(pgdata + "/PG_VERSION", "15\n");
    fs_.AddFile(pgdata + "/postgresql.conf", "# defaults\nmax_connections = 100\n");
    return CommandOutput{0, 0, "", ""};
  }
  std::vector<CommandSpec> specs;  // initdb
  int exit_code = 0;
  std::vector<CommandSpec> checks;         // postgres -C
  std::vector<std::string> checked_confs;  // skydb.conf as each check saw it
  CommandOutput check{0, 0, "/srv/sky/pgdata\n", ""};
  std::string check_error;  // the check could not run
  std::function<void()> on_check;

 private:
  FakeFileSystem& fs_;
};

}  // namespace skydb::testing
