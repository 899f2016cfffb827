// What a running daemon published at READY (DIR/run/app.json, written by the lifecycle): the
// connection contract as that daemon's configuration made it, which `skydb status` and `skydb
// env` prefer to the caller's own configuration. Internal to src/cli.
#pragma once

#include <optional>
#include <string>

#include "skydb/app_env.h"
#include "skydb/env.h"

namespace skydb::cli {

// RenderJsonEnvironment's text back, in its order; nullopt when it is not that.
std::optional<AppEnvironment> ParseJsonEnvironment(const std::string& text);
// The contract the daemon holding `dir`/skydb.lock published; nullopt when no daemon runs
// there, or it has published nothing readable (yet).
std::optional<AppEnvironment> PublishedEnvironment(const FileSystem& fs, const std::string& dir);

}  // namespace skydb::cli
