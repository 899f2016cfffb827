#include "support/fakes.h"

#include <gtest/gtest.h>

namespace skydb::testing {
namespace {

TEST(FakeFileSystemTest, TreeListingAndSymlinks) {
  FakeFileSystem fs;
  fs.AddExecutable("/usr/lib/postgresql/15/bin/postgres");
  fs.AddFile("/proc/meminfo", "MemTotal: 1 kB\n");
  fs.AddSymlink("/usr/bin/pg_config", "/usr/share/postgresql-common/pg_wrapper");
  fs.AddExecutable("/usr/share/postgresql-common/pg_wrapper");
  EXPECT_TRUE(fs.IsDirectory("/usr/lib/postgresql"));
  EXPECT_TRUE(fs.IsExecutable("/usr/lib/postgresql/15/bin/postgres"));
  EXPECT_FALSE(fs.IsExecutable("/proc/meminfo"));
  EXPECT_EQ(*fs.ReadFile("/proc/meminfo"), "MemTotal: 1 kB\n");
  EXPECT_EQ(*fs.ListDir("/usr/lib/postgresql"), std::vector<std::string>{"15"});
  EXPECT_EQ(*fs.RealPath("/usr/bin/pg_config"), "/usr/share/postgresql-common/pg_wrapper");
  EXPECT_EQ(fs.ReadFile("/nope").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(fs.MakeDir("/usr", 0700).error().code, ErrorCode::kConflict);
}

TEST(FakeClockTest, MovesOnlyWhenTold) {
  FakeClock clock;
  auto t0 = clock.Now();
  clock.SleepFor(std::chrono::milliseconds(500));
  clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(clock.Now() - t0, std::chrono::milliseconds(1500));
  EXPECT_EQ(clock.TotalSlept(), std::chrono::milliseconds(500));
}

TEST(FakeProcessRunnerTest, AnswersScriptedCommands) {
  FakeProcessRunner runner;
  runner.Answer("/bin/pg_config --bindir", {0, 0, "/usr/lib/postgresql/15/bin\n", ""});
  CommandSpec spec;
  spec.argv = {"/bin/pg_config", "--bindir"};
  auto out = runner.Run(spec);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->out, "/usr/lib/postgresql/15/bin\n");
  spec.argv = {"/bin/other"};
  EXPECT_FALSE(runner.Run(spec).ok());
  EXPECT_EQ(runner.calls().size(), 2u);
}

}  // namespace
}  // namespace skydb::testing
