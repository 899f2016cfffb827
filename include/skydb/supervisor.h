// The supervisor: runs, watches and stops a private PostgreSQL cluster under a data directory.
//
//   DIR/            0700, owned by the cluster user; flock on DIR/skydb.lock (one daemon per DIR)
//     pgdata/       the cluster; skydb.conf (re-rendered every start) is included from
//                   postgresql.conf; pg_hba.conf/pg_ident.conf are skydb's (peer auth only)
//     run/          0700 (0750 with the app's group): PostgreSQL's socket, skydb.status.json
//     runtime/      extracted bundles (skydb/bundle.h)
//
// Run() prepares DIR (modes, ownership; the caller holds DIR/skydb.lock), refuses clusters it must
// not touch (a PG_VERSION of another major, a non-empty directory that is not a cluster), runs
// initdb on first use, stops a postmaster left over from an earlier daemon, starts `postgres -D
// DIR/pgdata` as a child, waits for PQping (extended while the server reports it is starting or
// recovering), applies migrations, and then watches: a crash is restarted with exponential backoff,
// and too many crashes in a window end Run() with the reason. A stop request fast-stops PostgreSQL
// (SIGINT, bounded wait, then SIGQUIT; never SIGKILL) and Run() returns Ok.
//
// Thread-safety: Run() is called once, on a thread that lives as long as the postmaster should
// (PR_SET_PDEATHSIG is tied to the spawning thread). RequestStop, RequestReload and Snapshot are
// safe from any thread (the daemon's signal thread).
// Ownership: the Supervisor does not own the objects in SupervisorEnv; they must outlive it.
// Failure: Run() returns one sentence saying what failed and, where possible, how to fix it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/process.h"
#include "skydb/result.h"
#include "skydb/schema.h"

