#include "schema/app_registry.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "base/strings.h"
#include "schema/app_database.h"

namespace skydb::schema {
namespace {

// An arbitrary constant naming skydb's apps lock among advisory locks (migrations use another).
constexpr char kAppsLockKey[] = "7354213002";

constexpr char kCreateAppsTable[] =
    "CREATE TABLE IF NOT EXISTS skydb.apps ("
    " name text PRIMARY KEY,"
    " role text NOT NULL UNIQUE,"
    " database text NOT NULL UNIQUE,"
    " auth text NOT NULL CHECK (auth IN ('peer', 'scram-sha-256')),"
    " os_users text[] NOT NULL DEFAULT '{}',"
    " configured boolean NOT NULL DEFAULT false,"
    " state text NOT NULL CHECK (state IN ('creating', 'ready', 'kept')),"
    " connection_limit integer NOT NULL DEFAULT -1,"
    " origin text NOT NULL,"
    " created_at timestamptz NOT NULL DEFAULT now())";

constexpr char kCreateBudget[] =
    "CREATE TABLE IF NOT EXISTS skydb.app_budget ("
    " one boolean PRIMARY KEY DEFAULT true CHECK (one),"
    " skydb_connections integer NOT NULL)";

constexpr char kColumns[] =
    "SELECT name, role, database, auth, array_to_string(os_users, E'\\n'), configured, state,"
    " connection_limit, origin, created_at::text FROM skydb.apps";

constexpr char kRecordedEarlier[] =
    "recorded when the registry was created: made by an earlier skydb";

// pg_hba.conf keywords and PostgreSQL's own databases: never an app's name.
constexpr const char* kReservedNames[] = {"all",         "sameuser", "samerole",  "samegroup",
                                          "replication", "postgres", "template0", "template1",
                                          "public",      "none"};

std::string QuoteLiteral(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

Status Run(pg::Connection& conn, const std::string& sql, const std::string& step) {
  Status s = conn.Run(sql);
  if (!s.ok()) return std::move(s).error().Within(step);
  return Ok();
}

Result<bool> Exists(pg::Connection& conn, const char* sql, const std::string& name) {
  SKYDB_ASSIGN_OR_RETURN(auto rows, conn.Exec(sql, {name}));
  return rows.rows() > 0;
}

Result<bool> RoleExists(pg::Connection& conn, const std::string& role) {
  return Exists(conn, "SELECT 1 FROM pg_roles WHERE rolname = $1", role);
}

Result<bool> DatabaseExists(pg::Connection& conn, const std::string& database) {
  return Exists(conn, "SELECT 1 FROM pg_database WHERE datname = $1", database);
}

AppAuth ParseAuth(const std::string& text) {
  return text == "peer" ? AppAuth::kPeer : AppAuth::kScram;
}

AppState ParseState(const std::string& text) {
  if (text == "ready") return AppState::kReady;
  if (text == "kept") return AppState::kKept;
  return AppState::kCreating;
}

AppRow RowAt(const pg::QueryResult& rows, int r) {
  AppRow row;
  row.name = rows.Get(r, 0);
  row.role = rows.Get(r, 1);
  row.database = rows.Get(r, 2);
  row.auth = ParseAuth(rows.Get(r, 3));
  std::string users = rows.Get(r, 4);
  if (!users.empty()) row.os_users = Split(users, '\n');
  row.configured = rows.Get(r, 5) == "t";
  row.state = ParseState(rows.Get(r, 6));
  row.connection_limit = std::atoi(rows.Get(r, 7).c_str());
  row.origin = rows.Get(r, 8);
  row.created_at = rows.Get(r, 9);
  return row;
}

Status UpsertRow(pg::Connection& conn, const AppRow& row) {
  return conn.Run(
      "INSERT INTO skydb.apps (name, role, database, auth, os_users, configured, state,"
      " connection_limit, origin) VALUES ($1, $2, $3, $4, string_to_array($5, E'\\n'),"
      " $6::boolean, $7, $8::integer, $9)"
      " ON CONFLICT (name) DO UPDATE SET auth = EXCLUDED.auth, os_users = EXCLUDED.os_users,"
      " configured = EXCLUDED.configured, connection_limit = EXCLUDED.connection_limit",
      {row.name, row.role, row.database, AppAuthName(row.auth), Join(row.os_users, "\n"),
       row.configured ? "true" : "false", AppStateName(row.state),
       std::to_string(row.connection_limit), row.origin});
}

Status SetState(pg::Connection& conn, const std::string& name, AppState state) {
  return conn.Run("UPDATE skydb.apps SET state = $2 WHERE name = $1", {name, AppStateName(state)});
}

// Ends every session of `role` (and, when given, every session in `database`).
Status EndSessions(pg::Connection& conn, const std::string& role, const std::string& database) {
  return conn.Run(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
      " WHERE pid <> pg_backend_pid() AND (usename = $1 OR datname = $2)",
      {role, database});
}

// On the registry's creation only: the configured app an earlier skydb made, if role and
// database have exactly the shape skydb gives them (no power beyond its own database, no
// memberships, the database its own). Anything else stays unrecorded, so it is refused.
Status RecordEarlierApp(pg::Connection& conn, const AppDatabase& app) {
  SKYDB_ASSIGN_OR_RETURN(
      auto rows,
      conn.Exec("SELECT r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolreplication"
                " OR r.rolbypassrls OR EXISTS (SELECT 1 FROM pg_auth_members m"
                " WHERE m.member = r.oid OR m.roleid = r.oid),"
                " (SELECT pg_get_userbyid(d.datdba) FROM pg_database d WHERE d.datname = $2)"
                " FROM pg_roles r WHERE r.rolname = $1",
                {app.role, app.database}));
  if (rows.rows() == 0) return Ok();  // no role: nothing an earlier skydb made
  bool beyond = rows.Get(0, 0) == "t";
  bool foreign_database = !rows.IsNull(0, 1) && rows.Get(0, 1) != app.role;
  if (beyond || foreign_database) {
    spdlog::warn(
        "role {} exists, but not with the shape skydb gives an app's role (or database {} is "
        "another role's): it is not recorded as skydb's",
        app.role, app.database);
    return Ok();
  }
  AppRow row = ConfiguredAppRow(app);
  row.state = AppState::kReady;
  row.origin = kRecordedEarlier;
  SKYDB_RETURN_IF_ERROR(UpsertRow(conn, row));
  spdlog::info(
      "recorded the app's role {} and database {}, made by an earlier skydb, in skydb.apps",
      app.role, app.database);
  return Ok();
}

}  // namespace

const char* AppAuthName(AppAuth auth) { return auth == AppAuth::kPeer ? "peer" : "scram-sha-256"; }

const char* AppStateName(AppState state) {
  switch (state) {
    case AppState::kCreating:
      return "creating";
    case AppState::kReady:
      return "ready";
    case AppState::kKept:
      return "kept";
  }
  return "creating";
}

Result<AppsLock> AppsLock::Take(pg::Connection& conn) {
  SKYDB_RETURN_IF_ERROR(conn.Run(std::string("SELECT pg_advisory_lock(") + kAppsLockKey + ")"));
  return AppsLock(conn);
}

AppsLock::~AppsLock() {
  if (conn_ != nullptr)
    (void)conn_->Run(std::string("SELECT pg_advisory_unlock(") + kAppsLockKey + ")");
}

AppRow ConfiguredAppRow(const AppDatabase& app) {
  AppRow row;
  row.name = app.database;
  row.role = app.role;
  row.database = app.database;
  row.auth = app.password.empty() ? AppAuth::kPeer : AppAuth::kScram;
  row.os_users = app.os_users;
  row.configured = true;
  row.connection_limit = app.connection_limit;
  return row;
}

std::string AppNameProblem(const std::string& name) {
  if (name.empty() || name.size() > 63) return "must be 1 to 63 characters";
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return "may hold only a-z, 0-9 and _";
  }
  if (name[0] >= '0' && name[0] <= '9') return "must not start with a digit";
  if (StartsWith(name, "pg_")) return "must not start with pg_ (PostgreSQL's own roles)";
  for (const char* reserved : kReservedNames) {
    if (name == reserved) return "is a word pg_hba.conf or PostgreSQL reserves";
  }
  return "";
}

Status EnsureRegistry(pg::Connection& conn, const AppDatabase& configured) {
  SKYDB_ASSIGN_OR_RETURN(auto found, conn.Exec("SELECT to_regclass('skydb.apps') IS NULL"));
  bool creating = found.rows() == 1 && found.Get(0, 0) == "t";
  SKYDB_RETURN_IF_ERROR(
      Run(conn, "CREATE SCHEMA IF NOT EXISTS skydb", "creating skydb's registry of apps"));
  SKYDB_RETURN_IF_ERROR(Run(conn, kCreateAppsTable, "creating skydb's registry of apps"));
  SKYDB_RETURN_IF_ERROR(Run(conn, kCreateBudget, "creating skydb's registry of apps"));
  if (!creating) return Ok();
  return RecordEarlierApp(conn, configured);
}

Result<std::vector<AppRow>> ListApps(pg::Connection& conn) {
  SKYDB_ASSIGN_OR_RETURN(auto rows, conn.Exec(std::string(kColumns) + " ORDER BY name"));
  std::vector<AppRow> apps;
  for (int r = 0; r < rows.rows(); ++r) apps.push_back(RowAt(rows, r));
  return apps;
}

Result<std::optional<AppRow>> FindApp(pg::Connection& conn, const std::string& name) {
  SKYDB_ASSIGN_OR_RETURN(auto rows, conn.Exec(std::string(kColumns) + " WHERE name = $1", {name}));
  if (rows.rows() == 0) return std::optional<AppRow>();
  return std::optional<AppRow>(RowAt(rows, 0));
}

Status CheckNotForeign(pg::Connection& conn, const std::string& name, const std::string& role,
                       const std::string& database) {
  SKYDB_ASSIGN_OR_RETURN(auto rows,
                         conn.Exec("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1),"
                                   " (SELECT name FROM skydb.apps WHERE role = $1),"
                                   " EXISTS (SELECT 1 FROM pg_database WHERE datname = $2),"
                                   " (SELECT name FROM skydb.apps WHERE database = $2)",
                                   {role, database}));
  struct Object {
    const char* kind;
    const std::string& object;
    bool exists;
    bool recorded;
    std::string owner;
  };
  for (const Object& o :
       {Object{"role", role, rows.Get(0, 0) == "t", !rows.IsNull(0, 1), rows.Get(0, 1)},
        Object{"database", database, rows.Get(0, 2) == "t", !rows.IsNull(0, 3), rows.Get(0, 3)}}) {
    if (o.recorded && o.owner != name) {
      return Error::Conflict(std::string(o.kind) + " " + o.object + " belongs to skydb's app " +
                             o.owner + "; choose another name");
    }
    if (o.exists && !o.recorded) {
      return Error::Conflict("skydb will not take over " + std::string(o.kind) + " " + o.object +
                             ": it exists in the cluster, but skydb did not create it (skydb.apps "
                             "does not record it); choose another name, or drop the " +
                             o.kind + " yourself if nothing uses it");
    }
  }
  return Ok();
}

Status MakeApp(pg::Connection& conn, AppRow row, const std::string& password) {
  const std::string step = "preparing app " + row.name;
  row.state = AppState::kCreating;  // a new row's; an existing row keeps its state until ready
  Status upserted = UpsertRow(conn, row);
  if (!upserted.ok()) return std::move(upserted).error().Within(step);
  const std::string role = QuoteIdentifier(row.role);
  const std::string database = QuoteIdentifier(row.database);
  SKYDB_ASSIGN_OR_RETURN(bool role_exists, RoleExists(conn, row.role));
  std::string attributes =
      " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS CONNECTION LIMIT " +
      std::to_string(row.connection_limit);
  SKYDB_RETURN_IF_ERROR(
      Run(conn, (role_exists ? "ALTER ROLE " : "CREATE ROLE ") + role + attributes, step));
  SKYDB_RETURN_IF_ERROR(SetAppPassword(conn, row, password));
  SKYDB_ASSIGN_OR_RETURN(bool db_exists, DatabaseExists(conn, row.database));
  if (db_exists) {
    SKYDB_RETURN_IF_ERROR(Run(conn, "ALTER DATABASE " + database + " OWNER TO " + role, step));
  } else {
    SKYDB_RETURN_IF_ERROR(Run(conn, "CREATE DATABASE " + database + " OWNER " + role, step));
    spdlog::info("created database {} owned by role {} for app {}", row.database, row.role,
                 row.name);
  }
  SKYDB_RETURN_IF_ERROR(Run(conn, "REVOKE ALL ON DATABASE " + database + " FROM PUBLIC", step));
  Status ready = SetState(conn, row.name, AppState::kReady);
  if (!ready.ok()) return std::move(ready).error().Within(step);
  return Ok();
}

Status SetAppPassword(pg::Connection& conn, const AppRow& row, const std::string& password) {
  const std::string step = "setting the password of app " + row.name;
  const std::string role = QuoteIdentifier(row.role);
  if (password.empty()) return Run(conn, "ALTER ROLE " + role + " PASSWORD NULL", step);
  auto verifier = conn.EncryptPassword(password, row.role);
  if (!verifier.ok()) return std::move(verifier).error().Within(step);
  return Run(conn, "ALTER ROLE " + role + " PASSWORD " + QuoteLiteral(*verifier), step);
}

Status KeepApp(pg::Connection& conn, const AppRow& row) {
  const std::string step = "removing app " + row.name + " (keeping its data)";
  SKYDB_ASSIGN_OR_RETURN(bool role_exists, RoleExists(conn, row.role));
  if (role_exists) {
    SKYDB_RETURN_IF_ERROR(
        Run(conn, "ALTER ROLE " + QuoteIdentifier(row.role) + " NOLOGIN PASSWORD NULL", step));
  }
  Status ended = EndSessions(conn, row.role, "");
  if (!ended.ok()) return std::move(ended).error().Within(step);
  Status kept = conn.Run("UPDATE skydb.apps SET state = 'kept', configured = false WHERE name = $1",
                         {row.name});
  if (!kept.ok()) return std::move(kept).error().Within(step);
  return Ok();
}

Status DropApp(pg::Connection& conn, const AppRow& row) {
  const std::string step = "removing app " + row.name + " and its data";
  Status ended = EndSessions(conn, row.role, row.database);
  if (!ended.ok()) return std::move(ended).error().Within(step);
  SKYDB_RETURN_IF_ERROR(Run(
      conn, "DROP DATABASE IF EXISTS " + QuoteIdentifier(row.database) + " WITH (FORCE)", step));
  SKYDB_RETURN_IF_ERROR(Run(conn, "DROP ROLE IF EXISTS " + QuoteIdentifier(row.role), step));
  Status deleted = conn.Run("DELETE FROM skydb.apps WHERE name = $1", {row.name});
  if (!deleted.ok()) return std::move(deleted).error().Within(step);
  return Ok();
}

Status RecordSkydbConnections(pg::Connection& conn, int connections) {
  return conn.Run(
      "INSERT INTO skydb.app_budget (skydb_connections) VALUES ($1::integer)"
      " ON CONFLICT (one) DO UPDATE SET skydb_connections = EXCLUDED.skydb_connections",
      {std::to_string(connections)});
}

Result<int> SkydbConnections(pg::Connection& conn) {
  SKYDB_ASSIGN_OR_RETURN(auto rows, conn.Exec("SELECT skydb_connections FROM skydb.app_budget"));
  return rows.rows() == 0 ? 0 : std::atoi(rows.Get(0, 0).c_str());
}

Status RevokePublicEverywhere(pg::Connection& conn) {
  SKYDB_ASSIGN_OR_RETURN(auto rows,
                         conn.Exec("SELECT datname FROM pg_database WHERE datallowconn"));
  for (int r = 0; r < rows.rows(); ++r) {
    SKYDB_RETURN_IF_ERROR(
        Run(conn, "REVOKE ALL ON DATABASE " + QuoteIdentifier(rows.Get(r, 0)) + " FROM PUBLIC",
            "closing every database to PUBLIC"));
  }
  return Ok();
}

}  // namespace skydb::schema
