// Internal to src/backup: what the backup files share about PostgreSQL's own tools, the
// compressed tar layout and long-running copies.
#pragma once

#include <string>

#include "skydb/backup.h"
#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb::backup_internal {

// pg_control's "Database system identifier" of the cluster (or base backup) in `pgdata`, from
// pg_controldata.
Result<std::string> SystemIdentifier(ProcessRunner& runner, const std::string& bin_dir,
                                     const std::string& pgdata);

// Bytes of every regular file under `path`.
uint64_t TreeBytes(const FileSystem& fs, const std::string& path);

// Runs `spec`; with a `report`, from another thread, while the main one reports the bytes
// under `watch` about once a second, and once more (finished) at the end.
Result<CommandOutput> RunWatched(Env& env, const CommandSpec& spec, const std::string& watch,
                                 CopyProgress progress, const CopyProgressFn& report);

// Extracts a tar-format backup (base.tar[.gz|.lz4|.zst] into `into`, pg_wal.tar[.gz] into
// `into`/pg_wal, backup_manifest beside them) with tar and the compression's own program.
// `into` must exist. `data_bytes` (0 = unknown) is the progress total.
Status ExtractTarBackup(Env& env, const std::string& backup_dir, const std::string& into,
                        uint64_t data_bytes, const std::string& step, const CopyProgressFn& report);

// A compressed backup extracted afresh into `checked` (made, or emptied first) for
// pg_verifybackup and pg_controldata; on failure `checked` is removed again.
Status ExtractForCheck(Env& env, const std::string& backup_dir, const std::string& checked,
                       uint64_t data_bytes, const std::string& step, const CopyProgressFn& report);

// "rm -rf --one-file-system DIR"; Ok when it is not there.
Status RemoveTree(Env& env, const std::string& dir);

}  // namespace skydb::backup_internal
