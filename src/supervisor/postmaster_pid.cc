#include "supervisor/postmaster_pid.h"

#include <cstdlib>
#include <vector>

#include "base/strings.h"

namespace skydb::supervisor {
namespace {

// A pidfile written at most this long after the process started is the process's own.
constexpr int64_t kStartSlackBeforeSeconds = 2;
constexpr int64_t kStartSlackAfterSeconds = 60;

bool ParseInt(std::string_view text, int64_t& out) {
  std::string s(Trim(text));
  if (s.empty()) return false;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (end == nullptr || *end != '\0') return false;
  out = v;
  return true;
}

std::string BaseName(std::string path) {
  const std::string deleted = " (deleted)";  // the binary was replaced by a package upgrade
  if (EndsWith(path, deleted)) path.resize(path.size() - deleted.size());
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The executable's name: /proc/PID/exe when we may read it, else argv[0] from cmdline.
std::string ExecutableName(const FileSystem& fs, const std::string& proc) {
  if (auto exe = fs.RealPath(proc + "/exe"); exe.ok()) return BaseName(*exe);
  if (auto cmdline = fs.ReadFile(proc + "/cmdline"); cmdline.ok()) {
    return BaseName(std::string(cmdline->c_str()));
  }
  return "";
}

std::string Canonical(const FileSystem& fs, const std::string& path) {
  auto real = fs.RealPath(path);
  return real.ok() ? *real : path;
}

}  // namespace

const char* LeftoverVerdictName(LeftoverVerdict v) {
  switch (v) {
    case LeftoverVerdict::kNone: return "none";
    case LeftoverVerdict::kStale: return "stale";
    case LeftoverVerdict::kNotOurs: return "not ours";
    case LeftoverVerdict::kOurs: return "ours";
  }
  return "unknown";
}

Result<PostmasterPidFile> ParsePostmasterPid(const std::string& text) {
  std::vector<std::string> lines = Split(text, '\n');
  if (lines.size() < 3) return Error::InvalidArgument("postmaster.pid has fewer than 3 lines");
  PostmasterPidFile file;
  int64_t pid = 0;
  if (!ParseInt(lines[0], pid) || pid <= 0) {
    return Error::InvalidArgument("postmaster.pid: bad pid line '" + lines[0] + "'");
  }
  file.pid = static_cast<pid_t>(pid);
  file.data_dir = std::string(Trim(lines[1]));
  if (!ParseInt(lines[2], file.start_epoch)) {
    return Error::InvalidArgument("postmaster.pid: bad start time line '" + lines[2] + "'");
  }
  int64_t port = 0;
  if (lines.size() > 3 && ParseInt(lines[3], port)) file.port = static_cast<int>(port);
  if (lines.size() > 4) file.socket_dir = std::string(Trim(lines[4]));
  if (lines.size() > 7) file.status = std::string(Trim(lines[7]));
  return file;
}

int64_t ProcessStartEpoch(const FileSystem& fs, pid_t pid, long ticks_per_second) {
  auto stat = fs.ReadFile("/proc/" + std::to_string(pid) + "/stat");
  auto proc_stat = fs.ReadFile("/proc/stat");
  if (!stat.ok() || !proc_stat.ok() || ticks_per_second <= 0) return 0;
  // Field 22 (starttime) counts from the field after the parenthesised command name.
  auto close = stat->rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<std::string> fields;
  for (const auto& f : Split(std::string_view(*stat).substr(close + 1), ' ')) {
    if (!f.empty()) fields.push_back(f);
  }
  int64_t start_ticks = 0, btime = 0;
  if (fields.size() < 20 || !ParseInt(fields[19], start_ticks)) return 0;
  for (const auto& line : Split(*proc_stat, '\n')) {
    if (StartsWith(line, "btime ") && ParseInt(line.substr(6), btime)) break;
  }
  if (btime == 0) return 0;
  return btime + start_ticks / ticks_per_second;
}

LeftoverCheck IdentifyLeftover(const FileSystem& fs, HostOps& host, const std::string& pgdata) {
  auto text = fs.ReadFile(pgdata + "/postmaster.pid");
  if (!text.ok()) return {LeftoverVerdict::kNone, 0, "no postmaster.pid"};
  auto file = ParsePostmasterPid(*text);
  if (!file.ok()) return {LeftoverVerdict::kStale, 0, file.error().message};
  pid_t pid = file->pid;
  auto verdict = [&](LeftoverVerdict v, std::string why) { return LeftoverCheck{v, pid, why}; };
  if (!host.ProcessExists(pid)) return verdict(LeftoverVerdict::kStale, "pid is not running");
  std::string proc = "/proc/" + std::to_string(pid);
  std::string exe = ExecutableName(fs, proc);
  if (exe != "postgres") {
    return verdict(LeftoverVerdict::kNotOurs, "pid runs '" + exe + "', not postgres");
  }
  std::string ours = Canonical(fs, pgdata);
  if (Canonical(fs, file->data_dir) != ours || Canonical(fs, proc + "/cwd") != ours) {
    return verdict(LeftoverVerdict::kNotOurs, "postgres pid serves another data directory");
  }
  int64_t started = ProcessStartEpoch(fs, pid, host.ClockTicksPerSecond());
  if (started != 0 && (file->start_epoch < started - kStartSlackBeforeSeconds ||
                       file->start_epoch > started + kStartSlackAfterSeconds)) {
    return verdict(LeftoverVerdict::kNotOurs,
                   "postmaster.pid start time does not match the process start time");
  }
  return verdict(LeftoverVerdict::kOurs, "live postmaster of this data directory");
}

}  // namespace skydb::supervisor
