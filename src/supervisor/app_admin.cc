#include "supervisor/app_admin.h"

#include <spdlog/spdlog.h>
#include <sys/random.h>

#include <cstdio>
#include <cstdlib>

#include "pgconn/pgconn.h"
#include "schema/acl_rows.h"
#include "supervisor/access_sync.h"

namespace skydb::supervisor {
namespace {

using schema::AppRow;
using schema::AppState;

constexpr size_t kPasswordBytes = 24;

class AppAdminImpl final : public AppAdmin {
 public:
  AppAdminImpl(pg::Connection conn, AccessTarget access)
      : conn_(std::move(conn)), access_(std::move(access)) {}

  Result<std::vector<AppRow>> List() override { return schema::ListApps(conn_); }

  Result<ConnectionBudget> Budget() override {
    SKYDB_ASSIGN_OR_RETURN(auto rows,
                           conn_.Exec("SELECT current_setting('max_connections'),"
                                      " current_setting('superuser_reserved_connections')"));
    ConnectionBudget budget;
    budget.max_connections = std::atoi(rows.Get(0, 0).c_str());
    budget.reserved = std::atoi(rows.Get(0, 1).c_str());
    SKYDB_ASSIGN_OR_RETURN(budget.skydb, schema::SkydbConnections(conn_));
    SKYDB_ASSIGN_OR_RETURN(auto apps, schema::ListApps(conn_));
    for (const AppRow& app : apps) {
      if (app.state != AppState::kKept && app.connection_limit > 0) {
        budget.apps += app.connection_limit;
      }
    }
    return budget;
  }

  Result<AppCredentials> Add(const NewApp& request) override {
    if (std::string problem = schema::AppNameProblem(request.name); !problem.empty()) {
      return Error::InvalidArgument("app name " + request.name + " " + problem);
    }
    if (request.connections < 1) {
      return Error::InvalidArgument("--connections must be at least 1");
    }
    SKYDB_ASSIGN_OR_RETURN(schema::AppsLock lock, schema::AppsLock::Take(conn_));
    SKYDB_ASSIGN_OR_RETURN(auto existing, schema::FindApp(conn_, request.name));
    if (existing && existing->state == AppState::kReady) {
      return Error::Conflict("app " + request.name + " exists already (skydb app rotate-password " +
                             request.name + " gives it a new password)");
    }
    if (existing && existing->state == AppState::kKept) {
      return Error::Conflict("app " + request.name +
                             " was removed with --keep-data: its database is still there. "
                             "skydb app remove " +
                             request.name + " --drop-data deletes it; then add it again");
    }
    // An interrupted add (state creating) is finished; anything else must be new.
    if (!existing) {
      SKYDB_RETURN_IF_ERROR(
          schema::CheckNotForeign(conn_, request.name, request.name, request.name));
    }
    SKYDB_RETURN_IF_ERROR(CheckRoom(request));
    AppCredentials made;
    made.app.name = made.app.role = made.app.database = request.name;
    made.app.auth = request.os_user.empty() ? schema::AppAuth::kScram : schema::AppAuth::kPeer;
    if (!request.os_user.empty()) made.app.os_users = {request.os_user};
    made.app.connection_limit = request.connections;
    made.app.origin = "created";
    if (request.os_user.empty()) {
      SKYDB_ASSIGN_OR_RETURN(made.password, GeneratePassword());
    }
    SKYDB_RETURN_IF_ERROR(schema::MakeApp(conn_, made.app, made.password));
    SKYDB_ASSIGN_OR_RETURN(made.store_password, GeneratePassword());
    SKYDB_RETURN_IF_ERROR(schema::PutAclUser(
        conn_, request.name, schema::AppStoreUserRules(request.name, made.store_password)));
    SKYDB_RETURN_IF_ERROR(schema::RevokePublicEverywhere(conn_));
    SKYDB_ASSIGN_OR_RETURN(auto stored, schema::FindApp(conn_, request.name));
    if (stored) made.app = *stored;
    Status synced = SyncAccessFiles(conn_, access_);
    if (!synced.ok()) {
      return std::move(synced).error().Within("app " + request.name +
                                              " was made, but cannot log in yet");
    }
    return made;
  }

