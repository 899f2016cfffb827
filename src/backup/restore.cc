// Restores: choose the backup, check the range and the cluster, copy, write the recovery
// settings. PostgreSQL itself replays the WAL when the restored dir is started.
#include "backup/pg_tools.h"
#include "base/strings.h"
#include "skydb/backup.h"

namespace skydb {
namespace {

using backup_internal::ExtractTarBackup;
using backup_internal::RunWatched;
using backup_internal::SystemIdentifier;

Error OtherCluster(const BackupInfo& backup, const std::string& repo, const std::string& id,
                   const std::string& repo_id) {
  return Error::Conflict("backup " + backup.label + " in " + repo +
                         " is of another cluster (system identifier " + id +
                         ", the repository's WAL is of " + repo_id +
                         "): its WAL would not replay; restore it from its own repository");
}

std::string Range(const RestoreRange& r) {
  return FormatUtcMicros(r.from_micros) + " .. " + FormatUtcMicros(r.to_micros);
}

}  // namespace

std::string RecoverySettingsConf(const std::string& repo, std::optional<int64_t> time_micros) {
  std::string out = "\n# Written by skydb restore (docs/backup.md): replay the archive in " + repo +
                    ",\n# then promote. Ignored once the restore has finished (no "
                    "recovery.signal).\n";
  // `cp` exits non-zero for a segment that is not there, which is how PostgreSQL learns that
  // the archive has ended.
  out += "restore_command = 'cp \"" + RepositoryWalDir(repo) + "/%f\" \"%p\"'\n";
  if (time_micros) {
    out += "recovery_target_time = '" + FormatUtcMicros(*time_micros) + "'\n";
    out += "recovery_target_inclusive = on\n";
  }
  out += "recovery_target_timeline = 'latest'\n";
  out += "recovery_target_action = 'promote'\n";
  // No connections before promotion: skydb's migrations need a server that accepts writes.
  out += "hot_standby = off\n";
  return out;
}

Result<RestorePlan> PlanRestore(const RestoreRequest& request, Env& env) {
  const std::string& repo = request.repository;
  for (char c : repo) {
    if (c == '\'' || c == '"' || c == '%' || c == '\n' || c == '\\') {
      return Error::InvalidArgument("--from " + repo +
                                    ": the path holds a quote, % or backslash, which PostgreSQL's "
                                    "restore_command cannot carry; move the repository");
    }
  }
  SKYDB_ASSIGN_OR_RETURN(auto identity, ReadRepositoryIdentity(*env.fs, repo));
  RestorePlan plan;
  plan.bin_dir = request.bin_dir.empty() ? identity.bin_dir : request.bin_dir;
  if (!env.fs->IsExecutable(plan.bin_dir + "/pg_controldata")) {
    return Error::NotFound("no PostgreSQL binaries in " + plan.bin_dir + " (the ones that wrote " +
                           repo + "); name the directory with --set postgres.bin_dir=DIR");
  }
  SKYDB_ASSIGN_OR_RETURN(auto backups, ListBackups(*env.fs, repo));
  SKYDB_ASSIGN_OR_RETURN(plan.range, RepositoryRange(plan.bin_dir, repo, env));
  const BackupInfo* chosen = &backups.back();
  if (request.time_micros) {
    int64_t t = *request.time_micros;
    if (t < plan.range.from_micros || t > plan.range.to_micros) {
      return Error::InvalidArgument(
          "--time " + FormatUtcMicros(t) + " is outside what " + repo + " can restore to (" +
          Range(plan.range) +
          ": from the oldest backup's end to the last archived commit); give a time in that "
          "range, or --latest");
    }
    for (const auto& b : backups) {
      if (b.end_time * 1000000 <= t) chosen = &b;
    }
  }
  plan.backup = *chosen;
  plan.system_identifier = identity.system_identifier;
  // A compressed backup's pg_control is inside its tar file: its description says whose it is
  // here, and WriteRestore checks the extracted copy again.
  std::string id = plan.backup.system_identifier;
  if (plan.backup.compression == "none") {
    SKYDB_ASSIGN_OR_RETURN(id, SystemIdentifier(*env.runner, plan.bin_dir, plan.backup.path));
  }
  if (id != identity.system_identifier) {
    return OtherCluster(plan.backup, repo, id, identity.system_identifier);
  }
  return plan;
}

Status WriteRestore(const RestoreRequest& request, const RestorePlan& plan, Env& env) {
  FileSystem& fs = *env.fs;
  std::string pgdata = request.target + "/pgdata";
  SKYDB_RETURN_IF_ERROR(fs.MakeDir(pgdata, 0700));
  std::string again = "; remove " + request.target + " and run skydb restore again";
  if (plan.backup.compression != "none") {
    if (request.progress) {
      request.progress("extracting backup " + plan.backup.label + " (" + plan.backup.compression +
                       ") into " + pgdata);
    }
    if (auto extracted = ExtractTarBackup(env, plan.backup.path, pgdata, plan.backup.data_bytes,
                                          "extracting", request.bytes);
        !extracted.ok()) {
      return Error::Io(extracted.error().message + again);
    }
    SKYDB_ASSIGN_OR_RETURN(std::string id, SystemIdentifier(*env.runner, plan.bin_dir, pgdata));
    if (id != plan.system_identifier) {
      return Error::Conflict(
          OtherCluster(plan.backup, request.repository, id, plan.system_identifier).message +
          again);
    }
  } else {
    if (request.progress) {
      request.progress("copying backup " + plan.backup.label + " to " + pgdata);
    }
    CommandSpec copy;
    copy.argv = {"/bin/cp", "-a", "--", plan.backup.path + "/.", pgdata};
    copy.timeout = std::chrono::hours(24);
    CopyProgress progress{"copying", 0, plan.backup.bytes, false, false};
    SKYDB_ASSIGN_OR_RETURN(CommandOutput out,
                           RunWatched(env, copy, pgdata, progress, request.bytes));
    if (out.exit_code != 0) {
      return Error::Io("copying " + plan.backup.path + " to " + pgdata +
                       " failed: " + std::string(Trim(out.err)) + again);
    }
  }
  SKYDB_RETURN_IF_ERROR(fs.Chmod(pgdata, 0700));
  std::string auto_conf = pgdata + "/postgresql.auto.conf";
  auto existing = fs.ReadFile(auto_conf);
  std::string text = existing.ok() ? *existing : "";
  text += RecoverySettingsConf(request.repository, request.time_micros);
  SKYDB_RETURN_IF_ERROR(fs.WriteFileAtomic(auto_conf, text, 0600));
  return fs.WriteFileAtomic(pgdata + "/recovery.signal", "", 0600);
}

}  // namespace skydb
