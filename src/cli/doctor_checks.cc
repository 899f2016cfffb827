// The rules behind `skydb doctor`; see doctor_checks.h.
#include "cli/doctor_checks.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "base/strings.h"
#include "skydb/app_env.h"
#include "skydb/backup.h"
#include "skydb/data_dir_layout.h"

namespace skydb::cli {
namespace {

std::string OctalMode(uint32_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

std::string DescribeUser(const RunAs& user) {
  return "'" + user.name + "' (uid " + std::to_string(user.uid) + ")";
}

Finding Make(Severity severity, std::string topic, std::string message) {
  return Finding{severity, std::move(topic), std::move(message)};
}

// Ownership: the same rule for DIR and DIR/pgdata, since PostgreSQL checks pgdata's owner too.
std::optional<Finding> CheckOwner(const std::string& path, const FileInfo& info,
                                  std::optional<uid_t> owner) {
  if (!owner || info.uid == *owner) return std::nullopt;
  return Make(Severity::kBlocker, "data dir",
              path + " is owned by uid " + std::to_string(info.uid) +
                  ", but the cluster runs as uid " + std::to_string(*owner) + ": chown -R " +
                  std::to_string(*owner) + " " + path);
}

Finding MissingDataDir(const std::string& dir, const Error& error) {
  if (error.code == ErrorCode::kNotFound) {
    return Make(Severity::kInfo, "data dir",
                dir + " does not exist yet; skydb serve creates it (mode 0700)");
  }
  return Make(Severity::kBlocker, "data dir", "cannot inspect " + dir + ": " + error.message);
}

Finding CheckDataDirItself(const std::string& dir, const FileInfo& info,
                           std::optional<uid_t> owner) {
  const std::string mode = OctalMode(info.mode);
  if (info.type != FileType::kDirectory) {
    return Make(Severity::kBlocker, "data dir",
                dir + " is not a directory; point data_dir (--data-dir) at a directory");
  }
  if ((info.mode & 022) != 0) {
    return Make(Severity::kBlocker, "data dir",
                dir + " is writable by group or others (mode " + mode +
                    "), so anyone could tamper with the cluster: chmod 0700 " + dir);
  }
  if (auto wrong_owner = CheckOwner(dir, info, owner)) return *wrong_owner;
  if ((info.mode & 077) != 0) {
    return Make(Severity::kWarning, "data dir",
                dir + " is readable by group or others (mode " + mode +
                    ") and holds every session: chmod 0700 " + dir);
  }
  return Make(Severity::kOk, "data dir",
              dir + ": mode " + mode + ", owner uid " + std::to_string(info.uid));
}

Finding CheckPgdata(const std::string& pgdata, const FileInfo& info, std::optional<uid_t> owner) {
  if (info.type != FileType::kDirectory) {
    return Make(Severity::kBlocker, "data dir", pgdata + " is not a directory; move it aside");
  }
  if (auto wrong_owner = CheckOwner(pgdata, info, owner)) return *wrong_owner;
  // PostgreSQL's own rule (checkDataDir): 0700, or 0750 for group read access.
  if ((info.mode & 027) != 0) {
    return Make(Severity::kBlocker, "data dir",
                "PostgreSQL refuses " + pgdata + " with mode " + OctalMode(info.mode) +
                    " (it accepts 0700 or 0750): chmod 0700 " + pgdata);
  }
  return Make(Severity::kOk, "data dir", pgdata + ": mode " + OctalMode(info.mode));
}

// "15" for 15.x, "9.6" for 9.6.x: how PG_VERSION spells a major.
std::string MajorText(const PgVersion& v) {
  if (v.major >= 10) return std::to_string(v.major);
  return std::to_string(v.major) + "." + std::to_string(v.minor);
}

}  // namespace

const char* SeverityLabel(Severity s) {
  switch (s) {
    case Severity::kOk:
      return "ok";
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kBlocker:
      return "BLOCKER";
  }
  return "?";
}

Finding CheckSocketPaths(const Config& config) {
  Config absolute = config;
  absolute.data_dir = std::filesystem::absolute(config.data_dir).lexically_normal().string();
  bool embedded = config.store.database_url.empty() && config.store.kind != StoreKind::kMemory;
  auto problems = SocketPathProblems(absolute, embedded);
  if (problems.empty()) {
    return {Severity::kOk, "sockets", "every unix socket path fits the 107-byte limit"};
  }
  return {Severity::kBlocker, "sockets", Join(problems, "; ")};
}

bool AnyBlocker(const std::vector<Finding>& findings) {
  for (const auto& f : findings) {
    if (f.severity == Severity::kBlocker) return true;
  }
  return false;
}

Finding CheckBackupRepository(const FileSystem& fs, const std::string& repository,
                              BackupCompression compression) {
  if (repository.empty()) {
    return {Severity::kWarning, "backups",
            "no backup repository is configured: a lost disk, a bad migration or a DELETE "
            "without WHERE cannot be undone; set backup.repository to a directory on another "
            "disk (docs/backup.md)"};
  }
  if (!fs.IsDirectory(repository)) {
    return {Severity::kWarning, "backups",
            "backup.repository = " + repository +
                " is not a directory yet: create it owned by the service user (mode 0700) so "
                "that WAL archiving can start"};
  }
  if (auto programs = CheckCompressionPrograms(fs, compression); !programs.ok()) {
    return {Severity::kWarning, "backups",
            "backup.compression = " + CompressionName(compression) + ": " +
                programs.error().message +
                "; until then every compressed backup fails its "
                "verification"};
  }
  return {Severity::kOk, "backups", "base backups and WAL go to " + repository};
}

Finding CheckServiceUser(const UserFacts& facts) {
  const std::string topic = "service user";
  if (facts.run_as_user.empty()) {
    if (facts.euid == 0) {
      return Make(Severity::kBlocker, topic,
                  "running as root with no service user configured, and PostgreSQL refuses to "
                  "run as root: set run_as_user in the config or pass --user NAME");
    }
    return Make(Severity::kOk, topic,
                "the cluster runs as the current user (uid " + std::to_string(facts.euid) + ")");
  }
  if (!facts.run_as) return Make(Severity::kBlocker, topic, facts.lookup_error);
  const RunAs& user = *facts.run_as;
  if (user.uid == 0) {
    return Make(Severity::kBlocker, topic,
                "run_as_user " + DescribeUser(user) +
                    " is root, and PostgreSQL refuses to run as root: name an unprivileged user");
  }
  if (facts.euid != 0 && facts.euid != user.uid) {
    return Make(Severity::kBlocker, topic,
                "run_as_user is " + DescribeUser(user) + " but skydb runs as uid " +
                    std::to_string(facts.euid) +
                    " and only root can switch users: run skydb as root or as " + user.name +
                    ", or unset run_as_user");
  }
  return Make(Severity::kOk, topic, "the cluster runs as " + DescribeUser(user));
}

std::optional<uid_t> ExpectedDataDirOwner(const UserFacts& facts) {
  if (facts.run_as) return facts.run_as->uid;
  if (facts.run_as_user.empty() && facts.euid != 0) return facts.euid;
  return std::nullopt;
}

std::vector<Finding> CheckDataDir(const FileSystem& fs, const std::string& data_dir,
                                  std::optional<uid_t> expected_owner) {
  auto info = fs.Stat(data_dir);
  if (!info.ok()) return {MissingDataDir(data_dir, info.error())};
  std::vector<Finding> findings{CheckDataDirItself(data_dir, *info, expected_owner)};
  const std::string pgdata = DataDirLayout::For(data_dir).pgdata;
  if (auto pg = fs.Stat(pgdata); pg.ok()) {
    findings.push_back(CheckPgdata(pgdata, *pg, expected_owner));
  }
  return findings;
}

std::optional<Finding> CheckClusterVersion(const FileSystem& fs, const std::string& data_dir,
                                           const std::optional<PgVersion>& binaries) {
  auto content = fs.ReadFile(data_dir + "/pgdata/PG_VERSION");
  if (!content.ok() || !binaries) return std::nullopt;
  const std::string cluster{Trim(*content)};
  const std::string major = MajorText(*binaries);
  if (cluster == major) {
    return Make(Severity::kOk, "cluster",
                "the existing cluster is PostgreSQL " + cluster + ", as are the binaries");
  }
  return Make(Severity::kBlocker, "cluster",
              "the existing cluster in " + data_dir + "/pgdata is PostgreSQL " + cluster +
                  " but the chosen binaries are " + binaries->text + ": install postgresql-" +
                  cluster + " and pin postgres.version = \"" + cluster +
                  "\", or upgrade the cluster with pg_upgrade");
}

Result<SpaceFacts> StatFileSystemSpace(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) return ErrnoError("cannot statvfs " + path, errno);
  SpaceFacts space;
  space.total_bytes = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
  space.available_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  return space;
}

std::optional<uint64_t> ParsePgMemory(const std::string& value) {
  std::string_view text = Trim(value);
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 15) return std::nullopt;
  uint64_t number = std::stoull(std::string(text.substr(0, digits)));
  std::string_view unit = Trim(text.substr(digits));
  // postgresql.conf units are case-sensitive and 1024-based; a bare number counts 8kB blocks.
  struct Unit {
    std::string_view name;
    uint64_t bytes;
  };
  constexpr Unit kUnits[] = {{"", 8192},         {"B", 1},           {"kB", 1ull << 10},
                             {"MB", 1ull << 20}, {"GB", 1ull << 30}, {"TB", 1ull << 40}};
  for (const auto& u : kUnits) {
    if (unit == u.name) return number * u.bytes;
  }
  return std::nullopt;
}

