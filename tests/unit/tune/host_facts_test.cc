// ReadHostFacts on fixture trees: bare metal, cgroup v2 and v1 containers, SMT, affinity,
// overrides and unreadable or malformed files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host_fixtures.h"
#include "skydb/tune.h"

namespace skydb {
namespace {

using testing::AddCpus;
using testing::AddMemInfo;
using testing::BareMetalHost;
using testing::FakeFileSystem;
using ::testing::HasSubstr;
using testing::kGiBytes;
using testing::kMiBytes;
using testing::OneThreadPerCore;

HostFacts ReadOk(const FakeFileSystem& fs, int affinity = 0, HostConfig overrides = {}) {
  auto facts = ReadHostFacts(fs, affinity, overrides);
  EXPECT_TRUE(facts.ok()) << (facts.ok() ? "" : facts.error().message);
  return facts.ok() ? *facts : HostFacts{};
}

TEST(HostFactsTest, BareMetalUsesMemTotalAndOnlineCpus) {
  FakeFileSystem fs;
  BareMetalHost(fs);
  HostFacts facts = ReadOk(fs, 8);
  EXPECT_EQ(facts.ram_bytes, 16 * kGiBytes);
  EXPECT_EQ(facts.ram_source, "MemTotal");
  EXPECT_EQ(facts.mem_total_bytes, 16 * kGiBytes);
  EXPECT_FALSE(facts.cgroup_memory_limit_bytes.has_value());
  EXPECT_EQ(facts.cores, 8);
  EXPECT_EQ(facts.cores_source, "online CPUs");
  EXPECT_EQ(facts.online_cpus, 8);
  EXPECT_EQ(facts.affinity_cpus, 8);
  EXPECT_FALSE(facts.cgroup_cpu_quota.has_value());
  EXPECT_EQ(facts.physical_cores, 8);
}

TEST(HostFactsTest, NoCgroupFileAtAllMeansNoLimits) {
  FakeFileSystem fs;
  AddMemInfo(fs, 4096);
  AddCpus(fs, "0-3", OneThreadPerCore(4));
  HostFacts facts = ReadOk(fs);
  EXPECT_EQ(facts.ram_bytes, 4 * kGiBytes);
  EXPECT_EQ(facts.cores, 4);
}

// A pod in a kubepods hierarchy: the tightest limit sits on a middle ancestor, not the leaf.
void NestedV2Container(FakeFileSystem& fs) {
  AddMemInfo(fs, uint64_t{64} * 1024);
  AddCpus(fs, "0-15", OneThreadPerCore(16));
  fs.AddFile("/proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  fs.AddFile("/sys/fs/cgroup/kubepods/memory.max", std::to_string(4 * kGiBytes) + "\n");
  fs.AddFile("/sys/fs/cgroup/kubepods/pod1/memory.max", std::to_string(2 * kGiBytes) + "\n");
  fs.AddFile("/sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "max\n");
  fs.AddFile("/sys/fs/cgroup/kubepods/cpu.max", "400000 100000\n");
  fs.AddFile("/sys/fs/cgroup/kubepods/pod1/cpu.max", "150000 100000\n");
  fs.AddFile("/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n");
}

TEST(HostFactsTest, CgroupV2ContainerTakesTightestAncestorLimits) {
  FakeFileSystem fs;
  NestedV2Container(fs);
  HostFacts facts = ReadOk(fs, 16);
  EXPECT_EQ(facts.ram_bytes, 2 * kGiBytes);
  EXPECT_EQ(facts.ram_source, "cgroup v2 memory.max");
  EXPECT_EQ(facts.mem_total_bytes, 64 * kGiBytes);
  EXPECT_EQ(facts.cgroup_memory_limit_bytes, 2 * kGiBytes);
  EXPECT_EQ(facts.cores, 2);  // 1.5 cores of quota, rounded up
  EXPECT_EQ(facts.cores_source, "cgroup v2 cpu.max");
  ASSERT_TRUE(facts.cgroup_cpu_quota.has_value());
  EXPECT_DOUBLE_EQ(*facts.cgroup_cpu_quota, 1.5);
  EXPECT_EQ(facts.online_cpus, 16);
}

TEST(HostFactsTest, CgroupV2NamespaceRootLimitsApply) {
  // With a cgroup namespace the process sees itself at "/", and the limits sit at the mount.
  FakeFileSystem fs;
  AddMemInfo(fs, uint64_t{32} * 1024);
  AddCpus(fs, "0-7", OneThreadPerCore(8));
  fs.AddFile("/proc/self/cgroup", "0::/\n");
  fs.AddFile("/sys/fs/cgroup/memory.max", std::to_string(1975 * kMiBytes) + "\n");
  fs.AddFile("/sys/fs/cgroup/cpu.max", "200000 100000\n");
  HostFacts facts = ReadOk(fs);
  EXPECT_EQ(facts.ram_bytes, 1975 * kMiBytes);
  EXPECT_EQ(facts.cores, 2);
}

TEST(HostFactsTest, CgroupLimitAboveMemTotalIsReportedButMemTotalWins) {
  FakeFileSystem fs;
  AddMemInfo(fs, 1024);
  AddCpus(fs, "0", OneThreadPerCore(1));
  fs.AddFile("/proc/self/cgroup", "0::/big\n");
  fs.AddFile("/sys/fs/cgroup/big/memory.max", std::to_string(8 * kGiBytes) + "\n");
  fs.AddFile("/sys/fs/cgroup/big/cpu.max", "800000 100000\n");
  HostFacts facts = ReadOk(fs);
  EXPECT_EQ(facts.ram_bytes, 1 * kGiBytes);
  EXPECT_EQ(facts.ram_source, "MemTotal");
  EXPECT_EQ(facts.cgroup_memory_limit_bytes, 8 * kGiBytes);
  EXPECT_EQ(facts.cores, 1);
  EXPECT_EQ(facts.cores_source, "online CPUs");
}

// A Docker container on a cgroup v1 host (hybrid: systemd's unified line is present too).
void V1Container(FakeFileSystem& fs, const std::string& limit, const std::string& quota) {
  AddMemInfo(fs, uint64_t{8} * 1024);
  AddCpus(fs, "0-7", OneThreadPerCore(8));
  fs.AddFile("/proc/self/cgroup",
             "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n"
             "1:name=systemd:/docker/abc\n0::/system.slice/docker.service\n");
  fs.AddFile("/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  fs.AddFile("/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", limit + "\n");
  fs.AddFile("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  fs.AddFile("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", quota + "\n");
  fs.AddFile("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
}

TEST(HostFactsTest, CgroupV1ContainerLimits) {
  FakeFileSystem fs;
  V1Container(fs, std::to_string(512 * kMiBytes), "250000");
  HostFacts facts = ReadOk(fs, 8);
  EXPECT_EQ(facts.ram_bytes, 512 * kMiBytes);
  EXPECT_EQ(facts.ram_source, "cgroup v1 memory.limit_in_bytes");
  EXPECT_EQ(facts.cores, 3);  // 2.5 rounded up
  EXPECT_EQ(facts.cores_source, "cgroup v1 cpu.cfs_quota_us");
  EXPECT_DOUBLE_EQ(*facts.cgroup_cpu_quota, 2.5);
}

TEST(HostFactsTest, CgroupV1UnlimitedValuesMeanNoLimit) {
  FakeFileSystem fs;
  V1Container(fs, "9223372036854771712", "-1");
  HostFacts facts = ReadOk(fs, 8);
  EXPECT_EQ(facts.ram_bytes, 8 * kGiBytes);
  EXPECT_EQ(facts.ram_source, "MemTotal");
  EXPECT_FALSE(facts.cgroup_memory_limit_bytes.has_value());
  EXPECT_EQ(facts.cores, 8);
  EXPECT_FALSE(facts.cgroup_cpu_quota.has_value());
}

TEST(HostFactsTest, CgroupV1CpuControllerMountedAsCpu) {
  FakeFileSystem fs;
  AddMemInfo(fs, uint64_t{8} * 1024);
  AddCpus(fs, "0-7", OneThreadPerCore(8));
  fs.AddFile("/proc/self/cgroup", "3:cpu:/job\n");
  fs.AddFile("/sys/fs/cgroup/cpu/job/cpu.cfs_quota_us", "50000\n");  // period: kernel default
  HostFacts facts = ReadOk(fs);
  EXPECT_EQ(facts.cores, 1);  // half a core still runs on one
  EXPECT_DOUBLE_EQ(*facts.cgroup_cpu_quota, 0.5);
}

TEST(HostFactsTest, SmtSiblingsMergeIntoPhysicalCores) {
  FakeFileSystem fs;
  AddMemInfo(fs, 8192);
  // 8 logical CPUs, two hyperthreads per core: cpuN and cpuN+4 share core N.
  std::vector<testing::CpuTopology> cpus;
  cpus.reserve(8);
  for (int i = 0; i < 8; ++i) cpus.push_back({i, 0, i % 4});
  AddCpus(fs, "0-7", cpus);
  HostFacts facts = ReadOk(fs);
  EXPECT_EQ(facts.cores, 8);
  EXPECT_EQ(facts.physical_cores, 4);
}

TEST(HostFactsTest, SameCoreIdOnTwoSocketsIsTwoCores) {
  FakeFileSystem fs;
  AddMemInfo(fs, 8192);
  AddCpus(fs, "0-3", {{0, 0, 0}, {1, 0, 1}, {2, 1, 0}, {3, 1, 1}});
  EXPECT_EQ(ReadOk(fs).physical_cores, 4);
}

TEST(HostFactsTest, PhysicalCoresCountOnlyOnlineCpus) {
  FakeFileSystem fs;
  AddMemInfo(fs, 8192);
  AddCpus(fs, "0-1,4-5", OneThreadPerCore(8));  // cpu2, 3, 6, 7 offline
  HostFacts facts = ReadOk(fs);
  EXPECT_EQ(facts.online_cpus, 4);
  EXPECT_EQ(facts.physical_cores, 4);
}

TEST(HostFactsTest, UnreadableTopologyMeansZeroPhysicalCores) {
  FakeFileSystem fs;
  AddMemInfo(fs, 8192);
  AddCpus(fs, "0-3", OneThreadPerCore(2));  // cpu2 and cpu3 have no topology files
  HostFacts facts = ReadOk(fs);
  EXPECT_EQ(facts.cores, 4);
  EXPECT_EQ(facts.physical_cores, 0);
}

TEST(HostFactsTest, AffinitySmallerThanOnlineWins) {
  FakeFileSystem fs;
  BareMetalHost(fs);
  HostFacts facts = ReadOk(fs, 3);
  EXPECT_EQ(facts.cores, 3);
  EXPECT_EQ(facts.cores_source, "affinity mask");
  EXPECT_EQ(facts.online_cpus, 8);
}

TEST(HostFactsTest, QuotaBelowAffinityBelowOnline) {
  FakeFileSystem fs;
  NestedV2Container(fs);
  HostFacts facts = ReadOk(fs, 4);
  EXPECT_EQ(facts.cores, 2);
  EXPECT_EQ(facts.cores_source, "cgroup v2 cpu.max");
}

TEST(HostFactsTest, ConfigOverridesWinAndKeepRawReadings) {
  FakeFileSystem fs;
  NestedV2Container(fs);
  HostFacts facts = ReadOk(fs, 16, HostConfig{1975 * kMiBytes, 6});
  EXPECT_EQ(facts.ram_bytes, 1975 * kMiBytes);
  EXPECT_EQ(facts.ram_source, "config");
  EXPECT_EQ(facts.cores, 6);
  EXPECT_EQ(facts.cores_source, "config");
  EXPECT_EQ(facts.mem_total_bytes, 64 * kGiBytes);
  EXPECT_EQ(facts.cgroup_memory_limit_bytes, 2 * kGiBytes);
  EXPECT_EQ(facts.online_cpus, 16);
}

TEST(HostFactsTest, OneOverrideLeavesTheOtherDetected) {
  FakeFileSystem fs;
  BareMetalHost(fs);
  HostFacts facts = ReadOk(fs, 8, HostConfig{0, 2});
  EXPECT_EQ(facts.ram_source, "MemTotal");
  EXPECT_EQ(facts.cores, 2);
  EXPECT_EQ(facts.cores_source, "config");
}

TEST(HostFactsTest, MissingMemInfoIsAnErrorNamingTheFile) {
  FakeFileSystem fs;
  AddCpus(fs, "0-3", OneThreadPerCore(4));
  auto facts = ReadHostFacts(fs, 0, {});
  ASSERT_FALSE(facts.ok());
  EXPECT_THAT(facts.error().message, HasSubstr("/proc/meminfo"));
  EXPECT_THAT(facts.error().message, HasSubstr("host.ram"));
}

TEST(HostFactsTest, MissingMemInfoIsFineWithARamOverride) {
  FakeFileSystem fs;
  AddCpus(fs, "0-3", OneThreadPerCore(4));
  HostFacts facts = ReadOk(fs, 0, HostConfig{2 * kGiBytes, 0});
  EXPECT_EQ(facts.ram_bytes, 2 * kGiBytes);
  EXPECT_EQ(facts.mem_total_bytes, 0u);
  EXPECT_EQ(facts.cores, 4);
}

TEST(HostFactsTest, MemInfoWithoutMemTotalIsAnError) {
  FakeFileSystem fs;
  fs.AddFile("/proc/meminfo", "MemFree: 1 kB\n");
  AddCpus(fs, "0", OneThreadPerCore(1));
  auto facts = ReadHostFacts(fs, 0, {});
  ASSERT_FALSE(facts.ok());
  EXPECT_THAT(facts.error().message, HasSubstr("MemTotal"));
  EXPECT_THAT(facts.error().message, HasSubstr("/proc/meminfo"));
}

TEST(HostFactsTest, MalformedCgroupMemoryMaxNamesTheFile) {
  FakeFileSystem fs;
  AddMemInfo(fs, 4096);
  AddCpus(fs, "0-3", OneThreadPerCore(4));
  fs.AddFile("/proc/self/cgroup", "0::/app\n");
  fs.AddFile("/sys/fs/cgroup/app/memory.max", "lots\n");
  auto facts = ReadHostFacts(fs, 0, {});
  ASSERT_FALSE(facts.ok());
  EXPECT_THAT(facts.error().message, HasSubstr("/sys/fs/cgroup/app/memory.max"));
  EXPECT_THAT(facts.error().message, HasSubstr("'lots'"));
}

TEST(HostFactsTest, MalformedCpuMaxNamesTheFile) {
  FakeFileSystem fs;
  AddMemInfo(fs, 4096);
  AddCpus(fs, "0-3", OneThreadPerCore(4));
  fs.AddFile("/proc/self/cgroup", "0::/app\n");
  fs.AddFile("/sys/fs/cgroup/app/cpu.max", "150000 0\n");
  auto facts = ReadHostFacts(fs, 0, {});
  ASSERT_FALSE(facts.ok());
  EXPECT_THAT(facts.error().message, HasSubstr("/sys/fs/cgroup/app/cpu.max"));
}

TEST(HostFactsTest, MalformedOnlineListNamesTheFile) {
  FakeFileSystem fs;
  AddMemInfo(fs, 4096);
  fs.AddFile("/sys/devices/system/cpu/online", "0-x\n");
  auto facts = ReadHostFacts(fs, 4, {});
  ASSERT_FALSE(facts.ok());
  EXPECT_THAT(facts.error().message, HasSubstr("/sys/devices/system/cpu/online"));
}

TEST(HostFactsTest, MissingOnlineListFallsBackToAffinity) {
  FakeFileSystem fs;
  AddMemInfo(fs, 4096);
  HostFacts facts = ReadOk(fs, 4);
  EXPECT_EQ(facts.cores, 4);
  EXPECT_EQ(facts.cores_source, "affinity mask");
  EXPECT_EQ(facts.physical_cores, 0);
}

TEST(HostFactsTest, NoWayToCountCpusIsAnErrorNamingTheFile) {
  FakeFileSystem fs;
  AddMemInfo(fs, 4096);
  auto facts = ReadHostFacts(fs, 0, {});
  ASSERT_FALSE(facts.ok());
  EXPECT_THAT(facts.error().message, HasSubstr("/sys/devices/system/cpu/online"));
  EXPECT_THAT(facts.error().message, HasSubstr("host.cores"));
}

}  // namespace
}  // namespace skydb
