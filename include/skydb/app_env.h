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

// Where the app's database is: what a database source reports when it is ready
// (src/daemon/database_source.h). All empty: no database (a memory-only store).
struct AppDatabaseAddress {
  std::string url;         // an external database: store.database_url, as configured
  std::string socket_dir;  // the private cluster: PostgreSQL's socket directory (DIR/run)
  std::string database;    // the private cluster: the app's database and role
  std::string role;
};

// The contract for an app of `database` whose store listens on `store_socket`.
// InvalidArgument when a path is not UTF-8 (no URL or JSON could carry it).
Result<AppEnvironment> AppEnvironmentFor(const AppDatabaseAddress& database,
                                         const std::string& store_socket);
// What the database source `config` selects would report, for a caller with no daemon to ask
// (`skydb env`, `skydb status`, the embedding API before it is ready): the socket directory from
// skydb/data_dir_layout.h. `config.data_dir` should be absolute; a relative one is made absolute
// against the current directory.
AppDatabaseAddress ConfiguredAppDatabase(const Config& config);
// AppEnvironmentFor(ConfiguredAppDatabase(config), StoreSocketPath(config)), with data_dir made
// absolute the same way.
Result<AppEnvironment> AppEnvironmentFor(const Config& config);

// The store socket's path: resp.socket, else DATA_DIR/run/skydb.sock (skydb/data_dir_layout.h).
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
