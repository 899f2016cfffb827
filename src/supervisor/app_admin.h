// Apps as first-class objects of the private cluster (`skydb app add|list|remove|
// rotate-password`, docs/apps.md): each app a role and a database of its own, recorded in
// skydb's registry (schema/app_registry.h), reachable through pg_hba.conf and pg_ident.conf as
// access_sync.h renders them.
//
//   Add             a role (LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS,
//                   no memberships, CONNECTION LIMIT n) and a database it owns, closed to
//                   PUBLIC; a generated password (scram-sha-256, only its verifier reaches
//                   PostgreSQL and nothing of it is kept by skydb) or a peer-mapped OS user
//   Remove          keep_data: the role may no longer log in, its sessions end, the database
//                   stays; else role, database and sessions are dropped
//   RotatePassword  a new generated password; the old one fails from the next login on
//
// Each app also gets a store user of its name (schema/acl_rows.h: its keys and channels under
// "NAME:", a generated password), made with it, given a new password with it, and deleted by
// Remove; every daemon on the database sees the change within a poll (250 ms).
//
// Every change ends with the files rendered and reloaded, verified; a role or database skydb
// did not create is refused, never taken over. The configured app ([app]) is the daemon's to
// manage: Remove and RotatePassword refuse it.
//
// Thread-safety: one AppAdmin per thread; operations from several processes serialise on the
// apps lock in PostgreSQL. Failure: one sentence naming the cause and the fix; the password is
// never part of an error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "schema/app_registry.h"
#include "skydb/result.h"
#include "skydb/supervisor.h"

namespace skydb::supervisor {

struct NewApp {
  std::string name;     // the app's name, role and database (schema::AppNameProblem)
  std::string os_user;  // "": scram-sha-256 with a generated password; else peer, mapped
  int connections = 8;  // the role's CONNECTION LIMIT
};

struct AppCredentials {
  schema::AppRow app;
  std::string password;  // "" for a peer-authenticated app; else shown once
  // The password of the app's store user (named as the app), shown once; "" when unchanged.
  std::string store_password;
};

// What the cluster has room for (max_connections − superuser_reserved_connections − skydb's own
// store pool and headroom − every app's CONNECTION LIMIT).
struct ConnectionBudget {
  int max_connections = 0;
  int reserved = 0;  // superuser_reserved_connections
  int skydb = 0;     // the store's pool and headroom, as the daemon recorded them
  int apps = 0;      // the sum of the apps' connection limits
  int free() const { return max_connections - reserved - skydb - apps; }
};

class AppAdmin {
 public:
  virtual ~AppAdmin() = default;
  virtual Result<std::vector<schema::AppRow>> List() = 0;
  virtual Result<ConnectionBudget> Budget() = 0;
  virtual Result<AppCredentials> Add(const NewApp& request) = 0;
  virtual Status Remove(const std::string& name, bool keep_data) = 0;
  virtual Result<AppCredentials> RotatePassword(const std::string& name) = 0;
};

// Over `conninfo`, a superuser connection to skydb's own database of the private cluster whose
// files `access` names.
Result<std::unique_ptr<AppAdmin>> OpenAppAdmin(const std::string& conninfo, AccessTarget access);

// The superuser's connection string over the private socket (what the status file names).
std::string ClusterConnInfo(const std::string& socket_dir, int port, const std::string& superuser,
                            const std::string& database);

// 24 random bytes from the kernel as 48 hex digits: safe in any URL, shell or config file.
Result<std::string> GeneratePassword();

}  // namespace skydb::supervisor
