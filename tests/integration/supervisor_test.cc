// `skydb serve --embed` against real PostgreSQL, run as root with the cluster owned by the
// unprivileged test user (SKYDB_TEST_USER, default skydbtest). Every wait is bounded.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "base/strings.h"
#include "cli_support.h"
#include "skydb/env.h"
#include "skydb/schema.h"
#include "supervisor_support.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// The lines of a daemon's log at level error.
std::string ErrorLines(const std::string& log) {
  std::string out;
  for (const auto& line : Split(log, '\n')) {
    if (line.find(" error ") != std::string::npos) out += line + "\n";
  }
  return out;
}

class SupervisorIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (the cluster runs as " << TestUser() << ")";
    if (!LookupUser(TestUser()).ok()) GTEST_SKIP() << "no user " << TestUser();
    dir_ = root_.Dir("d");
  }

  // `sets` are global "--set key=value" options (they precede the subcommand).
  std::unique_ptr<DaemonProcess> Serve(std::vector<std::string> sets = {},
                                       std::map<std::string, std::optional<std::string>> env = {}) {
    return StartEmbedded(dir_, sets, env);
  }

  // Starts a daemon and waits until it is ready (or has exited).
  std::unique_ptr<DaemonProcess> ServeReady() {
    auto d = Serve();
    EXPECT_TRUE(WaitDaemonReady(*d, dir_, seconds(60))) << d->Log();
    return d;
  }

  // SIGTERM → exit 0 within 10 s.
  void StopCleanly(DaemonProcess& d) {
    ASSERT_TRUE(d.Signal(SIGTERM).ok());
    auto status = d.WaitExit(seconds(10));
    ASSERT_TRUE(status.has_value()) << "still running 10 s after SIGTERM\n" << d.Log();
    EXPECT_EQ(status->exit_code, 0) << d.Log();
  }

  TestRoot root_;
  std::string dir_;
};

TEST_F(SupervisorIntegrationTest, FreshDirReadySelectStopCleanlyAndReuse) {
  auto d = ServeReady();
  EXPECT_EQ(Psql(dir_, "SELECT 1"), "1");  // psql's arguments as they are (Psql passes -Atc)
  // ... and after `--`, with skydb's global options on either side of the command.
  CliRun dashed =
      RunSkydb({"--set", "log.level=info", "psql", "--data-dir", dir_, "--set", "log.level=info",
                "--", "-d", "app", "-Atc", "SELECT current_database()"});
  EXPECT_EQ(dashed.out, "app\n") << dashed.err;
  EXPECT_EQ(Psql(dir_, "SHOW data_checksums"), "on");
  EXPECT_EQ(Psql(dir_, "SHOW listen_addresses"), "");
  EXPECT_EQ(Psql(dir_, "SELECT max(version) FROM skydb_schema_migrations"),
            std::to_string(AllMigrations().back().version));
  EXPECT_TRUE(d->WaitLogContains("skydb ready: PostgreSQL 15", seconds(5))) << d->Log();
  EXPECT_TRUE(d->LogContains("postgres: ")) << "PostgreSQL's stderr is forwarded, tagged";
  auto owner = NewRealFileSystem()->Stat(dir_ + "/pgdata");
  ASSERT_TRUE(owner.ok());
  EXPECT_EQ(owner->uid, LookupUser(TestUser())->uid);
  EXPECT_EQ(owner->mode, 0700u);
  EXPECT_EQ(NewRealFileSystem()->Stat(dir_ + "/run")->mode, 0700u);
  StopCleanly(*d);
  EXPECT_TRUE(PostgresProcessesOf(dir_ + "/pgdata").empty());
  // A clean start and stop log no error: the fast shutdown's FATAL for skydb's own backends
  // is what skydb asked for (it used to be an error line).
  EXPECT_EQ(ErrorLines(d->Log()), "") << d->Log();
  EXPECT_TRUE(d->LogContains("terminating connection due to administrator command"));

  auto again = ServeReady();
  EXPECT_FALSE(again->LogContains("initializing a new PostgreSQL cluster")) << again->Log();
  EXPECT_TRUE(again->LogContains("database system was shut down at")) << again->Log();
  EXPECT_FALSE(again->LogContains("automatic recovery in progress")) << again->Log();
  EXPECT_EQ(Psql(dir_, "SELECT 2"), "2");
  StopCleanly(*again);
}

