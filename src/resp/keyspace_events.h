// Keyspace notifications (Redis's notify-keyspace-events): which classes of events are on, the
// events a command's reply shows it caused, and their publication on `__keyspace@0__:<key>` and
// `__keyevent@0__:<event>` through the pub/sub hub (so, with a carrier, to every daemon sharing
// the database).
//
// An event goes out when its command's reply is handed over: in sync durability that is after
// the write committed, so no subscriber hears of a write that is not durable. A command is only
// watched when a class it can cause is on: with notifications off (the default) the write path
// costs one relaxed atomic load.
//
// Thread-safety: KeyspaceNotifier may be used from any thread; its classes are one atomic.
// Ownership: the notifier borrows the hub, which outlives it (both belong to the executor). A
// watched reply may be answered after the server is gone: it reaches the notifier through a
// shared handle the notifier's destructor empties, so a late reply publishes nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resp/pubsub.h"
#include "resp/reply.h"
#include "skydb/mutex.h"
#include "skydb/store.h"

namespace skydb::resp {

// Redis's classes, with Redis's bits.
enum NotifyClass : uint32_t {
  kNotifyKeyspace = 1 << 0,  // K
  kNotifyKeyevent = 1 << 1,  // E
  kNotifyGeneric = 1 << 2,   // g
  kNotifyString = 1 << 3,    // $
  kNotifyList = 1 << 4,      // l
  kNotifySet = 1 << 5,       // s
  kNotifyHash = 1 << 6,      // h
  kNotifyZset = 1 << 7,      // z
  kNotifyExpired = 1 << 8,   // x
  kNotifyEvicted = 1 << 9,   // e
  kNotifyStream = 1 << 10,   // t
  kNotifyKeyMiss = 1 << 11,  // m (not in A)
  kNotifyModule = 1 << 13,   // d
  kNotifyNew = 1 << 14,      // n (not in A)
  kNotifyAll = kNotifyGeneric | kNotifyString | kNotifyList | kNotifySet | kNotifyHash |
               kNotifyZset | kNotifyExpired | kNotifyEvicted | kNotifyStream | kNotifyModule,
};

// "KEA" → bits; nullopt for a character that names no class (Redis's rule).
std::optional<uint32_t> ParseNotifyClasses(std::string_view text);
// Bits → the text CONFIG GET answers ("AKE" for KEA, as Redis orders it).
std::string NotifyClassesText(uint32_t classes);
// CONFIG SET's complaint about a bad class string, in Redis's words.
inline constexpr std::string_view kBadNotifyClasses =
    "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

// One event: its class, its name as Redis names it, and its key.
struct KeyEvent {
  uint32_t klass = 0;
  std::string name;
  std::string key;
  bool operator==(const KeyEvent&) const = default;
};

// The classes `command` (lower case) can cause; 0 for a command that writes nothing.
uint32_t CommandEventClasses(std::string_view command);

// Which keys existed just before a command ran, for Redis's "keymiss" (class m: a read found
// no key) and "new" (class n: a write created one). The command runs in a transaction after an
// EXISTS of each key, so the answers are of the state it ran on; they arrive before its reply.
// Thread-safety: filled by the store's callbacks, read by the reply's; both may be any thread.
class KeyProbe {
 public:
  // The keys command `name` (lower case) with `args` reads or may create, as far as `classes`
  // want their "keymiss" or "new" events; none when the command can cause neither.
  static std::vector<std::string> KeysOf(std::string_view name,
                                         const std::vector<std::string>& args, uint32_t classes);
  // Asks `recorder` (a SessionStore that records ops for one transaction: EXEC's, a script's,
  // or a probed command's own) whether each of `keys` exists.
  static std::shared_ptr<KeyProbe> Start(SessionStore& recorder, std::vector<std::string> keys);
  // Whether `key` was absent; false when not probed or not answered.
  bool Absent(const std::string& key) const EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::vector<std::string> keys_;               // set before any answer
  std::vector<int8_t> absent_ GUARDED_BY(mu_);  // per key: -1 unanswered, 1 absent, 0 present
};
// `events` (EventsOfReply's for `args`) with the "keymiss" and "new" events `probe` shows, in
// Redis's order: misses first (a read looks its keys up before anything), and a key's "new"
// just before the first event that wrote it (RENAME's destination: before "rename_from").
// `args[0]` is the command's lower-case name. An error reply shows no event.
std::vector<KeyEvent> WithProbedEvents(std::vector<KeyEvent> events,
                                       const std::vector<std::string>& args, std::string_view reply,
                                       const KeyProbe& probe);
// The events a command caused, from its arguments (args[0] its lower-case name) and its
// encoded reply (RESP2 or RESP3); none for an error reply. `now`: for EXPIREAT's "del".
std::vector<KeyEvent> EventsOfReply(const std::vector<std::string>& args, std::string_view reply,
                                    UnixMillis now);

class KeyspaceNotifier {
 public:
  explicit KeyspaceNotifier(PubSubHub& hub);
  ~KeyspaceNotifier();
  KeyspaceNotifier(const KeyspaceNotifier&) = delete;
  KeyspaceNotifier& operator=(const KeyspaceNotifier&) = delete;

