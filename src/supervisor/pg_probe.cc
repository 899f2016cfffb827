// PgProbe over libpq (skydb_pgconn).
#include "pgconn/pgconn.h"
#include "schema/app_database.h"
#include "schema/migrate.h"
#include "skydb/supervisor.h"
#include "supervisor/access_sync.h"

namespace skydb {
namespace {

class RealPgProbe final : public PgProbe {
 public:
  Ping PingServer(const std::string& conninfo) override {
    switch (pg::Ping(conninfo)) {
      case pg::PingStatus::kOk:
        return Ping::kOk;
      case pg::PingStatus::kRejecting:
        return Ping::kRejecting;
      default:
        return Ping::kNoResponse;
    }
  }

  Result<int> Migrate(const std::string& conninfo,
                      const std::vector<Migration>& migrations) override {
    SKYDB_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo));
    return schema::ApplyMigrations(conn, migrations);
  }

  Status EnsureAppDatabase(const std::string& conninfo, const AppDatabase& app,
                           const std::string& skydb_database) override {
    {
      SKYDB_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo));
      SKYDB_RETURN_IF_ERROR(schema::EnsureAppDatabase(conn, app, skydb_database));
    }
    if (app.extensions.empty()) return Ok();
    // The same superuser, in the app's database (a validated identifier: no quoting needed);
    // libpq takes the last dbname given.
    SKYDB_ASSIGN_OR_RETURN(auto conn,
                           pg::Connection::Open(conninfo + " dbname='" + app.database + "'"));
    return schema::EnsureExtensions(conn, app.database, app.extensions);
  }

  Status SyncAccess(const std::string& conninfo, const AccessTarget& target) override {
    SKYDB_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo));
    SKYDB_ASSIGN_OR_RETURN(schema::AppsLock lock, schema::AppsLock::Take(conn));
    return supervisor::SyncAccessFiles(conn, target);
  }

  Result<std::string> ServerVersion(const std::string& conninfo) override {
    SKYDB_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo));
    SKYDB_ASSIGN_OR_RETURN(auto rows, conn.Exec("SHOW server_version"));
    if (rows.rows() != 1) return Error::Internal("SHOW server_version returned no row");
    std::string version = rows.Get(0, 0);
    // "15.18 (Debian 15.18-0+deb12u1)" → "15.18"
    return version.substr(0, version.find(' '));
  }
};

}  // namespace

std::unique_ptr<PgProbe> NewRealPgProbe() { return std::make_unique<RealPgProbe>(); }

}  // namespace skydb
