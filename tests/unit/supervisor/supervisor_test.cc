// The supervisor's lifecycle against fakes: a manual clock, a scripted child, a fake probe.
#include <gtest/gtest.h>

#include <algorithm>

#include "skydb/status_file.h"
#include "supervisor_fakes.h"

namespace skydb {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeChild;

class SupervisorTest : public ::testing::Test {
 protected:
  SupervisorTest() : launcher_(clock_), probe_(clock_, launcher_), runner_(fs_) {
    fs_.AddDir("/srv", 0755);
    options_.data_dir = "/srv/sky";
    options_.bin_dir = "/pg/bin";
    options_.binaries_major = 15;
    options_.binaries_version = "15.18";
    options_.cluster_user = ClusterUser{RunAs{"sky", 990, 990, ""}, true};
    options_.settings_conf = "shared_buffers = 296MB\n";
    options_.timing.backoff_initial = milliseconds(500);
    options_.timing.backoff_max = seconds(30);
    options_.timing.max_crashes = 5;
  }

  // Builds the supervisor; `on_ready` runs each time it becomes ready (default: stop).
  Supervisor& Make(std::function<void(Supervisor&, const SupervisorSnapshot&)> on_ready = {}) {
    SupervisorEnv env{&fs_, &clock_, &runner_, &launcher_, &host_, &probe_, nullptr, nullptr};
    env.postgres_log = [this](std::string_view line) { log_.emplace_back(line); };
    env.on_ready = [this, on_ready](const SupervisorSnapshot& snap) {
      states_at_ready_.push_back(snap.state);
      if (on_ready) {
        on_ready(*sup_, snap);
      } else {
        sup_->RequestStop();
      }
    };
    sup_ = NewSupervisor(options_, std::move(env));
    return *sup_;
  }

  std::string StatusState() {
    auto r = supervisor::ParseStatusJson(*fs_.ReadFile("/srv/sky/run/skydb.status.json"));
    return r.ok() ? r->state : "unreadable";
  }

