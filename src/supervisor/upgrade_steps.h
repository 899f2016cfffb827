// Helpers of `skydb upgrade` (upgrade_run.cc) that look at binaries and catalogs. Internal to
// src/supervisor. Thread-safety: stateless.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pgconn/pgconn.h"
#include "skydb/env.h"
#include "skydb/schema.h"

namespace skydb::upgrade {

// Where the PostgreSQL of `bin_dir` keeps `name`.control: nullopt when no extension directory
// is where skydb looks (bin/../share/postgresql/extension, bin/../share/extension, or Debian's
// PREFIX/share/postgresql/N/extension for PREFIX/lib/postgresql/N/bin); "" when the directory
// is there without it; else the file.
std::optional<std::string> FindExtensionControl(const FileSystem& fs, const std::string& bin_dir,
                                                const std::string& name);

// What to install for an extension PostgreSQL `major` lacks (skydb/schema.h ExtensionAdvice).
inline std::string ExtensionAdvice(const std::string& name, int major) {
  return skydb::ExtensionAdvice(name, major);
}

// Every role but PostgreSQL's predefined pg_* ones, sorted.
Result<std::vector<std::string>> RoleNames(pg::Connection& conn);

}  // namespace skydb::upgrade
