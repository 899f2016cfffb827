#include <algorithm>

#include "script/engine.h"

namespace skydb::script {

std::shared_ptr<RunningScript> Watchdog::Start() {
  auto script = std::make_shared<RunningScript>();
  script->clock = &clock_;
  script->started = clock_.Now();
  MutexLock lock(mu_);
  scripts_.push_back(script);
  running_.fetch_add(1, std::memory_order_relaxed);
  return script;
}

void Watchdog::Finish(const std::shared_ptr<RunningScript>& script) {
  MutexLock lock(mu_);
  auto it = std::find(scripts_.begin(), scripts_.end(), script);
  if (it == scripts_.end()) return;
  scripts_.erase(it);
  running_.fetch_sub(1, std::memory_order_relaxed);
}

bool Watchdog::Busy() const {
  if (running_.load(std::memory_order_relaxed) == 0) return false;
  auto now = clock_.Now();
  MutexLock lock(mu_);
  return std::any_of(scripts_.begin(), scripts_.end(), [now](const auto& s) {
    return now - s->started >= kBusyThreshold && !s->killed.load();
  });
}

Watchdog::KillOutcome Watchdog::Kill() {
  auto now = clock_.Now();
  MutexLock lock(mu_);
  KillOutcome outcome = KillOutcome::kNotBusy;
  for (const auto& s : scripts_) {
    if (now - s->started < kBusyThreshold || s->killed.load()) continue;
    if (s->wrote.load()) {
      if (outcome == KillOutcome::kNotBusy) outcome = KillOutcome::kUnkillable;
      continue;
    }
    s->killed.store(true);
    outcome = KillOutcome::kKilled;
  }
  return outcome;
}

bool ScriptCache::Add(const std::string& sha, std::string body, bool loaded) {
  MutexLock lock(mu_);
  auto it = scripts_.find(sha);
  if (it != scripts_.end()) {
    if (loaded && !it->second.loaded) {  // LOAD pins a script EVAL added
      it->second.loaded = true;
      evictable_.remove(sha);
    }
    return true;
  }
  EvictFor(body.size());
  if (scripts_.size() >= kMaxScripts || bytes_ + body.size() > kMaxBytes) return false;
  bytes_ += body.size();
  if (!loaded) evictable_.push_back(sha);
  scripts_.emplace(sha, Script{std::move(body), loaded});
  return true;
}

void ScriptCache::EvictFor(size_t bytes) {
  while (!evictable_.empty() && (scripts_.size() >= kMaxScripts || bytes_ + bytes > kMaxBytes)) {
    auto it = scripts_.find(evictable_.front());
    bytes_ -= it->second.body.size();
    scripts_.erase(it);
    evictable_.pop_front();
  }
}

std::optional<std::string> ScriptCache::Find(std::string_view sha) const {
  MutexLock lock(mu_);
  auto it = scripts_.find(std::string(sha));
  if (it == scripts_.end()) return std::nullopt;
  return it->second.body;
}

bool ScriptCache::Contains(std::string_view sha) const {
  MutexLock lock(mu_);
  return scripts_.count(std::string(sha)) != 0;
}

void ScriptCache::Clear() {
  MutexLock lock(mu_);
  scripts_.clear();
  evictable_.clear();
  bytes_ = 0;
}

size_t ScriptCache::size() const {
  MutexLock lock(mu_);
  return scripts_.size();
}

size_t ScriptCache::bytes() const {
  MutexLock lock(mu_);
  return bytes_;
}

}  // namespace skydb::script