namespace skydb {

// The supervisor's lifecycle; the name is what the log, the status file and metrics show.
enum class SupervisorState {
  kInitializing,  // preparing DIR: modes, ownership, initdb, leftover postmaster
  kStarting,      // postmaster spawned; waiting for it to answer PQping
  kMigrating,     // the server answers; applying schema migrations
  kReady,         // serving; the postmaster is watched
  kBackoff,       // the postmaster exited unexpectedly; waiting before the restart
  kStopping,      // a stop was requested; fast shutdown in progress
  kStopped,       // PostgreSQL stopped cleanly after a stop request
  kFailed,        // gave up (crash loop, failed start); Run() returned the reason
};
const char* SupervisorStateName(SupervisorState s);

// Who runs the cluster: the configured run_as_user when root (refused without one), otherwise
// the current user (a run_as_user naming someone else is refused: switching needs root).
Result<ClusterUser> ResolveClusterUser(
    uid_t euid, const std::string& run_as_user,
    const std::function<Result<RunAs>(uid_t)>& lookup_uid,
    const std::function<Result<RunAs>(const std::string&)>& lookup_name);

// HostOps, LookupUserByUid and ProbeDirLock are in skydb/env.h.

// Where pg_hba.conf and pg_ident.conf live and how they are written (PgProbe::SyncAccess).
struct AccessTarget {
  std::string pgdata;
  std::string superuser;  // the cluster's superuser role (the cluster user's name)
  // Read and write a file of pgdata; the writer makes it the cluster user's own, mode 0600.
  std::function<Result<std::string>(const std::string& path)> read;
  std::function<Status(const std::string& path, const std::string& contents)> write;
  // How long PostgreSQL may take to show the reload (pg_conf_load_time advancing).
  std::chrono::milliseconds reload_timeout{10000};
};

// PostgreSQL access the supervisor needs. Real implementation (libpq): NewRealPgProbe().
class PgProbe {
 public:
  enum class Ping { kOk, kRejecting, kNoResponse };
  virtual ~PgProbe() = default;
  virtual Ping PingServer(const std::string& conninfo) = 0;
  // Applies the migrations the database has not seen; returns how many were applied.
  virtual Result<int> Migrate(const std::string& conninfo,
                              const std::vector<Migration>& migrations) = 0;
  virtual Result<std::string> ServerVersion(const std::string& conninfo) = 0;  // "15.18"
  // The app's role and database (skydb/schema.h), over the superuser's `conninfo`.
  virtual Status EnsureAppDatabase(const std::string& conninfo, const AppDatabase& app,
                                   const std::string& skydb_database) = 0;
  // pg_hba.conf and pg_ident.conf rendered from skydb's registry of apps, written when they
  // changed, checked by PostgreSQL and reloaded, verified (src/supervisor/access_sync.h).
  virtual Status SyncAccess(const std::string& conninfo, const AccessTarget& target) = 0;
};
std::unique_ptr<PgProbe> NewRealPgProbe();

struct SupervisorOptions {
  std::string data_dir;          // absolute path of DIR
  std::string bin_dir;           // the chosen PostgreSQL binaries
  int binaries_major = 0;        // their major version (PG_VERSION must match)
  std::string binaries_version;  // "15.18", for messages
  ClusterUser cluster_user;
  std::string settings_conf;  // RenderConf() output: the derived settings, pins applied
  SupervisorConfig timing;
  int port = 5432;  // only names the socket file: listen_addresses is ''
  std::string database = "postgres";
  std::vector<Migration> migrations = AllMigrations();
  // The app's database, role and password (docs/embedding.md), ensured after the migrations.
  AppDatabase app;
  // OS users peer-mapped to app.role, besides the cluster user (which may use both roles).
  std::vector<std::string> app_os_users;
  // The app's group: it may reach DIR/run and the PostgreSQL socket; none: the cluster user's
  // alone.
  std::optional<NamedGroup> shared_group;
  std::chrono::milliseconds tick{100};  // how often the watch loop looks at the child
  // false: initdb --no-sync (PostgreSQL runs with fsync off, so syncing its files buys nothing).
  bool sync_initdb = true;
  // postgres.tcp_bind: PostgreSQL also listens there (port `port`), TLS with these PEM files
  // (copied into pgdata as the cluster user's, 0600, at every start and reload) and
  // scram-sha-256 only; "" = the unix socket only.
  std::string tcp_bind;
  std::string tls_cert_file;
  std::string tls_key_file;
};

// What a reload (SIGHUP) may change. The timings always apply; the settings only once
// PostgreSQL's own check (`postgres -C`) accepts the files they render to, else the last good
// skydb.conf is kept and the refusal logged with PostgreSQL's reason.
struct SupervisorReload {
  std::string settings_conf;
  SupervisorConfig timing;
  std::string tls_cert_file;  // postgres.tcp_bind's certificate and key, read again
  std::string tls_key_file;
};

struct SupervisorSnapshot {
  SupervisorState state = SupervisorState::kInitializing;
  pid_t postgres_pid = 0;
  int restarts = 0;            // postmaster restarts after a crash
  std::string last_exit;       // how the last unexpected exit ended, "" if none
  std::string server_version;  // "15.18" once ready
  std::chrono::system_clock::time_point started_at;   // when Run() began
  std::chrono::system_clock::time_point ready_since;  // last time it became ready
};

struct SupervisorEnv {
  FileSystem* fs = nullptr;
  Clock* clock = nullptr;
  ProcessRunner* runner = nullptr;  // initdb
  ChildLauncher* launcher = nullptr;
  HostOps* host = nullptr;
  PgProbe* probe = nullptr;
  // Receives PostgreSQL's stderr lines (the daemon forwards them to the logger, tagged).
  LineSink postgres_log;
  // Called each time the cluster becomes ready (first start and after every restart).
  std::function<void(const SupervisorSnapshot&)> on_ready;
};

class Supervisor {
 public:
  virtual ~Supervisor() = default;
  virtual Status Run() = 0;
  virtual void RequestStop() = 0;
  virtual void RequestReload(SupervisorReload reload) = 0;
  virtual SupervisorSnapshot Snapshot() const = 0;
  // The socket directory and connection string a client of the cluster uses.
  virtual std::string SocketDir() const = 0;
  virtual std::string ConnInfo() const = 0;
};

std::unique_ptr<Supervisor> NewSupervisor(SupervisorOptions options, SupervisorEnv env);

}  // namespace skydb
