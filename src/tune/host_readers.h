// Readers behind ReadHostFacts: pure parsers for /proc and /sys file formats, and the cgroup
// v1/v2 limit lookups over an injected FileSystem. Internal to src/tune (and its unit tests).
//
// Thread-safety: pure functions. Failure: a present file that does not parse is an error whose
// message names the file; a missing or unreadable optional file (cgroup, topology) is "no limit".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb::tune_internal {

inline constexpr const char* kMemInfoPath = "/proc/meminfo";
inline constexpr const char* kSelfCgroupPath = "/proc/self/cgroup";
inline constexpr const char* kOnlineCpusPath = "/sys/devices/system/cpu/online";
inline constexpr const char* kCgroupRoot = "/sys/fs/cgroup";

// A non-negative decimal integer, surrounding whitespace allowed; nullopt otherwise.
std::optional<uint64_t> ParseDecimal(std::string_view text);

// MemTotal from /proc/meminfo text, in bytes. `path` only labels errors.
Result<uint64_t> ParseMemTotal(const std::string& meminfo, const std::string& path);

// A kernel CPU list ("0-3,8-11\n", "0") → sorted CPU numbers. `path` only labels errors.
Result<std::vector<int>> ParseCpuList(const std::string& text, const std::string& path);

// This process's cgroups, from /proc/self/cgroup. Each path starts with "/"; "/" is the root.
struct CgroupPaths {
  std::optional<std::string> unified;    // cgroup v2: the "0::/path" line
  std::optional<std::string> v1_memory;  // cgroup v1: the line whose controllers include memory
  std::optional<std::string> v1_cpu;     // cgroup v1: the line whose controllers include cpu
};
CgroupPaths ParseSelfCgroup(const std::string& text);

// "/a/b" → {"/a/b", "/a", "/"}: the cgroup and its ancestors, innermost first. A path that
// climbs out of the namespace ("/../x") yields just {"/"}.
std::vector<std::string> SelfAndAncestors(const std::string& cgroup_path);

struct MemoryLimit {
  uint64_t bytes = 0;
  std::string source;  // "cgroup v2 memory.max" or "cgroup v1 memory.limit_in_bytes"
};
// The smallest memory limit over the cgroup and its ancestors, v2 and v1; nullopt when none.
Result<std::optional<MemoryLimit>> ReadCgroupMemoryLimit(const FileSystem& fs,
                                                         const CgroupPaths& paths);

struct CpuQuota {
  uint64_t quota_us = 0;
  uint64_t period_us = 0;
  std::string source;  // "cgroup v2 cpu.max" or "cgroup v1 cpu.cfs_quota_us"

  double Cores() const { return static_cast<double>(quota_us) / static_cast<double>(period_us); }
  // Whole cores the quota allows, rounded up, at least 1.
  int CoresRoundedUp() const;
};
// The tightest CPU quota over the cgroup and its ancestors, v2 and v1; nullopt when none.
Result<std::optional<CpuQuota>> ReadCgroupCpuQuota(const FileSystem& fs, const CgroupPaths& paths);

// Distinct (physical_package_id, core_id) pairs over `online_cpus`; 0 if any is unreadable.
int CountPhysicalCores(const FileSystem& fs, const std::vector<int>& online_cpus);

}  // namespace skydb::tune_internal
