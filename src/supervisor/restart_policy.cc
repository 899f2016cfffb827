#include "supervisor/restart_policy.h"

#include <algorithm>
#include <cstdio>

namespace skydb::supervisor {

RestartPolicy::RestartPolicy(const SupervisorConfig& config, const Clock& clock)
    : config_(config), clock_(clock), next_delay_(config.backoff_initial) {}

void RestartPolicy::OnReady() { ready_at_ = clock_.Now(); }

void RestartPolicy::Reconfigure(const SupervisorConfig& config) {
  config_ = config;
  next_delay_ = std::clamp<Clock::Duration>(
      next_delay_, config.backoff_initial,
      std::max<Clock::Duration>(config.backoff_initial, config.backoff_max));
}

RestartPolicy::Decision RestartPolicy::OnCrash(bool out_of_space) {
  auto now = clock_.Now();
  if (ready_at_ && now - *ready_at_ >= config_.stable_after) next_delay_ = config_.backoff_initial;
  ready_at_.reset();
  if (out_of_space) {
    Decision d;
    d.crashes_in_window = static_cast<int>(crashes_.size());
    d.delay = std::min<Clock::Duration>(next_delay_, kOutOfSpaceRetryMax);
    next_delay_ = std::min<Clock::Duration>(next_delay_ * 2, config_.backoff_max);
    return d;
  }
  while (!crashes_.empty() && now - crashes_.front() > config_.crash_window) crashes_.pop_front();
  crashes_.push_back(now);

  Decision d;
  d.crashes_in_window = static_cast<int>(crashes_.size());
  if (d.crashes_in_window > config_.max_crashes) {
    d.give_up = true;
    d.reason = "PostgreSQL exited unexpectedly " + std::to_string(d.crashes_in_window) +
               " times within " + FormatDuration(config_.crash_window) +
               " (supervisor.max_crashes = " + std::to_string(config_.max_crashes) + "); giving up";
    return d;
  }
  d.delay = next_delay_;
  next_delay_ = std::min<Clock::Duration>(next_delay_ * 2, config_.backoff_max);
  return d;
}

std::string FormatDuration(Clock::Duration d) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  char buf[32];
  if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%lldms", static_cast<long long>(ms));
  } else if (ms < 60000) {
    std::snprintf(buf, sizeof buf, "%.3gs", static_cast<double>(ms) / 1000.0);
  } else {
    std::snprintf(buf, sizeof buf, "%lldm%llds", static_cast<long long>(ms / 60000),
                  static_cast<long long>((ms % 60000) / 1000));
  }
  return buf;
}

}  // namespace skydb::supervisor
