// The daemon's one lifecycle, whatever its database (database_source.h) and whoever runs it
// (`skydb serve`/`dev`, `skydb run`, child mode, or a C++ app through the embedding API):
//
//   lock DIR → observe (HTTP endpoints, health, systemd) → the database source runs →
//   OnDatabaseReady(): open the session store and its listener → READY → serve →
//   ordered stop: listener closed, queued writes committed, database stopped.
//
// Signals are not its business: the caller turns SIGTERM/SIGINT into RequestStop() and SIGHUP
// into Reload(), so an embedding app keeps its own signal handling.
//
// Thread-safety: Run() on one thread, which must live as long as PostgreSQL should (the
// postmaster's parent-death signal follows the spawning thread); RequestStop and Reload from
// any thread. Ownership: borrows the Env, which must outlive it.
// Failure: Run returns 0 after a requested stop and 1 when the start or the database failed;
// the reason is logged as one sentence.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "daemon/database_source.h"
#include "daemon/serving.h"
#include "skydb/app_env.h"
#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/mutex.h"
#include "skydb/result.h"

namespace skydb::daemon {

class Observing;

// What the lifecycle's client learns once skydb is ready (the ready line of child mode, the
// app's environment in `skydb run`).
struct ReadyInfo {
  std::string store_socket;  // the Redis-protocol unix socket
  // The app's connection contract (skydb/app_env.h), from the database source's ready signal
  // and the store's socket; empty when it could not be made (the reason was logged).
  AppEnvironment environment;
  std::string database;     // the database's description
  int http_port = 0;        // 0: HTTP endpoints off or on a unix socket
  std::string http_socket;  // when http.listen names a unix socket
  pid_t pid = 0;
};

struct LifecycleOptions {
  Config config;
  // Runs once, after READY was sent and the listener accepts clients; on the source's thread.
  std::function<void(const ReadyInfo&)> on_ready;
};

class Lifecycle {
 public:
  // `clients` null: the real store and listener (Serving).
  Lifecycle(Env& env, LifecycleOptions options, std::unique_ptr<DatabaseSource> source,
            std::unique_ptr<ClientService> clients = nullptr);
  ~Lifecycle();
  Lifecycle(const Lifecycle&) = delete;
  Lifecycle& operator=(const Lifecycle&) = delete;

  int Run();
  // The ordered stop: no new clients, queued writes committed, then the database stopped.
  void RequestStop();
  // SIGHUP: the freshly loaded configuration (or why it could not be loaded).
  void Reload(Result<Config> fresh);

 private:
  Status LockDataDir();
  Status LoadTls();  // resp.tls, http.tls: the certificate, before anything listens
  void ReloadTls(const TlsConfig& files);
  void OnDatabaseReady(const DatabaseReady& ready);
  void WriteAppEnvironment(const Result<AppEnvironment>& contract);
  Config ConfigNow() const;

  Env& env_;
  std::function<void(const ReadyInfo&)> on_ready_;
  std::unique_ptr<DatabaseSource> source_;
  std::unique_ptr<ClientService> clients_;
  std::unique_ptr<Observing> observing_;
  std::shared_ptr<void> dir_lock_;
  mutable Mutex config_mu_;
  Config config_ GUARDED_BY(config_mu_);
  bool first_ready_ = true;              // the source's thread only
  std::optional<NamedGroup> app_group_;  // set in the constructor
  std::shared_ptr<TlsContext> tls_;      // with resp.tls or http.tls; loaded in Run
  std::atomic<bool> failed_{false};
  std::atomic<bool> stopping_{false};
};

}  // namespace skydb::daemon
