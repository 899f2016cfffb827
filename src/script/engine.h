// The Lua engine behind EVAL: Redis's scripting semantics on Lua 5.1 (Debian's liblua5.1).
//
// Run() executes one script in a fresh, sandboxed Lua state: the base, table, string and math
// libraries without os, io, package/require, loadfile, dofile, print or load, with Redis's
// global protection (reading an undefined global or writing any global is an error; the
// library tables are read-only) and the `redis` table (call, pcall, error_reply, status_reply,
// sha1hex, log, setresp, set_repl, replicate_commands, the LOG_* and REPL_* constants). A fresh
// state per run costs a few tens of microseconds and means no script can leave anything behind
// for another; each run's memory is capped (kMaxScriptMemory: the allocator refuses beyond it,
// which Lua turns into a script error) and its time is watched (Watchdog).
//
// redis.call and redis.pcall hand the command's words to a CallFn, which runs the command and
// returns its reply as RESP2 bytes; the engine converts replies to Lua values and the script's
// result back to RESP with Redis's documented rules (convert.h).
//
// Thread-safety: Run may be called on any thread, concurrently; each run has its own state.
// The Watchdog and ScriptCache are safe for concurrent use. Run never throws; a Lua error
// (including running out of memory or being killed) becomes an error reply.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "skydb/env.h"
#include "skydb/mutex.h"

namespace skydb::script {

// Memory one script run may take (its Lua state, values and stack).
constexpr size_t kMaxScriptMemory = size_t{64} << 20;
// A script running longer than this makes the server busy: other clients get BUSY and
// SCRIPT KILL may stop it (Redis's busy-reply-threshold default).
constexpr std::chrono::milliseconds kBusyThreshold{5000};
// A script that has not written is stopped once it has run this long, whether or not SCRIPT KILL
// reached the daemon: with one event-loop thread (resp.threads = 1) the script occupies it and
// no client could send SCRIPT KILL. A script that has written runs to its end, as in Redis.
constexpr std::chrono::milliseconds kReadOnlyTimeLimit{60000};

// The lower-case hex SHA1 of `text`, as SCRIPT LOAD and redis.sha1hex answer it.
std::string Sha1Hex(std::string_view text);

// One running script, as the Watchdog sees it.
struct RunningScript {
  const Clock* clock = nullptr;  // the Watchdog's: the hook measures the 60 s limit with it
  Clock::TimePoint started;
  std::atomic<bool> wrote{false};   // it ran a write command: it can no longer be killed
  std::atomic<bool> killed{false};  // SCRIPT KILL asked it to stop
};

// The scripts running now, for BUSY and SCRIPT KILL.
class Watchdog {
 public:
  explicit Watchdog(const Clock& clock) : clock_(clock) {}
  enum class KillOutcome {
    kNotBusy,     // no script has run past kBusyThreshold
    kUnkillable,  // the busy scripts have written
    kKilled,      // every busy script that had not written was told to stop
  };
  std::shared_ptr<RunningScript> Start();
  void Finish(const std::shared_ptr<RunningScript>& script);
  // A script has run past kBusyThreshold and not been killed.
  bool Busy() const;
  KillOutcome Kill();

 private:
  const Clock& clock_;
  std::atomic<size_t> running_{0};  // lets Busy answer without the lock when nothing runs
  mutable Mutex mu_;
  std::list<std::shared_ptr<RunningScript>> scripts_ GUARDED_BY(mu_);
};

// Runs one redis.call: the command's words; returns its RESP2 reply (an error reply for a
// refused command).
using CallFn = std::function<std::string(std::vector<std::string>& args)>;

struct RunRequest {
  std::string_view body;
  std::string_view sha;  // lower-case hex, named in error replies
  const std::vector<std::string>* keys = nullptr;
  const std::vector<std::string>* argv = nullptr;
  bool resp3 = false;                // the calling client's protocol, for nulls, doubles and maps
  size_t max_reply_bytes = 0;        // 0: no limit
  RunningScript* running = nullptr;  // its time and kill flag (may be null: no time limit)
  size_t memory_limit = kMaxScriptMemory;
};

// What a script's Redis 7 shebang line ("#!lua flags=no-writes,...") declares.
struct ScriptFlags {
  bool shebang = false;    // it has one
  bool no_writes = false;  // it may not write (as if run by EVAL_RO)
};
// nullopt and the flags, or the error reply for a shebang Redis would refuse.
std::optional<std::string> ParseFlags(std::string_view body, ScriptFlags* flags);

// Runs the script; returns the reply to send (RESP bytes: its result, or an error reply).
std::string Run(const RunRequest& request, const CallFn& call);

// Compiles `body` in a sandbox without running it (SCRIPT LOAD): nullopt, or the error reply.
std::optional<std::string> CheckCompiles(std::string_view body);

// The scripts a daemon knows by SHA1 (EVAL adds its script, SCRIPT LOAD adds one, SCRIPT FLUSH
// forgets them all; nothing survives a restart, as in Redis). Bounded: beyond kMaxScripts or
// kMaxBytes the oldest script added by EVAL goes (Redis 7.4 evicts EVAL's scripts the same
// way); scripts added by SCRIPT LOAD are never evicted, and a LOAD that would pass the bound
// is refused.
class ScriptCache {
 public:
  static constexpr size_t kMaxScripts = 10000;
  static constexpr size_t kMaxBytes = size_t{64} << 20;

  // Adds `body` (known by `sha`); false when it was refused (only `loaded` ones are).
  bool Add(const std::string& sha, std::string body, bool loaded);
  std::optional<std::string> Find(std::string_view sha) const;
  bool Contains(std::string_view sha) const;
  void Clear();
  size_t size() const;
  size_t bytes() const;

 private:
  struct Script {
    std::string body;
    bool loaded = false;
  };
  void EvictFor(size_t bytes) REQUIRES(mu_);

  mutable Mutex mu_;
  std::unordered_map<std::string, Script> scripts_ GUARDED_BY(mu_);
  std::list<std::string> evictable_ GUARDED_BY(mu_);  // EVAL's scripts, oldest first
  size_t bytes_ GUARDED_BY(mu_) = 0;
};

}  // namespace skydb::script
