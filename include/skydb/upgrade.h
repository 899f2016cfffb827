// Moving a stopped private cluster to a new PostgreSQL major (`skydb upgrade`, docs/upgrade.md).
//
// The new cluster is built beside the old one, in DIR/upgrade/new, by one of two methods:
//   pg_upgrade — when the new binaries have pg_upgrade (and the old ones what it needs of them):
//                files are cloned (reflinks) where the file system can, else copied; --link
//                only when asked, since a linked old cluster cannot be started once the new
//                one has been.
//   dump       — otherwise (relocatable builds and Sky's six-binary bundles carry no
//                pg_upgrade): the old cluster started read-only, its roles dumped with
//                pg_dumpall --globals-only and each database with pg_dump (the newest of the
//                two majors' pg_dump, pg_dumpall and pg_restore that exist), restored into a
//                fresh initdb of the new major, and every table's row count compared.
// Either way the new cluster is started and checked (row counts of every table, the roles)
// before anything in DIR/pgdata changes; then the two are exchanged with one atomic rename, the
// new one is started once more where it now lies, and the backup repository's backups of the
// old cluster are moved into REPO/pre-upgrade-<old major>-<time>/ so that the first start of
// the new cluster begins a new chain there. The old cluster is kept in DIR/upgrade/old-<major>.
// Any failure before the end undoes what was done: the old cluster is back in DIR/pgdata with
// its files as they were (except what any start of PostgreSQL rewrites: pg_control, WAL, the
// statistics, postmaster.opts, hint bits), and DIR/upgrade is removed.
//
// The caller holds DIR/skydb.lock (no daemon runs on DIR) and runs as the cluster's user.
// Thread-safety: one upgrade per data directory, on the caller's thread.
// Failure: one sentence naming the step, PostgreSQL's reason and what state the data dir is in.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "skydb/discovery.h"
#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb {

enum class UpgradeMethod {
  kAuto,       // pg_upgrade when the binaries allow it, else dump
  kPgUpgrade,  // pg_upgrade (refused when the binaries lack what it needs)
  kDump,       // dump and restore
};
const char* UpgradeMethodName(UpgradeMethod m);  // "auto", "pg_upgrade", "dump"

// How pg_upgrade moves the data files.
enum class UpgradeTransfer {
  kCloneOrCopy,  // --clone where the file system supports reflinks, else --copy
  kLink,         // --link: fastest, but the old cluster cannot run once the new one has
};

struct UpgradeBinaries {
  std::string dir;  // a bin dir holding postgres, initdb, pg_ctl
  PgVersion version;
};

// What the upgrade will do, decided from what the two bin dirs hold (pure: PlanUpgrade).
struct UpgradePlan {
  UpgradeMethod method = UpgradeMethod::kDump;  // kPgUpgrade or kDump
  std::string why;                              // "the new binaries have no pg_upgrade"
  UpgradeBinaries old_bin, new_bin;
  // The dump path's tools: full paths, each from the newest major that has it.
  std::string pg_dump, pg_dumpall, pg_restore;
  UpgradeTransfer transfer = UpgradeTransfer::kCloneOrCopy;
};

// Chooses the method. `executable(path)` says whether a program exists there. Refuses (with
// the fix) a new major that is not newer than the cluster's, a pg_upgrade that was asked for
// but cannot run, and a dump path with no pg_dump/pg_dumpall/pg_restore of at least the old
// major.
Result<UpgradePlan> PlanUpgrade(int cluster_major, const UpgradeBinaries& old_bin,
                                const UpgradeBinaries& new_bin, UpgradeMethod method,
                                UpgradeTransfer transfer,
                                const std::function<bool(const std::string&)>& executable);

// How long the upgrade takes (the app's database is down meanwhile), estimated from the size of
// the cluster's databases (pgdata/base and global, not its WAL) with the rates measured in
// docs/upgrade.md: a guess whose error is the disk's and the load's.
std::chrono::seconds EstimateDowntime(const UpgradePlan& plan, uint64_t database_bytes,
                                      bool can_clone);

// pg_control's "Database cluster state" and system identifier, read from its first bytes
// (the layout every supported major shares).
struct ControlState {
  uint64_t system_identifier = 0;
  int state = -1;  // 1 = shut down, 2 = shut down in recovery; anything else needs recovery
  bool CleanlyShutDown() const { return state == 1 || state == 2; }
};
Result<ControlState> ParseControlFile(const std::string& bytes);

// pg_dumpall --globals-only output as the statements to run over libpq (no psql is needed):
// without comments, psql meta-commands and the statement that creates `superuser` (initdb of the
// new cluster made that role already, and the restore stops at the first error).
std::vector<std::string> GlobalsStatements(const std::string& globals_sql,
                                           const std::string& superuser);

// Row counts per "database.schema.table"; the differences between two, one line each.
using RowCounts = std::map<std::string, int64_t>;
std::vector<std::string> CountDifferences(const RowCounts& before, const RowCounts& after);

// What an upgrade needs of the OS beyond the Env, so tests can fail each step.
struct UpgradeOs {
  // renameat2(RENAME_EXCHANGE): swaps two directories atomically.
  std::function<Status(const std::string&, const std::string&)> exchange;
  // Whether `dir`'s file system clones files (FICLONE).
  std::function<bool(const std::string& dir)> can_clone;
  std::function<Result<uint64_t>(const std::string& dir)> free_bytes;
  std::function<uint64_t(const std::string& dir)> tree_bytes;  // du -sb
  std::function<Status(const std::string& dir)> remove_tree;
  std::function<Status(const std::string& dir)> sync_dir;  // fsync of a directory
};
UpgradeOs RealUpgradeOs();

struct UpgradeOptions {
  std::string data_dir;   // absolute DIR
  std::string superuser;  // the cluster's superuser role: the cluster user's name
  UpgradePlan plan;
  std::string backup_repository;                     // backup.repository; "" = none
  int jobs = 1;                                      // pg_restore -j
  std::function<void(const std::string&)> progress;  // one line per step
};

// Refuses (Conflict, naming it and the fix) while DIR/upgrade holds a cluster an earlier upgrade
// kept; what an interrupted attempt left there is not refused (RunUpgrade removes it).
Status CheckNoKeptCluster(const FileSystem& fs, const std::string& data_dir);

// Runs the plan (see the top of this file). Ok: DIR/pgdata is the new major's cluster and
// DIR/upgrade/old-<major> the old one.
Status RunUpgrade(const UpgradeOptions& options, Env& env, const UpgradeOs& os);

}  // namespace skydb
