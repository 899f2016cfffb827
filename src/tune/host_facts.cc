// ReadHostFacts: usable RAM and cores from /proc, /sys and the process's cgroups.
#include <algorithm>
#include <utility>

#include "skydb/tune.h"
#include "tune/host_readers.h"

namespace skydb {
namespace {

using tune_internal::CgroupPaths;

CgroupPaths ReadSelfCgroup(const FileSystem& fs) {
  auto text = fs.ReadFile(tune_internal::kSelfCgroupPath);
  // No /proc/self/cgroup (very old kernels, some sandboxes): no cgroup limits apply.
  return text.ok() ? tune_internal::ParseSelfCgroup(*text) : CgroupPaths{};
}

Error WithHint(Error error, const std::string& hint) {
  error.message += "; " + hint;
  return error;
}

// RAM = min(MemTotal, the tightest cgroup memory limit); fills the raw readings as it goes.
Status DetectRam(const FileSystem& fs, const CgroupPaths& cgroups, HostFacts& facts) {
  const char* hint = "set host.ram to give the RAM by hand";
  auto limit = tune_internal::ReadCgroupMemoryLimit(fs, cgroups);
  if (!limit.ok()) return WithHint(std::move(limit).error(), hint);
  if (*limit) facts.cgroup_memory_limit_bytes = (*limit)->bytes;
  auto meminfo = fs.ReadFile(tune_internal::kMemInfoPath);
  if (!meminfo.ok()) return WithHint(std::move(meminfo).error(), hint);
  auto total = tune_internal::ParseMemTotal(*meminfo, tune_internal::kMemInfoPath);
  if (!total.ok()) return WithHint(std::move(total).error(), hint);
  facts.mem_total_bytes = *total;
  facts.ram_bytes = *total;
  facts.ram_source = "MemTotal";
  if (*limit && (*limit)->bytes < facts.ram_bytes) {
    facts.ram_bytes = (*limit)->bytes;
    facts.ram_source = (*limit)->source;
  }
  return Ok();
}

// Reads the online CPU list; a missing file leaves it empty, a malformed one is an error.
Result<std::vector<int>> ReadOnlineCpus(const FileSystem& fs, std::string& unreadable_reason) {
  auto text = fs.ReadFile(tune_internal::kOnlineCpusPath);
  if (!text.ok()) {
    unreadable_reason = text.error().message;
    return std::vector<int>();
  }
  return tune_internal::ParseCpuList(*text, tune_internal::kOnlineCpusPath);
}

// The smallest known candidate wins; on a tie the earlier (more basic) source is named.
void PickCores(const std::optional<tune_internal::CpuQuota>& quota, HostFacts& facts) {
  std::vector<std::pair<int, std::string>> candidates = {{facts.online_cpus, "online CPUs"},
                                                         {facts.affinity_cpus, "affinity mask"}};
  if (quota) candidates.emplace_back(quota->CoresRoundedUp(), quota->source);
  for (const auto& [count, source] : candidates) {
    if (count > 0 && (facts.cores == 0 || count < facts.cores)) {
      facts.cores = count;
      facts.cores_source = source;
    }
  }
}

// Cores = min(online CPUs, affinity mask, cgroup quota rounded up); fills the raw readings.
Status DetectCores(const FileSystem& fs, const CgroupPaths& cgroups, std::vector<int>& online,
                   HostFacts& facts) {
  const char* hint = "set host.cores to give the core count by hand";
  std::string unreadable_reason;
  auto cpus = ReadOnlineCpus(fs, unreadable_reason);
  if (!cpus.ok()) return WithHint(std::move(cpus).error(), hint);
  online = std::move(*cpus);
  facts.online_cpus = static_cast<int>(online.size());
  auto quota = tune_internal::ReadCgroupCpuQuota(fs, cgroups);
  if (!quota.ok()) return WithHint(std::move(quota).error(), hint);
  if (*quota) facts.cgroup_cpu_quota = (*quota)->Cores();
  PickCores(*quota, facts);
  if (facts.cores == 0) {
    return WithHint(Error::NotFound("cannot count usable CPUs: " + unreadable_reason), hint);
  }
  return Ok();
}

}  // namespace

Result<HostFacts> ReadHostFacts(const FileSystem& fs, int affinity_cpus,
                                const HostConfig& overrides) {
  HostFacts facts;
  facts.affinity_cpus = std::max(affinity_cpus, 0);
  CgroupPaths cgroups = ReadSelfCgroup(fs);
  // Detection runs even when overridden, so doctor and /status still see the raw readings.
  Status ram = DetectRam(fs, cgroups, facts);
  if (overrides.ram_bytes > 0) {
    facts.ram_bytes = overrides.ram_bytes;
    facts.ram_source = "config";
  } else if (!ram.ok()) {
    return std::move(ram).error();
  }
  std::vector<int> online;
  Status cores = DetectCores(fs, cgroups, online, facts);
  if (overrides.cores > 0) {
    facts.cores = overrides.cores;
    facts.cores_source = "config";
  } else if (!cores.ok()) {
    return std::move(cores).error();
  }
  facts.physical_cores = tune_internal::CountPhysicalCores(fs, online);
  return facts;
}

}  // namespace skydb