std::optional<uint64_t> SharedMemoryNeed(const Settings& settings) {
  for (const auto& item : settings.items) {
    if (item.name != "shared_buffers") continue;
    std::optional<uint64_t> bytes = ParsePgMemory(item.value);
    if (!bytes && item.numeric) bytes = static_cast<uint64_t>(*item.numeric);
    if (!bytes) return std::nullopt;
    return *bytes + kSharedMemoryOverheadBytes;
  }
  return std::nullopt;
}

Finding CheckSharedMemory(const std::string& path, const Result<SpaceFacts>& space,
                          std::optional<uint64_t> need_bytes) {
  if (!space.ok()) {
    if (space.error().code == ErrorCode::kNotFound) {
      return Make(Severity::kBlocker, path,
                  path +
                      " does not exist, and PostgreSQL creates its dynamic shared memory "
                      "there: mount a tmpfs on " +
                      path);
    }
    return Make(Severity::kWarning, path, space.error().message);
  }
  std::string have =
      HumanBytes(space->available_bytes) + " free of " + HumanBytes(space->total_bytes);
  if (!need_bytes) return Make(Severity::kInfo, path, have);
  std::string need = HumanBytes(*need_bytes) + " (shared_buffers + " +
                     HumanBytes(kSharedMemoryOverheadBytes) + ")";
  if (space->available_bytes < *need_bytes) {
    return Make(Severity::kWarning, path,
                have + ", less than the " + need +
                    " the settings may use; parallel queries can fail with \"could not resize "
                    "shared memory segment\": enlarge it (docker run --shm-size, or mount -o "
                    "remount,size=... " +
                    path + ")");
  }
  return Make(Severity::kOk, path, have + "; the settings need at most " + need);
}

