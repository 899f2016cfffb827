// Fixture trees for host-facts tests: /proc and /sys as a bare-metal host, a container under
// cgroup v2 or v1, and an SMT host would show them. Values are invented, never the test
// machine's own.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/fakes.h"

namespace skydb::testing {

inline constexpr uint64_t kMiBytes = uint64_t{1024} * 1024;
inline constexpr uint64_t kGiBytes = 1024 * kMiBytes;

// /proc/meminfo with MemTotal of `mib` MiB, among the lines a real one has around it.
inline void AddMemInfo(FakeFileSystem& fs, uint64_t mib) {
  fs.AddFile("/proc/meminfo", "MemTotal:       " + std::to_string(mib * 1024) +
                                  " kB\nMemFree:          123456 kB\n"
                                  "MemAvailable:     234567 kB\nBuffers:            1024 kB\n");
}

// /sys/devices/system/cpu/online plus a topology directory per CPU in `topology`
// (cpu number → {physical_package_id, core_id}).
struct CpuTopology {
  int cpu;
  int package;
  int core;
};
inline void AddCpus(FakeFileSystem& fs, const std::string& online,
                    const std::vector<CpuTopology>& topology) {
  fs.AddFile("/sys/devices/system/cpu/online", online + "\n");
  for (const CpuTopology& t : topology) {
    std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(t.cpu) + "/topology/";
    fs.AddFile(dir + "physical_package_id", std::to_string(t.package) + "\n");
    fs.AddFile(dir + "core_id", std::to_string(t.core) + "\n");
  }
}

// `count` CPUs 0..count-1, one per core, one package: no SMT.
inline std::vector<CpuTopology> OneThreadPerCore(int count) {
  std::vector<CpuTopology> cpus;
  cpus.reserve(count);
  for (int i = 0; i < count; ++i) cpus.push_back({i, 0, i});
  return cpus;
}

// A bare-metal host: 16 GiB, 8 cores without SMT, in a systemd session cgroup with no limits.
inline void BareMetalHost(FakeFileSystem& fs) {
  AddMemInfo(fs, uint64_t{16} * 1024);
  AddCpus(fs, "0-7", OneThreadPerCore(8));
  fs.AddFile("/proc/self/cgroup", "0::/user.slice/user-1000.slice/session-2.scope\n");
  for (std::string dir : {"/sys/fs/cgroup/user.slice", "/sys/fs/cgroup/user.slice/user-1000.slice",
                          "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope"}) {
    fs.AddFile(dir + "/memory.max", "max\n");
    fs.AddFile(dir + "/cpu.max", "max 100000\n");
  }
}

}  // namespace skydb::testing
