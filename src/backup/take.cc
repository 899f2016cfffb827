// Taking, verifying and pruning base backups with pg_basebackup and pg_verifybackup.
#include <ctime>
#include <memory>

#include "backup/pg_tools.h"
#include "base/strings.h"
#include "skydb/backup.h"

namespace skydb {
namespace {

constexpr std::chrono::hours kBackupTimeout{24};

std::string Label(std::chrono::system_clock::time_point now) {
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &tm);
  return text;
}

void Say(const BackupTarget& target, const std::string& line) {
  if (target.progress) target.progress(line);
}

// A PostgreSQL tool's command: UTC times and untranslated messages.
CommandSpec ToolSpec(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
  CommandSpec spec;
  spec.argv = std::move(argv);
  spec.timeout = timeout;
  spec.env["TZ"] = "UTC";
  spec.env["LC_ALL"] = "C";
  return spec;
}

// A tool that exited non-zero: its stderr (or stdout) is the reason.
Error ToolFailed(const CommandSpec& spec, const CommandOutput& out) {
  std::string why(Trim(out.err.empty() ? out.out : out.err));
  return Error::Io(spec.argv.front() + " failed (exit " + std::to_string(out.exit_code) +
                   "): " + why);
}

// Runs a PostgreSQL tool; its stderr is the error when it fails.
Result<std::string> RunTool(ProcessRunner& runner, std::vector<std::string> argv,
                            std::chrono::milliseconds timeout = kBackupTimeout) {
  CommandSpec spec = ToolSpec(std::move(argv), timeout);
  SKYDB_ASSIGN_OR_RETURN(CommandOutput out, runner.Run(spec));
  if (out.exit_code != 0) return ToolFailed(spec, out);
  return out.out;
}

// A tool run whose output is not needed; `context` goes before its failure.
Status RunStep(ProcessRunner& runner, std::vector<std::string> argv,
               std::chrono::milliseconds timeout, const std::string& context = "") {
  auto out = RunTool(runner, std::move(argv), timeout);
  if (out.ok()) return Ok();
  if (context.empty()) return std::move(out).error();
  return std::move(out).error().Within(context);
}

}  // namespace

namespace backup_internal {

// "Database system identifier:           7312..." from pg_controldata.
Result<std::string> SystemIdentifier(ProcessRunner& runner, const std::string& bin_dir,
                                     const std::string& pgdata) {
  SKYDB_ASSIGN_OR_RETURN(auto out, RunTool(runner, {bin_dir + "/pg_controldata", "-D", pgdata},
                                           std::chrono::seconds(30)));
  for (const auto& line : Split(out, '\n')) {
    if (StartsWith(line, "Database system identifier:")) {
      return std::string(Trim(line.substr(line.find(':') + 1)));
    }
  }
  return Error::Io("pg_controldata -D " + pgdata + " printed no system identifier");
}

}  // namespace backup_internal

