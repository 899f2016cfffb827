// `skydb backup [list|verify]`, `skydb restore` and `skydb archive-wal` (docs/backup.md).
//
// Root never writes into the repository or a restored data dir, and never runs the binaries a
// repository names: these commands become the cluster user first (backup: the user the running
// daemon's cluster belongs to; list and verify: the repository's owner; restore: run_as_user,
// after making NEW_DIR for it, and before that only root-owned binaries: CheckRootMayExecute).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "skydb/backup.h"
#include "skydb/status_file.h"
#include "supervisor/data_dir.h"

namespace skydb::cli {
namespace {

// How long `skydb backup` waits for a backup already running into the repository.
constexpr std::chrono::hours kWaitForRunningBackup{2};

struct BackupFlags {
  std::string data_dir;
  std::string repo;
};

struct RestoreFlags {
  std::string from;
  std::string to;
  std::string time;
  std::string user;
  bool latest = false;
};

struct ArchiveFlags {
  std::string repo;
  std::string status_file;
  std::string wal_path;
  std::string name;
};

// One line per phase on a terminal; nothing when stderr is not one.
std::function<void(const std::string&)> BackupProgress() {
  if (::isatty(STDERR_FILENO) == 0) return nullptr;
  return [](const std::string& line) {
    std::fprintf(stderr, "skydb: %s...\n", line.c_str());
    std::fflush(stderr);
  };
}

std::string BackupMib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

// Bytes on one line that rewrites itself ("copying: 312.0 MiB of ~685.0 MiB (45%)") on a
// terminal; nothing when stderr is not one.
CopyProgressFn ByteProgress() {
  if (::isatty(STDERR_FILENO) == 0) return nullptr;
  return [](const CopyProgress& p) {
    std::string line = p.step + ": " + BackupMib(p.done);
    if (p.total > 0) {
      line += " of " + std::string(p.estimate ? "~" : "") + BackupMib(p.total);
      char percent[16];
      std::snprintf(
          percent, sizeof percent, " (%.0f%%)",
          std::min(100.0, 100.0 * static_cast<double>(p.done) / static_cast<double>(p.total)));
      line += percent;
    } else {
      line += " written";
    }
    std::fprintf(stderr, "\rskydb: %s\033[K%s", line.c_str(), p.finished ? "\n" : "");
    std::fflush(stderr);
  };
}

int BackupFail(const char* command, const std::string& message) {
  std::fprintf(stderr, "skydb %s: %s\n", command, message.c_str());
  return kExitFailure;
}

std::string AbsoluteOf(const FileSystem& fs, const std::string& path) {
  auto real = fs.RealPath(path);
  return real.ok() ? *real : path;
}

std::string UtcSeconds(int64_t epoch) { return FormatUtcMicros(epoch * 1000000).substr(0, 19); }

int RunBackupNow(CommandContext& ctx, const BackupFlags& flags) {
  if (!flags.data_dir.empty()) ctx.flag_values.emplace_back("data_dir", flags.data_dir);
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return kExitUsage;
  if (config->backup.repository.empty()) {
    return BackupFail("backup",
                      "backup.repository is not set; set it in [backup] of the config (or --set "
                      "backup.repository=/var/backups/skydb) and restart the daemon so that it "
                      "archives WAL too (docs/backup.md)");
  }
  Env& env = ctx.env;
  auto layout = supervisor::DataDirLayout::For(AbsoluteOf(*env.fs, config->data_dir));
  auto lock = ProbeDirLock(layout.lock_file);
  auto text = env.fs->ReadFile(layout.status_file);
  auto record = text.ok() ? supervisor::ParseStatusJson(*text)
                          : Result<supervisor::StatusRecord>(text.error());
  if (!lock.ok() || !lock->held || !record.ok() || record->state != "ready") {
    return BackupFail("backup", "no daemon serves a ready cluster on " + layout.root +
                                    "; a base backup copies a running cluster: start it with skydb "
                                    "serve --embed --data-dir " +
                                    layout.root);
  }
  if (auto became = BecomeUser(env, record->superuser); !became.ok()) {
    return BackupFail("backup", became.error().message);
  }
  BackupTarget target;
  target.bin_dir = record->bin_dir;
  target.pgdata = layout.pgdata;
  target.socket_dir = record->socket_dir;
  target.port = record->port;
  target.superuser = record->superuser;
  target.repository = config->backup.repository;
  target.retain_count = config->backup.retain_count;
  target.retain_age = config->backup.retain_age;
  target.compression = config->backup.compression;
  target.progress = BackupProgress();
  target.bytes = ByteProgress();
  // A scheduled backup may be running: wait for it rather than fail (saying so, on stderr).
  target.wait_for_running = kWaitForRunningBackup;
  target.waiting = [](const std::string& line) {
    std::fprintf(stderr, "skydb backup: %s...\n", line.c_str());
    std::fflush(stderr);
  };
  auto started = env.clock->Now();
  auto info = TakeBackup(target, env);
  if (!info.ok()) return BackupFail("backup", info.error().message);
  double seconds = std::chrono::duration<double>(env.clock->Now() - started).count();
  std::string stored = BackupMib(info->bytes);
  if (info->compression != "none") {
    stored += " (" + info->compression + ", " + BackupMib(info->data_bytes) + " of data)";
  }
  std::printf("backup %s: %s in %.1f s (%.1f MiB/s of data), verified; restores from %s UTC on\n",
              info->path.c_str(), stored.c_str(), seconds,
              static_cast<double>(info->data_bytes) / (1 << 20) / std::max(seconds, 0.001),
              UtcSeconds(info->end_time).c_str());
  return kExitOk;
}

// --repo, else backup.repository.
std::optional<std::string> RepositoryFor(CommandContext& ctx, const BackupFlags& flags,
                                         const char* command) {
  if (!flags.repo.empty()) return flags.repo;
  if (!flags.data_dir.empty()) ctx.flag_values.emplace_back("data_dir", flags.data_dir);
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return std::nullopt;
  if (config->backup.repository.empty()) {
    BackupFail(command, "no repository: give --repo DIR or set backup.repository");
    return std::nullopt;
  }
  return config->backup.repository;
}

// As root, becomes the repository's owner when that is not root: what the repository holds
// (its files, and the binaries its identity names) is that user's to read and run, never
// root's.
Status BecomeRepositoryOwner(Env& env, const std::string& repo) {
  auto owner = env.fs->Stat(repo);
  if (env.host->EffectiveUid() != 0 || !owner.ok() || owner->uid == 0) return Ok();
  SKYDB_ASSIGN_OR_RETURN(RunAs who, LookupUserByUid(owner->uid));
  return BecomeUser(env, who.name);
}

int RunBackupList(CommandContext& ctx, const BackupFlags& flags) {
  auto repo = RepositoryFor(ctx, flags, "backup list");
  if (!repo) return kExitUsage;
  Env& env = ctx.env;
  if (auto became = BecomeRepositoryOwner(env, *repo); !became.ok()) {
    return BackupFail("backup list", became.error().message);
  }
  auto identity = ReadRepositoryIdentity(*env.fs, *repo);
  if (!identity.ok()) return BackupFail("backup list", identity.error().message);
  auto backups = ListBackups(*env.fs, *repo);
  if (!backups.ok()) return BackupFail("backup list", backups.error().message);
  std::printf("repository %s: cluster %s, PostgreSQL %d\n", repo->c_str(),
              identity->system_identifier.c_str(), identity->pg_major);
  std::printf("%-18s  %-19s  %-19s  %12s  %-11s  %12s  %s\n", "LABEL", "START (UTC)", "END (UTC)",
              "SIZE", "COMPRESSION", "DATA", "VERIFIED");
  for (const auto& b : *backups) {
    std::printf("%-18s  %-19s  %-19s  %12s  %-11s  %12s  %s\n", b.label.c_str(),
                UtcSeconds(b.start_time).c_str(), UtcSeconds(b.end_time).c_str(),
                BackupMib(b.bytes).c_str(), b.compression.c_str(), BackupMib(b.data_bytes).c_str(),
                b.verified ? "yes" : "no");
  }
  auto range = RepositoryRange(identity->bin_dir, *repo, env);
  if (range.ok()) {
    std::printf("restores to any time in %s .. %s\n", FormatUtcMicros(range->from_micros).c_str(),
                FormatUtcMicros(range->to_micros).c_str());
  } else {
    std::printf("restores to: nothing (%s)\n", range.error().message.c_str());
  }
  return kExitOk;
}

int RunBackupVerify(CommandContext& ctx, const BackupFlags& flags) {
  auto repo = RepositoryFor(ctx, flags, "backup verify");
  if (!repo) return kExitUsage;
  // A compressed backup is extracted into the repository to be checked: as root, that is done
  // as the repository's owner, never as root.
  if (auto became = BecomeRepositoryOwner(ctx.env, *repo); !became.ok()) {
    return BackupFail("backup verify", became.error().message);
  }
  auto report = VerifyRepository("", *repo, ctx.env, ByteProgress());
  if (!report.ok()) return BackupFail("backup verify", report.error().message);
  for (const auto& problem : report->problems) {
    std::fprintf(stderr, "skydb backup verify: %s\n", problem.c_str());
  }
  if (!report->problems.empty()) return kExitFailure;
  std::printf("%s: %d backups verified, %zu WAL segments since the oldest, no gap\n", repo->c_str(),
              report->backups, report->wal_segments);
  return kExitOk;
}

// NEW_DIR may be absent or an empty directory; never a data dir a daemon runs on.
Status CheckRestoreTarget(const FileSystem& fs, const std::string& dir) {
  auto lock = ProbeDirLock(supervisor::DataDirLayout::For(dir).lock_file);
  if (lock.ok() && lock->held) {
    return Error::Conflict("a daemon (pid " + std::to_string(lock->holder) + ") is running on " +
                           dir + "; restore into a new directory, never over a live one");
  }
  if (!fs.Exists(dir)) return Ok();
  auto names = fs.ListDir(dir);
  if (!names.ok()) return std::move(names).error();
  if (!names->empty()) {
    return Error::Conflict(dir + " is not empty (it holds " + names->front() +
                           "); restore into a new or empty directory, then point the app at it");
  }
  return Ok();
}

int RunRestore(CommandContext& ctx, const RestoreFlags& flags) {
  if (!flags.user.empty()) ctx.flag_values.emplace_back("run_as_user", flags.user);
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return kExitUsage;
  if (flags.latest == !flags.time.empty()) {
    return ExitUsage("restore: give exactly one of --latest and --time \"YYYY-MM-DD HH:MM:SS\"");
  }
  RestoreRequest request;
  Env& env = ctx.env;
  request.repository = AbsoluteOf(*env.fs, flags.from);
  request.target = flags.to;
  request.bin_dir = config->postgres.bin_dir;
  request.progress = BackupProgress();
  request.bytes = ByteProgress();
  if (!flags.time.empty()) {
    request.time_micros = ParseUtcTimeMicros(flags.time);
    if (!request.time_micros) {
      return ExitUsage("restore: --time " + flags.time +
                       " is not a UTC time such as \"2026-12-02 06:15:00\"");
    }
  }
  if (auto checked = CheckRestoreTarget(*env.fs, request.target); !checked.ok()) {
    return BackupFail("restore", checked.error().message);
  }
  auto plan = PlanRestore(request, env);
  if (!plan.ok() && plan.error().code == ErrorCode::kPermission && env.host->EffectiveUid() == 0) {
    // The runner refused, as root, a binary the repository's identity names.
    return BackupFail("restore", plan.error().message +
                                     "; for a restore as root, name root-owned PostgreSQL "
                                     "binaries of the repository's version with --set "
                                     "postgres.bin_dir=DIR (e.g. /usr/lib/postgresql/15/bin)");
  }
  if (!plan.ok()) return BackupFail("restore", plan.error().message);
  if (!env.fs->Exists(request.target)) {
    if (auto made = env.fs->MakeDir(request.target, 0700); !made.ok()) {
      return BackupFail("restore", made.error().message);
    }
    if (env.host->EffectiveUid() != 0) {
      // Made by us, for us.
    } else if (auto owner = LookupUser(config->run_as_user); owner.ok()) {
      if (auto chowned = env.host->Chown(request.target, owner->uid, owner->gid); !chowned.ok()) {
        return BackupFail("restore", chowned.error().message);
      }
    }
  }
  const bool ran_as_root = env.host->EffectiveUid() == 0;
  if (auto became = BecomeUser(env, config->run_as_user); !became.ok()) {
    return BackupFail("restore", became.error().message);
  }
  request.target = AbsoluteOf(*env.fs, request.target);
  if (auto written = WriteRestore(request, *plan, env); !written.ok()) {
    return BackupFail("restore", written.error().message);
  }
  // The command that starts it, as whoever ran this: root must name the service user.
  std::string start = "skydb serve --embed --data-dir " + request.target;
  if (ran_as_root) start += " --user " + config->run_as_user;
  std::printf(
      "restored backup %s into %s; it replays the WAL of %s to %s when started:\n  %s\n",
      plan->backup.label.c_str(), request.target.c_str(), request.repository.c_str(),
      request.time_micros ? FormatUtcMicros(*request.time_micros).c_str() : "its end (--latest)",
      start.c_str());
  return kExitOk;
}

int RunArchiveWal(CommandContext& ctx, const ArchiveFlags& flags) {
  auto done = ArchiveWal(*ctx.env.fs, flags.repo, flags.wal_path, flags.name, flags.status_file);
  if (!done.ok()) return BackupFail("archive-wal", done.error().message);
  return kExitOk;
}

}  // namespace

void AddBackupCommands(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<BackupFlags>();
  CLI::App* backup = app.add_subcommand(
      "backup", "take a base backup of the running cluster now, verified (list, verify: see them)");
  backup->add_option("--data-dir", flags->data_dir, "data directory (config data_dir)");
  backup->callback([&ctx, flags, backup] {
    if (!backup->get_subcommands().empty()) return;
    ctx.exit_code = RunBackupNow(ctx, *flags);
  });
  for (const char* name : {"list", "verify"}) {
    bool list = std::string(name) == "list";
    CLI::App* sub = backup->add_subcommand(
        name, list ? "the backups in the repository, their sizes and the time range it restores to"
                   : "pg_verifybackup every backup and check the WAL archive has no gap");
    sub->add_option("--repo", flags->repo, "repository (default backup.repository)");
    sub->add_option("--data-dir", flags->data_dir, "data directory (config data_dir)");
    sub->callback([&ctx, flags, list] {
      ctx.exit_code = list ? RunBackupList(ctx, *flags) : RunBackupVerify(ctx, *flags);
    });
  }

  auto restore_flags = std::make_shared<RestoreFlags>();
  CLI::App* restore = app.add_subcommand(
      "restore", "make a new data dir from a backup repository, to its end or to a moment");
  restore->add_option("--from", restore_flags->from, "backup repository")->required();
  restore->add_option("--to", restore_flags->to, "new (or empty) data directory")->required();
  restore->add_option("--time", restore_flags->time,
                      "UTC time to restore to, \"YYYY-MM-DD HH:MM:SS[.ffffff]\"");
  restore->add_flag("--latest", restore_flags->latest, "replay every archived WAL segment");
  restore->add_option("--user", restore_flags->user,
                      "service user that owns NEW_DIR and runs its cluster (config run_as_user)");
  restore->callback([&ctx, restore_flags] { ctx.exit_code = RunRestore(ctx, *restore_flags); });

  auto archive_flags = std::make_shared<ArchiveFlags>();
  CLI::App* archive = app.add_subcommand(
      "archive-wal", "PostgreSQL's archive_command: copy one WAL segment into the repository");
  archive->group("");  // PostgreSQL runs it, not people
  archive->add_option("--repo", archive_flags->repo, "repository")->required();
  archive->add_option("--status-file", archive_flags->status_file, "last failure goes here");
  archive->add_option("WAL_PATH", archive_flags->wal_path, "%p")->required();
  archive->add_option("NAME", archive_flags->name, "%f")->required();
  archive->callback([&ctx, archive_flags] { ctx.exit_code = RunArchiveWal(ctx, *archive_flags); });
}

}  // namespace skydb::cli
