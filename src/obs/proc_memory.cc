// Memory figures from /proc: PSS of the PostgreSQL process tree, RSS of skydb itself.
#include <cstdlib>
#include <map>

#include "base/strings.h"
#include "skydb/obs.h"

namespace skydb {

std::optional<uint64_t> SmapsRollupField(const std::string& text, const std::string& field) {
  // "Pss:                1234 kB"
  for (const auto& line : Split(text, '\n')) {
    if (!StartsWith(line, field + ":")) continue;
    char* end = nullptr;
    unsigned long long kb = std::strtoull(line.c_str() + field.size() + 1, &end, 10);
    if (end == line.c_str() + field.size() + 1) return std::nullopt;
    return static_cast<uint64_t>(kb) * 1024;
  }
  return std::nullopt;
}

std::optional<pid_t> ParentPidFromStat(const std::string& text) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; it ends at the last ')'.
  size_t close = text.rfind(')');
  if (close == std::string::npos || close + 4 > text.size()) return std::nullopt;
  char* end = nullptr;
  long ppid = std::strtol(text.c_str() + close + 4, &end, 10);
  if (end == text.c_str() + close + 4) return std::nullopt;
  return static_cast<pid_t>(ppid);
}

Result<TreeMemory> ReadProcessTreePss(const FileSystem& fs, pid_t root) {
  SKYDB_ASSIGN_OR_RETURN(auto entries, fs.ListDir("/proc"));
  std::multimap<pid_t, pid_t> children;
  for (const auto& name : entries) {
    char* end = nullptr;
    long pid = std::strtol(name.c_str(), &end, 10);
    if (name.empty() || *end != '\0') continue;
    auto stat = fs.ReadFile("/proc/" + name + "/stat");
    if (!stat.ok()) continue;  // exited since the listing
    auto ppid = ParentPidFromStat(*stat);
    if (ppid) children.emplace(*ppid, static_cast<pid_t>(pid));
  }
  TreeMemory tree;
  std::vector<pid_t> pending = {root};
  while (!pending.empty()) {
    pid_t pid = pending.back();
    pending.pop_back();
    auto rollup = fs.ReadFile("/proc/" + std::to_string(pid) + "/smaps_rollup");
    if (!rollup.ok()) {
      if (pid == root) return std::move(rollup).error().Within("postmaster memory");
      continue;
    }
    auto pss = SmapsRollupField(*rollup, "Pss");
    if (!pss) continue;
    tree.pss_bytes += *pss;
    ++tree.processes;
    auto range = children.equal_range(pid);
    for (auto it = range.first; it != range.second; ++it) pending.push_back(it->second);
  }
  return tree;
}

uint64_t ReadSelfRss(const FileSystem& fs) {
  auto rollup = fs.ReadFile("/proc/self/smaps_rollup");
  if (!rollup.ok()) return 0;
  return SmapsRollupField(*rollup, "Rss").value_or(0);
}

}  // namespace skydb
