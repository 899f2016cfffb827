// The daemon's observable side: the HTTP endpoints, the health thread that pings PostgreSQL
// and drives systemd notification, and the PostgreSQL figures poller.
//
// Thread-safety: Start/Stop from the daemon's main thread; the rest from any thread.
// Ownership: borrows the database source, the client service and the Env; they must outlive
// Stop().
// Failure: Start fails when the HTTP port or socket cannot be listened on; the message says
// which key to change.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "daemon/backup_service.h"
#include "daemon/database_source.h"
#include "daemon/serving.h"
#include "skydb/config.h"
#include "skydb/mutex.h"
#include "skydb/notify.h"
#include "skydb/obs.h"
#include "skydb/supervisor.h"
#include "skydb/tune.h"

namespace skydb::daemon {

HttpOptions HttpOptionsFrom(const Config& config);

struct ObservedParts {
  DatabaseSource* source = nullptr;  // its supervisor() is null without a private cluster
  ClientService* clients = nullptr;
  std::shared_ptr<TlsContext> tls;  // http.tls: the certificate the endpoints present
};

class Observing {
 public:
  Observing(const Config& config, ObservedParts parts, Env& env);
  ~Observing();

  Status Start();  // the HTTP endpoints (unless http.port = 0) and the health thread
  void Stop();     // idempotent

  // Once PostgreSQL is first ready: poll its figures over `conninfo` (and start the backups).
  void StartPostgresPolling(const std::string& conninfo);
  // Before the database stops: the poller's last reading stays on /metrics.
  void StopPostgresPolling();
  // SIGHUP: the backups' new schedule and retention (now, or when they start).
  void Reload(const Config& fresh);
  ServiceNotifier& service() { return service_; }

  ObservedState Observe() const;
  Readiness CurrentReadiness() const;
  int http_port() const;            // 0: off, or on a unix socket
  std::string http_socket() const;  // "" unless http.listen names a unix socket

 private:
  void HealthLoop();

  Config config_;
  ObservedParts parts_;
  Env& env_;
  ServiceNotifier service_;
  std::unique_ptr<HttpEndpoints> http_;
  std::unique_ptr<PostgresPoller> poller_;  // set once, before readers can see it
  std::atomic<PostgresPoller*> poller_view_{nullptr};
  std::unique_ptr<BackupService> backups_;  // set with the poller, before readers can see it
  std::atomic<BackupService*> backups_view_{nullptr};
  // Held while backups_ is made or reset, and while a reload reaches it.
  Mutex backups_mu_;
  BackupConfig backup_policy_ GUARDED_BY(backups_mu_);
  std::atomic<bool> postgres_answers_{false};
  Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread health_;
};

}  // namespace skydb::daemon