Finding CheckBinaries(const DiscoveryOutcome& outcome) {
  if (outcome.error && !outcome.advice.empty()) {
    return Make(Severity::kBlocker, "binaries",
                "no usable PostgreSQL binaries (each candidate is listed above with its reason): " +
                    outcome.advice);
  }
  if (outcome.error) return Make(Severity::kBlocker, "binaries", outcome.error->message);
  const Candidate& chosen = *outcome.report.chosen;
  return Make(Severity::kOk, "binaries",
              "PostgreSQL " + (chosen.version ? chosen.version->text : std::string("?")) + " in " +
                  chosen.bin_dir);
}

std::vector<Finding> TuningFindings(const Settings& settings) {
  std::vector<Finding> findings;
  for (const auto& warning : settings.warnings) {
    findings.push_back(Make(Severity::kWarning, "tuning", warning));
  }
  return findings;
}

// --- rendering -----------------------------------------------------------------------------------

namespace {

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

// "  label   first line" then continuation lines aligned under the first.
void AppendBlock(std::string& out, const std::string& label,
                 const std::vector<std::string>& lines) {
  for (size_t i = 0; i < lines.size(); ++i) {
    out += "  " + Pad(i == 0 ? label : "", 13) + lines[i] + "\n";
  }
}

std::string DescribeCandidate(const Candidate& c) {
  std::string text = c.bin_dir + " [" + BinarySourceName(c.source);
  if (c.version) text += ", PostgreSQL " + c.version->text;
  return text + "]";
}

}  // namespace