  Status Remove(const std::string& name, bool keep_data) override {
    SKYDB_ASSIGN_OR_RETURN(schema::AppsLock lock, schema::AppsLock::Take(conn_));
    SKYDB_ASSIGN_OR_RETURN(AppRow app, Existing(name));
    if (app.configured) {
      return Error::InvalidArgument("app " + name +
                                    " is the configured app (app.database); it is the daemon's: "
                                    "change [app] in the configuration instead");
    }
    SKYDB_RETURN_IF_ERROR(keep_data ? schema::KeepApp(conn_, app) : schema::DropApp(conn_, app));
    SKYDB_RETURN_IF_ERROR(schema::DeleteAclUser(conn_, name));
    return SyncAccessFiles(conn_, access_);
  }

  Result<AppCredentials> RotatePassword(const std::string& name) override {
    SKYDB_ASSIGN_OR_RETURN(schema::AppsLock lock, schema::AppsLock::Take(conn_));
    SKYDB_ASSIGN_OR_RETURN(AppRow app, Existing(name));
    if (app.configured) {
      return Error::InvalidArgument(
          "app " + name +
          " is the configured app: its password is app.password_file's first line (write the "
          "new one there and restart skydb)");
    }
    if (app.state != AppState::kReady) {
      return Error::InvalidArgument("app " + name + " is " + schema::AppStateName(app.state) +
                                    ", not ready: it has no password to rotate");
    }
    if (app.auth == schema::AppAuth::kPeer) {
      return Error::InvalidArgument("app " + name +
                                    " logs in by peer authentication as its OS user; it has "
                                    "no password");
    }
    AppCredentials rotated{app, "", ""};
    SKYDB_ASSIGN_OR_RETURN(rotated.password, GeneratePassword());
    SKYDB_ASSIGN_OR_RETURN(rotated.store_password, GeneratePassword());
    SKYDB_RETURN_IF_ERROR(schema::SetAppPassword(conn_, app, rotated.password));
    SKYDB_RETURN_IF_ERROR(
        schema::PutAclUser(conn_, name, schema::AppStoreUserRules(name, rotated.store_password)));
    return rotated;
  }

 private:
  Result<AppRow> Existing(const std::string& name) {
    SKYDB_ASSIGN_OR_RETURN(auto app, schema::FindApp(conn_, name));
    if (!app) {
      return Error::NotFound("no app " + name + " in skydb's registry (skydb app list names them)");
    }
    return *app;
  }

  Status CheckRoom(const NewApp& request) {
    SKYDB_ASSIGN_OR_RETURN(ConnectionBudget budget, Budget());
    if (budget.skydb == 0 || request.connections <= budget.free()) return Ok();
    int needed = budget.max_connections + request.connections - budget.free();
    return Error::Conflict(
        "app " + request.name + " would need " + std::to_string(request.connections) +
        " connections (--connections), and the cluster has " +
        std::to_string(std::max(budget.free(), 0)) + " to spare (max_connections " +
        std::to_string(budget.max_connections) + " - " + std::to_string(budget.reserved) +
        " reserved - " + std::to_string(budget.skydb) + " for skydb's store - " +
        std::to_string(budget.apps) + " for the apps' limits); give fewer with --connections, or " +
        "pin [postgres.settings] max_connections = " + std::to_string(needed) +
        " and restart skydb");
  }

  pg::Connection conn_;
  AccessTarget access_;
};

}  // namespace

std::string ClusterConnInfo(const std::string& socket_dir, int port, const std::string& superuser,
                            const std::string& database) {
  return pg::UnixSocketConnInfo(socket_dir, port, superuser, database, "skydb app");
}

Result<std::string> GeneratePassword() {
  unsigned char bytes[kPasswordBytes];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    return ErrnoError("getrandom", errno);
  }
  std::string hex;
  for (unsigned char b : bytes) {
    char digits[3];
    std::snprintf(digits, sizeof digits, "%02x", b);
    hex += digits;
  }
  return hex;
}

Result<std::unique_ptr<AppAdmin>> OpenAppAdmin(const std::string& conninfo, AccessTarget access) {
  SKYDB_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo));
  SKYDB_ASSIGN_OR_RETURN(auto registry, conn.Exec("SELECT to_regclass('skydb.apps') IS NOT NULL"));
  if (registry.Get(0, 0) != "t") {
    return Error::NotFound(
        "the cluster has no registry of apps yet (skydb.apps): a daemon of this skydb version "
        "has not started on it; start it once (skydb serve --embed)");
  }
  return std::unique_ptr<AppAdmin>(
      std::make_unique<AppAdminImpl>(std::move(conn), std::move(access)));
}

}  // namespace skydb::supervisor
