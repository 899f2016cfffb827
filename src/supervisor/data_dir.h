// The data directory: layout, safety checks, ownership, and what DIR/pgdata holds.
//
// Pure checks take values or a FileSystem so they are unit-tested on a FakeFileSystem; the few
// calls the FileSystem seam lacks (chown) go through HostOps. A skydb data dir is one that is
// empty or holds only skydb's own entries; DIR, run/ and runtime/ are 0700.
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "skydb/data_dir_layout.h"
#include "skydb/env.h"
#include "skydb/supervisor.h"

namespace skydb::supervisor {

// DIR's paths (skydb/data_dir_layout.h), under the name the supervisor has always used.
using ::skydb::DataDirLayout;

// Refuses a directory group- or other-writable, or not a directory, saying how to fix it.
Status CheckDirSafe(const std::string& path, const FileInfo& info);

// What skydb keeps at the top of DIR (DataDirLayout's entries), the lost+found that a file
// system mounted at DIR brings, and the shell and psql history files of the service user, whose
// home DIR is. Anything else means DIR is someone else's.
bool IsSkydbEntry(const std::string& name);

// Creates `path` with `mode` (0700 or, for a shared DIR and run/, RunDirAccess's), or verifies
// it (CheckDirSafe) and sets `mode` exactly, saying so in the log.
Status EnsurePrivateDir(FileSystem& fs, const std::string& path, uint32_t mode = 0700);

// Who besides DIR's owner may reach DIR/run (its sockets, the status file, app.env): nobody
// (DIR and run/ 0700), or the members of one group, the app's (DIR 0710: search only; run/
// 0750; both owned by that group). Nothing else in DIR is ever shared.
struct RunDirAccess {
  std::optional<NamedGroup> group;
  uint32_t root_mode() const { return group ? 0710 : 0700; }
  uint32_t run_mode() const { return group ? 0750 : 0700; }
};

// DIR and run/ with RunDirAccess's modes and group (the owner must be a member of the group).
Status ShareRunDir(FileSystem& fs, HostOps& host, const DataDirLayout& layout,
                   const RunDirAccess& access);

// Whether DIR may be used, changing nothing: absent, or a directory that is not group/other-
// writable (CheckDirSafe) holding only skydb's own entries; otherwise the refusal names what it
// holds and the fix. (For `skydb doctor` too.)
Status CheckDataDir(const FileSystem& fs, const std::string& root);

// DIR before skydb writes anything into it (its lock file comes next): CheckDataDir, then
// EnsurePrivateDir. Used by every mode (--embed, --database-url, --store memory).
Status PrepareRoot(FileSystem& fs, const std::string& root, uint32_t mode = 0700);

// Creates DIR (0700) or verifies it; creates run/ and runtime/ (0700); when the cluster user
// differs from us, makes it the owner of DIR, run/ and runtime/ (never anything above DIR).
// Expects PrepareRoot to have accepted DIR.
Status PrepareDirs(FileSystem& fs, HostOps& host, const DataDirLayout& layout,
                   const ClusterUser& owner, const RunDirAccess& access = {});

// When the cluster runs as another user, every ancestor of DIR must be searchable by it, or
// PostgreSQL cannot reach its data directory. skydb never widens a parent's permissions; it
// names the first one in the way instead.
Status CheckReachable(const FileSystem& fs, const std::string& root, const ClusterUser& owner);

// initdb as skydb runs it for a new cluster: checksums, UTF8, locale C, peer authentication on
// the socket, no TCP, `superuser` as the bootstrap role. The caller sets run_as.
CommandSpec InitdbCommand(const std::string& bin_dir, const std::string& pgdata,
                          const std::string& superuser);

enum class PgdataState {
  kAbsent,   // DIR/pgdata does not exist: initdb will create it
  kEmpty,    // exists and is empty: initdb may use it
  kCluster,  // holds a cluster of the binaries' major version
};

// kCluster only when PG_VERSION matches `binaries_major`; a cluster of another major is a
// VersionMismatch naming both versions and pg_upgrade; a non-empty directory without
// PG_VERSION is a Conflict. Nothing is modified.
Result<PgdataState> InspectPgdata(const FileSystem& fs, const std::string& pgdata,
                                  int binaries_major, const std::string& binaries_version);

}  // namespace skydb::supervisor