namespace {

using backup_internal::ExtractForCheck;
using backup_internal::RemoveTree;
using backup_internal::RunWatched;
using backup_internal::SystemIdentifier;
using backup_internal::TreeBytes;

constexpr uint64_t kWalSegmentBytes = 16 << 20;

// backup_label's "START WAL LOCATION: 0/2000028 (file 000000010000000000000002)" and
// "START TIME: 2026-12-02 06:15:00 UTC".
void ReadBackupLabel(const std::string& text, BackupInfo& info) {
  for (const auto& line : Split(text, '\n')) {
    if (StartsWith(line, "START WAL LOCATION:")) {
      auto at = line.find("(file ");
      if (at != std::string::npos) info.start_wal = line.substr(at + 6, 24);
    } else if (StartsWith(line, "START TIME:")) {
      if (auto t = ParseUtcTimeMicros(line.substr(11))) info.start_time = *t / 1000000;
    }
  }
}

Status EnsureRepository(const BackupTarget& target, FileSystem& fs, ProcessRunner& runner) {
  const std::string& repo = target.repository;
  SKYDB_ASSIGN_OR_RETURN(std::string id, SystemIdentifier(runner, target.bin_dir, target.pgdata));
  for (const std::string& dir : {repo, RepositoryWalDir(repo), RepositoryBaseDir(repo)}) {
    if (fs.IsDirectory(dir)) continue;
    if (auto made = fs.MakeDir(dir, 0700); !made.ok()) {
      return std::move(made).error().Within("backup.repository = " + repo +
                                            ": cannot create it; make its parent writable by "
                                            "the cluster user or create it owned by that user");
    }
  }
  auto existing = ReadRepositoryIdentity(fs, repo);
  if (existing.ok()) {
    if (existing->system_identifier != id) {
      return Error::Conflict("backup.repository = " + repo +
                             " holds backups of another cluster "
                             "(system identifier " +
                             existing->system_identifier + ", this cluster's is " + id +
                             "); give each cluster its own repository");
    }
    return Ok();
  }
  RepositoryIdentity identity{id, 0, target.bin_dir};
  auto version = fs.ReadFile(target.pgdata + "/PG_VERSION");
  if (version.ok()) identity.pg_major = std::atoi(std::string(Trim(*version)).c_str());
  return fs.WriteFileAtomic(RepositoryIdentityPath(repo), RenderRepositoryIdentity(identity), 0600);
}

// Keeps the newest retain_count backups and those younger than retain_age; removes the rest,
// then the WAL older than the oldest kept backup needs.
Status ApplyRetention(const BackupTarget& target, Env& env) {
  SKYDB_ASSIGN_OR_RETURN(auto backups, ListBackups(*env.fs, target.repository));
  int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(env.clock->WallNow().time_since_epoch())
          .count();
  int64_t max_age = std::chrono::duration_cast<std::chrono::seconds>(target.retain_age).count();
  size_t keep_from = backups.size() > static_cast<size_t>(target.retain_count)
                         ? backups.size() - static_cast<size_t>(target.retain_count)
                         : 0;
  while (keep_from > 0 && max_age > 0 && now - backups[keep_from - 1].end_time < max_age) {
    --keep_from;
  }
  for (size_t i = 0; i < keep_from; ++i) {
    Say(target, "retention: removing backup " + backups[i].label);
    SKYDB_RETURN_IF_ERROR(RunStep(*env.runner, {"/bin/rm", "-f", "--", backups[i].path + ".json"},
                                  std::chrono::minutes(1)));
    SKYDB_RETURN_IF_ERROR(RunStep(*env.runner,
                                  {"/bin/rm", "-rf", "--one-file-system", "--", backups[i].path},
                                  std::chrono::hours(1)));
  }
  if (keep_from < backups.size() && !backups[keep_from].start_wal.empty()) {
    SKYDB_RETURN_IF_ERROR(
        RunStep(*env.runner,
                {target.bin_dir + "/pg_archivecleanup", RepositoryWalDir(target.repository),
                 backups[keep_from].start_wal},
                std::chrono::hours(1)));
  }
  return Ok();
}

// REPO/backup.lock, waiting up to wait_for_running while another backup holds it.
Result<std::shared_ptr<void>> LockRepository(const BackupTarget& target, Env& env) {
  const std::string path = target.repository + "/backup.lock";
  auto deadline = env.clock->Now() + target.wait_for_running;
  bool told = false;
  while (true) {
    auto lock = env.host->LockExclusive(path);
    if (lock.ok() || lock.error().code != ErrorCode::kConflict) return lock;
    // The holder wrote its pid into the file (HostOps::LockExclusive).
    auto holder = env.fs->ReadFile(path);
    std::string who = "pid " + (holder.ok() ? std::string(Trim(*holder)) : std::string("?"));
    std::string running = "a backup into " + target.repository + " is already running (" + who +
                          ": the daemon's scheduled backup, or another skydb backup)";
    if (env.clock->Now() >= deadline) {
      return Error::Conflict(running +
                             (target.wait_for_running.count() > 0
                                  ? "; it did not finish within " +
                                        std::to_string(target.wait_for_running.count() / 1000) +
                                        " s"
                                  : std::string()) +
                             "; run skydb backup again once it has finished");
    }
    if (!told && target.waiting) target.waiting(running + "; waiting for it to finish");
    told = true;
    env.clock->SleepFor(std::chrono::milliseconds(500));
  }
}

}  // namespace