  testing::FakeFileSystem fs_;
  testing::FakeClock clock_;
  testing::FakeLauncher launcher_;
  testing::FakeHostOps host_;
  testing::FakeProbe probe_;
  testing::FakeInitdbRunner runner_;
  SupervisorOptions options_;
  std::unique_ptr<Supervisor> sup_;
  std::vector<std::string> log_;
  std::vector<SupervisorState> states_at_ready_;
};

// The app's database (docs/embedding.md): its role reaches only its database, its OS user maps
// only to its role, its group reaches DIR/run and the socket, and the role and database are
// ensured after the migrations with the connection limit given.
TEST_F(SupervisorTest, AppGetsItsRoleDatabaseIdentLineAndGroup) {
  options_.app.database = "shop";
  options_.app.role = "web";
  options_.app.connection_limit = 14;
  options_.app_os_users = {"webuser", "sky", "root"};
  options_.shared_group = NamedGroup{"webgrp", 1234};
  Status s = Make().Run();
  ASSERT_TRUE(s.ok()) << s.error().message;
  std::string ident = *fs_.ReadFile("/srv/sky/pgdata/pg_ident.conf");
  EXPECT_NE(ident.find("skydb  webuser  web\n"), std::string::npos) << ident;
  EXPECT_NE(ident.find("skydb  sky  web\n"), std::string::npos) << ident;
  EXPECT_NE(ident.find("skydb  sky  sky\n"), std::string::npos) << ident;
  EXPECT_EQ(ident.find("webuser  sky"), std::string::npos) << ident;
  EXPECT_EQ(ident.find("root  web"), std::string::npos) << "root is mapped to the superuser only";
  std::string hba = *fs_.ReadFile("/srv/sky/pgdata/pg_hba.conf");
  EXPECT_NE(hba.find("local   shop  web  peer map=skydb\n"), std::string::npos) << hba;
  std::string conf = *fs_.ReadFile("/srv/sky/pgdata/skydb.conf");
  EXPECT_NE(conf.find("unix_socket_group = 'webgrp'"), std::string::npos);
  EXPECT_NE(conf.find("unix_socket_permissions = 0660"), std::string::npos);
  EXPECT_EQ(fs_.Stat("/srv/sky")->mode, 0710u);
  EXPECT_EQ(fs_.Stat("/srv/sky/run")->mode, 0750u);
  EXPECT_EQ(fs_.Stat("/srv/sky/runtime")->mode, 0700u);
  EXPECT_EQ(host_.chgrped["/srv/sky/run"], 1234u);
  ASSERT_EQ(probe_.ensured_apps.size(), 1u);
  AppDatabase expected = options_.app;
  expected.os_users = {"sky", "webuser"};  // the cluster user (child mode), app.user; never root
  EXPECT_EQ(probe_.ensured_apps[0], expected);
  // The registry's apps join pg_hba.conf once the server answers.
  EXPECT_EQ(probe_.synced_access, std::vector<std::string>{"/srv/sky/pgdata"});
}

TEST_F(SupervisorTest, WithoutAnAppGroupDirAndRunStayPrivate) {
  ASSERT_TRUE(Make().Run().ok());
  EXPECT_EQ(fs_.Stat("/srv/sky")->mode, 0700u);
  EXPECT_EQ(fs_.Stat("/srv/sky/run")->mode, 0700u);
  EXPECT_NE(fs_.ReadFile("/srv/sky/pgdata/skydb.conf")->find("unix_socket_permissions = 0700"),
            std::string::npos);
  EXPECT_NE(fs_.ReadFile("/srv/sky/pgdata/pg_hba.conf")->find("local   app  app  peer map=skydb"),
            std::string::npos);
}

TEST_F(SupervisorTest, FreshDirInitdbStartReadyStop) {
  Status s = Make().Run();
  ASSERT_TRUE(s.ok()) << s.error().message;

  ASSERT_EQ(runner_.specs.size(), 1u);
  const auto& initdb = runner_.specs[0];
  EXPECT_EQ(initdb.argv[0], "/pg/bin/initdb");
  for (const char* flag : {"--data-checksums", "--encoding=UTF8", "--locale=C", "--auth-local=peer",
                           "--auth-host=reject", "--username=sky"}) {
    EXPECT_NE(std::find(initdb.argv.begin(), initdb.argv.end(), flag), initdb.argv.end()) << flag;
  }
  ASSERT_TRUE(initdb.run_as.has_value());
  EXPECT_EQ(initdb.run_as->uid, 990u);

  ASSERT_EQ(launcher_.specs.size(), 1u);
  const ChildSpec& spec = launcher_.specs[0];
  EXPECT_EQ(spec.argv, (std::vector<std::string>{"/pg/bin/postgres", "-D", "/srv/sky/pgdata"}));
  EXPECT_EQ(spec.parent_death_signal, SIGINT);
  ASSERT_TRUE(spec.run_as.has_value());

  std::string conf = *fs_.ReadFile("/srv/sky/pgdata/skydb.conf");
  EXPECT_NE(conf.find("shared_buffers = 296MB"), std::string::npos);
  EXPECT_NE(conf.find("unix_socket_directories = '/srv/sky/run'"), std::string::npos);
  EXPECT_NE(fs_.ReadFile("/srv/sky/pgdata/postgresql.conf")->find("include = 'skydb.conf'"),
            std::string::npos);
  EXPECT_NE(fs_.ReadFile("/srv/sky/pgdata/pg_ident.conf")->find("skydb  root  sky"),
            std::string::npos);
  EXPECT_EQ(host_.chowned["/srv/sky/pgdata/skydb.conf"], 990u);
  EXPECT_EQ(host_.chowned["/srv/sky/pgdata"], 990u);

  EXPECT_EQ(probe_.migrate_calls, 1);
  EXPECT_EQ(states_at_ready_, std::vector<SupervisorState>{SupervisorState::kReady});
  EXPECT_EQ(launcher_.last()->signals, std::vector<int>{SIGINT});
  EXPECT_EQ(sup_->Snapshot().state, SupervisorState::kStopped);
  EXPECT_EQ(StatusState(), "stopped");
  EXPECT_TRUE(host_.held.empty()) << "the lock is released with the supervisor";
}

TEST_F(SupervisorTest, SecondStartReusesTheClusterAndAddsIncludeOnce) {
  ASSERT_TRUE(Make().Run().ok());
  sup_.reset();
  ASSERT_TRUE(Make().Run().ok());
  EXPECT_EQ(runner_.specs.size(), 1u) << "initdb ran again";
  std::string conf = *fs_.ReadFile("/srv/sky/pgdata/postgresql.conf");
  EXPECT_EQ(conf.find("include = 'skydb.conf'"), conf.rfind("include = 'skydb.conf'"));
}

TEST_F(SupervisorTest, RefusesAClusterOfAnotherMajorUntouched) {
  fs_.AddFile("/srv/sky/pgdata/PG_VERSION", "14\n");
  fs_.AddFile("/srv/sky/pgdata/postgresql.conf", "orig\n");
  Status s = Make().Run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kVersionMismatch);
  EXPECT_TRUE(runner_.specs.empty());
  EXPECT_TRUE(launcher_.specs.empty());
  EXPECT_EQ(*fs_.ReadFile("/srv/sky/pgdata/postgresql.conf"), "orig\n");
  EXPECT_FALSE(fs_.Exists("/srv/sky/pgdata/skydb.conf"));
  EXPECT_EQ(sup_->Snapshot().state, SupervisorState::kFailed);
}

