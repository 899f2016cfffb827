// /proc readings (see proc_tree.h).
#include "proc_tree.h"

#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace skydb::loadgen {
namespace {

struct ProcStat {
  int ppid = 0;
  double cpu_seconds = 0;
};

std::map<int, ProcStat> ReadAll() {
  std::map<int, ProcStat> all;
  double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream f(entry.path() / "stat");
    std::string line;
    if (!std::getline(f, line)) continue;
    auto close = line.rfind(')');
    if (close == std::string::npos || close + 2 > line.size()) continue;
    std::istringstream rest(line.substr(close + 2));
    std::vector<std::string> fields;
    for (std::string field; rest >> field && fields.size() < 15;) fields.push_back(field);
    if (fields.size() < 15) continue;
    // utime + stime, plus cutime + cstime: the CPU of children that exited and were reaped
    // (PostgreSQL's autovacuum workers and short-lived backends), which no live entry shows.
    all[std::stoi(name)] = {std::stoi(fields[1]), (std::stod(fields[11]) + std::stod(fields[12]) +
                                                   std::stod(fields[13]) + std::stod(fields[14])) /
                                                      ticks};
  }
  return all;
}

std::vector<int> Descendants(const std::map<int, ProcStat>& all, int root) {
  std::vector<int> out;
  std::vector<int> frontier = {root};
  while (!frontier.empty()) {
    int parent = frontier.back();
    frontier.pop_back();
    for (const auto& [pid, st] : all) {
      if (st.ppid == parent) {
        out.push_back(pid);
        frontier.push_back(pid);
      }
    }
  }
  return out;
}

uint64_t KibField(const std::string& path, const std::string& field) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1));
  }
  return 0;
}

}  // namespace

double MachineBusySeconds() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0;
  if (!(f >> cpu >> user >> nice >> system) || cpu != "cpu") return 0;
  return (user + nice + system) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int CoresAvailable() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  return CPU_COUNT(&set);
}

double TreeCpuSeconds(int root) {
  if (root <= 0) return 0;
  auto all = ReadAll();
  double total = all.contains(root) ? all[root].cpu_seconds : 0;
  for (int pid : Descendants(all, root)) total += all[pid].cpu_seconds;
  return total;
}

TreeMemory ReadTreeMemory(int root) {
  TreeMemory m;
  m.pid = root;
  if (root <= 0) return m;
  std::string base = "/proc/" + std::to_string(root);
  m.root_rss_kib = KibField(base + "/status", "VmRSS");
  m.root_pss_kib = KibField(base + "/smaps_rollup", "Pss");
  auto all = ReadAll();
  for (int pid : Descendants(all, root)) {
    ++m.descendants;
    m.descendants_pss_kib += KibField("/proc/" + std::to_string(pid) + "/smaps_rollup", "Pss");
  }
  return m;
}

}  // namespace skydb::loadgen
