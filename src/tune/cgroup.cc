// cgroup v1/v2 memory and CPU limits, and the CPU topology, read through a FileSystem.
//
// A limit set on any ancestor cgroup binds this process too, so every reader walks from the
// process's own cgroup up to the root and keeps the tightest limit it finds.
#include <charconv>
#include <set>
#include <utility>

#include "base/strings.h"
#include "tune/host_readers.h"

namespace skydb::tune_internal {
namespace {

// cgroup v1 reports "no limit" as LONG_MAX rounded down to a page (9223372036854771712);
// anything this large is treated as unlimited.
constexpr uint64_t kV1UnlimitedAtLeast = uint64_t{1} << 62;
// The kernel's default CFS period, used when a v1 quota is set but its period is unreadable.
constexpr uint64_t kDefaultCfsPeriodUs = 100000;

std::optional<std::string> ReadIfPresent(const FileSystem& fs, const std::string& path) {
  auto text = fs.ReadFile(path);
  if (!text.ok()) return std::nullopt;  // an absent or unreadable cgroup file is "no limit"
  return std::string(Trim(*text));
}

std::string CgroupDir(const std::string& mount, const std::string& cgroup) {
  return cgroup == "/" ? mount : mount + cgroup;
}

Error Unparsable(const std::string& path, const std::string& expected, const std::string& got) {
  return Error::Io("cannot parse " + path + ": expected " + expected + ", got '" + got + "'");
}

bool Tighter(const MemoryLimit& a, const MemoryLimit& b) { return a.bytes < b.bytes; }
bool Tighter(const CpuQuota& a, const CpuQuota& b) { return a.Cores() < b.Cores(); }

// Calls read_one(dir) for the cgroup under `mount` and each ancestor; keeps the tightest limit.
template <typename Limit, typename ReadOne>
Result<std::optional<Limit>> Tightest(const std::string& mount, const std::string& cgroup,
                                      ReadOne read_one) {
  std::optional<Limit> best;
  for (const std::string& path : SelfAndAncestors(cgroup)) {
    SKYDB_ASSIGN_OR_RETURN(std::optional<Limit> limit, read_one(CgroupDir(mount, path)));
    if (limit && (!best || Tighter(*limit, *best))) best = std::move(limit);
  }
  return best;
}

template <typename Limit>
std::optional<Limit> TighterOf(std::optional<Limit> a, std::optional<Limit> b) {
  if (!a) return b;
  if (!b) return a;
  return Tighter(*b, *a) ? b : a;
}

Result<std::optional<MemoryLimit>> ReadV2MemoryMax(const FileSystem& fs, const std::string& dir) {
  std::string path = dir + "/memory.max";
  auto text = ReadIfPresent(fs, path);
  if (!text || *text == "max") return std::optional<MemoryLimit>();
  auto bytes = ParseDecimal(*text);
  if (!bytes) return Unparsable(path, "a byte count or 'max'", *text);
  return std::optional<MemoryLimit>(MemoryLimit{*bytes, "cgroup v2 memory.max"});
}

Result<std::optional<MemoryLimit>> ReadV1MemoryLimit(const FileSystem& fs, const std::string& dir) {
  std::string path = dir + "/memory.limit_in_bytes";
  auto text = ReadIfPresent(fs, path);
  if (!text || *text == "-1") return std::optional<MemoryLimit>();
  auto bytes = ParseDecimal(*text);
  if (!bytes) return Unparsable(path, "a byte count", *text);
  if (*bytes >= kV1UnlimitedAtLeast) return std::optional<MemoryLimit>();
  return std::optional<MemoryLimit>(MemoryLimit{*bytes, "cgroup v1 memory.limit_in_bytes"});
}

Result<std::optional<CpuQuota>> ReadV2CpuMax(const FileSystem& fs, const std::string& dir) {
  std::string path = dir + "/cpu.max";
  auto text = ReadIfPresent(fs, path);
  if (!text) return std::optional<CpuQuota>();
  auto fields = Split(*text, ' ');
  if (fields.size() == 2 && fields[0] == "max") return std::optional<CpuQuota>();
  auto quota = fields.size() == 2 ? ParseDecimal(fields[0]) : std::nullopt;
  auto period = fields.size() == 2 ? ParseDecimal(fields[1]) : std::nullopt;
  if (!quota || !period || *period == 0) {
    return Unparsable(path, "'<quota> <period>' or 'max <period>'", *text);
  }
  return std::optional<CpuQuota>(CpuQuota{*quota, *period, "cgroup v2 cpu.max"});
}

Result<std::optional<CpuQuota>> ReadV1CfsQuota(const FileSystem& fs, const std::string& dir) {
  std::string quota_path = dir + "/cpu.cfs_quota_us";
  auto quota_text = ReadIfPresent(fs, quota_path);
  if (!quota_text || *quota_text == "-1") return std::optional<CpuQuota>();
  auto quota = ParseDecimal(*quota_text);
  if (!quota) return Unparsable(quota_path, "microseconds or -1", *quota_text);
  std::string period_path = dir + "/cpu.cfs_period_us";
  auto period_text = ReadIfPresent(fs, period_path);
  auto period = period_text ? ParseDecimal(*period_text) : kDefaultCfsPeriodUs;
  if (!period || *period == 0) return Unparsable(period_path, "microseconds", *period_text);
  return std::optional<CpuQuota>(CpuQuota{*quota, *period, "cgroup v1 cpu.cfs_quota_us"});
}

// The v1 cpu controller is mounted as "cpu" on most systems, "cpu,cpuacct" on some.
std::string V1CpuMount(const FileSystem& fs) {
  std::string mount = std::string(kCgroupRoot) + "/cpu";
  if (fs.IsDirectory(mount)) return mount;
  return std::string(kCgroupRoot) + "/cpu,cpuacct";
}

std::optional<long> ReadSignedInt(const FileSystem& fs, const std::string& path) {
  auto text = ReadIfPresent(fs, path);
  if (!text) return std::nullopt;
  long value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || text->empty()) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

int CpuQuota::CoresRoundedUp() const {
  uint64_t cores = (quota_us + period_us - 1) / period_us;
  if (cores < 1) return 1;
  return cores > (1u << 20) ? (1 << 20) : static_cast<int>(cores);
}

Result<std::optional<MemoryLimit>> ReadCgroupMemoryLimit(const FileSystem& fs,
                                                         const CgroupPaths& paths) {
  std::optional<MemoryLimit> v2, v1;
  auto v2_reader = [&fs](const std::string& dir) { return ReadV2MemoryMax(fs, dir); };
  auto v1_reader = [&fs](const std::string& dir) { return ReadV1MemoryLimit(fs, dir); };
  if (paths.unified) {
    SKYDB_ASSIGN_OR_RETURN(v2, Tightest<MemoryLimit>(kCgroupRoot, *paths.unified, v2_reader));
  }
  if (paths.v1_memory) {
    std::string mount = std::string(kCgroupRoot) + "/memory";
    SKYDB_ASSIGN_OR_RETURN(v1, Tightest<MemoryLimit>(mount, *paths.v1_memory, v1_reader));
  }
  return TighterOf(std::move(v2), std::move(v1));
}

Result<std::optional<CpuQuota>> ReadCgroupCpuQuota(const FileSystem& fs, const CgroupPaths& paths) {
  std::optional<CpuQuota> v2, v1;
  auto v2_reader = [&fs](const std::string& dir) { return ReadV2CpuMax(fs, dir); };
  auto v1_reader = [&fs](const std::string& dir) { return ReadV1CfsQuota(fs, dir); };
  if (paths.unified) {
    SKYDB_ASSIGN_OR_RETURN(v2, Tightest<CpuQuota>(kCgroupRoot, *paths.unified, v2_reader));
  }
  if (paths.v1_cpu) {
    SKYDB_ASSIGN_OR_RETURN(v1, Tightest<CpuQuota>(V1CpuMount(fs), *paths.v1_cpu, v1_reader));
  }
  return TighterOf(std::move(v2), std::move(v1));
}

int CountPhysicalCores(const FileSystem& fs, const std::vector<int>& online_cpus) {
  std::set<std::pair<long, long>> cores;  // (physical_package_id, core_id)
  for (int cpu : online_cpus) {
    std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    auto package = ReadSignedInt(fs, dir + "physical_package_id");
    auto core = ReadSignedInt(fs, dir + "core_id");
    if (!package || !core) return 0;  // a partial count would understate; report unknown
    cores.emplace(*package, *core);
  }
  return static_cast<int>(cores.size());
}

}  // namespace skydb::tune_internal