TEST_F(SupervisorTest, RefusesANonEmptyNonCluster) {
  fs_.AddFile("/srv/sky/pgdata/data.csv", "x");
  Status s = Make().Run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kConflict);
  EXPECT_TRUE(runner_.specs.empty());
}

// A non-empty directory that is not a skydb data dir (here an app's, owned by another user) is
// refused with what it holds and the fix, before anything is written, locked or chowned.
TEST_F(SupervisorTest, RefusesAForeignDataDirUntouched) {
  fs_.AddDir("/srv/sky", 0755);
  fs_.SetOwner("/srv/sky", 1234, 1234);
  fs_.AddFile("/srv/sky/app.db", "rows");
  fs_.AddDir("/srv/sky/uploads", 0755);
  Status s = Make().Run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kConflict);
  EXPECT_EQ(s.error().message,
            "/srv/sky is not empty and is not a skydb data directory (it holds app.db, "
            "uploads); skydb will not take it over: choose a new or empty --data-dir (for "
            "example /srv/sky/skydb), or move those entries away");
  EXPECT_TRUE(host_.chowned.empty());
  EXPECT_EQ(fs_.Stat("/srv/sky")->mode, 0755u);
  EXPECT_EQ(fs_.Stat("/srv/sky")->uid, 1234u);
  EXPECT_EQ(*fs_.ListDir("/srv/sky"), (std::vector<std::string>{"app.db", "uploads"}));
  EXPECT_TRUE(launcher_.specs.empty());
}

// skydb's own entries, and the lost+found of a file system mounted at DIR, are a data dir.
TEST_F(SupervisorTest, StartsInADirHoldingOnlySkydbEntries) {
  fs_.AddDir("/srv/sky", 0700);
  fs_.AddDir("/srv/sky/lost+found", 0700);
  fs_.AddFile("/srv/sky/skydb.lock", "77\n", 0600);
  fs_.AddDir("/srv/sky/runtime", 0700);
  Status s = Make().Run();
  ASSERT_TRUE(s.ok()) << s.error().message;
}

TEST_F(SupervisorTest, InitdbFailureIsReported) {
  runner_.exit_code = 1;
  Status s = Make().Run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("initdb failed"), std::string::npos);
  EXPECT_NE(s.error().message.find("boom"), std::string::npos);
}