Result<BackupInfo> TakeBackup(const BackupTarget& target, Env& env) {
  FileSystem& fs = *env.fs;
  SKYDB_RETURN_IF_ERROR(EnsureRepository(target, fs, *env.runner));
  SKYDB_ASSIGN_OR_RETURN(auto lock, LockRepository(target, env));
  auto started = env.clock->WallNow();
  BackupInfo info;
  info.label = Label(started);
  std::string base = RepositoryBaseDir(target.repository);
  info.path = base + "/" + info.label;
  std::string partial = info.path + ".partial";
  if (fs.Exists(info.path) || fs.Exists(partial)) {
    return Error::Conflict("a backup labelled " + info.label + " already exists in " + base +
                           "; wait a second and run it again");
  }
  bool compressed = target.compression != BackupCompression::kNone;
  info.compression = CompressionName(target.compression);
  std::vector<std::string> argv = {target.bin_dir + "/pg_basebackup",
                                   "-D",
                                   partial,
                                   "-h",
                                   target.socket_dir,
                                   "-p",
                                   std::to_string(target.port),
                                   "-U",
                                   target.superuser,
                                   "-X",
                                   "stream",
                                   "-c",
                                   "fast",
                                   "--no-password",
                                   "-l",
                                   "skydb " + info.label};
  if (compressed) {
    argv.insert(argv.end(), {"-F", "tar", "-Z", "client-" + info.compression});
  }
  Say(target, "copying the cluster (pg_basebackup" +
                  (compressed ? ", " + info.compression + " tar files" : std::string()) +
                  ") into " + partial);
  CommandSpec copy = ToolSpec(std::move(argv), kBackupTimeout);
  // The cluster's size less its recycled WAL; pg_basebackup streams only the WAL it needs.
  CopyProgress progress{"copying the cluster", 0, 0, true, false};
  if (!compressed && target.bytes) {
    uint64_t all = TreeBytes(fs, target.pgdata);
    uint64_t wal = TreeBytes(fs, target.pgdata + "/pg_wal");
    progress.total = all - std::min(all, wal) + kWalSegmentBytes;
  }
  SKYDB_ASSIGN_OR_RETURN(CommandOutput copied,
                         RunWatched(env, copy, partial, progress, target.bytes));
  if (copied.exit_code != 0) {
    return ToolFailed(copy, copied)
        .Within("the base backup into " + partial +
                " failed; a full disk there shows as \"No space left on device\" (the cluster "
                "keeps running)");
  }
  auto ended = env.clock->WallNow();
  info.bytes = TreeBytes(fs, partial);
  // What pg_verifybackup and pg_controldata read: the copy itself, or its extraction.
  std::string checked = partial;
  if (compressed) {
    checked = info.path + ".verifying";
    Say(target, "extracting " + partial + " into " + checked + " to verify it");
    if (auto extracted =
            ExtractForCheck(env, partial, checked, 0, "extracting to verify", target.bytes);
        !extracted.ok()) {
      return std::move(extracted).error().Within(
          "the compressed backup in " + partial +
          " cannot be extracted for verification (it needs its uncompressed size free in " +
          RepositoryBaseDir(target.repository) + "); it is kept there for inspection");
    }
  }
  Say(target, "verifying " + checked + " (pg_verifybackup)");
  auto verified =
      RunStep(*env.runner, {target.bin_dir + "/pg_verifybackup", checked}, kBackupTimeout,
              "the backup in " + partial + " does not verify; it is kept there for inspection");
  if (verified.ok()) {
    info.verified = true;
    info.end_time =
        std::chrono::duration_cast<std::chrono::seconds>(ended.time_since_epoch()).count() + 1;
    if (auto label = fs.ReadFile(checked + "/backup_label"); label.ok()) {
      ReadBackupLabel(*label, info);
    }
    info.data_bytes = compressed ? TreeBytes(fs, checked) : info.bytes;
  }
  auto id = verified.ok() ? SystemIdentifier(*env.runner, target.bin_dir, checked)
                          : Result<std::string>(std::move(verified).error());
  if (compressed) SKYDB_RETURN_IF_ERROR(RemoveTree(env, checked));
  if (!id.ok()) return std::move(id).error();
  info.system_identifier = *id;
  SKYDB_RETURN_IF_ERROR(fs.Rename(partial, info.path));
  SKYDB_RETURN_IF_ERROR(fs.WriteFileAtomic(info.path + ".json", RenderBackupInfo(info), 0600));
  SKYDB_RETURN_IF_ERROR(ApplyRetention(target, env));
  return info;
}

