// Physical backups of the private cluster with PostgreSQL's own tools (docs/backup.md):
// pg_basebackup (plain format, or compressed tar files, with its backup manifest) verified by
// pg_verifybackup (a compressed backup is extracted to a temporary directory first), WAL
// archived by `skydb archive-wal` (PostgreSQL's archive_command), and restores that replay the
// archive to its end or to a moment (recovery_target_time).
//
// A repository is a directory the cluster user owns:
//
//   REPO/skydb-backup.json    which cluster it holds (system identifier, major version)
//   REPO/wal/                 archived WAL segments and timeline history files
//   REPO/base/LABEL/          one base backup, exactly as pg_basebackup wrote it (a plain
//                             data dir, or base.tar.*, pg_wal.tar* and backup_manifest)
//   REPO/base/LABEL.json      what skydb knows of it: times, size, WAL range, verification
//
// A backup in progress is REPO/base/LABEL.partial/ and has no .json; it is never listed and
// never restored. REPO/base/LABEL.verifying/ is a compressed backup extracted for
// pg_verifybackup, removed once checked.
//
// Thread-safety: pure functions are pure; the rest run commands through the given Env and may
// be called from any thread, one backup per repository at a time (the caller's job: the daemon
// runs one at a time, and a backup holds REPO/backup.lock).
// Failure: every refusal names what was found and what to do.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "skydb/config.h"
#include "skydb/data_dir_layout.h"
#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb {

// ---- the repository -------------------------------------------------------------------------

// "none", "gzip", "lz4", "zstd": the backup.compression value and BackupInfo::compression.
std::string CompressionName(BackupCompression compression);
std::optional<BackupCompression> ParseCompressionName(const std::string& name);

// tar and the compression's own program, which extract a compressed backup, in /usr/bin or
// /bin: NotFound naming the package to install when one is missing; Ok for kNone.
Status CheckCompressionPrograms(const FileSystem& fs, BackupCompression compression);

// Byte-level progress of one long step (copying, extracting), reported about once a second
// while it runs and once when it ends.
struct CopyProgress {
  std::string step;       // "copying the cluster", "extracting to verify", ...
  uint64_t done = 0;      // bytes written so far
  uint64_t total = 0;     // bytes expected; 0 = unknown
  bool estimate = false;  // total is an estimate (the live cluster's size)
  bool finished = false;
};
using CopyProgressFn = std::function<void(const CopyProgress&)>;

struct RepositoryIdentity {
  std::string system_identifier;  // pg_control's "Database system identifier"
  int pg_major = 0;
  std::string bin_dir;  // the binaries that wrote it (a hint for restore)
};

struct BackupInfo {
  std::string label;        // "20261202T061500Z"
  std::string path;         // REPO/base/LABEL
  int64_t start_time = 0;   // epoch seconds
  int64_t end_time = 0;     // epoch seconds: the earliest moment it restores to
  uint64_t bytes = 0;       // as stored in the repository
  uint64_t data_bytes = 0;  // as restored (== bytes for an uncompressed backup)
  std::string compression = "none";
  std::string system_identifier;
  std::string start_wal;  // first WAL segment it needs (from REPO/wal or its own pg_wal)
  bool verified = false;  // pg_verifybackup passed right after it was taken
};

std::string RepositoryIdentityPath(const std::string& repo);
std::string RepositoryWalDir(const std::string& repo);
std::string RepositoryBaseDir(const std::string& repo);

std::string RenderRepositoryIdentity(const RepositoryIdentity& identity);
Result<RepositoryIdentity> ParseRepositoryIdentity(const std::string& text);
std::string RenderBackupInfo(const BackupInfo& info);
Result<BackupInfo> ParseBackupInfo(const std::string& text);

// NotFound, saying so, when REPO has no skydb-backup.json.
Result<RepositoryIdentity> ReadRepositoryIdentity(const FileSystem& fs, const std::string& repo);
// Completed backups (those with a .json), oldest first.
Result<std::vector<BackupInfo>> ListBackups(const FileSystem& fs, const std::string& repo);

// ---- WAL segment names (pure) ---------------------------------------------------------------

// A WAL segment file name: 24 hex digits, timeline then segment number (16 MiB segments).
struct WalSegment {
  uint32_t timeline = 0;
  uint64_t number = 0;  // log * 256 + seg
};
std::optional<WalSegment> ParseWalSegmentName(const std::string& name);
std::string WalSegmentName(const WalSegment& segment);

// Segments missing between the first and the last archived segment of each timeline
// (names of the missing ones, at most `limit`). Other files (history, .partial, .backup) are
// ignored.
std::vector<std::string> MissingWalSegments(const std::vector<std::string>& names,
                                            size_t limit = 20);

// The newest COMMIT timestamp pg_waldump printed ("... COMMIT 2026-12-02 06:15:01.123456 UTC"),
// as epoch microseconds; nullopt when there is none.
std::optional<int64_t> LastCommitMicros(const std::string& waldump_output);

// "2026-12-02 06:15:01 UTC" ↔ epoch seconds/microseconds (UTC; fractional seconds accepted).
std::optional<int64_t> ParseUtcTimeMicros(const std::string& text);
std::string FormatUtcMicros(int64_t micros);

