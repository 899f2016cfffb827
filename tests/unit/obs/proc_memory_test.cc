// PSS of a process tree and RSS of skydb, read from a fake /proc.
#include <gtest/gtest.h>

#include <ctime>

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

// A /proc/self/stat line (proc(5)); the command name holds spaces and a parenthesis.
TEST(ProcSelfStatTest, ReadsCpuStartTimeAndMemoryAfterTheCommandName) {
  std::string line =
      "4242 (sky db) (x) S 1 4242 4242 0 -1 4194560 1200 0 0 0 250 125 0 0 20 0 9 0 "
      "987654 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";
  auto stat = ParseProcSelfStat(line);
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->utime_ticks, 250u);
  EXPECT_EQ(stat->stime_ticks, 125u);
  EXPECT_EQ(stat->start_ticks, 987654u);
  EXPECT_EQ(stat->vsize_bytes, 104857600u);
  EXPECT_EQ(stat->rss_pages, 2560u);
  EXPECT_EQ(ParseProcSelfStat("4242 (short) S 1 2 3"), std::nullopt);
  EXPECT_EQ(ParseProcSelfStat("garbage"), std::nullopt);

  EXPECT_EQ(ParseBootTime("cpu  1 2 3\nbtime 1764547200\nprocesses 9\n"), 1764547200);
  EXPECT_EQ(ParseBootTime("cpu  1 2 3\n"), std::nullopt);

  ProcessFigures p = ComputeProcessFigures(*stat, 1764547200, 100, 4096);
  EXPECT_DOUBLE_EQ(p.cpu_seconds, 3.75);
  EXPECT_DOUBLE_EQ(p.start_time_seconds, 1764547200 + 9876.54);
  EXPECT_EQ(p.resident_memory_bytes, 2560u * 4096);
  EXPECT_EQ(p.virtual_memory_bytes, 104857600u);
}

// The real /proc of this test process: plausible figures.
TEST(ProcSelfStatTest, ThisProcessHasPlausibleFigures) {
  auto fs = NewRealFileSystem();
  auto p = ReadProcessFigures(*fs);
  ASSERT_TRUE(p.has_value());
  EXPECT_GT(p->resident_memory_bytes, 0u);
  EXPECT_GE(p->open_fds, 3u);
  EXPECT_GE(p->max_fds, p->open_fds);
  EXPECT_GT(p->start_time_seconds, 1.5e9);
  EXPECT_LE(p->start_time_seconds, static_cast<double>(std::time(nullptr)) + 1);
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
