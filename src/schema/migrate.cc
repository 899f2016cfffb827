#include "schema/migrate.h"

#include <cstdlib>
#include <map>

namespace skydb::schema {
namespace {

// An arbitrary constant naming skydb's migration lock among advisory locks.
constexpr char kLockKey[] = "7354213001";

// Named with its schema: no search_path is assumed.
#define SKYDB_MIGRATIONS_TABLE "public.skydb_schema_migrations"

constexpr char kCreateTable[] = "CREATE TABLE IF NOT EXISTS " SKYDB_MIGRATIONS_TABLE
                                " ("
                                " version integer PRIMARY KEY,"
                                " name text NOT NULL,"
                                " applied_at timestamptz NOT NULL DEFAULT now())";

Result<std::map<int, std::string>> AppliedVersions(pg::Connection& conn) {
  SKYDB_ASSIGN_OR_RETURN(auto rows, conn.Exec("SELECT version, name FROM " SKYDB_MIGRATIONS_TABLE));
  std::map<int, std::string> applied;
  for (int r = 0; r < rows.rows(); ++r) {
    applied[std::atoi(rows.Get(r, 0).c_str())] = rows.Get(r, 1);
  }
  return applied;
}

Status CheckApplied(const std::map<int, std::string>& applied,
                    const std::vector<Migration>& migrations) {
  std::map<int, std::string> known;
  for (const auto& m : migrations) known[m.version] = m.name;
  for (const auto& [version, name] : applied) {
    auto it = known.find(version);
    if (it == known.end()) {
      return Error::VersionMismatch("the database has schema migration " + std::to_string(version) +
                                    " (" + name +
                                    "), which this skydb does not know: a newer skydb "
                                    "migrated it; run that version");
    }
    if (it->second != name) {
      return Error::VersionMismatch("schema migration " + std::to_string(version) +
                                    " is recorded as '" + name + "' but this skydb calls it '" +
                                    it->second + "'");
    }
  }
  return Ok();
}

// Each migration in a transaction of its own, or, with `within_one`, in the caller's.
Result<int> ApplyMissing(pg::Connection& conn, const std::vector<Migration>& migrations,
                         bool within_one) {
  SKYDB_ASSIGN_OR_RETURN(auto applied, AppliedVersions(conn));
  SKYDB_RETURN_IF_ERROR(CheckApplied(applied, migrations));
  int count = 0;
  for (const auto& m : migrations) {
    if (applied.count(m.version) != 0) continue;
    auto apply = [&](pg::Connection& c) -> Status {
      // The released migrations name their tables without a schema: within this transaction
      // they resolve to public whatever the role is called (a role named skydb would otherwise
      // create them in migration 1's schema skydb). SET LOCAL holds under any pooler.
      SKYDB_RETURN_IF_ERROR(c.Run("SET LOCAL search_path = public"));
      SKYDB_RETURN_IF_ERROR(c.Run(m.sql));
      return c.Run("INSERT INTO " SKYDB_MIGRATIONS_TABLE " (version, name) VALUES ($1, $2)",
                   {std::to_string(m.version), m.name});
    };
    Status done = within_one ? apply(conn) : conn.InTransaction(apply);
    if (!done.ok()) {
      return std::move(done).error().Within("schema migration " + std::to_string(m.version) + " (" +
                                            m.name + ")");
    }
    ++count;
  }
  return count;
}

}  // namespace

Status ValidateMigrations(const std::vector<Migration>& migrations) {
  int last = 0;
  for (const auto& m : migrations) {
    if (m.version <= last) {
      return Error::Internal("migration versions must be positive and strictly increasing; " +
                             std::to_string(m.version) + " follows " + std::to_string(last));
    }
    if (m.name.empty()) {
      return Error::Internal("migration " + std::to_string(m.version) + " has no name");
    }
    last = m.version;
  }
  return Ok();
}

Result<int> ApplyMigrations(pg::Connection& conn, const std::vector<Migration>& migrations,
                            MigrationLock lock) {
  SKYDB_RETURN_IF_ERROR(ValidateMigrations(migrations));
  if (lock == MigrationLock::kTransaction) {
    Result<int> applied = 0;
    Status done = conn.InTransaction([&](pg::Connection& c) -> Status {
      SKYDB_RETURN_IF_ERROR(c.Run(std::string("SELECT pg_advisory_xact_lock(") + kLockKey + ")"));
      SKYDB_RETURN_IF_ERROR(c.Run(kCreateTable));
      applied = ApplyMissing(c, migrations, /*within_one=*/true);
      return applied.ok() ? Ok() : Status(applied.error());
    });
    if (!done.ok()) return std::move(done).error();
    return applied;
  }
  SKYDB_RETURN_IF_ERROR(conn.Run(std::string("SELECT pg_advisory_lock(") + kLockKey + ")"));
  Result<int> applied = [&]() -> Result<int> {
    SKYDB_RETURN_IF_ERROR(conn.Run(kCreateTable));
    return ApplyMissing(conn, migrations, /*within_one=*/false);
  }();
  (void)conn.Run(std::string("SELECT pg_advisory_unlock(") + kLockKey + ")");
  return applied;
}

#undef SKYDB_MIGRATIONS_TABLE

}  // namespace skydb::schema