TEST_F(SupervisorTest, CrashRestartsWithBackoffAndCountsRestarts) {
  int crashes_left = 3;
  launcher_.configure = [&](FakeChild& child, int n) {
    // The first three postmasters crash 10 s after they start; the fourth stays up.
    if (n <= crashes_left) {
      child.exit_at = clock_.Now() + seconds(10);
      child.status = ExitStatus{-1, SIGKILL};
    }
  };
  Status s = Make([](Supervisor& sup, const SupervisorSnapshot& snap) {
               if (snap.restarts == 3) sup.RequestStop();
             }).Run();
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(launcher_.spawn_times.size(), 4u);
  // Each gap is 10 s of uptime plus the backoff (500 ms, 1 s, 2 s), give or take a tick.
  for (int i = 1; i < 4; ++i) {
    auto gap = launcher_.spawn_times[i] - launcher_.spawn_times[i - 1];
    auto backoff = milliseconds(500) * (1 << (i - 1));
    EXPECT_GE(gap, seconds(10) + backoff) << i;
    EXPECT_LE(gap, seconds(10) + backoff + milliseconds(300)) << i;
  }
  EXPECT_EQ(sup_->Snapshot().restarts, 3);
  EXPECT_EQ(sup_->Snapshot().last_exit, "killed by signal 9 (Killed)");
  EXPECT_EQ(states_at_ready_.size(), 4u);
}

TEST_F(SupervisorTest, CrashLoopGivesUpWithTheReason) {
  launcher_.stderr_lines = {"[12] FATAL:  invalid value for parameter \"shared_buffers\""};
  launcher_.configure = [&](FakeChild& child, int) {
    child.exit_at = clock_.Now();  // exits at once, every time
    child.status = ExitStatus{1, 0};
  };
  Status s = Make().Run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(launcher_.spawn_times.size(), 6u);  // max_crashes = 5: the 6th crash gives up
  EXPECT_NE(s.error().message.find("6 times"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("exited with status 1"), std::string::npos);
  EXPECT_NE(s.error().message.find("invalid value for parameter"), std::string::npos);
  EXPECT_EQ(sup_->Snapshot().state, SupervisorState::kFailed);
  EXPECT_EQ(StatusState(), "failed");
}

// A postmaster that cannot write because the disk is full exits again and again; that is an
// outage to wait out, not a crash loop: no give-up however many exits, and ready once it can.
TEST_F(SupervisorTest, OutOfSpaceExitsAreWaitedOutNotGivenUpOn) {
  launcher_.stderr_lines = {
      "[12] FATAL:  could not write to file \"pg_wal/xlogtemp.12\": No space left on device"};
  launcher_.configure = [&](FakeChild& child, int n) {
    if (n <= 8) {  // more than max_crashes = 5
      child.exit_at = clock_.Now();
      child.status = ExitStatus{1, 0};
    }
  };
  Status s = Make().Run();
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(launcher_.spawn_times.size(), 9u);
  EXPECT_EQ(states_at_ready_.size(), 1u);
  // Retries at most every 5 s: eight exits take 0.5+1+2+4+5+5+5+5 s of backoff.
  auto waited = launcher_.spawn_times.back() - launcher_.spawn_times.front();
  EXPECT_GE(waited, seconds(27));
  EXPECT_LE(waited, seconds(29));
}

TEST_F(SupervisorTest, StopThatIsIgnoredEscalatesToSigquitNeverSigkill) {
  launcher_.configure = [](FakeChild& child, int) { child.obeys = {SIGQUIT}; };
  ASSERT_TRUE(Make().Run().ok());
  EXPECT_EQ(launcher_.last()->signals, (std::vector<int>{SIGINT, SIGQUIT}));
}

TEST_F(SupervisorTest, StopFailsWhenEvenSigquitIsIgnored) {
  launcher_.configure = [](FakeChild& child, int) { child.obeys = {}; };
  Status s = Make().Run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(launcher_.last()->signals, (std::vector<int>{SIGINT, SIGQUIT}));
}

TEST_F(SupervisorTest, ReadinessIsExtendedWhileRecovering) {
  options_.timing.start_timeout = seconds(5);
  probe_.ready_after = seconds(12);  // rejecting (recovery) for 12 s: extended twice
  Status s = Make().Run();
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(states_at_ready_.size(), 1u);
}

TEST_F(SupervisorTest, ReadinessTimesOutWhenNothingAnswers) {
  options_.timing.start_timeout = seconds(5);
  probe_.forced = PgProbe::Ping::kNoResponse;
  Status s = Make().Run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kTimeout);
  EXPECT_EQ(launcher_.last()->signals, std::vector<int>{SIGINT}) << "the postmaster is stopped";
}

