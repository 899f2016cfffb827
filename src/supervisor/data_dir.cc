#include "supervisor/data_dir.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "base/strings.h"

namespace skydb::supervisor {
namespace {

std::string Octal(uint32_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

constexpr size_t kForeignEntriesNamed = 3;  // how many entries a refusal quotes

// "a, b, c and 4 more"
std::string NameSome(const std::vector<std::string>& names) {
  std::vector<std::string> shown(names.begin(),
                                 names.begin() + std::min(names.size(), kForeignEntriesNamed));
  std::string out = Join(shown, ", ");
  if (names.size() > shown.size()) {
    out += " and " + std::to_string(names.size() - shown.size()) + " more";
  }
  return out;
}

Status EnsureOwner(FileSystem& fs, HostOps& host, const std::string& path,
                   const ClusterUser& owner) {
  if (!owner.drop_privileges) return Ok();
  SKYDB_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(path));
  if (info.uid == owner.user.uid && info.gid == owner.user.gid) return Ok();
  return host.Chown(path, owner.user.uid, owner.user.gid);
}

}  // namespace

Status CheckDirSafe(const std::string& path, const FileInfo& info) {
  if (info.type != FileType::kDirectory) {
    return Error::Conflict(path +
                           " exists and is not a directory; remove it or choose another "
                           "--data-dir");
  }
  if ((info.mode & 022) != 0) {
    return Error::Permission(path + " has mode " + Octal(info.mode) +
                             ", writable by other users; fix it with: chmod 0700 " + path);
  }
  return Ok();
}

bool IsSkydbEntry(const std::string& name) {
  // The packages make DIR the service user's home (packaging/debian/postinst): `skydb psql` run
  // as that user leaves psql's history there, an operator's shell as that user bash's.
  // upgrade/: `skydb upgrade`'s work, and the cluster it kept (skydb/upgrade.h).
  for (const char* own : {"skydb.lock", "pgdata", "run", "runtime", "upgrade", "lost+found",
                          ".psql_history", ".bash_history"}) {
    if (name == own) return true;
  }
  return false;
}

Status EnsurePrivateDir(FileSystem& fs, const std::string& path, uint32_t mode) {
  auto info = fs.Stat(path);
  if (!info.ok()) {
    if (info.error().code != ErrorCode::kNotFound) return info.error();
    SKYDB_RETURN_IF_ERROR(fs.MakeDir(path, 0700));
    return mode == 0700 ? Ok() : fs.Chmod(path, mode);
  }
  SKYDB_RETURN_IF_ERROR(CheckDirSafe(path, *info));
  if ((info->mode & 07777) == mode) return Ok();
  // Readable or searchable by others (e.g. made by hand under umask 022): the status file and
  // the sockets' directory would be open to every local user. Writable ones were refused above.
  SKYDB_RETURN_IF_ERROR(fs.Chmod(path, mode));
  spdlog::info("{} had mode {}; set it to {} (skydb's data directories are private)", path,
               Octal(info->mode), Octal(mode));
  return Ok();
}

Status ShareRunDir(FileSystem& fs, HostOps& host, const DataDirLayout& layout,
                   const RunDirAccess& access) {
  for (const auto& [path, mode] :
       {std::pair{layout.root, access.root_mode()}, std::pair{layout.run, access.run_mode()}}) {
    SKYDB_RETURN_IF_ERROR(EnsurePrivateDir(fs, path, mode));
    if (!access.group) continue;
    SKYDB_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(path));
    if (info.gid == access.group->gid) continue;
    Status given = host.Chown(path, info.uid, access.group->gid);
    if (!given.ok()) {
      return Error::Permission("cannot give " + path + " to the app's group " + access.group->name +
                               " (" + given.error().message +
                               "): the service user must be a member of it (usermod -aG " +
                               access.group->name + " <service user>), or start skydb as root");
    }
  }
  return Ok();
}

Status CheckDataDir(const FileSystem& fs, const std::string& root) {
  auto info = fs.Stat(root);
  if (!info.ok()) return info.error().code == ErrorCode::kNotFound ? Ok() : info.error();
  SKYDB_RETURN_IF_ERROR(CheckDirSafe(root, *info));
  SKYDB_ASSIGN_OR_RETURN(auto entries, fs.ListDir(root));
  std::vector<std::string> foreign;
  for (const auto& name : entries) {
    if (!IsSkydbEntry(name)) foreign.push_back(name);
  }
  if (foreign.empty()) return Ok();
  std::string fix = "choose a new or empty --data-dir (for example " + root +
                    "/skydb), or move those entries away";
  return Error::Conflict(root + " is not empty and is not a skydb data directory (it holds " +
                         NameSome(foreign) + "); skydb will not take it over: " + fix);
}

