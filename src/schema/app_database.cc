#include "schema/app_database.h"

#include <spdlog/spdlog.h>

#include "schema/app_registry.h"

namespace skydb::schema {

std::string QuoteIdentifier(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

namespace {

// An app that was the configured one under another app.database: kept (NOLOGIN, out of
// pg_hba.conf), its data untouched, until `skydb app remove NAME --drop-data`.
Status RetireEarlierConfigured(pg::Connection& conn, const std::string& current) {
  SKYDB_ASSIGN_OR_RETURN(auto apps, ListApps(conn));
  for (const AppRow& app : apps) {
    if (!app.configured || app.name == current) continue;
    SKYDB_RETURN_IF_ERROR(KeepApp(conn, app));
    spdlog::warn(
        "app {} (role {}, database {}) is no longer app.database: it may not log in now, and its "
        "data is kept; skydb app remove {} --drop-data deletes it",
        app.name, app.role, app.database, app.name);
  }
  return Ok();
}

}  // namespace

Status EnsureAppDatabase(pg::Connection& conn, const AppDatabase& app,
                         const std::string& /*skydb_database: closed like every other*/) {
  SKYDB_ASSIGN_OR_RETURN(AppsLock lock, AppsLock::Take(conn));
  SKYDB_RETURN_IF_ERROR(EnsureRegistry(conn, app));
  SKYDB_RETURN_IF_ERROR(RetireEarlierConfigured(conn, app.database));
  SKYDB_ASSIGN_OR_RETURN(auto existing, FindApp(conn, app.database));
  if (existing && existing->role != app.role) {
    return Error::InvalidArgument("app.database " + app.database + " belongs to role " +
                                  existing->role + " in skydb.apps, not app.role " + app.role +
                                  "; set app.role = \"" + existing->role + "\" again");
  }
  if (!existing) {
    Status ours = CheckNotForeign(conn, app.database, app.role, app.database);
    if (!ours.ok()) return std::move(ours).error().Within("the app's role and database");
  }
  AppRow row = ConfiguredAppRow(app);
  row.origin = existing ? existing->origin : "created";
  SKYDB_RETURN_IF_ERROR(MakeApp(conn, row, app.password));
  if (app.skydb_connections > 0) {
    SKYDB_RETURN_IF_ERROR(RecordSkydbConnections(conn, app.skydb_connections));
  }
  if (!existing) {
    spdlog::info("the app's role {} and database {} are ready", app.role, app.database);
  }
  // skydb's own database among them: no app role may connect to it.
  return RevokePublicEverywhere(conn);
}

}  // namespace skydb::schema
