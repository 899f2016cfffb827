// The apps skydb made in its private cluster, recorded in skydb's own database:
//
//   skydb.apps(name PRIMARY KEY, role UNIQUE, database UNIQUE, auth 'peer'|'scram',
//              os_users text[], configured boolean, state 'creating'|'ready'|'kept',
//              connection_limit integer, origin text, created_at timestamptz)
//   skydb.app_budget(skydb_connections integer)   one row: what the store keeps for itself
//
// skydb changes or drops only the roles and databases a row names. A role or database that
// exists without a row was made by someone else, and is refused: skydb never adopts it. A row
// is written (state creating) before its role and database are made and marked ready once they
// exist, so an interrupted `skydb app add` is finished by the next one instead of leaving a role
// skydb cannot account for. `kept`: removed with --keep-data; the role may not log in, the
// database stays. The one exception to "never adopt": when the registry itself is created, on a
// cluster an earlier skydb (without a registry) prepared, the configured app's role and
// database are recorded if they have exactly the shape skydb gives them.
//
// Every function runs its statements on the caller's superuser connection to skydb's database;
// callers serialise on LockApps (a session advisory lock) around a whole operation.
// Thread-safety: uses the connection it is given, on the caller's thread.
// Failure: the step that failed, with the server's message; refusals name the fix.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pgconn/pgconn.h"
#include "skydb/schema.h"

namespace skydb::schema {

enum class AppAuth {
  kPeer,   // pg_ident.conf maps OS users to the role; no password
  kScram,  // a password, stored by PostgreSQL as its scram-sha-256 verifier
};
const char* AppAuthName(AppAuth auth);  // "peer", "scram-sha-256"

enum class AppState {
  kCreating,  // the row is written; the role or the database may not exist yet
  kReady,     // role and database exist; the app may log in
  kKept,      // removed with --keep-data: NOLOGIN, database kept, not in pg_hba.conf
};
const char* AppStateName(AppState state);  // "creating", "ready", "kept"

struct AppRow {
  std::string name;
  std::string role;
  std::string database;
  AppAuth auth = AppAuth::kScram;
  std::vector<std::string> os_users;  // peer: who pg_ident.conf maps to the role
  bool configured = false;            // the [app] of the configuration
  AppState state = AppState::kCreating;
  int connection_limit = -1;
  std::string origin;      // "created", or how an earlier skydb's app was recorded
  std::string created_at;  // as PostgreSQL prints it
};

// Holds skydb's apps lock on `conn` (a session advisory lock) for as long as it lives.
class AppsLock {
 public:
  static Result<AppsLock> Take(pg::Connection& conn);
  AppsLock(AppsLock&& other) noexcept : conn_(other.conn_) { other.conn_ = nullptr; }
  AppsLock& operator=(AppsLock&&) = delete;
  ~AppsLock();

 private:
  explicit AppsLock(pg::Connection& conn) : conn_(&conn) {}
  pg::Connection* conn_;
};

// An app's name, role and database name: 1 to 63 characters of [a-z0-9_], not starting with a
// digit or "pg_", and none of the words pg_hba.conf reads as keywords or PostgreSQL's own
// databases. "" when fine, else why not.
std::string AppNameProblem(const std::string& name);

// The configured app's row ([app]): named after its database, state creating, origin "".
AppRow ConfiguredAppRow(const AppDatabase& app);

// Creates skydb.apps when missing (recording an earlier skydb's configured app, see above).
Status EnsureRegistry(pg::Connection& conn, const AppDatabase& configured);
Result<std::vector<AppRow>> ListApps(pg::Connection& conn);  // by name
Result<std::optional<AppRow>> FindApp(pg::Connection& conn, const std::string& name);

// Refused (Conflict) when `role` or `database` exists and no row names it, or a row other than
// `name`'s does.
Status CheckNotForeign(pg::Connection& conn, const std::string& name, const std::string& role,
                       const std::string& database);

// Writes `row` (state creating, or keeping its state when it exists), then makes its role and
// database as skydb makes them (attributes, password verifier or none, owner, REVOKE ALL FROM
// PUBLIC), then marks it ready. `password` "" removes any password (peer authentication).
Status MakeApp(pg::Connection& conn, AppRow row, const std::string& password);

// Sets the role's password to `password` (its verifier only travels).
Status SetAppPassword(pg::Connection& conn, const AppRow& row, const std::string& password);

// --keep-data: NOLOGIN and no password, its sessions ended, state kept. The database stays.
Status KeepApp(pg::Connection& conn, const AppRow& row);
// --drop-data: its sessions ended, database and role dropped, row deleted.
Status DropApp(pg::Connection& conn, const AppRow& row);

// The connections the daemon keeps for itself (AppDatabase::skydb_connections), as it last
// recorded them; 0 when it never did.
Status RecordSkydbConnections(pg::Connection& conn, int connections);
Result<int> SkydbConnections(pg::Connection& conn);

// REVOKE ALL ON DATABASE ... FROM PUBLIC for every database that accepts connections.
Status RevokePublicEverywhere(pg::Connection& conn);

}  // namespace skydb::schema
