// When to restart a crashed postmaster, and when to give up. A pure class over a Clock.
//
// Backoff starts at backoff_initial and doubles up to backoff_max; a postmaster that stayed up
// for stable_after resets it. More than max_crashes crashes within crash_window → give up, with
// the reason (systemd's restart policy then decides what happens to the daemon) — except when
// PostgreSQL could not write because its filesystem is full: that is not a crash loop to give
// up on but an outage to wait out, so such exits never count, and retries come at least every
// kOutOfSpaceRetryMax until the operator frees space.
// Thread-safety: not thread-safe; owned by the supervisor's loop.
#pragma once

#include <deque>
#include <optional>
#include <string>

#include "skydb/config.h"
#include "skydb/env.h"

namespace skydb::supervisor {

class RestartPolicy {
 public:
  RestartPolicy(const SupervisorConfig& config, const Clock& clock);

  struct Decision {
    bool give_up = false;
    Clock::Duration delay{0};
    int crashes_in_window = 0;
    std::string reason;  // set when give_up
  };

  // The postmaster became ready (uptime for the stable-period reset counts from here).
  void OnReady();
  // The postmaster exited unexpectedly (crash, or exit during start). `out_of_space`: its last
  // messages said "No space left on device".
  Decision OnCrash(bool out_of_space = false);
  // New timings (SIGHUP); the crash history is kept.
  void Reconfigure(const SupervisorConfig& config);

  Clock::Duration next_delay() const { return next_delay_; }

 private:
  SupervisorConfig config_;
  const Clock& clock_;
  Clock::Duration next_delay_;
  std::optional<Clock::TimePoint> ready_at_;
  std::deque<Clock::TimePoint> crashes_;  // within the window, oldest first
};

inline constexpr Clock::Duration kOutOfSpaceRetryMax = std::chrono::seconds(5);

// "1.5s", "30s", "5m0s": for messages.
std::string FormatDuration(Clock::Duration d);

}  // namespace skydb::supervisor