Result<VerifyReport> VerifyRepository(const std::string& bin_dir, const std::string& repo, Env& env,
                                      const CopyProgressFn& bytes) {
  SKYDB_ASSIGN_OR_RETURN(auto identity, ReadRepositoryIdentity(*env.fs, repo));
  std::string bin = bin_dir.empty() ? identity.bin_dir : bin_dir;
  SKYDB_ASSIGN_OR_RETURN(auto backups, ListBackups(*env.fs, repo));
  VerifyReport report;
  report.backups = static_cast<int>(backups.size());
  if (backups.empty()) report.problems.push_back("no complete backup in " + repo);
  for (const auto& b : backups) {
    if (b.system_identifier != identity.system_identifier) {
      report.problems.push_back(b.label + " is a backup of another cluster (system identifier " +
                                b.system_identifier + ")");
    }
    if (b.compression == "none") {
      auto verified = RunTool(*env.runner, {bin + "/pg_verifybackup", b.path});
      if (!verified.ok()) report.problems.push_back(b.label + ": " + verified.error().message);
      continue;
    }
    std::string checked = b.path + ".verifying";
    if (auto extracted =
            ExtractForCheck(env, b.path, checked, b.data_bytes, "extracting " + b.label, bytes);
        !extracted.ok()) {
      report.problems.push_back(b.label + ": cannot be extracted into " + checked +
                                " to verify it: " + extracted.error().message);
      continue;
    }
    if (auto verified = RunTool(*env.runner, {bin + "/pg_verifybackup", checked}); !verified.ok()) {
      report.problems.push_back(b.label + ": " + verified.error().message);
    }
    if (auto removed = RemoveTree(env, checked); !removed.ok()) {
      report.problems.push_back(removed.error().message);
    }
  }
  SKYDB_ASSIGN_OR_RETURN(auto names, env.fs->ListDir(RepositoryWalDir(repo)));
  std::vector<std::string> since;
  std::string oldest = backups.empty() ? "" : backups.front().start_wal;
  for (const auto& name : names) {
    if (!ParseWalSegmentName(name)) continue;
    // Compare the segment part only: a later timeline continues the same numbering.
    if (oldest.empty() || name.substr(8) >= oldest.substr(8)) since.push_back(name);
  }
  report.wal_segments = since.size();
  for (const auto& missing : MissingWalSegments(since)) {
    report.problems.push_back("WAL segment " + missing + " is missing from " +
                              RepositoryWalDir(repo) + ": a restore cannot replay past it");
  }
  return report;
}

Result<RestoreRange> RepositoryRange(const std::string& bin_dir, const std::string& repo,
                                     Env& env) {
  SKYDB_ASSIGN_OR_RETURN(auto backups, ListBackups(*env.fs, repo));
  if (backups.empty()) {
    return Error::NotFound("no complete backup in " + repo + "; take one with skydb backup");
  }
  RestoreRange range;
  range.from_micros = backups.front().end_time * 1000000;
  range.to_micros = backups.back().end_time * 1000000;
  SKYDB_ASSIGN_OR_RETURN(auto names, env.fs->ListDir(RepositoryWalDir(repo)));
  // The newest segments first; the last commit is in one of the last few.
  int looked = 0;
  for (auto it = names.rbegin(); it != names.rend() && looked < 4; ++it) {
    if (!ParseWalSegmentName(*it)) continue;
    ++looked;
    CommandSpec spec;
    spec.argv = {bin_dir + "/pg_waldump", "-r", "Transaction", RepositoryWalDir(repo) + "/" + *it};
    spec.env["TZ"] = "UTC";
    spec.timeout = std::chrono::minutes(2);
    // pg_waldump exits non-zero at the end of a segment that was switched early; what it printed
    // before that is still good.
    SKYDB_ASSIGN_OR_RETURN(CommandOutput out, env.runner->Run(spec));
    if (auto last = LastCommitMicros(out.out)) {
      range.to_micros = std::max(range.to_micros, *last);
      break;
    }
  }
  return range;
}

}  // namespace skydb