// ---- archiving ------------------------------------------------------------------------------

// The postgresql.conf lines that archive WAL into `repo`: archive_mode, archive_command running
// `skydb_binary archive-wal`, archive_timeout. `status_file` receives the last failure.
std::string ArchiveSettingsConf(const std::string& skydb_binary, const std::string& repo,
                                const std::string& status_file,
                                std::chrono::milliseconds archive_timeout);

// archive_command: copies pgdata's `wal_path` to REPO/wal/NAME durably (temporary file, fsync,
// rename). An existing file with the same bytes is success (a retry after a crash); with other
// bytes a refusal (it belongs to another cluster or timeline). On failure the reason is also
// written to `status_file` (when given), on success that file is removed.
Status ArchiveWal(FileSystem& fs, const std::string& repo, const std::string& wal_path,
                  const std::string& name, const std::string& status_file);

// Where the daemon's archive_command records its last failure: DIR/run/archive-failure.txt.
inline std::string ArchiveFailureFile(const std::string& data_dir) {
  return DataDirLayout::For(data_dir).archive_failure;
}

// What the last archive-wal failure wrote: "" when the last attempt succeeded.
std::string ReadArchiveFailure(const FileSystem& fs, const std::string& status_file);

// ---- taking and checking backups ------------------------------------------------------------

struct BackupTarget {
  std::string bin_dir;  // pg_basebackup, pg_verifybackup, pg_controldata
  std::string pgdata;   // the live cluster (read by pg_controldata)
  std::string socket_dir;
  int port = 5432;
  std::string superuser;
  std::string repository;
  int64_t retain_count = 7;                 // newest N complete backups are kept
  std::chrono::milliseconds retain_age{0};  // and every one younger than this; 0 = none
  BackupCompression compression = BackupCompression::kNone;
  std::function<void(const std::string&)> progress;  // a phase line; may be null
  CopyProgressFn bytes;                              // byte-level progress; may be null
  // How long to wait for another backup into the repository (the daemon's scheduled one) to
  // finish; 0: refuse at once. `waiting` is told once, when the wait begins; may be null.
  std::chrono::milliseconds wait_for_running{0};
  std::function<void(const std::string&)> waiting;
};

// A base backup now: pg_basebackup into REPO/base/LABEL.partial (compressed tar files with a
// compression: then extracted into LABEL.verifying for the check), pg_verifybackup, rename,
// LABEL.json, then retention (older backups and the WAL no kept backup needs are removed).
// Creates the repository on first use; refuses one that holds another cluster.
// One backup per repository at a time: while REPO/backup.lock is held, a second one waits up to
// wait_for_running, then is refused naming the repository and the holder's pid.
Result<BackupInfo> TakeBackup(const BackupTarget& target, Env& env);

struct VerifyReport {
  std::vector<std::string> problems;  // empty: every backup and the WAL since the oldest is fine
  int backups = 0;
  size_t wal_segments = 0;
};
// pg_verifybackup on every backup and the WAL archive's continuity from the oldest backup on.
// A compressed backup is extracted into REPO/base/LABEL.verifying first (so the caller must be
// able to write the repository) and that copy removed after.
Result<VerifyReport> VerifyRepository(const std::string& bin_dir, const std::string& repo, Env& env,
                                      const CopyProgressFn& bytes = nullptr);

// The range a repository restores to: the oldest backup's end .. the last archived commit.
struct RestoreRange {
  int64_t from_micros = 0;
  int64_t to_micros = 0;  // 0 when no commit was found in the archive (then: the newest end)
};
Result<RestoreRange> RepositoryRange(const std::string& bin_dir, const std::string& repo, Env& env);

// ---- restore --------------------------------------------------------------------------------

struct RestoreRequest {
  std::string repository;
  std::string target;                  // NEW_DIR: created, or empty
  std::optional<int64_t> time_micros;  // --time; nullopt = --latest
  std::string bin_dir;                 // "" = the repository's
  std::function<void(const std::string&)> progress;
  CopyProgressFn bytes;
};

struct RestorePlan {
  BackupInfo backup;
  RestoreRange range;
  std::string bin_dir;
  std::string system_identifier;  // the repository's cluster
};

// Chooses the newest backup that ends at or before the time (or the newest for --latest) and
// refuses a time outside the repository's range or a backup of another cluster. Changes
// nothing.
Result<RestorePlan> PlanRestore(const RestoreRequest& request, Env& env);

// The data dir NEW_DIR/pgdata from the plan's backup (copied, or extracted from its tar files
// and then checked to be the repository's cluster) with recovery.signal and the recovery
// settings (restore_command from REPO/wal, the target, promote at the end). NEW_DIR must exist
// and be empty (the caller checks that no daemon runs there and makes it).
Status WriteRestore(const RestoreRequest& request, const RestorePlan& plan, Env& env);

// The postgresql.auto.conf lines of a restore (pure).
std::string RecoverySettingsConf(const std::string& repo, std::optional<int64_t> time_micros);

}  // namespace skydb