std::string RenderHostFacts(const HostFacts& host) {
  std::string ram = HumanBytes(host.ram_bytes) + " (" + host.ram_source + ")";
  if (host.ram_source != "MemTotal") ram += "; MemTotal " + HumanBytes(host.mem_total_bytes);
  if (host.cgroup_memory_limit_bytes) {
    ram += ", cgroup limit " + HumanBytes(*host.cgroup_memory_limit_bytes);
  }
  std::string cores = std::to_string(host.cores) + " (" + host.cores_source + "); " +
                      std::to_string(host.online_cpus) + " online, " +
                      std::to_string(host.affinity_cpus) + " in the affinity mask";
  if (host.cgroup_cpu_quota) {
    char quota[32];
    std::snprintf(quota, sizeof quota, "%.2f", *host.cgroup_cpu_quota);
    cores += ", cgroup quota " + std::string(quota);
  }
  cores += host.physical_cores > 0 ? ", " + std::to_string(host.physical_cores) + " physical"
                                   : ", physical cores unknown";
  std::string out = "host\n";
  AppendBlock(out, "RAM", {ram});
  AppendBlock(out, "cores", {cores});
  return out;
}

std::string RenderTuning(const Settings& settings) {
  size_t name_width = 0;
  size_t value_width = 0;
  for (const auto& item : settings.items) {
    name_width = std::max(name_width, item.name.size());
    value_width = std::max(value_width, item.value.size());
  }
  std::string out = std::string("tuning (") + ProfileName(settings.profile) + " profile)\n";
  for (const auto& item : settings.items) {
    out += "  " + Pad(item.name, name_width + 2) + Pad(item.value, value_width + 2) +
           item.derivation + (item.pinned ? " [pinned]" : "") + "\n";
  }
  return out;
}

std::string RenderDiscovery(const DiscoveryOutcome& outcome) {
  std::string out = "PostgreSQL binaries\n";
  const auto& report = outcome.report;
  if (report.chosen) {
    const Candidate& c = *report.chosen;
    AppendBlock(out, "chosen", {DescribeCandidate(c) + " from " + c.origin});
  } else {
    AppendBlock(out, "chosen", {"none (see the binaries problem below)"});
  }
  std::vector<std::string> passed;
  for (const auto& c : report.rejected) passed.push_back(DescribeCandidate(c) + ": " + c.rejection);
  AppendBlock(out, "passed over", passed);
  AppendBlock(out, "skipped", report.skipped_sources);
  return out;
}

std::string RenderFindings(const std::vector<Finding>& findings) {
  std::string out = "checks\n";
  for (const auto& f : findings) {
    out += "  " + Pad(SeverityLabel(f.severity), 9) + f.topic + ": " + f.message + "\n";
  }
  return out;
}

}  // namespace skydb::cli
