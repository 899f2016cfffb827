// The standard process_* figures (as Prometheus's client libraries export them) from /proc.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "base/strings.h"
#include "skydb/obs.h"

namespace skydb {

std::optional<ProcSelfStat> ParseProcSelfStat(const std::string& text) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; it ends at the last ')'.
  // After it, field 3 (state) is the first: utime is field 14, stime 15, starttime 22, vsize 23,
  // rss 24 (proc(5)).
  size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  std::vector<std::string> f;
  for (std::string word; fields >> word && f.size() < 22;) f.push_back(word);
  if (f.size() < 22) return std::nullopt;
  auto number = [](const std::string& s) { return std::strtoull(s.c_str(), nullptr, 10); };
  ProcSelfStat stat;
  stat.utime_ticks = number(f[14 - 3]);
  stat.stime_ticks = number(f[15 - 3]);
  stat.start_ticks = number(f[22 - 3]);
  stat.vsize_bytes = number(f[23 - 3]);
  stat.rss_pages = number(f[24 - 3]);
  return stat;
}

std::optional<int64_t> ParseBootTime(const std::string& proc_stat) {
  for (const auto& line : Split(proc_stat, '\n')) {
    if (!StartsWith(line, "btime ")) continue;
    char* end = nullptr;
    long long boot = std::strtoll(line.c_str() + 6, &end, 10);
    if (end == line.c_str() + 6) return std::nullopt;
    return static_cast<int64_t>(boot);
  }
  return std::nullopt;
}

ProcessFigures ComputeProcessFigures(const ProcSelfStat& stat, int64_t boot_time,
                                     long ticks_per_second, long page_size) {
  ProcessFigures p;
  double hz = ticks_per_second > 0 ? static_cast<double>(ticks_per_second) : 100.0;
  p.cpu_seconds = static_cast<double>(stat.utime_ticks + stat.stime_ticks) / hz;
  p.start_time_seconds =
      static_cast<double>(boot_time) + static_cast<double>(stat.start_ticks) / hz;
  p.virtual_memory_bytes = stat.vsize_bytes;
  p.resident_memory_bytes =
      stat.rss_pages * static_cast<uint64_t>(page_size > 0 ? page_size : 4096);
  return p;
}

std::optional<ProcessFigures> ReadProcessFigures(const FileSystem& fs) {
  auto self = fs.ReadFile("/proc/self/stat");
  auto system = fs.ReadFile("/proc/stat");
  if (!self.ok() || !system.ok()) return std::nullopt;
  auto stat = ParseProcSelfStat(*self);
  auto boot = ParseBootTime(*system);
  if (!stat || !boot) return std::nullopt;
  ProcessFigures p =
      ComputeProcessFigures(*stat, *boot, ::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE));
  if (auto fds = fs.ListDir("/proc/self/fd"); fds.ok()) p.open_fds = fds->size();
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) p.max_fds = limit.rlim_cur;
  return p;
}

}  // namespace skydb
