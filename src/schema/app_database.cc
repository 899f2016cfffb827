#include "schema/app_database.h"

#include <spdlog/spdlog.h>

namespace skydb::schema {
namespace {

std::string QuoteLiteral(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

Result<bool> Exists(pg::Connection& conn, const char* sql, const std::string& name) {
  SKYDB_ASSIGN_OR_RETURN(auto rows, conn.Exec(sql, {name}));
  return rows.rows() > 0;
}

}  // namespace

std::string QuoteIdentifier(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

Status EnsureAppDatabase(pg::Connection& conn, const AppDatabase& app,
                         const std::string& skydb_database) {
  const std::string role = QuoteIdentifier(app.role);
  const std::string database = QuoteIdentifier(app.database);
  auto run = [&](const std::string& sql) -> Status {
    Status s = conn.Run(sql);
    if (!s.ok()) return std::move(s).error().Within("preparing the app's database");
    return Ok();
  };
  SKYDB_ASSIGN_OR_RETURN(bool role_exists,
                         Exists(conn, "SELECT 1 FROM pg_roles WHERE rolname = $1", app.role));
  std::string attributes =
      " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS CONNECTION LIMIT " +
      std::to_string(app.connection_limit);
  SKYDB_RETURN_IF_ERROR(run((role_exists ? "ALTER ROLE " : "CREATE ROLE ") + role + attributes));
  if (app.password.empty()) {
    SKYDB_RETURN_IF_ERROR(run("ALTER ROLE " + role + " PASSWORD NULL"));
  } else {
    SKYDB_ASSIGN_OR_RETURN(std::string verifier, conn.EncryptPassword(app.password, app.role));
    SKYDB_RETURN_IF_ERROR(run("ALTER ROLE " + role + " PASSWORD " + QuoteLiteral(verifier)));
  }
  SKYDB_ASSIGN_OR_RETURN(
      bool db_exists, Exists(conn, "SELECT 1 FROM pg_database WHERE datname = $1", app.database));
  if (db_exists) {
    SKYDB_RETURN_IF_ERROR(run("ALTER DATABASE " + database + " OWNER TO " + role));
  } else {
    SKYDB_RETURN_IF_ERROR(run("CREATE DATABASE " + database + " OWNER " + role));
    spdlog::info("created the app's database {} owned by role {}", app.database, app.role);
  }
  SKYDB_RETURN_IF_ERROR(run("REVOKE ALL ON DATABASE " + database + " FROM PUBLIC"));
  SKYDB_RETURN_IF_ERROR(
      run("REVOKE ALL ON DATABASE " + QuoteIdentifier(skydb_database) + " FROM PUBLIC"));
  return Ok();
}

}  // namespace skydb::schema
