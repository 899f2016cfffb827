// The command layer: runs one parsed request against the SessionStore and produces its
// encoded Redis reply. No sockets here, so unit tests drive it directly.
//
// Thread-safety: Execute is called by a connection's loop thread with that connection's
// ClientState, which only connection commands touch, and only before Execute returns. The
// reply function is called exactly once, on any thread, possibly before Execute returns; a
// reply carrying stored values is claimed against the connection's budget before it is built
// (resp/reply.h).
// Ownership: the executor borrows the store, the clock and the counters.
// Failure: every failure becomes an error reply; nothing throws.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/sliced_counters.h"
#include "resp/acl_users.h"
#include "resp/clients.h"
#include "resp/encoder.h"
#include "resp/keyspace_events.h"
#include "resp/pubsub.h"
#include "resp/reply.h"
#include "skydb/acl_storage.h"
#include "skydb/env.h"
#include "skydb/histogram.h"
#include "skydb/mutex.h"
#include "skydb/store.h"

namespace skydb::resp {

// One client's protocol state, owned by its connection.
struct ClientState {
  uint64_t id = 0;
  std::string peer;  // "ip:port" or "<socket path>:0", for the log of a denial
  bool authenticated = false;
  // The ACL user it runs as ("default" until AUTH names another), as last read; re-read when
  // the server's users changed since `acl_generation` (ClientUser, resp/acl_check.h).
  std::string user_name = "default";
  std::shared_ptr<const AclUser> user;
  uint64_t acl_generation = 0;
  std::string name;
  std::string lib_name;
  std::string lib_ver;
  bool close_after_reply = false;  // set by QUIT
  bool replies_off = false;        // CLIENT REPLY OFF
  bool skip_next_reply = false;    // CLIENT REPLY SKIP: the next command's reply is not sent
  uint32_t auth_failures = 0;      // failed AUTH / HELLO AUTH; the connection slows each one
  Proto proto = Proto::kResp2;     // HELLO 3 switches to RESP3
  PubSubState pubsub;              // channels and patterns subscribed (SUBSCRIBE...)
  // MULTI ... EXEC: the commands queued, and whether one was refused while queuing (EXEC then
  // answers EXECABORT and runs nothing).
  bool in_multi = false;
  bool multi_refused = false;
  std::vector<std::vector<std::string>> queued;
  size_t queued_bytes = 0;
  std::shared_ptr<WatchList> watch;  // WATCHed keys; null until the first WATCH
};

// Error replies by their first word ("ERR", "WRONGPASS"), for INFO errorstats. As in Redis, at
// most 128 distinct words are kept; later new ones are counted only in the total.
class ErrorCounts {
 public:
  void Count(std::string_view code);
  std::map<std::string, uint64_t> Snapshot() const;
  void Clear();

