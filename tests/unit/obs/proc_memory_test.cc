// PSS of a process tree and RSS of skydb, read from a fake /proc.
#include <gtest/gtest.h>

#include "skydb/obs.h"
#include "support/fakes.h"

namespace skydb {
namespace {

using testing::FakeFileSystem;

std::string Rollup(int rss_kb, int pss_kb) {
  return "55d0c0000000-7ffd00000000 ---p 00000000 00:00 0                          [rollup]\n"
         "Rss:            " +
         std::to_string(rss_kb) +
         " kB\n"
         "Pss:            " +
         std::to_string(pss_kb) +
         " kB\n"
         "Pss_Anon:          100 kB\n";
}

std::string Stat(int pid, const std::string& comm, int ppid) {
  return std::to_string(pid) + " (" + comm + ") S " + std::to_string(ppid) + " 1 1 0 -1\n";
}

TEST(SmapsRollupFieldTest, ReadsKilobytesAsBytes) {
  EXPECT_EQ(SmapsRollupField(Rollup(300, 120), "Pss"), 120u * 1024);
  EXPECT_EQ(SmapsRollupField(Rollup(300, 120), "Rss"), 300u * 1024);
  EXPECT_EQ(SmapsRollupField(Rollup(300, 120), "Swap"), std::nullopt);
  EXPECT_EQ(SmapsRollupField("Pss: kB\n", "Pss"), std::nullopt);
}

TEST(ParentPidFromStatTest, CommMayHoldSpacesAndParentheses) {
  EXPECT_EQ(ParentPidFromStat(Stat(10, "postgres", 1)), 1);
  EXPECT_EQ(ParentPidFromStat(Stat(11, "postgres: walwriter ", 10)), 10);
  EXPECT_EQ(ParentPidFromStat(Stat(12, "a) S 99 (b", 10)), 10);
  EXPECT_EQ(ParentPidFromStat("garbage"), std::nullopt);
  EXPECT_EQ(ParentPidFromStat("1 (x)"), std::nullopt);
}

TEST(ReadProcessTreePssTest, SumsTheRootAndEveryDescendantOnly) {
  FakeFileSystem fs;
  fs.AddFile("/proc/1/stat", Stat(1, "init", 0));
  fs.AddFile("/proc/1/smaps_rollup", Rollup(5000, 5000));
  fs.AddFile("/proc/100/stat", Stat(100, "postgres", 1));  // the postmaster
  fs.AddFile("/proc/100/smaps_rollup", Rollup(20000, 1000));
  fs.AddFile("/proc/101/stat", Stat(101, "postgres: checkpointer ", 100));
  fs.AddFile("/proc/101/smaps_rollup", Rollup(18000, 300));
  fs.AddFile("/proc/102/stat", Stat(102, "postgres: skydb postgres [local] idle", 100));
  fs.AddFile("/proc/102/smaps_rollup", Rollup(19000, 200));
  fs.AddFile("/proc/103/stat", Stat(103, "child of a backend", 102));
  fs.AddFile("/proc/103/smaps_rollup", Rollup(100, 50));
  fs.AddFile("/proc/104/stat", Stat(104, "postgres: gone", 100));  // exited: no smaps_rollup
  fs.AddFile("/proc/200/stat", Stat(200, "unrelated", 1));
  fs.AddFile("/proc/200/smaps_rollup", Rollup(9000, 9000));
  fs.AddFile("/proc/self/smaps_rollup", Rollup(777, 700));
  auto tree = ReadProcessTreePss(fs, 100);
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  EXPECT_EQ(tree->pss_bytes, (1000u + 300 + 200 + 50) * 1024) << "PSS, never summed RSS";
  EXPECT_EQ(tree->processes, 4);
}

TEST(ReadProcessTreePssTest, AMissingRootIsAnError) {
  FakeFileSystem fs;
  fs.AddFile("/proc/1/stat", Stat(1, "init", 0));
  auto tree = ReadProcessTreePss(fs, 100);
  ASSERT_FALSE(tree.ok());
  EXPECT_NE(tree.error().message.find("postmaster memory"), std::string::npos);
}

TEST(ReadSelfRssTest, ReadsRssOrZero) {
  FakeFileSystem fs;
  EXPECT_EQ(ReadSelfRss(fs), 0u);
  fs.AddFile("/proc/self/smaps_rollup", Rollup(777, 700));
  EXPECT_EQ(ReadSelfRss(fs), 777u * 1024);
}

}  // namespace
}  // namespace skydb
