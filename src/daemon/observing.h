// The daemon's observable side: the HTTP endpoints, the health thread that pings PostgreSQL
// and drives systemd notification, and the PostgreSQL figures poller.
//
// Thread-safety: Start/Stop from the daemon's main thread; the rest from any thread.
// Ownership: borrows the supervisor (null without a private cluster), the serving half, the
// probe, the notifier and the clock; they must outlive Stop().
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

#include "daemon/serving.h"
#include "skydb/config.h"
#include "skydb/notify.h"
#include "skydb/obs.h"
#include "skydb/supervisor.h"
#include "skydb/tune.h"

namespace skydb::daemon {

HttpOptions HttpOptionsFrom(const Config& config);

struct ObservedParts {
  std::string mode;                  // "embedded", "dev", "memory"
  Supervisor* supervisor = nullptr;  // null: no private cluster
  PgProbe* probe = nullptr;          // for the health ping; null without a cluster
  Serving* serving = nullptr;
  std::optional<Settings> settings;
};

class Observing {
 public:
  Observing(const Config& config, ObservedParts parts, Notifier& notifier, Clock& clock);
  ~Observing();

  Status Start();  // the HTTP endpoints (unless http.port = 0) and the health thread
  void Stop();     // idempotent

  // Once PostgreSQL is first ready: poll its figures over `conninfo`.
  void StartPostgresPolling(const std::string& conninfo);
  ServiceNotifier& service() { return service_; }

  ObservedState Observe() const;
  Readiness CurrentReadiness() const;

 private:
  void HealthLoop();

  Config config_;
  ObservedParts parts_;
  Clock& clock_;
  std::unique_ptr<FileSystem> fs_ = NewRealFileSystem();
  ServiceNotifier service_;
  std::unique_ptr<HttpEndpoints> http_;
  std::unique_ptr<PostgresPoller> poller_;  // set once, before readers can see it
  std::atomic<PostgresPoller*> poller_view_{nullptr};
  std::atomic<bool> postgres_answers_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread health_;
};

}  // namespace skydb::daemon
