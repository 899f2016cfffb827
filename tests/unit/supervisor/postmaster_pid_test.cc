#include "supervisor/postmaster_pid.h"

#include <gtest/gtest.h>

#include "supervisor_fakes.h"

namespace skydb::supervisor {
namespace {

constexpr char kPidFile[] =
    "4321\n/srv/sky/pgdata\n1700000100\n5432\n/srv/sky/run\n\n  5432001     32768\nready   \n";

TEST(PostmasterPidTest, ParsesEveryLine) {
  auto f = ParsePostmasterPid(kPidFile);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->pid, 4321);
  EXPECT_EQ(f->data_dir, "/srv/sky/pgdata");
  EXPECT_EQ(f->start_epoch, 1700000100);
  EXPECT_EQ(f->port, 5432);
  EXPECT_EQ(f->socket_dir, "/srv/sky/run");
  EXPECT_EQ(f->status, "ready");
}

TEST(PostmasterPidTest, ParsesAFileWrittenMidStart) {
  auto f = ParsePostmasterPid("77\n/d\n1700000000\n");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->pid, 77);
  EXPECT_EQ(f->status, "");
}

TEST(PostmasterPidTest, RejectsGarbage) {
  EXPECT_FALSE(ParsePostmasterPid("").ok());
  EXPECT_FALSE(ParsePostmasterPid("abc\n/d\n1\n").ok());
  EXPECT_FALSE(ParsePostmasterPid("-5\n/d\n1\n").ok());
  EXPECT_FALSE(ParsePostmasterPid("5\n/d\nnoon\n").ok());
}

// A /proc for pid 4321, started at btime 1700000000 + 9000 ticks / 100 = +90 s. An empty `exe`
// or `cwd` is a link skydb may not read (another user's process, or one not dumpable).
void AddProc(testing::FakeFileSystem& fs, const std::string& exe, const std::string& cwd,
             const char* cmdline = nullptr) {
  fs.AddDir("/srv/sky/pgdata", 0700);
  fs.AddDir("/srv/other", 0700);
  fs.AddFile("/usr/lib/postgresql/15/bin/postgres", "", 0755);
  fs.AddFile("/bin/bash", "", 0755);
  fs.AddFile("/proc/stat", "cpu  1 2 3\nbtime 1700000000\nprocesses 5\n");
  fs.AddFile("/proc/4321/stat",
             "4321 (postgres) S 1 4321 4321 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 9000 100 2\n");
  if (!exe.empty()) fs.AddSymlink("/proc/4321/exe", exe);
  if (!cwd.empty()) fs.AddSymlink("/proc/4321/cwd", cwd);
  if (cmdline != nullptr) fs.AddFile("/proc/4321/cmdline", cmdline, 0444);  // argv[0] is read
}

TEST(ProcessStartEpochTest, FromProcStatAndBtime) {
  testing::FakeFileSystem fs;
  AddProc(fs, "/usr/lib/postgresql/15/bin/postgres", "/srv/sky/pgdata");
  EXPECT_EQ(ProcessStartEpoch(fs, 4321, 100), 1700000090);
  EXPECT_EQ(ProcessStartEpoch(fs, 999, 100), 0);
}

struct LeftoverCase {
  const char* name;
  const char* pidfile;
  bool alive;
  const char* exe;  // "" : unreadable
  const char* cwd;  // "" : unreadable
  LeftoverVerdict want;
  const char* cmdline = nullptr;  // argv, NUL-separated; nullptr: unreadable
};

class LeftoverTest : public ::testing::TestWithParam<LeftoverCase> {};

TEST_P(LeftoverTest, Identifies) {
  const auto& c = GetParam();
  testing::FakeFileSystem fs;
  testing::FakeHostOps host;
  AddProc(fs, c.exe, c.cwd, c.cmdline);
  if (c.pidfile != nullptr) fs.AddFile("/srv/sky/pgdata/postmaster.pid", c.pidfile, 0600);
  if (c.alive) host.alive.insert(4321);
  LeftoverCheck check = IdentifyLeftover(fs, host, "/srv/sky/pgdata");
  EXPECT_EQ(check.verdict, c.want) << c.name << ": " << check.reason;
}

constexpr char kPg[] = "/usr/lib/postgresql/15/bin/postgres";
constexpr char kOurs[] = "4321\n/srv/sky/pgdata\n1700000091\n5432\n/srv/sky/run\n";
constexpr char kOldFile[] = "4321\n/srv/sky/pgdata\n1600000000\n";  // from long before
constexpr char kPgArgv[] = "/usr/lib/postgresql/15/bin/postgres\0-D\0/srv/sky/pgdata\0";
constexpr char kSleepArgv[] =
    "sleep\0"
    "60\0";

// kNotOurs is what lets skydb move postmaster.pid aside, so it needs a fact /proc shows that no
// postmaster of this directory could have; what skydb cannot read, or facts that disagree, are
// kUnknown (left to PostgreSQL).
INSTANTIATE_TEST_SUITE_P(
    Cases, LeftoverTest,
    ::testing::Values(
        LeftoverCase{"no pid file", nullptr, true, kPg, "/srv/sky/pgdata", LeftoverVerdict::kNone},
        LeftoverCase{"dead pid", kOurs, false, kPg, "/srv/sky/pgdata", LeftoverVerdict::kStale},
        LeftoverCase{"garbage file", "x\n", true, kPg, "/srv/sky/pgdata", LeftoverVerdict::kStale},
        LeftoverCase{"pid reused by bash", kOurs, true, "/bin/bash", "/srv/sky/pgdata",
                     LeftoverVerdict::kNotOurs},
        LeftoverCase{"postgres of another dir", kOurs, true, kPg, "/srv/other",
                     LeftoverVerdict::kNotOurs},
        LeftoverCase{"start time far off, /proc unreadable", kOldFile, true, "", "",
                     LeftoverVerdict::kNotOurs, kSleepArgv},
        LeftoverCase{"start time far off but postgres in this dir", kOldFile, true, kPg,
                     "/srv/sky/pgdata", LeftoverVerdict::kUnknown},
        LeftoverCase{"nothing readable", kOurs, true, "", "", LeftoverVerdict::kUnknown},
        LeftoverCase{"only argv readable", kOurs, true, "", "", LeftoverVerdict::kUnknown,
                     kSleepArgv},
        LeftoverCase{"binary replaced by an upgrade", kOurs, true, "", "/srv/sky/pgdata",
                     LeftoverVerdict::kOurs, kPgArgv},
        LeftoverCase{"data dir renamed since the file was written",
                     "4321\n/srv/old/pgdata\n1700000091\n", true, kPg, "/srv/sky/pgdata",
                     LeftoverVerdict::kOurs},
        LeftoverCase{"ours", kOurs, true, kPg, "/srv/sky/pgdata", LeftoverVerdict::kOurs}),
    [](const auto& param_info) {
      std::string n = param_info.param.name;
      for (char& ch : n) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return n;
    });

}  // namespace
}  // namespace skydb::supervisor
