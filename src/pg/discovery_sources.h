// The candidate directories each discovery source proposes, before they are examined.
// Internal to src/pg; see include/skydb/discovery.h for the contract and the rank order.
//
// Thread-safety: stateless functions over the injected FileSystem and ProcessRunner.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "skydb/discovery.h"
#include "skydb/env.h"

namespace skydb::pg {

// What one source proposes: candidates in rank order, or (in `skipped`) why it has none.
struct SourceProposal {
  std::vector<Candidate> candidates;
  std::string skipped;  // "pg_config: no pg_config on PATH"; empty when it proposed something
};

// The first executable `name` in a colon-separated PATH. Empty and relative entries are
// ignored, so the answer never depends on the working directory.
std::optional<std::string> FindOnPath(const FileSystem& fs, const std::string& path_env,
                                      const std::string& name);

// The directory part of a path: "/usr/bin/pg_config" → "/usr/bin".
std::string ParentDir(const std::string& path);

// `pg_config --bindir` of the first pg_config on PATH.
SourceProposal ProposePgConfig(const FileSystem& fs, ProcessRunner& runner,
                               const std::string& path_env);

// /usr/lib/postgresql/<v>/bin and /usr/pgsql-<v>/bin for every version directory present,
// highest first (Debian before RHEL at equal versions), then /usr/local/pgsql/bin.
SourceProposal ProposeDistro(const FileSystem& fs);

// The directory of the first `postgres` on PATH.
SourceProposal ProposePath(const FileSystem& fs, const std::string& path_env);

}  // namespace skydb::pg