// A step the server itself refuses (it still answers) is the daemon's failure, not a crash.
TEST_F(SupervisorTest, MigrationFailureStopsAndFails) {
  probe_.migrate_error = "relation exists";
  Status s = Make().Run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("schema migrations failed"), std::string::npos);
  EXPECT_EQ(launcher_.last()->signals, std::vector<int>{SIGINT});
}

// The postmaster lost during each preparation step (the server's version, the migrations, the
// app's role and database): a crash like any other, restarted after the backoff, prepared again
// and ready; never the daemon's failure.
TEST_F(SupervisorTest, PostmasterLostDuringEachPreparationStepIsRestarted) {
  for (const char* step : {"server_version", "migrate", "app_database"}) {
    SCOPED_TRACE(step);
    launcher_.spawn_times.clear();
    int failed = 0;
    probe_.on_step = [&](const std::string& at) -> Status {
      if (at != step || failed++ > 0) return Ok();
      launcher_.last()->exit_at = clock_.Now();  // killed right now, mid-step
      launcher_.last()->status = ExitStatus{-1, SIGKILL};
      return Error::Unavailable("server closed the connection unexpectedly");
    };
    Status s = Make().Run();
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_EQ(launcher_.spawn_times.size(), 2u);
    EXPECT_GE(launcher_.spawn_times[1] - launcher_.spawn_times[0], milliseconds(500))
        << "restarted after the backoff";
    EXPECT_EQ(sup_->Snapshot().restarts, 1);
    EXPECT_EQ(sup_->Snapshot().last_exit, "killed by signal 9 (Killed)");
    EXPECT_EQ(states_at_ready_.size(), 1u);
    states_at_ready_.clear();
  }
}

// A fast shutdown behind skydb's back ends the step's connection first and the postmaster a
// moment later: waited for while the server no longer answers, then restarted.
TEST_F(SupervisorTest, PostmasterShuttingDownDuringMigrationsIsWaitedForAndRestarted) {
  int failed = 0;
  probe_.on_step = [&](const std::string& at) -> Status {
    if (at != "migrate" || failed++ > 0) return Ok();
    launcher_.last()->exit_at = clock_.Now() + seconds(2);
    probe_.forced = PgProbe::Ping::kRejecting;  // "the database system is shutting down"
    return Error::Unavailable("terminating connection due to administrator command");
  };
  launcher_.configure = [&](FakeChild&, int n) {
    if (n == 2) probe_.forced.reset();
  };
  Status s = Make().Run();
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(launcher_.spawn_times.size(), 2u);
  EXPECT_GE(launcher_.spawn_times[1] - launcher_.spawn_times[0], seconds(2) + milliseconds(500));
  EXPECT_EQ(states_at_ready_.size(), 1u);
}

