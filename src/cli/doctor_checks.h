// `skydb doctor`'s checks and report rendering: each check takes facts the command gathered
// (or an injected FileSystem) and returns findings, so every rule is unit-tested without root,
// without PostgreSQL and without the test machine's own values. Internal to src/cli.
//
// A finding is a blocker when `skydb serve` could not start (or must refuse to) until it is
// fixed; doctor exits 1 if any finding is a blocker. docs/discovery.md lists every check.
//
// Thread-safety: pure functions and value types.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "skydb/config.h"
#include "skydb/discovery.h"
#include "skydb/env.h"
#include "skydb/result.h"
#include "skydb/tune.h"

namespace skydb::cli {

enum class Severity {
  kOk,       // checked and fine
  kInfo,     // worth knowing, nothing to fix
  kWarning,  // should be fixed; a start still succeeds
  kBlocker,  // a start fails (or is refused) until this is fixed
};
const char* SeverityLabel(Severity s);  // "ok", "info", "warning", "BLOCKER"

struct Finding {
  Severity severity = Severity::kOk;
  std::string topic;    // "service user", "data dir", "/dev/shm", "binaries", "tuning", "host"
  std::string message;  // one sentence; for problems, what to do about it
};

bool AnyBlocker(const std::vector<Finding>& findings);

// Every unix socket path the configuration makes fits the 107-byte limit; a blocker naming each
// that does not and the fix (skydb/app_env.h SocketPathProblems).
Finding CheckSocketPaths(const Config& config);

// --- backups -----------------------------------------------------------------------------------

// Doctor checks the production profile: no backup.repository warns (a lost disk loses the
// app's data); a repository that is not a directory warns with how to make it; a
// backup.compression whose program (tar, gzip, lz4, zstd) is missing warns that every backup
// would fail its verification.
Finding CheckBackupRepository(const FileSystem& fs, const std::string& repository,
                              BackupCompression compression = BackupCompression::kNone);

// --- service user ------------------------------------------------------------------------------

struct UserFacts {
  uid_t euid = 0;               // the effective uid skydb runs with
  std::string run_as_user;      // run_as_user / --user; empty when none is configured
  std::optional<RunAs> run_as;  // its password entry, when it exists
  std::string lookup_error;     // why run_as is missing, when run_as_user is set
};

// PostgreSQL refuses to run as root, and only root can switch to another user.
Finding CheckServiceUser(const UserFacts& facts);

// Who should own the data dir: the service user, else the current non-root user; nullopt when
// that cannot be known (root with no service user, or a user that does not exist).
std::optional<uid_t> ExpectedDataDirOwner(const UserFacts& facts);

// --- data dir ----------------------------------------------------------------------------------

// DIR itself (absent is fine; group/other-writable or owned by someone else blocks) and, when it
// exists, DIR/pgdata (PostgreSQL itself refuses modes other than 0700/0750).
std::vector<Finding> CheckDataDir(const FileSystem& fs, const std::string& data_dir,
                                  std::optional<uid_t> expected_owner);

// DIR/pgdata/PG_VERSION against the chosen binaries' major: a mismatch is refused at start.
std::optional<Finding> CheckClusterVersion(const FileSystem& fs, const std::string& data_dir,
                                           const std::optional<PgVersion>& binaries);

// --- /dev/shm ----------------------------------------------------------------------------------

struct SpaceFacts {
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;  // what an unprivileged process may still allocate
};

// statvfs(path); the one system call behind the shared-memory check.
Result<SpaceFacts> StatFileSystemSpace(const std::string& path);

// A PostgreSQL memory value as postgresql.conf spells it ("296MB", "8kB", "1GB", "128" = 8kB
// pages) in bytes; nullopt if it is not one.
std::optional<uint64_t> ParsePgMemory(const std::string& value);

// Allowance for PostgreSQL's shared memory beyond shared_buffers (WAL buffers, lock and
// process tables, dynamic shared memory for parallel query).
inline constexpr uint64_t kSharedMemoryOverheadBytes = 64ull << 20;

// shared_buffers + kSharedMemoryOverheadBytes; nullopt when shared_buffers is unreadable.
std::optional<uint64_t> SharedMemoryNeed(const Settings& settings);

// /dev/shm missing blocks a start (dynamic shared memory lives there); smaller than the need
// is a warning (parallel queries fail at run time, the server still starts).
Finding CheckSharedMemory(const std::string& path, const Result<SpaceFacts>& space,
                          std::optional<uint64_t> need_bytes);

// --- binaries and tuning -----------------------------------------------------------------------

Finding CheckBinaries(const DiscoveryOutcome& outcome);
std::vector<Finding> TuningFindings(const Settings& settings);

// --- rendering ---------------------------------------------------------------------------------

std::string RenderHostFacts(const HostFacts& host);
std::string RenderTuning(const Settings& settings);
// The chosen binaries, every candidate passed over with its reason, and the skipped sources.
std::string RenderDiscovery(const DiscoveryOutcome& outcome);
std::string RenderFindings(const std::vector<Finding>& findings);

}  // namespace skydb::cli