 private:
  static constexpr size_t kMaxCodes = 128;
  mutable Mutex mu_;
  std::map<std::string, uint64_t, std::less<>> counts_ GUARDED_BY(mu_);
};

inline constexpr size_t kCommandSlotCount = 128;

// What commands did: every command dispatched; per command, calls and microseconds from
// dispatch to reply (wall time: in sync durability it includes the wait for COMMIT), error
// replies before the command ran (unknown, arity, NOAUTH: Redis's rejected_calls) and after
// (failed_calls); errors by code. Shared with the replies in flight, which a store may answer
// after the server is gone. Dispatches, calls and times are counted on every command, so each
// loop thread adds them to a slice of its own (BindThisThread), without a locked instruction.
struct CommandStats {
  static constexpr size_t kSlots = kCommandSlotCount;
  // Calls by index in AllCommands(); slot kUnknownSlot counts unsupported names.
  static constexpr size_t kUnknownSlot = kSlots - 1;
  // Each command's latency histogram: upper bounds in microseconds (inclusive, as Prometheus's
  // le), from a GET answered from memory to a write waiting out a slow COMMIT; one bucket more
  // counts what is above the last.
  static constexpr std::array<uint64_t, 14> kLatencyBoundsUsec{
      50,     100,    250,    500,     1'000,   2'500,     5'000,
      10'000, 25'000, 50'000, 100'000, 250'000, 1'000'000, 5'000'000};
  static constexpr size_t kBuckets = kLatencyBoundsUsec.size() + 1;

  void BindThisThread() { per_command_.BindThisThread(); }
  void UnbindThisThread() { per_command_.UnbindThisThread(); }

  void CountDispatched() { per_command_.Add(kDispatchedIndex, 1); }
  void CountCall(size_t slot) { per_command_.Add(slot, 1); }
  // One reply of command `slot`, `usec` after its dispatch: its time and its bucket.
  void AddUsec(size_t slot, uint64_t usec) {
    per_command_.Add(kSlots + slot, usec);
    per_command_.Add(kBucketsIndex + slot * kBuckets + BucketOf(usec), 1);
  }
  uint64_t dispatched() const { return Count(kDispatchedIndex); }
  uint64_t calls(size_t slot) const { return Count(slot); }
  uint64_t usec(size_t slot) const { return Count(kSlots + slot); }
  // CONFIG RESETSTAT: every figure here starts again from 0.
  void Reset();
  // Command `slot`'s replies by latency, in seconds; count 0 before its first reply.
  HistogramSnapshot Latency(size_t slot) const;
  static size_t BucketOf(uint64_t usec);

  std::array<std::atomic<uint64_t>, kSlots> rejected{};
  std::array<std::atomic<uint64_t>, kSlots> failed{};
  std::atomic<uint64_t> errors_total{0};
  ErrorCounts errors;

 private:
  static constexpr size_t kDispatchedIndex = 2 * kSlots;
  static constexpr size_t kBucketsIndex = kDispatchedIndex + 1;
  static constexpr size_t kCounters = kBucketsIndex + kSlots * kBuckets;
  uint64_t Count(size_t i) const {
    return per_command_.Sum(i) - reset_at_[i].load(std::memory_order_relaxed);
  }
  // calls, then usec, then dispatched, then each command's buckets
  SlicedCounters<kCounters> per_command_;
  std::array<std::atomic<uint64_t>, kCounters> reset_at_{};  // the sums at the last Reset
};

// Server-wide figures for INFO, updated by the server's loops.
struct ServerCounters {
  std::atomic<uint64_t> connected_clients{0};
  std::atomic<uint64_t> total_connections{0};
  std::atomic<uint64_t> rejected_connections{0};
  std::atomic<uint64_t> auth_failures{0};  // every failed AUTH / HELLO AUTH, all connections
  std::atomic<uint64_t> protocol_errors{0};
  // Clients closed because their replies reached resp.max_output_buffer or all clients'
  // replies reached resp.max_reply_memory.
  std::atomic<uint64_t> reply_limit_disconnects{0};
  std::shared_ptr<CommandStats> commands = std::make_shared<CommandStats>();
};

// `reply`, counting what it answers into `counters` (slot `slot`, dispatched at `start`): an
// error is a rejection unless the command `ran`, then a failure.
ReplyFn CountingReply(ReplyFn reply, const ServerCounters& counters, size_t slot,
                      const Clock& clock, Clock::TimePoint start, bool ran);

struct ExecutorConfig {
  std::string requirepass;
  std::string store_description;
  std::string unix_path;  // shown in INFO
  int tcp_port = 0;       // shown in INFO; 0 when TCP is off
  size_t max_clients = 0;
  int threads = 1;
  bool allow_flush = false;                   // resp.allow_flush
  std::chrono::milliseconds idle_timeout{0};  // resp.idle_timeout, CONFIG SET timeout's start
  uint32_t notify_classes = 0;                // resp.notify_keyspace_events, parsed
  AclStorage* acl_storage = nullptr;          // borrowed; null: users live in this server only
  std::string acl_file{};                     // resp.aclfile; "": none
  FileSystem* acl_files = nullptr;            // for acl_file; null: the real one
};

// What CONFIG SET may change while the server runs. Read on the hot paths with relaxed loads.
class RuntimeSettings {
 public:
  std::chrono::milliseconds idle_timeout() const {
    return std::chrono::milliseconds(idle_timeout_ms_.load(std::memory_order_relaxed));
  }
  void set_idle_timeout(std::chrono::milliseconds timeout) {
    idle_timeout_ms_.store(timeout.count(), std::memory_order_relaxed);
  }
  // Redis's thresholds of its compact encodings, which skydb does not have: CONFIG SET takes
  // and CONFIG GET shows them (Redis's own tests and some tools set them); nothing else reads
  // them. Redis's defaults.
  enum Threshold { kHashEntries, kHashValue, kSetIntsetEntries, kThresholds };
  int64_t threshold(Threshold t) const { return thresholds_[t].load(std::memory_order_relaxed); }
  void set_threshold(Threshold t, int64_t value) {
    thresholds_[t].store(value, std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t> idle_timeout_ms_{0};  // resp.idle_timeout; CONFIG SET timeout
  std::atomic<int64_t> thresholds_[kThresholds]{128, 64, 512};
};

// The daemon's scripts: their cache and the watchdog of those running (cmd_scripts.cc).
struct ScriptState;
std::shared_ptr<ScriptState> MakeScriptState(const Clock& clock);

class CommandExecutor {
 public:
  CommandExecutor(ExecutorConfig config, SessionStore& store, Clock& clock,
                  const ServerCounters& counters);
  CommandExecutor(const CommandExecutor&) = delete;
  CommandExecutor& operator=(const CommandExecutor&) = delete;

  // Runs `args` (args[0] is the command name, any case; never empty). Inside MULTI, queues it.
  void Execute(ClientState& client, std::vector<std::string> args, ReplyFn reply) {
    ExecuteIn(client, args, std::move(reply));
  }
  // The same on the caller's arguments, which it may move from (the connection reuses their
  // storage).
  void ExecuteIn(ClientState& client, std::vector<std::string>& args, ReplyFn reply);
  // EXEC: runs each queued command's handler against `store` (which records its store
  // operations), replying to `replies[i]`.
  void RunQueued(ClientState& client, std::vector<std::vector<std::string>> commands,
                 SessionStore& store, std::vector<ReplyFn> replies);
  // The connection is gone: forgets its WATCHed keys.
  void ClientClosed(ClientState& client);

  const ExecutorConfig& config() const { return config_; }
  SessionStore& store() { return store_; }
  Clock& clock() { return clock_; }
  const ServerCounters& counters() const { return counters_; }
  Clock::TimePoint started() const { return started_; }
  UnixMillis NowMs() const;
  PubSubHub& pubsub() { return pubsub_; }  // shared by every connection of the server
  KeyspaceNotifier& notifier() { return notifier_; }
  RuntimeSettings& settings() { return settings_; }
  // Every connection of the server, for CLIENT LIST / KILL; null: this client alone.
  ClientControl* client_control() const { return client_control_; }
  void set_client_control(ClientControl* control) { client_control_ = control; }  // before use
  ScriptState& scripts() { return *scripts_; }
  AclService& acl() { return *acl_; }

 private:
  ExecutorConfig config_;
  SessionStore& store_;
  Clock& clock_;
  const ServerCounters& counters_;
  Clock::TimePoint started_;
  PubSubHub pubsub_;
  KeyspaceNotifier notifier_{pubsub_};
  RuntimeSettings settings_;
  ClientControl* client_control_ = nullptr;
  std::shared_ptr<ScriptState> scripts_;
  std::unique_ptr<FileSystem> own_files_;  // the real file system, when none was given
  std::unique_ptr<AclService> acl_;
};

}  // namespace skydb::resp