TEST_F(SupervisorTest, LeftoverPostmasterIsStoppedBeforeStarting) {
  ASSERT_TRUE(Make().Run().ok());
  sup_.reset();
  // A postmaster of this directory is still alive (its daemon was SIGKILLed).
  fs_.AddFile("/srv/sky/pgdata/postmaster.pid", "4321\n/srv/sky/pgdata\n1700000091\n5432\n");
  fs_.AddFile("/proc/stat", "btime 1700000000\n");
  fs_.AddFile("/proc/4321/stat",
              "4321 (postgres) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9000 0\n");
  fs_.AddFile("/pg/bin/postgres", "", 0755);
  fs_.AddSymlink("/proc/4321/exe", "/pg/bin/postgres");
  fs_.AddSymlink("/proc/4321/cwd", "/srv/sky/pgdata");
  host_.alive.insert(4321);
  ASSERT_TRUE(Make().Run().ok());
  ASSERT_EQ(host_.kills.size(), 1u);
  EXPECT_EQ(host_.kills[0], std::make_pair(pid_t{4321}, SIGINT));
  EXPECT_TRUE(fs_.Exists("/srv/sky/pgdata/postmaster.pid")) << "never deleted by skydb";
}

// postmaster.pid names a live process that provably is no postmaster of this directory (a
// sleep that got the old postmaster's pid). PostgreSQL would refuse to start while a process of
// the cluster user has that pid ("lock file already exists"), so the file is moved aside and
// nothing is signalled.
TEST_F(SupervisorTest, PidFileOfALiveOtherProcessIsMovedAside) {
  ASSERT_TRUE(Make().Run().ok());
  sup_.reset();
  const std::string stale = "4321\n/srv/sky/pgdata\n1600000000\n5432\n";
  fs_.AddFile("/srv/sky/pgdata/postmaster.pid", stale, 0600);
  fs_.AddFile("/proc/stat", "btime 1700000000\n");
  fs_.AddFile("/proc/4321/stat", "4321 (sleep) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9000 0\n");
  fs_.AddFile("/bin/sleep", "", 0755);
  fs_.AddSymlink("/proc/4321/exe", "/bin/sleep");
  fs_.AddSymlink("/proc/4321/cwd", "/srv");
  host_.alive.insert(4321);
  auto before = clock_.WallNow();
  ASSERT_TRUE(Make().Run().ok());
  EXPECT_TRUE(host_.kills.empty());
  EXPECT_FALSE(fs_.Exists("/srv/sky/pgdata/postmaster.pid"));
  std::vector<std::string> moved;
  std::vector<std::string> entries = *fs_.ListDir("/srv/sky/pgdata");
  for (const auto& name : entries) {
    if (name.rfind("postmaster.pid.stale-", 0) == 0) moved.push_back(name);
  }
  ASSERT_EQ(moved.size(), 1u);
  int64_t when = std::stoll(moved[0].substr(std::string("postmaster.pid.stale-").size()));
  EXPECT_EQ(when, std::chrono::duration_cast<seconds>(before.time_since_epoch()).count());
  EXPECT_EQ(*fs_.ReadFile("/srv/sky/pgdata/" + moved[0]), stale);
}

// A live pid skydb cannot inspect (/proc unreadable) is not proof of anything: the file stays
// for PostgreSQL to judge, and nothing is signalled.
TEST_F(SupervisorTest, PidFileOfAProcessSkydbCannotInspectStays) {
  ASSERT_TRUE(Make().Run().ok());
  sup_.reset();
  fs_.AddFile("/srv/sky/pgdata/postmaster.pid", "4321\n/srv/sky/pgdata\n1700000091\n5432\n", 0600);
  host_.alive.insert(4321);
  ASSERT_TRUE(Make().Run().ok());
  EXPECT_TRUE(host_.kills.empty());
  EXPECT_TRUE(fs_.Exists("/srv/sky/pgdata/postmaster.pid"));
}

