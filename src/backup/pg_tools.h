// Internal to src/backup: what the backup files share about PostgreSQL's own tools.
#pragma once

#include <string>

#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb::backup_internal {

// pg_control's "Database system identifier" of the cluster (or base backup) in `pgdata`, from
// pg_controldata.
Result<std::string> SystemIdentifier(ProcessRunner& runner, const std::string& bin_dir,
                                     const std::string& pgdata);

}  // namespace skydb::backup_internal