Status PrepareRoot(FileSystem& fs, const std::string& root, uint32_t mode) {
  SKYDB_RETURN_IF_ERROR(CheckDataDir(fs, root));
  return EnsurePrivateDir(fs, root, mode);
}

Status CheckReachable(const FileSystem& fs, const std::string& root, const ClusterUser& owner) {
  if (!owner.drop_privileges) return Ok();
  const RunAs& u = owner.user;
  for (auto slash = root.find('/', 1); slash != std::string::npos;
       slash = root.find('/', slash + 1)) {
    std::string parent = root.substr(0, slash);
    auto info = fs.Stat(parent);
    if (!info.ok()) continue;
    bool searchable = (info->mode & 0001) != 0 || (info->uid == u.uid && (info->mode & 0100)) ||
                      (info->gid == u.gid && (info->mode & 0010));
    if (!searchable) {
      return Error::Permission("PostgreSQL runs as " + u.name + ", who cannot reach " + root +
                               ": " + parent + " (mode " + Octal(info->mode) +
                               ") is not searchable by it; choose a data directory under a path "
                               "that " +
                               u.name + " can traverse (e.g. /var/lib/skydb)");
    }
  }
  return Ok();
}

Status PrepareDirs(FileSystem& fs, HostOps& host, const DataDirLayout& layout,
                   const ClusterUser& owner, const RunDirAccess& access) {
  for (const auto& [dir, mode] :
       {std::pair{layout.root, access.root_mode()}, std::pair{layout.run, access.run_mode()},
        std::pair{layout.runtime, uint32_t{0700}}}) {
    SKYDB_RETURN_IF_ERROR(EnsurePrivateDir(fs, dir, mode));
    SKYDB_RETURN_IF_ERROR(EnsureOwner(fs, host, dir, owner));
  }
  SKYDB_RETURN_IF_ERROR(ShareRunDir(fs, host, layout, access));
  if (fs.Exists(layout.pgdata)) {
    SKYDB_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(layout.pgdata));
    SKYDB_RETURN_IF_ERROR(CheckDirSafe(layout.pgdata, info));
  }
  return Ok();
}

CommandSpec InitdbCommand(const std::string& bin_dir, const std::string& pgdata,
                          const std::string& superuser) {
  CommandSpec spec;
  spec.argv = {bin_dir + "/initdb",
               "-D",
               pgdata,
               "--data-checksums",
               "--encoding=UTF8",
               "--locale=C",
               "--auth-local=peer",
               "--auth-host=reject",
               "--username=" + superuser};
  spec.env["NOTIFY_SOCKET"] = std::nullopt;
  spec.timeout = std::chrono::minutes(5);
  return spec;
}

Result<PgdataState> InspectPgdata(const FileSystem& fs, const std::string& pgdata,
                                  int binaries_major, const std::string& binaries_version) {
  if (!fs.Exists(pgdata)) return PgdataState::kAbsent;
  SKYDB_ASSIGN_OR_RETURN(auto entries, fs.ListDir(pgdata));
  if (entries.empty()) return PgdataState::kEmpty;
  auto version_text = fs.ReadFile(pgdata + "/PG_VERSION");
  if (!version_text.ok()) {
    return Error::Conflict(pgdata +
                           " is not empty and holds no PostgreSQL cluster (no "
                           "PG_VERSION); skydb will not run initdb over it: move its contents "
                           "away or choose another --data-dir");
  }
  std::string cluster_major(Trim(*version_text));
  if (cluster_major != std::to_string(binaries_major)) {
    std::string dir = pgdata.substr(0, pgdata.rfind('/'));
    return Error::VersionMismatch(
        "the cluster in " + pgdata + " is PostgreSQL " + cluster_major +
        " but the binaries are PostgreSQL " + binaries_version + "; move it to " +
        std::to_string(binaries_major) + " with skydb upgrade --data-dir " + dir +
        " (it keeps the app's data; docs/upgrade.md), or pin postgres.version = \"" +
        cluster_major + "\" to run its binaries; the directory was left untouched");
  }
  return PgdataState::kCluster;
}

}  // namespace skydb::supervisor
