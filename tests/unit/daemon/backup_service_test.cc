// The daemon's backup thread over fakes: a manual clock, an in-memory repository and a runner
// that plays pg_basebackup and friends. The tests drive Tick() themselves (tick 0: no thread),
// so a day of schedule is a few calls; one test runs the real thread with a short tick.
#include "daemon/backup_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <sstream>
#include <thread>

#include "skydb/backup.h"
#include "skydb/status_file.h"
#include "support/fakes.h"
#include "unit/supervisor/supervisor_fakes.h"

namespace skydb::daemon {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr char kRepo[] = "/repo";
constexpr char kDataDir[] = "/d";

// pg_basebackup writes one 4 KiB file into its target and takes `copy_time`; the other tools
// succeed. Safe for one thread at a time plus readers of `calls` under `mu`.
class BackupRunner final : public ProcessRunner {
 public:
  BackupRunner(testing::FakeFileSystem& fs, testing::FakeClock& clock) : fs_(fs), clock_(clock) {}
  Result<CommandOutput> Run(const CommandSpec& spec) override {
    std::string tool = spec.argv.at(0).substr(spec.argv[0].rfind('/') + 1);
    {
      std::lock_guard<std::mutex> lock(mu);
      calls.push_back(tool);
    }
    if (tool == "pg_controldata")
      return CommandOutput{0, 0, "Database system identifier: 7312\n", ""};
    if (tool == "pg_basebackup") {
      if (!basebackup_error.empty()) return CommandOutput{1, 0, "", basebackup_error};
      bool tar = std::find(spec.argv.begin(), spec.argv.end(), "-F") != spec.argv.end();
      if (tar) {
        std::lock_guard<std::mutex> lock(mu);
        tar_options = spec.argv.back();
      }
      fs_.AddFile(spec.argv.at(2) + (tar ? "/base.tar.zst" : "/base/1/1259"),
                  std::string(4096, 'x'));
      clock_.Advance(copy_time);
    }
    return CommandOutput{0, 0, "", ""};
  }
  int Count(const std::string& tool) {
    std::lock_guard<std::mutex> lock(mu);
    return static_cast<int>(std::count(calls.begin(), calls.end(), tool));
  }

  std::string basebackup_error;
  std::string tar_options;  // the last tar-format pg_basebackup's -Z value
  std::chrono::seconds copy_time{7};
  std::mutex mu;
  std::vector<std::string> calls;

 private:
  testing::FakeFileSystem& fs_;
  testing::FakeClock& clock_;
};

int64_t EpochSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<seconds>(t.time_since_epoch()).count();
}

class BackupServiceTest : public ::testing::Test {
 protected:
  BackupServiceTest() : runner_(fs_, clock_) {
    env_.fs = &fs_;
    env_.clock = &clock_;
    env_.runner = &runner_;
    env_.host = &host_;
    config_.data_dir = kDataDir;
    config_.backup.repository = kRepo;
    config_.backup.schedule = hours(1);
    fs_.AddDir(kRepo, 0700);
    supervisor::StatusRecord record;
    record.state = "ready";
    record.bin_dir = "/pg/bin";
    record.port = 5432;
    record.superuser = "skydb";
    fs_.AddFile(std::string(kDataDir) + "/run/skydb.status.json",
                supervisor::RenderStatusJson(record));
    logged_sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(logged_);
    spdlog::default_logger()->sinks().push_back(logged_sink_);
  }
  ~BackupServiceTest() override { spdlog::default_logger()->sinks().pop_back(); }

  // A completed backup in the repository that ended `age` ago.
  void AddBackup(const std::string& label, Clock::Duration age) {
    BackupInfo info;
    info.label = label;
    info.path = std::string(kRepo) + "/base/" + label;
    info.end_time = EpochSeconds(clock_.WallNow() - std::chrono::duration_cast<seconds>(age));
    info.bytes = 100;
    info.verified = true;
    fs_.AddDir(info.path);
    fs_.AddFile(info.path + ".json", RenderBackupInfo(info));
  }
  std::unique_ptr<BackupService> Start(std::chrono::milliseconds tick = {}) {
    BackupCluster cluster{[this] { return ready_.load(); }, [] { return std::string("/d/run"); }};
    return std::make_unique<BackupService>(config_, env_, std::move(cluster), tick);
  }
  int Count(const std::string& text) const {
    std::string all = logged_.str();
    int n = 0;
    for (size_t at = all.find(text); at != std::string::npos; at = all.find(text, at + 1)) ++n;
    return n;
  }

