// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with clang's
// thread-safety annotations, so `-Wthread-safety` checks that every GUARDED_BY member is read
// and written under its mutex and that every REQUIRES function is called with it held.
//
// libstdc++'s std::mutex carries no annotations, so the analysis cannot see it; these thin
// wrappers add them and nothing else (no extra state, no extra cost).
// Thread-safety: as std::mutex / std::condition_variable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define SKYDB_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SKYDB_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) SKYDB_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY SKYDB_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) SKYDB_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) SKYDB_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) SKYDB_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define REQUIRES(...) SKYDB_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) SKYDB_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) SKYDB_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) SKYDB_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) SKYDB_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) SKYDB_THREAD_ANNOTATION(assert_capability(x))
#define NO_THREAD_SAFETY_ANALYSIS SKYDB_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace skydb {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds this mutex (taken by code it cannot follow, such as a
  // lock set sized at run time). No run-time check.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}
  // For CondVar only.
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope; Unlock()/Lock() let a scope drop it early (for example before a
// callback runs) and take it again.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() {
    held_ = false;
    mu_.Unlock();
  }
  void Lock() ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// A condition variable over a Mutex the caller holds (the analysis sees it held throughout;
// the wait releases and re-takes it as std::condition_variable does).
class CondVar {
 public:
  void Wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.native(), std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // False when `timeout` passed without a notification (spurious wake-ups return true).
  template <typename Rep, typename Period>
  bool WaitFor(Mutex& mu, std::chrono::duration<Rep, Period> timeout) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.native(), std::adopt_lock);
    bool woke = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return woke;
  }
  template <typename Clock, typename Duration>
  bool WaitUntil(Mutex& mu, std::chrono::time_point<Clock, Duration> deadline) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.native(), std::adopt_lock);
    bool woke = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woke;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace skydb