// `skydb status` and `skydb env` report what the running daemon published (DIR/run/app.json),
// not the caller's configuration: a daemon started with its own resp.socket is found there by
// a caller that does not know it. Before it runs, env answers from the configuration.
TEST_F(SupervisorIntegrationTest, StatusAndEnvReadWhatTheDaemonPublished) {
  std::string before = RunSkydb({"env", "--data-dir", dir_, "--format", "json"}).out;
  EXPECT_NE(before.find("unix://" + dir_ + "/run/skydb.sock"), std::string::npos) << before;
  std::string sockets = root_.Dir("sockets");
  ASSERT_EQ(::mkdir(sockets.c_str(), 0755), 0);
  auto user = LookupUser(TestUser());
  ASSERT_EQ(::chown(sockets.c_str(), user->uid, user->gid), 0);
  auto d = Serve({"resp.socket=" + sockets + "/store.sock"});
  ASSERT_TRUE(WaitDaemonReady(*d, dir_, seconds(60))) << d->Log();
  ASSERT_TRUE(WaitForPong(sockets + "/store.sock", seconds(30))) << d->Log();
  CliRun status = RunSkydb({"status", "--data-dir", dir_});
  EXPECT_NE(status.out.find("store socket: " + sockets + "/store.sock\n"), std::string::npos)
      << status.out;
  CliRun json = RunSkydb({"env", "--data-dir", dir_, "--format", "json"});
  EXPECT_NE(json.out.find("\"REDIS_URL\":\"unix://" + sockets + "/store.sock\""), std::string::npos)
      << json.out;
  CliRun shell = RunSkydb({"env", "--data-dir", dir_});
  EXPECT_NE(shell.out.find("export SKY_LIVE_STORE_PATH='" + sockets + "/store.sock'"),
            std::string::npos)
      << shell.out;
  StopCleanly(*d);
}

TEST_F(SupervisorIntegrationTest, SettingsAgreeWithTune) {
  auto d = ServeReady();
  CliRun tune = RunSkydb({"tune", "--format", "conf"});
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  for (const char* name : {"max_connections", "shared_buffers"}) {
    std::string want;
    for (const auto& line : Split(tune.out, '\n')) {
      if (StartsWith(line, std::string(name) + " = "))
        want = line.substr(std::string(name).size() + 3);
    }
    ASSERT_FALSE(want.empty()) << name << " missing from skydb tune:\n" << tune.out;
    EXPECT_EQ(Psql(dir_, std::string("SHOW ") + name), want) << name;
  }
}

TEST_F(SupervisorIntegrationTest, KilledPostmasterIsRestartedAndCounted) {
  auto d = ServeReady();
  auto before = ReadStatus(dir_);
  ASSERT_TRUE(before && before->postgres_pid > 0);
  ASSERT_EQ(::kill(before->postgres_pid, SIGKILL), 0);
  auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitReady(dir_, seconds(5), 1)) << "not ready again within 5 s\n" << d->Log();
  auto took = std::chrono::steady_clock::now() - killed;
  RecordProperty("kill9_to_ready_ms",
                 std::to_string(std::chrono::duration_cast<milliseconds>(took).count()));
  auto after = ReadStatus(dir_);
  EXPECT_EQ(after->restarts, 1);
  EXPECT_NE(after->postgres_pid, before->postgres_pid);
  EXPECT_EQ(Psql(dir_, "SELECT 1"), "1");
  CliRun status = RunSkydb({"status", "--data-dir", dir_});
  EXPECT_EQ(status.exit_code, 0);
  EXPECT_NE(status.out.find("restarts 1"), std::string::npos) << status.out;
  EXPECT_TRUE(WaitForPong(StoreSocket(dir_), seconds(30))) << d->Log();
}

