// The store's ACL users as one server holds them (issue 45): who they are, where their changes
// go (AclStorage: rows shared by every daemon on the database; the ACL file), the ACL LOG of
// denials and the denial counts of INFO.
//
// The `default` user is each daemon's own: it comes from resp.requirepass (on, every command,
// key and channel; nopass when there is no password), ACL SETUSER default changes it until the
// daemon stops, and it is never stored in the database. Every other user lives in the storage
// when there is one: a change is acknowledged once the database holds it, and each daemon reads
// the others' changes within `poll` (250 ms).
//
// Thread-safety: every method may be called from any thread. Changes with a storage run on the
// service's own thread, whose `done` callbacks run there; without one they run on the caller's.
// Find is cheap (a mutex and a shared_ptr copy); generation() is one atomic load, so a
// connection re-reads its user only when some user changed.
// Failure: a change that the storage refuses changes nothing and says why.
#pragma once

#include <atomic>
#include <bitset>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "resp/acl.h"
#include "skydb/acl_storage.h"
#include "skydb/env.h"
#include "skydb/mutex.h"
#include "skydb/result.h"
#include "skydb/store.h"  // UnixMillis

namespace skydb::resp {

// At most this many commands (CommandStats::kSlots): a user's allowed commands are a bitset of
// their index in the command table.
inline constexpr size_t kAclCommandSlots = 128;

// One key pattern, ready for the check: "prefix*" with no other wildcard is a prefix test.
struct AclKeyRule {
  std::string glob;
  bool prefix_only = false;  // glob is prefix + "*"
  bool read = true;
  bool write = true;
  bool Matches(std::string_view key) const;
};

struct AclUser {
  acl::User user;
  std::bitset<kAclCommandSlots> commands;  // by index in the command table
  std::vector<AclKeyRule> keys;
  // Every command, key (read and write) and channel: nothing to check.
  bool full_access = false;
  bool all_keys = false;      // reads and writes every key (KEYS and SCAN need no filter)
  bool all_commands = false;  // every command, CLIENT KILL and LIST included
};

// One line of ACL LOG; equal denials within 60 s are one entry with a count, as in Redis.
struct AclLogEntry {
  uint64_t count = 1;
  std::string reason;   // "command", "key", "channel" or "auth"
  std::string context;  // "toplevel", "multi" or "lua"
  std::string object;   // the command, the channel, or "AUTH"; never a key
  std::string username;
  std::string client_info;  // the client's CLIENT LIST line
  UnixMillis created_ms = 0;
  UnixMillis updated_ms = 0;
  uint64_t entry_id = 0;
};

class AclLog {
 public:
  static constexpr size_t kMaxEntries = 128;  // Redis's acllog-max-len default
  // Adds `entry` (stamped `now`), or counts it into an equal entry of the last 60 s. True
  // when it made a new entry.
  bool Add(AclLogEntry entry, UnixMillis now);
  std::vector<AclLogEntry> Newest(size_t count) const;  // newest first
  void Reset();

 private:
  mutable Mutex mu_;
  std::deque<AclLogEntry> entries_ GUARDED_BY(mu_);  // newest first
  uint64_t next_id_ GUARDED_BY(mu_) = 0;
};

// `user`'s rules as stored and as ACL LIST shows them after "user NAME ".
std::string RulesOf(const acl::User& user);
// A user from its stored rules.
Result<acl::User> UserFromRules(const std::string& name, const std::string& rules);
// Redis's refusal of a user name (spaces, NUL), or nullopt.
std::optional<std::string> UserNameProblem(std::string_view name);
// A rule the ACL file or a row could not hold (whitespace or control characters), or nullopt.
std::optional<std::string> RuleProblem(std::string_view rule);

class AclService {
 public:
  struct Options {
    std::string requirepass;        // the default user's password; "": nopass
    AclStorage* storage = nullptr;  // borrowed; null: users live in this server only
    std::string file;               // resp.aclfile; "": none
    FileSystem* files = nullptr;    // for the ACL file; required when `file` is set
    std::chrono::milliseconds poll{250};
  };
  explicit AclService(Options options);
  ~AclService();
  AclService(const AclService&) = delete;
  AclService& operator=(const AclService&) = delete;

  // The storage's users (a storage that cannot answer yet is read again every `poll`), then the
  // ACL file's (each replaces the stored user of its name, and is stored); then the thread that
  // applies changes and reads other daemons'. Call once, before clients arrive. An unreadable
  // file, a rule it holds that is not valid (named by its line) or a file user the storage
  // refuses is an error.
  Status Start();
  void Stop();

  std::shared_ptr<const AclUser> Find(std::string_view name) const;
  std::vector<std::shared_ptr<const AclUser>> All() const;  // by name
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  using Done = std::function<void(Status)>;
  // ACL SETUSER: `rules` applied to the user (a new one if absent) as the storage holds it.
  void SetUser(std::string name, std::vector<std::string> rules, Done done);
  // ACL DELUSER: how many of `names` existed.
  void DelUsers(std::vector<std::string> names, std::function<void(Result<int64_t>)> done);
  bool has_file() const { return !options_.file.empty(); }
  void LoadFile(Done done);  // ACL LOAD: the file's users replace every user
  void SaveFile(Done done);  // ACL SAVE

  AclLog& log() { return log_; }
  std::atomic<uint64_t> denied_commands{0};
  std::atomic<uint64_t> denied_keys{0};
  std::atomic<uint64_t> denied_channels{0};

 private:
  using UserMap = std::map<std::string, std::shared_ptr<const AclUser>, std::less<>>;
  // Runs `job` on the service's thread (or here, with no storage).
  void Submit(std::function<void()> job);
  void Run();
  void Poll();
  // Replaces the stored users (all but default) by `users`.
  void ReplaceStored(const std::vector<acl::User>& users);
  void Put(const acl::User& user);
  Result<std::vector<acl::User>> ReadFile() const;
  acl::User DefaultUser() const;
  Status StoreUser(const std::string& name, const std::vector<std::string>& rules);

  Options options_;
  mutable Mutex mu_;
  UserMap users_ GUARDED_BY(mu_);
  std::atomic<uint64_t> generation_{1};
  AclLog log_;

  Mutex jobs_mu_;
  CondVar jobs_cv_;
  std::deque<std::function<void()>> jobs_ GUARDED_BY(jobs_mu_);
  bool stopping_ GUARDED_BY(jobs_mu_) = false;
  std::thread thread_;
  std::optional<int64_t> seen_generation_;  // the storage's, at the last load (thread only)
  bool poll_failing_ = false;               // thread only: logs an outage once
};

}  // namespace skydb::resp
