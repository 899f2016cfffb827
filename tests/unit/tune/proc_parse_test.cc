// The pure /proc and /sys parsers, table-driven.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tune/host_readers.h"

namespace skydb::tune_internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseCpuListTest, AcceptsKernelFormats) {
  struct Case {
    std::string text;
    std::vector<int> cpus;
  };
  const std::vector<Case> cases = {
      {"0\n", {0}},         {"0-3\n", {0, 1, 2, 3}}, {"0-1,8-9", {0, 1, 8, 9}},
      {"0,2,4", {0, 2, 4}}, {"3,0-1,1", {0, 1, 3}},  // sorted, duplicates merged
  };
  for (const Case& c : cases) {
    auto cpus = ParseCpuList(c.text, "online");
    ASSERT_TRUE(cpus.ok()) << c.text;
    EXPECT_EQ(*cpus, c.cpus) << c.text;
  }
}

TEST(ParseCpuListTest, RejectsMalformedListsNamingThePath) {
  for (std::string text : {"", "\n", "a", "3-1", "0-", "1-2-3", "0,,1", "0-99999999"}) {
    auto cpus = ParseCpuList(text, "/sys/x/online");
    ASSERT_FALSE(cpus.ok()) << "'" << text << "'";
    EXPECT_THAT(cpus.error().message, HasSubstr("/sys/x/online"));
  }
}

TEST(ParseMemTotalTest, ReadsKilobytes) {
  auto bytes = ParseMemTotal("MemFree: 1 kB\nMemTotal:        2022400 kB\n", "meminfo");
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 2022400ull * 1024);
}

TEST(ParseMemTotalTest, RejectsOtherUnitsAndZero) {
  for (std::string text : {"MemTotal: 12 MB\n", "MemTotal: 0 kB\n", "MemTotal: kB\n", ""}) {
    auto bytes = ParseMemTotal(text, "/proc/meminfo");
    ASSERT_FALSE(bytes.ok()) << text;
    EXPECT_THAT(bytes.error().message, HasSubstr("/proc/meminfo"));
  }
}

TEST(ParseSelfCgroupTest, UnifiedOnly) {
  CgroupPaths paths = ParseSelfCgroup("0::/system.slice/skydb.service\n");
  EXPECT_EQ(paths.unified, "/system.slice/skydb.service");
  EXPECT_FALSE(paths.v1_memory.has_value());
  EXPECT_FALSE(paths.v1_cpu.has_value());
}

TEST(ParseSelfCgroupTest, V1ControllersAndPathsWithColons) {
  CgroupPaths paths =
      ParseSelfCgroup("12:memory:/docker/a:b\n4:cpu,cpuacct:/docker/c\n1:name=systemd:/x\nbogus\n");
  EXPECT_EQ(paths.v1_memory, "/docker/a:b");
  EXPECT_EQ(paths.v1_cpu, "/docker/c");
  EXPECT_FALSE(paths.unified.has_value());
}

TEST(ParseSelfCgroupTest, CpuacctAloneIsNotCpu) {
  CgroupPaths paths = ParseSelfCgroup("5:cpuacct:/a\n");
  EXPECT_FALSE(paths.v1_cpu.has_value());
}

TEST(SelfAndAncestorsTest, InnermostFirstEndingAtRoot) {
  EXPECT_THAT(SelfAndAncestors("/a/b/c"), ElementsAre("/a/b/c", "/a/b", "/a", "/"));
  EXPECT_THAT(SelfAndAncestors("/"), ElementsAre("/"));
  EXPECT_THAT(SelfAndAncestors("//a/./b/"), ElementsAre("/a/b", "/a", "/"));
}

TEST(SelfAndAncestorsTest, PathOutsideTheNamespaceIsJustTheRoot) {
  EXPECT_THAT(SelfAndAncestors("/../../user.slice"), ElementsAre("/"));
}

TEST(CpuQuotaTest, RoundsUpToWholeCoresAtLeastOne) {
  EXPECT_EQ((CpuQuota{150000, 100000, ""}.CoresRoundedUp()), 2);
  EXPECT_EQ((CpuQuota{200000, 100000, ""}.CoresRoundedUp()), 2);
  EXPECT_EQ((CpuQuota{200001, 100000, ""}.CoresRoundedUp()), 3);
  EXPECT_EQ((CpuQuota{10000, 100000, ""}.CoresRoundedUp()), 1);
  EXPECT_EQ((CpuQuota{0, 100000, ""}.CoresRoundedUp()), 1);
}

}  // namespace
}  // namespace skydb::tune_internal