  uint32_t classes() const { return classes_.load(std::memory_order_relaxed); }
  void set_classes(uint32_t classes) { classes_.store(classes, std::memory_order_relaxed); }
  // Whether an event of `klass` would be published now.
  bool Wants(uint32_t klass) const {
    uint32_t on = classes();
    return (on & klass) != 0 && (on & (kNotifyKeyspace | kNotifyKeyevent)) != 0;
  }
  // Publishes `event` on the channels the classes ask for (nothing if its class is off).
  void Publish(const KeyEvent& event);
  // The notifier while it lives, for callbacks that may outlive it, and the store's listener of
  // expired keys (which the store keeps: after the notifier is gone it wants none).
  class Handle final : public ExpiryListener {
   public:
    explicit Handle(KeyspaceNotifier* notifier) : notifier_(notifier) {}
    void Publish(const std::vector<KeyEvent>& events) EXCLUDES(mu_);
    void Forget() EXCLUDES(mu_);
    bool WantsExpired() const override EXCLUDES(mu_);
    void Expired(const std::vector<std::string>& keys) override EXCLUDES(mu_);
    bool WantsExpiredFields() const override EXCLUDES(mu_);
    // "hexpired" (h) for each hash, and "del" (g) after it for one left empty.
    void FieldsExpired(const std::vector<ExpiredFields>& hashes) override EXCLUDES(mu_);

   private:
    mutable Mutex mu_;
    KeyspaceNotifier* notifier_ GUARDED_BY(mu_);
  };
  const std::shared_ptr<Handle>& handle() const { return handle_; }
  // The keys whose existence before command `lower_name` with `args` decides its wanted
  // "keymiss" and "new" events (KeyProbe); none, the usual case, when those classes are off.
  std::vector<std::string> KeysToProbe(std::string_view lower_name,
                                       const std::vector<std::string>& args) const;
  // `reply`, which publishes the events its command caused just before it is handed over;
  // `reply` itself when no class the command can cause is on and there is no `probe`.
  ReplyFn Watch(ReplyFn reply, const std::vector<std::string>& args, std::string_view lower_name,
                UnixMillis now, std::shared_ptr<const KeyProbe> probe = nullptr);

 private:
  PubSubHub& hub_;
  std::atomic<uint32_t> classes_{0};
  std::shared_ptr<Handle> handle_;
};

struct CommandContext;  // resp/command_table.h
// DEL / UNLINK of several distinct keys while "del" events are watched: one transaction of a
// delete per key (one unit, one COMMIT, as the plain DEL), so that each deleted key is
// announced; replies the count as DEL does.
void DeleteAnnounced(CommandContext& ctx, std::vector<std::string> keys);
// Whether `op` may leave its (first) key's hash or set empty, which Redis then deletes with a
// "del" event (HDEL, SREM, SPOP, SMOVE's source, HGETDEL).
bool MayEmpty(const CollectionOp& op);
// `op` followed, in one transaction, by an EXISTS of its key, while "del" events are watched:
// replies the op's reply and, when the op emptied the key, announces its "del" after the op's
// own event.
void CollectionAnnounced(CommandContext& ctx, CollectionOp op, bool ok_reply);

}  // namespace skydb::resp
