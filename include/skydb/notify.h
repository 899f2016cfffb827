// systemd's service protocol (sd_notify): readiness, status, start-up extension, watchdog,
// reload and stop, decided by ServiceNotifier and sent through a Notifier.
//
//   READY=1            once, when PostgreSQL is ready, the store open and the sockets listen
//   STATUS=...         on every change of what the daemon is doing
//   EXTEND_TIMEOUT_USEC while initdb or start-up/crash recovery runs (before READY)
//   WATCHDOG=1         every WatchdogSec/2, only while PostgreSQL answers (and before READY,
//                      while start-up makes progress, so a long recovery is not killed)
//   RELOADING=1 + MONOTONIC_USEC, then READY=1, around SIGHUP
//   STOPPING=1         when a stop begins
//
// Thread-safety: ServiceNotifier's methods may be called from any thread (one mutex).
// Ownership: ServiceNotifier borrows the Notifier and the Clock; both must outlive it.
// Failure: sending is best effort (systemd may be gone); failures are logged once.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "skydb/env.h"
#include "skydb/mutex.h"
#include "skydb/supervisor.h"

namespace skydb {

// Notifier (one sd_notify message at a time) and NewSystemdNotifier are in skydb/env.h.

// What the daemon is doing, sampled by its health thread.
struct ServiceObservation {
  std::optional<SupervisorState> cluster;  // nullopt: no private cluster (memory, external)
  bool store_open = false;
  bool postgres_answers = false;  // the last PQping succeeded (true when there is no cluster)
};

class ServiceNotifier {
 public:
  // `extend_step`: how much more start-up time each EXTEND_TIMEOUT_USEC asks for; it is sent
  // every extend_step/3 while start-up runs.
  ServiceNotifier(Notifier& notifier, Clock& clock,
                  std::chrono::milliseconds extend_step = std::chrono::seconds(90));

  // Sends STATUS on change, EXTEND_TIMEOUT_USEC and WATCHDOG=1 when due.
  void Tick(const ServiceObservation& observation);
  // READY=1 with a STATUS line; the caller has just seen the sockets listening.
  void Ready(const std::string& status);
  void Reloading();
  void Reloaded();
  void Stopping();

  // The STATUS text for an observation (pure).
  static std::string StatusFor(const ServiceObservation& o);

 private:
  void SendLocked(const std::string& message) REQUIRES(mu_);
  // True (and `last` = now) when `every` has passed since `last`, or it was never set.
  static bool Due(Clock::TimePoint& last, Clock::Duration every, Clock::TimePoint now);

  Notifier& notifier_;
  Clock& clock_;
  const std::chrono::milliseconds extend_step_;
  const std::optional<std::chrono::microseconds> watchdog_;
  Mutex mu_;
  bool ready_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::string last_status_ GUARDED_BY(mu_);
  std::string ready_status_ GUARDED_BY(mu_);  // what Ready() said; shown again once serving resumes
  Clock::TimePoint last_extend_ GUARDED_BY(mu_){};
  Clock::TimePoint last_watchdog_ GUARDED_BY(mu_){};
};

}  // namespace skydb
