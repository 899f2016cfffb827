#include <spdlog/spdlog.h>

#include "skydb/notify.h"

namespace skydb {

ServiceNotifier::ServiceNotifier(Notifier& notifier, Clock& clock,
                                 std::chrono::milliseconds extend_step)
    : notifier_(notifier),
      clock_(clock),
      extend_step_(extend_step),
      watchdog_(notifier.WatchdogTimeout()) {}

std::string ServiceNotifier::StatusFor(const ServiceObservation& o) {
  if (!o.cluster) return o.store_open ? "serving sessions" : "opening the session store";
  switch (*o.cluster) {
    case SupervisorState::kInitializing:
      return "preparing the data directory (initdb on first start)";
    case SupervisorState::kStarting:
      return "starting PostgreSQL (crash recovery, if needed, runs now)";
    case SupervisorState::kMigrating:
      return "applying schema migrations";
    case SupervisorState::kReady:
      if (!o.store_open) return "opening the session store";
      return o.postgres_answers ? "serving sessions"
                                : "serving sessions; PostgreSQL is not answering";
    case SupervisorState::kBackoff:
      return "PostgreSQL exited unexpectedly; restarting it";
    case SupervisorState::kStopping:
      return "stopping PostgreSQL";
    case SupervisorState::kStopped:
      return "PostgreSQL stopped";
    case SupervisorState::kFailed:
      return "PostgreSQL failed";
  }
  return "unknown";
}

bool ServiceNotifier::Due(Clock::TimePoint& last, Clock::Duration every, Clock::TimePoint now) {
  if (last != Clock::TimePoint{} && now - last < every) return false;
  last = now;
  return true;
}

void ServiceNotifier::Tick(const ServiceObservation& o) {
  MutexLock lock(mu_);
  auto now = clock_.Now();
  std::string status = StatusFor(o);
  if (ready_ && status == "serving sessions") status = ready_status_;  // the richer text
  if (status != last_status_) {
    last_status_ = status;
    SendLocked("STATUS=" + status);
  }
  if (stopping_) return;
  bool starting =
      !ready_ &&
      (!o.cluster || *o.cluster == SupervisorState::kInitializing ||
       *o.cluster == SupervisorState::kStarting || *o.cluster == SupervisorState::kMigrating ||
       *o.cluster == SupervisorState::kBackoff || *o.cluster == SupervisorState::kReady);
  if (starting && Due(last_extend_, extend_step_ / 3, now)) {
    auto usec = std::chrono::duration_cast<std::chrono::microseconds>(extend_step_).count();
    SendLocked("EXTEND_TIMEOUT_USEC=" + std::to_string(usec));
  }
  // Before READY the watchdog follows start-up's progress; after it, PostgreSQL's answers.
  bool healthy = ready_ ? o.postgres_answers : starting;
  if (watchdog_ && healthy && Due(last_watchdog_, *watchdog_ / 2, now)) {
    SendLocked("WATCHDOG=1");
  }
}

void ServiceNotifier::Ready(const std::string& status) {
  MutexLock lock(mu_);
  if (stopping_) return;
  ready_ = true;
  ready_status_ = status;
  last_status_ = status;
  SendLocked("READY=1\nSTATUS=" + status);
}

// A reload before READY sends nothing: systemd only reloads an active service.
void ServiceNotifier::Reloading() {
  MutexLock lock(mu_);
  if (!ready_ || stopping_) return;
  SendLocked("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(notifier_.MonotonicUsec()) +
             "\nSTATUS=reloading the configuration");
}

void ServiceNotifier::Reloaded() {
  MutexLock lock(mu_);
  if (!ready_ || stopping_) return;
  SendLocked("READY=1\nSTATUS=" + last_status_);
}

void ServiceNotifier::Stopping() {
  MutexLock lock(mu_);
  if (stopping_) return;
  stopping_ = true;
  last_status_ = "stopping: closing the listener and flushing the store";
  SendLocked("STOPPING=1\nSTATUS=" + last_status_);
}

void ServiceNotifier::SendLocked(const std::string& message) { notifier_.Send(message); }

}  // namespace skydb
