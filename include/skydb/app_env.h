// The connection contract: what an app needs to reach its database and its session store, as
// environment variables. One list, the same for `skydb env`, DIR/run/app.env, the app that
// `skydb run` starts and the embedding API (docs/embedding.md):
//
//   DATABASE_URL, SKY_DB_PATH   postgresql:///DB?host=DIR/run&user=ROLE (embedded), else the
//                               external URL as configured; absent for a memory-only store
//   PGHOST, PGPORT, PGDATABASE, PGUSER   the same for libpq's defaults (embedded only)
//   SKY_LIVE_STORE=redis, SKY_LIVE_STORE_PATH, REDIS_URL=unix://…   the store socket
//
// Passwords are never part of it: the embedded role uses peer authentication (or the password
// file the app reads itself); an external URL is reported as configured, for the app to use.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "skydb/config.h"
#include "skydb/result.h"

namespace skydb {

struct AppEnvironment {
  std::vector<std::pair<std::string, std::string>> vars;  // in the order documented above

  const std::string* Find(const std::string& name) const;
};

// `config.data_dir` should be absolute; a relative one is made absolute against the current
// directory. InvalidArgument when a path is not UTF-8 (no URL or JSON could carry it).
Result<AppEnvironment> AppEnvironmentFor(const Config& config);

// The store socket's path: resp.socket, else DATA_DIR/run/skydb.sock.
std::string StoreSocketPath(const Config& config);
// A unix socket path holds at most this many bytes (sockaddr_un's sun_path, less its NUL).
inline constexpr size_t kMaxSocketPathBytes = 107;
// Every unix socket the configuration makes (PostgreSQL's DIR/run/.s.PGSQL.5432 with an
// embedded cluster, the store socket, an http.listen socket) that is longer than
// kMaxSocketPathBytes: one sentence each, naming the path, its length and the fix. Empty when
// all fit. `config.data_dir` should be absolute.
std::vector<std::string> SocketPathProblems(const Config& config, bool embedded);
// The embedded cluster's URL for `role` and `database` (socket dir DIR/run, port 5432).
std::string EmbeddedDatabaseUrl(const std::string& socket_dir, const std::string& database,
                                const std::string& role);
// The same with a password, as URI userinfo: postgresql://ROLE:PASSWORD@/DB?host=DIR/run
// (`skydb app add` prints it once; nothing else carries a password).
std::string EmbeddedDatabaseUrl(const std::string& socket_dir, const std::string& database,
                                const std::string& role, const std::string& password);
// `url` with any password replaced by "<redacted>" (URI userinfo or password= keyword).
std::string RedactedDatabaseUrl(const std::string& url);

// `export NAME='value'` lines for sh.
std::string RenderShellEnvironment(const AppEnvironment& env);
// NAME="value" lines for a systemd EnvironmentFile= (quotes and backslashes escaped).
std::string RenderSystemdEnvironment(const AppEnvironment& env);
// One JSON object on one line, names to values, with a trailing newline.
std::string RenderJsonEnvironment(const AppEnvironment& env);

}  // namespace skydb