// The status file says ready a moment before the session store has opened. A postmaster that
// dies in that moment is restarted and the store opens at the next ready: the daemon does not
// give up. Each round kills the postmaster as soon as the status file says ready (polled every
// millisecond), which lands in that moment in most rounds.
TEST_F(SupervisorIntegrationTest, PostmasterKilledBeforeTheStoreOpensIsSurvived) {
  int in_the_gap = 0;
  for (int round = 0; round < 4; ++round) {
    auto d = Serve();
    std::optional<supervisor::StatusRecord> ready;
    auto deadline = std::chrono::steady_clock::now() + seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      auto r = ReadStatus(dir_);
      if (r && r->state == "ready" && r->daemon_pid == d->pid() && r->postgres_pid > 0) {
        ready = r;
        break;
      }
      std::this_thread::sleep_for(milliseconds(1));
    }
    ASSERT_TRUE(ready.has_value()) << d->Log();
    ASSERT_EQ(::kill(ready->postgres_pid, SIGKILL), 0);
    EXPECT_TRUE(WaitForPong(StoreSocket(dir_), seconds(30))) << d->Log();
    EXPECT_FALSE(d->WaitExit(milliseconds(1)).has_value()) << d->Log();
    if (d->LogContains("opens once PostgreSQL is ready again")) ++in_the_gap;
    StopCleanly(*d);
  }
  std::cout << "postmaster killed before the store opened in " << in_the_gap << " of 4 rounds\n";
}

