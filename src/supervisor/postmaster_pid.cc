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

// What /proc shows of a live pid; empty where skydb may not read it.
struct ProcFacts {
  std::string exe;      // the executable's name, from /proc/PID/exe
  std::string argv0;    // argv[0]'s name: exe is unreadable once the binary was replaced
  std::string cwd;      // the working directory, canonical
  int64_t started = 0;  // epoch seconds; 0 if unknown
};

ProcFacts ReadProc(const FileSystem& fs, HostOps& host, pid_t pid) {
  std::string proc = "/proc/" + std::to_string(pid);
  ProcFacts f;
  if (auto exe = fs.RealPath(proc + "/exe"); exe.ok()) f.exe = BaseName(*exe);
  if (auto cmdline = fs.ReadFile(proc + "/cmdline"); cmdline.ok()) {
    f.argv0 = BaseName(std::string(cmdline->c_str()));
  }
  if (auto cwd = fs.RealPath(proc + "/cwd"); cwd.ok()) f.cwd = *cwd;
  f.started = ProcessStartEpoch(fs, pid, host.ClockTicksPerSecond());
  return f;
}

std::string Canonical(const FileSystem& fs, const std::string& path) {
  auto real = fs.RealPath(path);
  return real.ok() ? *real : path;
}

// A pidfile written at most this long after the process started is the process's own.
bool StartAgrees(int64_t file_epoch, int64_t started) {
  return started == 0 || (file_epoch >= started - kStartSlackBeforeSeconds &&
                          file_epoch <= started + kStartSlackAfterSeconds);
}

}  // namespace

const char* LeftoverVerdictName(LeftoverVerdict v) {
  switch (v) {
    case LeftoverVerdict::kNone:
      return "none";
    case LeftoverVerdict::kStale:
      return "stale";
    case LeftoverVerdict::kNotOurs:
      return "not ours";
    case LeftoverVerdict::kUnknown:
      return "unknown";
    case LeftoverVerdict::kOurs:
      return "ours";
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
  ProcFacts proc = ReadProc(fs, host, pid);
  if (!proc.exe.empty() && proc.exe != "postgres") {
    return verdict(LeftoverVerdict::kNotOurs, "it runs " + proc.exe + ", not postgres");
  }
  std::string ours = Canonical(fs, pgdata);
  if (!proc.cwd.empty() && proc.cwd != ours) {
    return verdict(LeftoverVerdict::kNotOurs,
                   "its working directory is " + proc.cwd + ", not this data directory");
  }
  bool postgres_here = (proc.exe == "postgres" || (proc.exe.empty() && proc.argv0 == "postgres")) &&
                       !proc.cwd.empty();
  if (!StartAgrees(file->start_epoch, proc.started)) {
    // A postgres in this very directory whose start time disagrees (a clock step?) is not
    // proof enough to take its directory away; for anything else it is (pid reuse).
    if (postgres_here) {
      return verdict(LeftoverVerdict::kUnknown,
                     "a postgres in this data directory, but its start time does not match the "
                     "file's");
    }
    return verdict(LeftoverVerdict::kNotOurs, "it started at " + std::to_string(proc.started) +
                                                  ", the file says " +
                                                  std::to_string(file->start_epoch));
  }
  if (postgres_here) return verdict(LeftoverVerdict::kOurs, "live postmaster of this directory");
  return verdict(LeftoverVerdict::kUnknown,
                 "skydb may not read what it runs or where (/proc/" + std::to_string(pid) + ")");
}

}  // namespace skydb::supervisor