  testing::FakeFileSystem fs_;
  testing::FakeClock clock_;
  testing::FakeHostOps host_;
  BackupRunner runner_;
  Env env_;
  Config config_;
  std::atomic<bool> ready_{true};
  std::ostringstream logged_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> logged_sink_;
};

TEST_F(BackupServiceTest, ABackupIsTakenOnceTheNewestIsScheduleOld) {
  AddBackup("20251231T233000Z", minutes(30));
  auto service = Start();
  service->Tick();
  EXPECT_EQ(runner_.Count("pg_basebackup"), 0);
  clock_.Advance(minutes(29));
  service->Tick();
  EXPECT_EQ(runner_.Count("pg_basebackup"), 0);
  clock_.Advance(minutes(1));
  service->Tick();
  EXPECT_EQ(runner_.Count("pg_basebackup"), 1);
  EXPECT_EQ(runner_.Count("pg_verifybackup"), 1);
  service->Tick();  // the new one is the newest now
  EXPECT_EQ(runner_.Count("pg_basebackup"), 1);
  EXPECT_EQ(service->Status().successes, 1u);
}

TEST_F(BackupServiceTest, NoBackupWhileTheClusterIsNotReady) {
  ready_ = false;  // an empty repository: one is due at once
  auto service = Start();
  service->Tick();
  clock_.Advance(hours(2));
  service->Tick();
  EXPECT_EQ(runner_.Count("pg_basebackup"), 0);
  ready_ = true;
  service->Tick();
  EXPECT_EQ(runner_.Count("pg_basebackup"), 1);
}

TEST_F(BackupServiceTest, ScheduleZeroTakesNone) {
  config_.backup.schedule = {};
  auto service = Start();
  service->Tick();
  clock_.Advance(hours(24 * 100));
  service->Tick();
  EXPECT_TRUE(runner_.calls.empty());
  EXPECT_EQ(service->Status().successes, 0u);
}

TEST_F(BackupServiceTest, AFailureIsCountedShownAndRetriedAfterTenMinutesAtMost) {
  config_.backup.schedule = hours(24);
  runner_.basebackup_error = "pg_basebackup: error: could not write: No space left on device";
  auto service = Start();
  service->Tick();
  BackupStatus status = service->Status();
  EXPECT_EQ(status.failures, 1u);
  EXPECT_FALSE(status.running);
  EXPECT_THAT(status.last_error, HasSubstr("No space left on device"));
  EXPECT_EQ(Count("retrying in 600 s"), 1);
  clock_.Advance(minutes(10) - seconds(1));
  service->Tick();
  EXPECT_EQ(runner_.Count("pg_basebackup"), 1);
  clock_.Advance(seconds(1));
  service->Tick();
  EXPECT_EQ(runner_.Count("pg_basebackup"), 2);
  EXPECT_EQ(service->Status().failures, 2u);
}

TEST_F(BackupServiceTest, AShortScheduleRetriesAfterTheSchedule) {
  config_.backup.schedule = minutes(2);
  runner_.basebackup_error = "pg_basebackup: error: connection refused";
  auto service = Start();
  service->Tick();
  clock_.Advance(minutes(2) - seconds(1));
  service->Tick();
  EXPECT_EQ(runner_.Count("pg_basebackup"), 1);
  clock_.Advance(seconds(1));
  service->Tick();
  EXPECT_EQ(runner_.Count("pg_basebackup"), 2);
}

TEST_F(BackupServiceTest, ASuccessRecordsItsFiguresAndClearsTheLastError) {
  runner_.basebackup_error = "pg_basebackup: error: connection refused";
  auto service = Start();
  service->Tick();
  ASSERT_FALSE(service->Status().last_error.empty());
  runner_.basebackup_error.clear();
  clock_.Advance(hours(1));
  auto started = clock_.WallNow();
  service->Tick();
  BackupStatus status = service->Status();
  EXPECT_EQ(status.successes, 1u);
  EXPECT_EQ(status.failures, 1u);
  EXPECT_EQ(status.last_error, "");
  // It ends when the copy ends (7 s later), rounded up to the next second.
  EXPECT_EQ(status.last_success_time, EpochSeconds(started + runner_.copy_time) + 1);
  EXPECT_DOUBLE_EQ(status.last_duration_seconds, 7.0);
  EXPECT_EQ(status.last_size_bytes, 4096u);
  auto backups = ListBackups(fs_, kRepo);
  ASSERT_TRUE(backups.ok());
  ASSERT_EQ(backups->size(), 1u);
  EXPECT_EQ(backups->back().end_time, status.last_success_time);
}