TEST_F(SupervisorTest, ReloadRerendersAndSignalsThePostmaster) {
  launcher_.configure = [this](FakeChild& child, int) {
    child.on_signal = [this](int sig) {
      if (sig == SIGHUP) sup_->RequestStop();
    };
  };
  Status s = Make([](Supervisor& sup, const SupervisorSnapshot&) {
               SupervisorReload reload;
               reload.settings_conf = "shared_buffers = 128MB\n";
               reload.timing.max_crashes = 9;
               sup.RequestReload(reload);
             }).Run();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(launcher_.last()->signals, (std::vector<int>{SIGHUP, SIGINT}));
  EXPECT_NE(fs_.ReadFile("/srv/sky/pgdata/skydb.conf")->find("shared_buffers = 128MB"),
            std::string::npos);
  // PostgreSQL checked the new files before it was asked to load them, as the cluster user.
  ASSERT_EQ(runner_.checks.size(), 1u);
  EXPECT_EQ(runner_.checks[0].argv,
            (std::vector<std::string>{"/pg/bin/postgres", "-D", "/srv/sky/pgdata", "-C",
                                      "data_directory"}));
  ASSERT_TRUE(runner_.checks[0].run_as.has_value());
  EXPECT_EQ(runner_.checks[0].run_as->uid, 990u);
  EXPECT_NE(runner_.checked_confs[0].find("shared_buffers = 128MB"), std::string::npos);
}

// A pin PostgreSQL rejects must not stay in skydb.conf: nothing would complain until the next
// postmaster start, and then every start fails (a crash loop, exit 1). The last good file is
// put back, PostgreSQL is not signalled, and the new supervisor timings still apply.
class RejectedReloadTest : public SupervisorTest {
 protected:
  Status RunWithReload(const std::string& settings) {
    // Stop once the reload is settled: at its SIGHUP (accepted) or right after its check.
    launcher_.configure = [this](FakeChild& child, int) {
      child.on_signal = [this](int sig) {
        if (sig == SIGHUP) sup_->RequestStop();
      };
    };
    runner_.on_check = [this] { sup_->RequestStop(); };
    return Make([settings](Supervisor& sup, const SupervisorSnapshot&) {
             SupervisorReload reload;
             reload.settings_conf = settings;
             reload.timing.max_crashes = 9;
             sup.RequestReload(reload);
           })
        .Run();
  }
  std::string Conf() { return *fs_.ReadFile("/srv/sky/pgdata/skydb.conf"); }
};

TEST_F(RejectedReloadTest, RejectedPinRestoresTheLastGoodFile) {
  runner_.check = CommandOutput{
      1, 0, "",
      "2026-12-01 10:12:20.474 UTC [14873] LOG:  invalid value for parameter "
      "\"shared_buffers\": \"bogus\"\n2026-12-01 10:12:20.474 UTC [14873] FATAL:  configuration "
      "file \"/srv/sky/pgdata/postgresql.conf\" contains errors\n"};
  ASSERT_TRUE(RunWithReload("shared_buffers = bogus\n").ok());
  ASSERT_EQ(runner_.checked_confs.size(), 1u);
  EXPECT_NE(runner_.checked_confs[0].find("shared_buffers = bogus"), std::string::npos);
  EXPECT_NE(Conf().find("shared_buffers = 296MB"), std::string::npos) << Conf();
  EXPECT_EQ(Conf().find("bogus"), std::string::npos) << Conf();
  EXPECT_EQ(launcher_.last()->signals, std::vector<int>{SIGINT}) << "no SIGHUP";
}

TEST_F(RejectedReloadTest, ACheckThatCannotRunAppliesNothing) {
  runner_.check_error = "cannot run /pg/bin/postgres: No such file or directory";
  ASSERT_TRUE(RunWithReload("shared_buffers = 128MB\n").ok());
  EXPECT_NE(Conf().find("shared_buffers = 296MB"), std::string::npos) << Conf();
  EXPECT_EQ(launcher_.last()->signals, std::vector<int>{SIGINT}) << "no SIGHUP";
}

TEST_F(SupervisorTest, StopDuringBackoffReturnsOk) {
  launcher_.configure = [&](FakeChild& child, int n) {
    if (n == 1) {
      child.exit_at = clock_.Now() + seconds(1);
      child.status = ExitStatus{-1, SIGKILL};
    }
  };
  bool first = true;
  Status s = Make([&](Supervisor& sup, const SupervisorSnapshot&) {
               if (!first) sup.RequestStop();
               first = false;
             }).Run();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(launcher_.spawn_times.size(), 2u);
}

}  // namespace
}  // namespace skydb
