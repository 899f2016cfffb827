// app.extensions: what to install for a missing one, and creating them in the app's database.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "schema/app_database.h"

namespace skydb {
namespace {

// PostgreSQL's contrib modules, which Debian ships in postgresql-N itself.
constexpr const char* kContrib[] = {"adminpack",
                                    "amcheck",
                                    "autoinc",
                                    "bloom",
                                    "btree_gin",
                                    "btree_gist",
                                    "citext",
                                    "cube",
                                    "dblink",
                                    "dict_int",
                                    "dict_xsyn",
                                    "earthdistance",
                                    "file_fdw",
                                    "fuzzystrmatch",
                                    "hstore",
                                    "insert_username",
                                    "intagg",
                                    "intarray",
                                    "isn",
                                    "lo",
                                    "ltree",
                                    "moddatetime",
                                    "old_snapshot",
                                    "pageinspect",
                                    "pg_buffercache",
                                    "pg_freespacemap",
                                    "pg_prewarm",
                                    "pg_stat_statements",
                                    "pg_surgery",
                                    "pg_trgm",
                                    "pg_visibility",
                                    "pg_walinspect",
                                    "pgcrypto",
                                    "pgrowlocks",
                                    "pgstattuple",
                                    "plpgsql",
                                    "postgres_fdw",
                                    "refint",
                                    "seg",
                                    "sslinfo",
                                    "tablefunc",
                                    "tcn",
                                    "tsm_system_rows",
                                    "tsm_system_time",
                                    "unaccent",
                                    "uuid-ossp",
                                    "xml2"};

// Extensions whose Debian package is not postgresql-N-<name>.
const std::map<std::string, std::string>& PackageSuffixes() {
  static const std::map<std::string, std::string> suffixes = {{"vector", "pgvector"},
                                                              {"postgis", "postgis-3"},
                                                              {"postgis_topology", "postgis-3"},
                                                              {"pg_cron", "cron"},
                                                              {"pg_partman", "partman"},
                                                              {"pg_repack", "repack"},
                                                              {"pg_hint_plan", "pg-hint-plan"},
                                                              {"pgrouting", "pgrouting"},
                                                              {"plpython3u", ""},
                                                              {"plperl", ""},
                                                              {"pltcl", ""}};
  return suffixes;
}

}  // namespace

std::string ExtensionAdvice(const std::string& name, int major) {
  const std::string n = std::to_string(major);
  const std::string bundle =
      "or stage a bundle (skydb bundle stage) from an installation that has it: a bundle carries "
      "every extension installed there";
  if (std::find_if(std::begin(kContrib), std::end(kContrib),
                   [&](const char* c) { return name == c; }) != std::end(kContrib)) {
    return "it is part of PostgreSQL's contrib, which Debian ships in postgresql-" + n +
           "; install that package, " + bundle;
  }
  std::string package = "postgresql-" + n + "-" + name;
  if (auto found = PackageSuffixes().find(name); found != PackageSuffixes().end()) {
    if (found->second.empty()) {
      // The procedural languages: postgresql-plpython3-N and the like.
      std::string lang = name == "plpython3u" ? "plpython3" : name;
      package = "postgresql-" + lang + "-" + n;
    } else {
      package = "postgresql-" + n + "-" + found->second;
    }
  }
  std::string note =
      name == "vector" ? " (in Debian 13, and in PGDG's apt repository for Debian 12)" : "";
  return "install its package (Debian: " + package + note + "), " + bundle;
}

namespace schema {

Status EnsureExtensions(pg::Connection& conn, const std::string& database,
                        const std::vector<std::string>& names) {
  if (names.empty()) return Ok();
  SKYDB_ASSIGN_OR_RETURN(auto version, conn.Exec("SHOW server_version_num"));
  int major = std::stoi(version.Get(0, 0)) / 10000;
  SKYDB_ASSIGN_OR_RETURN(auto server, conn.Exec("SHOW server_version"));
  for (const auto& name : names) {
    SKYDB_ASSIGN_OR_RETURN(auto available,
                           conn.Exec("SELECT installed_version FROM pg_available_extensions "
                                     "WHERE name = $1",
                                     {name}));
    if (available.rows() == 0) {
      std::string text = server.Get(0, 0);
      return Error::NotFound("app.extensions lists " + name + ", which PostgreSQL " +
                             text.substr(0, text.find(' ')) +
                             " does not have: " + ExtensionAdvice(name, major));
    }
    if (!available.Get(0, 0).empty()) continue;
    Status created =
        conn.Run("CREATE EXTENSION IF NOT EXISTS " + QuoteIdentifier(name) + " CASCADE");
    if (!created.ok()) {
      return std::move(created).error().Within("creating the extension " + name + " in " +
                                               database + " (app.extensions)");
    }
    spdlog::info("created the extension {} in the app's database {}", name, database);
  }
  return Ok();
}

}  // namespace schema
}  // namespace skydb