TEST_F(BackupServiceTest, ArchiveFailureIsReportedOnceAndItsRecoveryOnce) {
  config_.backup.schedule = {};
  const std::string file = ArchiveFailureFile(kDataDir);
  auto service = Start();
  service->Tick();
  EXPECT_EQ(service->Status().archive_failure, "");
  fs_.AddFile(file, "cannot archive 0000000100000000000000A3 into /repo/wal: No space left\n");
  service->Tick();
  service->Tick();
  EXPECT_EQ(service->Status().archive_failure,
            "cannot archive 0000000100000000000000A3 into /repo/wal: No space left");
  EXPECT_EQ(Count("WAL archiving into /repo is failing: cannot archive"), 1);
  ASSERT_TRUE(fs_.Rename(file, "/gone").ok());
  service->Tick();
  service->Tick();
  EXPECT_EQ(service->Status().archive_failure, "");
  EXPECT_EQ(Count("WAL archiving into /repo works again"), 1);
  EXPECT_EQ(Count("is failing"), 1);
}

TEST_F(BackupServiceTest, ANewPolicyAppliesAtTheNextTick) {
  config_.backup.schedule = {};
  AddBackup("20251231T220000Z", hours(2));
  AddBackup("20251231T230000Z", hours(1));
  auto service = Start();
  service->Tick();
  EXPECT_EQ(runner_.Count("pg_basebackup"), 0);
  BackupConfig fresh = config_.backup;
  fresh.repository = "/elsewhere";  // not reloadable: the service keeps its own
  fresh.schedule = minutes(90);
  fresh.retain_count = 1;
  service->SetPolicy(fresh);
  EXPECT_EQ(service->Status().schedule, minutes(90));
  EXPECT_EQ(service->Status().repository, kRepo);
  service->Tick();  // the newest is 1 h old: not due for another 30 min
  EXPECT_EQ(runner_.Count("pg_basebackup"), 0);
  clock_.Advance(minutes(30));
  service->Tick();
  EXPECT_EQ(runner_.Count("pg_basebackup"), 1);
  // retain_count = 1: both older backups are removed (their .json and their directory each).
  EXPECT_EQ(runner_.Count("rm"), 4);
  EXPECT_FALSE(fs_.Exists("/elsewhere"));
}

TEST_F(BackupServiceTest, TheThreadTicksOnItsOwn) {
  auto service = Start(std::chrono::milliseconds(1));
  for (int i = 0; i < 2000 && service->Status().successes == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(service->Status().successes, 1u);
  service.reset();  // joins the thread
  EXPECT_EQ(runner_.Count("pg_basebackup"), 1);
}

TEST_F(BackupServiceTest, ACompressionSetOnReloadAppliesToTheNextBackup) {
  fs_.AddExecutable("/usr/bin/tar");
  fs_.AddExecutable("/usr/bin/zstd");
  auto service = Start();
  BackupConfig fresh = config_.backup;
  fresh.compression = BackupCompression::kZstd;
  service->SetPolicy(fresh);
  EXPECT_EQ(Count("compression = zstd from now on"), 1);
  service->Tick();  // an empty repository: due at once
  EXPECT_EQ(runner_.Count("pg_basebackup"), 1);
  EXPECT_EQ(runner_.tar_options, "client-zstd");
  EXPECT_EQ(runner_.Count("tar"), 1);  // extracted to be verified
  ASSERT_EQ(service->Status().successes, 1u) << service->Status().last_error;
  auto backups = ListBackups(fs_, kRepo);
  ASSERT_TRUE(backups.ok());
  ASSERT_EQ(backups->size(), 1u);
  EXPECT_EQ((*backups)[0].compression, "zstd");
}

}  // namespace
}  // namespace skydb::daemon