// A postmaster that dies while skydb prepares it (the migrations, the app's role and database)
// is a crash like any other: restarted after the backoff, prepared again, ready. To stop skydb
// inside a step, a prepared transaction (which survives restarts) holds what the step waits
// for: the migrations' advisory lock, or the app role's row. Once the status file says
// "migrating" with skydb waiting, the postmaster is killed; skydb must restart it (and wait in
// the step again); the prepared transaction is then rolled back and skydb becomes ready.
// tests/unit/supervisor also covers the server-version step.
TEST_F(SupervisorIntegrationTest, PostmasterKilledWhilePreparingIsRestarted) {
  const std::vector<std::string> sets = {"postgres.settings.max_prepared_transactions=4"};
  {
    auto d = Serve(sets);
    ASSERT_TRUE(WaitDaemonReady(*d, dir_, seconds(90))) << d->Log();
    StopCleanly(*d);
  }
  struct Step {
    const char* name;
    const char* hold;  // run in the transaction that is prepared
  };
  for (const Step& step : {Step{"migrations", "SELECT pg_advisory_xact_lock(7354213001)"},
                           Step{"the app's role", "ALTER ROLE app CONNECTION LIMIT 3"}}) {
    SCOPED_TRACE(step.name);
    {
      auto d = Serve(sets);
      ASSERT_TRUE(WaitDaemonReady(*d, dir_, seconds(90))) << d->Log();
      std::string prepared =
          Psql(dir_, std::string("BEGIN; ") + step.hold + "; PREPARE TRANSACTION 'held'");
      ASSERT_EQ(prepared.rfind("ERROR", 0), std::string::npos) << prepared;
      ASSERT_EQ(Psql(dir_, "SELECT count(*) FROM pg_prepared_xacts"), "1");
      StopCleanly(*d);
    }
    auto d = Serve(sets);
    // Waiting in the step: "migrating" for a while, with no restart yet.
    std::optional<supervisor::StatusRecord> held;
    auto deadline = std::chrono::steady_clock::now() + seconds(90);
    while (std::chrono::steady_clock::now() < deadline && !d->WaitExit(milliseconds(0))) {
      auto r = ReadStatus(dir_);
      if (r && r->state == "migrating" && r->daemon_pid == d->pid() &&
          std::time(nullptr) - r->updated_at >= 1) {
        held = r;
        break;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
    ASSERT_TRUE(held.has_value()) << d->Log();
    ASSERT_EQ(::kill(held->postgres_pid, SIGKILL), 0);
    // Restarted and waiting in the step again.
    deadline = std::chrono::steady_clock::now() + seconds(30);
    std::optional<supervisor::StatusRecord> again;
    while (std::chrono::steady_clock::now() < deadline && !d->WaitExit(milliseconds(0))) {
      auto r = ReadStatus(dir_);
      if (r && r->state == "migrating" && r->restarts == 1 && r->postgres_pid > 0 &&
          r->postgres_pid != held->postgres_pid) {
        again = r;
        break;
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    ASSERT_TRUE(again.has_value()) << "not restarted and preparing again\n" << d->Log();
    EXPECT_TRUE(d->LogContains("went away while skydb prepared it")) << d->Log();
    std::string rolled_back = Psql(dir_, "ROLLBACK PREPARED 'held'");
    EXPECT_EQ(rolled_back.rfind("ERROR", 0), std::string::npos) << rolled_back;
    EXPECT_TRUE(WaitReady(dir_, seconds(30), 1, d->pid())) << d->Log();
    EXPECT_TRUE(WaitForPong(StoreSocket(dir_), seconds(30))) << d->Log();
    EXPECT_FALSE(d->WaitExit(milliseconds(1)).has_value()) << d->Log();
    StopCleanly(*d);
  }
}

TEST_F(SupervisorIntegrationTest, KilledDaemonLeavesNoPostgresAndNextStartWorks) {
  auto d = ServeReady();
  ASSERT_TRUE(d->Signal(SIGKILL).ok());
  ASSERT_TRUE(d->WaitExit(seconds(5)).has_value());
  auto deadline = std::chrono::steady_clock::now() + seconds(5);
  while (!PostgresProcessesOf(dir_ + "/pgdata").empty() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(PostgresProcessesOf(dir_ + "/pgdata").empty())
      << "postgres outlived its SIGKILLed daemon";
  CliRun status = RunSkydb({"status", "--data-dir", dir_});
  EXPECT_EQ(status.exit_code, 3) << status.out;
  auto next = ServeReady();
  EXPECT_EQ(Psql(dir_, "SELECT 1"), "1");
}

TEST_F(SupervisorIntegrationTest, LeftoverPostmasterIsFoundAndStopped) {
  {
    auto d = ServeReady();
    StopCleanly(*d);
  }
  // A postmaster the daemon did not start (as an earlier daemon's would be): no death signal.
  auto user = LookupUser(TestUser());
  ChildSpec spec;
  spec.argv = {"/usr/lib/postgresql/15/bin/postgres", "-D", dir_ + "/pgdata"};
  spec.run_as = *user;
  spec.working_dir = dir_ + "/pgdata";
  auto leftover = NewRealChildLauncher()->Spawn(spec, [](std::string_view) {});
  ASSERT_TRUE(leftover.ok()) << leftover.error().message;
  pid_t leftover_pid = (*leftover)->pid();
  auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream pidfile(dir_ + "/pgdata/postmaster.pid");
    std::string text((std::istreambuf_iterator<char>(pidfile)), std::istreambuf_iterator<char>());
    if (text.find("ready") != std::string::npos) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  auto d = ServeReady();
  EXPECT_TRUE(d->LogContains("left over from an earlier skydb")) << d->Log();
  EXPECT_TRUE((*leftover)->WaitFor(seconds(5)).has_value()) << "the leftover still runs";
  EXPECT_NE(ReadStatus(dir_)->postgres_pid, leftover_pid);
  EXPECT_EQ(Psql(dir_, "SELECT 1"), "1");
}

// A stale postmaster.pid naming a live process of the cluster user that is no postmaster (a
// sleep that got the old postmaster's pid, as after a reboot or in a container): PostgreSQL
// alone refuses to start ("lock file already exists"), so the daemon crash-looped and exited.
// Now skydb proves the pid is not ours, moves the file aside and becomes ready; the sleep is not
// signalled.
TEST_F(SupervisorIntegrationTest, StalePidFileNamingALiveProcessIsMovedAside) {
  {
    auto d = ServeReady();
    StopCleanly(*d);
  }
  auto user = LookupUser(TestUser());
  ASSERT_TRUE(user.ok());
  ChildSpec spec;
  spec.argv = {"/bin/sleep", "60"};
  spec.run_as = *user;
  spec.parent_death_signal = SIGKILL;  // gone with the test binary, whatever happens
  auto sleeper = NewRealChildLauncher()->Spawn(spec, [](std::string_view) {});
  ASSERT_TRUE(sleeper.ok()) << sleeper.error().message;
  std::string pidfile = dir_ + "/pgdata/postmaster.pid";
  {
    std::ofstream(pidfile) << (*sleeper)->pid() << "\n"
                           << dir_ << "/pgdata\n1600000000\n5432\n"
                           << dir_ << "/run\n\n  5432001     32768\nready   \n";
  }
  ASSERT_EQ(::chown(pidfile.c_str(), user->uid, user->gid), 0);
  auto d = ServeReady();
  EXPECT_TRUE(d->LogContains("which runs but is no postmaster of " + dir_ + "/pgdata")) << d->Log();
  EXPECT_TRUE(d->LogContains("moved the file to " + pidfile + ".stale-")) << d->Log();
  EXPECT_FALSE((*sleeper)->TryWait().has_value()) << "the sleep was signalled";
  EXPECT_EQ(Psql(dir_, "SELECT 1"), "1");
  StopCleanly(*d);
  (void)(*sleeper)->Signal(SIGKILL);
  EXPECT_TRUE((*sleeper)->WaitFor(seconds(5)).has_value());
}

// A data dir whose name is not UTF-8 (byte 0xff): rendering the status file used to throw and
// abort the daemon during initializing. Now it becomes ready, the status file reads back the
// exact bytes, and `skydb status --json` and `skydb psql` (which connects to the socket_dir the
// file names) work there.
TEST_F(SupervisorIntegrationTest, DataDirThatIsNotUtf8Serves) {
  dir_ = root_.Dir(std::string("d\xff") + "x");
  auto d = ServeReady();
  auto status = ReadStatus(dir_);
  ASSERT_TRUE(status.has_value()) << d->Log();
  EXPECT_EQ(status->data_dir, dir_);
  EXPECT_EQ(status->socket_dir, dir_ + "/run");
  CliRun json = RunSkydb({"status", "--json", "--data-dir", dir_});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"running\": true"), std::string::npos) << json.out;
  EXPECT_EQ(Psql(dir_, "SELECT 1"), "1");
  StopCleanly(*d);
}

TEST_F(SupervisorIntegrationTest, SecondDaemonFailsNamingTheHolder) {
  auto first = ServeReady();
  auto second = Serve();
  auto status = second->WaitExit(seconds(30));
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(status->exit_code, 0);
  EXPECT_TRUE(second->LogContains("pid " + std::to_string(first->pid()))) << second->Log();
  EXPECT_EQ(ReadStatus(dir_)->state, "ready") << "the refused daemon must not touch the status";
}

TEST_F(SupervisorIntegrationTest, OtherMajorIsRefusedUntouched) {
  {
    auto d = ServeReady();
    StopCleanly(*d);
  }
  { std::ofstream(dir_ + "/pgdata/PG_VERSION") << "14\n"; }
  std::string before = Fingerprint(dir_ + "/pgdata");
  auto d = Serve();
  auto status = d->WaitExit(seconds(30));
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(status->exit_code, 0);
  EXPECT_TRUE(d->LogContains("PostgreSQL 14")) << d->Log();
  EXPECT_TRUE(d->LogContains("skydb upgrade --data-dir " + dir_)) << d->Log();
  EXPECT_EQ(Fingerprint(dir_ + "/pgdata"), before);
}

TEST_F(SupervisorIntegrationTest, NonEmptyNonClusterIsRefused) {
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((dir_ + "/pgdata").c_str(), 0700), 0);
  { std::ofstream(dir_ + "/pgdata/precious.txt") << "keep me"; }
  auto user = LookupUser(TestUser());
  ASSERT_TRUE(user.ok());
  std::string before = Fingerprint(dir_ + "/pgdata");
  if (::geteuid() == 0) {
    // Root's pgdata is nobody's cluster: refused before the drop, naming the owner.
    auto d = Serve();
    auto status = d->WaitExit(seconds(30));
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(status->exit_code, 1);
    EXPECT_TRUE(d->LogContains("belongs to uid 0, not to the service user " + user->name))
        << d->Log();
    EXPECT_EQ(Fingerprint(dir_ + "/pgdata"), before);
    for (const std::string& path : {dir_ + "/pgdata", dir_ + "/pgdata/precious.txt"}) {
      ASSERT_EQ(::chown(path.c_str(), user->uid, user->gid), 0);
    }
    before = Fingerprint(dir_ + "/pgdata");
  }
  auto d = Serve();
  auto status = d->WaitExit(seconds(30));
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(status->exit_code, 0);
  EXPECT_TRUE(d->LogContains("holds no PostgreSQL cluster")) << d->Log();
  EXPECT_EQ(Fingerprint(dir_ + "/pgdata"), before);
}

TEST_F(SupervisorIntegrationTest, RootWithoutRunAsUserIsRefused) {
  DaemonProcess d({"serve", "--embed", "--data-dir", dir_});
  auto status = d.WaitExit(seconds(30));
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(status->exit_code, 0);
  EXPECT_TRUE(
      d.LogContains("skydb is running as root and PostgreSQL refuses to run as root: "
                    "set run_as_user in the config or pass --user NAME"))
      << d.Log();
  EXPECT_FALSE(NewRealFileSystem()->Exists(dir_)) << "nothing is created before the refusal";
}

TEST_F(SupervisorIntegrationTest, CrashLoopExitsWithTheReason) {
  auto d = Serve({"supervisor.max_crashes=2"}, {{"SKYDB_POSTGRES_SETTINGS_WAL_LEVEL", "bogus"}});
  auto status = d->WaitExit(seconds(60));
  ASSERT_TRUE(status.has_value()) << d->Log();
  EXPECT_NE(status->exit_code, 0);
  EXPECT_TRUE(d->LogContains("3 times within")) << d->Log();
  EXPECT_TRUE(d->LogContains("giving up")) << d->Log();
  EXPECT_TRUE(d->LogContains("wal_level")) << d->Log();
  EXPECT_EQ(ReadStatus(dir_)->state, "failed");
}

TEST_F(SupervisorIntegrationTest, SighupReloadsPinnedSettings) {
  std::string conf = root_.Dir("skydb.toml");
  { std::ofstream(conf) << "[postgres.settings]\nwork_mem = \"5MB\"\n"; }
  auto d = Serve({}, {{"SKYDB_CONFIG", conf}});
  ASSERT_TRUE(WaitReady(dir_, seconds(60), 0, d->pid())) << d->Log();
  EXPECT_EQ(Psql(dir_, "SHOW work_mem"), "5MB");
  { std::ofstream(conf) << "[postgres.settings]\nwork_mem = \"7MB\"\n"; }
  ASSERT_TRUE(d->Signal(SIGHUP).ok());
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (Psql(dir_, "SHOW work_mem") != "7MB" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(Psql(dir_, "SHOW work_mem"), "7MB") << d->Log();
  EXPECT_TRUE(d->WaitLogContains("reloaded", seconds(5))) << d->Log();
  StopCleanly(*d);
}

// A pin PostgreSQL rejects, reloaded with SIGHUP: it used to be written into skydb.conf and
// left there, so the next postmaster crash became a crash loop and exit 1. Now PostgreSQL's own
// check refuses it before the reload, the last good skydb.conf stays, the log names the setting
// and the reason, and a kill -9 of the postmaster is an ordinary restart.
TEST_F(SupervisorIntegrationTest, SighupWithAPinPostgresRejectsKeepsTheLastGoodSettings) {
  std::string conf = root_.Dir("skydb.toml");
  { std::ofstream(conf) << "[postgres.settings]\nwork_mem = \"5MB\"\n"; }
  auto d = Serve({}, {{"SKYDB_CONFIG", conf}});
  ASSERT_TRUE(WaitDaemonReady(*d, dir_, seconds(60))) << d->Log();
  {
    std::ofstream(conf) << "[postgres.settings]\nwork_mem = \"7MB\"\nshared_buffers = \"bogus\"\n";
  }
  ASSERT_TRUE(d->Signal(SIGHUP).ok());
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (!d->LogContains("were not applied") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(
      d->LogContains("PostgreSQL rejects the new settings (exited with status 1): "
                     "invalid value for parameter \"shared_buffers\": \"bogus\""))
      << d->Log();
  std::ifstream in(dir_ + "/pgdata/skydb.conf");
  std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(written.find("bogus"), std::string::npos) << written;
  EXPECT_NE(written.find("\nwork_mem = 5MB\n"), std::string::npos)
      << "the whole reload is refused\n"
      << written;
  EXPECT_EQ(Psql(dir_, "SHOW work_mem"), "5MB");

  auto before = ReadStatus(dir_);
  ASSERT_TRUE(before && before->postgres_pid > 0);
  ASSERT_EQ(::kill(before->postgres_pid, SIGKILL), 0);
  EXPECT_TRUE(WaitReady(dir_, seconds(30), 1, d->pid())) << "not ready after the kill\n"
                                                         << d->Log();
  EXPECT_FALSE(d->WaitExit(milliseconds(1)).has_value()) << d->Log();
  EXPECT_EQ(Psql(dir_, "SELECT 1"), "1");
  StopCleanly(*d);
}

TEST_F(SupervisorIntegrationTest, ServedSessionsSurviveADaemonRestart) {
  std::string socket = dir_ + "/run/skydb.sock";
  auto d = ServeReady();
  ASSERT_TRUE(WaitForPong(socket, seconds(30))) << d->Log();
  EXPECT_TRUE(d->WaitLogContains("tiered store (sync)", seconds(5))) << d->Log();
  EXPECT_EQ(RedisCli(socket, {"SET", "session:1", "hello", "EX", "1800"}), "OK");
  EXPECT_EQ(RedisCli(socket, {"GET", "session:1"}), "hello");
  EXPECT_EQ(RedisCli(socket, {"DBSIZE"}), "1");
  std::string info = RedisCli(socket, {"INFO", "persistence"});
  EXPECT_NE(info.find("store_kind:tiered"), std::string::npos) << info;
  EXPECT_NE(info.find("store_durability:sync"), std::string::npos) << info;
  StopCleanly(*d);
  EXPECT_TRUE(PostgresProcessesOf(dir_ + "/pgdata").empty());

  auto again = ServeReady();
  ASSERT_TRUE(WaitForPong(socket, seconds(30))) << again->Log();
  EXPECT_EQ(RedisCli(socket, {"GET", "session:1"}), "hello");
  EXPECT_EQ(RedisCli(socket, {"DBSIZE"}), "1");
  EXPECT_EQ(Psql(dir_, "SELECT count(*) FROM sky_sessions"), "1");
  StopCleanly(*again);
}

TEST_F(SupervisorIntegrationTest, MemoryOnlyServeSaysSoAndNeedsNoPostgres) {
  auto d = std::make_unique<DaemonProcess>(
      AsServiceUser({"serve", "--store", "memory", "--data-dir", dir_}));
  std::string socket = dir_ + "/run/skydb.sock";
  ASSERT_TRUE(WaitForPong(socket, seconds(30))) << d->Log();
  EXPECT_EQ(RedisCli(socket, {"SET", "k", "v"}), "OK");
  EXPECT_NE(RedisCli(socket, {"INFO", "persistence"}).find("store_kind:memory"), std::string::npos);
  EXPECT_TRUE(d->WaitLogContains("MEMORY-ONLY store", seconds(5))) << d->Log();
  EXPECT_FALSE(NewRealFileSystem()->Exists(dir_ + "/pgdata"));
  StopCleanly(*d);
}

TEST_F(SupervisorIntegrationTest, ServeWithoutAStoreChoiceIsAUsageError) {
  auto neither = RunSkydb({"serve", "--data-dir", dir_});
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_NE(neither.err.find("--embed"), std::string::npos) << neither.err;
  auto both = RunSkydb({"serve", "--embed", "--store", "memory", "--data-dir", dir_});
  EXPECT_EQ(both.exit_code, 2);
}

}  // namespace
}  // namespace skydb::testing
