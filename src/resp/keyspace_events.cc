// Keyspace notifications: the classes, the events each command's reply shows, their channels.
#include "resp/keyspace_events.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "base/strings.h"
#include "resp/command_table.h"
#include "resp/store_reply.h"

namespace skydb::resp {
namespace {

constexpr std::string_view kKeyspacePrefix = "__keyspace@0__:";
constexpr std::string_view kKeyeventPrefix = "__keyevent@0__:";
// Arguments longer than this are values, never keys or options: a watched command does not
// copy them.
constexpr size_t kLongestKept = 64 * 1024;

struct ClassLetter {
  char letter;
  uint32_t bits;
};
constexpr ClassLetter kLetters[] = {
    {'A', kNotifyAll},     {'g', kNotifyGeneric},  {'$', kNotifyString},   {'l', kNotifyList},
    {'s', kNotifySet},     {'h', kNotifyHash},     {'z', kNotifyZset},     {'x', kNotifyExpired},
    {'e', kNotifyEvicted}, {'K', kNotifyKeyspace}, {'E', kNotifyKeyevent}, {'t', kNotifyStream},
    {'m', kNotifyKeyMiss}, {'d', kNotifyModule},   {'n', kNotifyNew}};

// Each command that can cause events, and their classes.
const std::unordered_map<std::string_view, uint32_t>& ClassesByCommand() {
  static const auto* table = new std::unordered_map<std::string_view, uint32_t>{
      {"set", kNotifyString | kNotifyGeneric},
      {"setex", kNotifyString | kNotifyGeneric},
      {"psetex", kNotifyString | kNotifyGeneric},
      {"setnx", kNotifyString},
      {"mset", kNotifyString},
      {"incr", kNotifyString},
      {"append", kNotifyString},
      {"decr", kNotifyString},
      {"incrby", kNotifyString},
      {"decrby", kNotifyString},
      {"incrbyfloat", kNotifyString},
      {"getdel", kNotifyGeneric},
      {"getex", kNotifyGeneric},
      {"del", kNotifyGeneric},
      {"unlink", kNotifyGeneric},
      {"expire", kNotifyGeneric},
      {"pexpire", kNotifyGeneric},
      {"expireat", kNotifyGeneric},
      {"pexpireat", kNotifyGeneric},
      {"persist", kNotifyGeneric},
      {"rename", kNotifyGeneric},
      {"renamenx", kNotifyGeneric},
      {"hset", kNotifyHash},
      {"hmset", kNotifyHash},
      {"hsetnx", kNotifyHash},
      {"hdel", kNotifyHash},
      {"hincrby", kNotifyHash},
      {"hincrbyfloat", kNotifyHash},
      {"hexpire", kNotifyHash},
      {"hpexpire", kNotifyHash},
      {"hexpireat", kNotifyHash},
      {"hpexpireat", kNotifyHash},
      {"hpersist", kNotifyHash},
      {"hgetdel", kNotifyHash},
      {"hgetex", kNotifyHash},
      {"hsetex", kNotifyHash},
      {"sadd", kNotifySet},
      {"srem", kNotifySet},
      {"spop", kNotifySet},
      {"smove", kNotifySet},
      {"sinterstore", kNotifySet},
      {"sunionstore", kNotifySet},
      {"sdiffstore", kNotifySet},
  };
  return *table;
}

// ---- the reply, as far as events need it ----

bool IsErrorReply(std::string_view reply) {
  return !reply.empty() && (reply[0] == '-' || reply[0] == '!');
}
bool IsNullReply(std::string_view reply) {
  return reply.starts_with("$-1") || reply.starts_with("*-1") || reply.starts_with("_");
}
std::optional<int64_t> IntegerReply(std::string_view reply) {
  if (!reply.starts_with(":")) return std::nullopt;
  int64_t n = 0;
  auto end = reply.find('\r');
  if (end == std::string_view::npos || !ParseRedisInt64(reply.substr(1, end - 1), &n)) {
    return std::nullopt;
  }
  return n;
}
// The integers of an array of integers (HEXPIRE's codes); none for another shape.
std::vector<int64_t> IntegerArray(std::string_view reply) {
  std::vector<int64_t> out;
  if (!reply.starts_with("*")) return out;
  size_t at = reply.find("\r\n");
  while (at != std::string_view::npos && at + 2 < reply.size()) {
    std::string_view rest = reply.substr(at + 2);
    auto n = IntegerReply(rest);
    if (!n) break;
    out.push_back(*n);
    at = reply.find("\r\n", at + 2);
  }
  return out;
}
// An empty array or set ("*0", "~0"): SPOP with a count that popped nothing.
bool IsEmptyAggregate(std::string_view reply) {
  return reply.starts_with("*0\r") || reply.starts_with("~0\r");
}

bool HasOption(const std::vector<std::string>& args, size_t from, std::string_view option) {
  for (size_t i = from; i < args.size(); ++i) {
    if (EqualsIgnoreCase(args[i], option)) return true;
  }
  return false;
}
bool HasExpiryOption(const std::vector<std::string>& args, size_t from) {
  return HasOption(args, from, "ex") || HasOption(args, from, "px") ||
         HasOption(args, from, "exat") || HasOption(args, from, "pxat");
}

// EXPIRE family: the deadline asked for is already past, so the key was deleted ("del").
bool DeadlinePassed(const std::vector<std::string>& args, UnixMillis now) {
  int64_t n = 0;
  if (args.size() < 3 || !ParseInt64(args[2], &n)) return false;
  const std::string& name = args[0];
  if (name == "expire" || name == "pexpire") return n <= 0;
  if (name == "expireat") return n <= now / 1000;
  return n <= now;  // pexpireat
}

using Events = std::vector<KeyEvent>;
void Add(Events& out, uint32_t klass, std::string_view name, const std::string& key) {
  out.push_back(KeyEvent{klass, std::string(name), key});
}

// SET applied? Without GET its reply says so; with GET, NX applied when nothing was there and
// XX when something was; otherwise it always applies.
bool SetApplied(const std::vector<std::string>& args, std::string_view reply) {
  if (!HasOption(args, 3, "get")) return reply.starts_with("+OK");
  if (HasOption(args, 3, "nx")) return IsNullReply(reply);
  if (HasOption(args, 3, "xx")) return !IsNullReply(reply);
  return true;
}

void StringEvents(const std::vector<std::string>& args, std::string_view reply, Events& out) {
  const std::string& name = args[0];
  if (name == "set") {
    if (!SetApplied(args, reply)) return;
    Add(out, kNotifyString, "set", args[1]);
    if (HasExpiryOption(args, 3)) Add(out, kNotifyGeneric, "expire", args[1]);
  } else if (name == "setex" || name == "psetex") {
    Add(out, kNotifyString, "set", args[1]);
    Add(out, kNotifyGeneric, "expire", args[1]);
  } else if (name == "setnx") {
    if (IntegerReply(reply) == 1) Add(out, kNotifyString, "set", args[1]);
  } else if (name == "mset") {
    for (size_t i = 1; i + 1 < args.size(); i += 2) Add(out, kNotifyString, "set", args[i]);
  } else if (name == "incrbyfloat" || name == "append") {
    Add(out, kNotifyString, name, args[1]);
  } else {  // incr, decr, incrby, decrby: Redis names them all "incrby"
    Add(out, kNotifyString, "incrby", args[1]);
  }
}

void GenericEvents(const std::vector<std::string>& args, std::string_view reply, UnixMillis now,
                   Events& out) {
  const std::string& name = args[0];
  auto n = IntegerReply(reply);
  if (name == "del" || name == "unlink") {
    // The reply counts keys, so it tells which went only for one key; a DEL naming several
    // runs key by key in one transaction when its events are watched, and announces them
    // itself (DeleteAnnounced).
    if (args.size() == 2 && n == 1) Add(out, kNotifyGeneric, "del", args[1]);
  } else if (name == "getdel") {
    if (!IsNullReply(reply)) Add(out, kNotifyGeneric, "del", args[1]);
  } else if (name == "getex") {
    if (IsNullReply(reply)) return;
    if (HasExpiryOption(args, 2)) Add(out, kNotifyGeneric, "expire", args[1]);
    if (HasOption(args, 2, "persist")) Add(out, kNotifyGeneric, "persist", args[1]);
  } else if (name == "persist") {
    if (n == 1) Add(out, kNotifyGeneric, "persist", args[1]);
  } else if (name == "rename" || name == "renamenx") {
    if (reply.starts_with("+OK") || n == 1) {
      Add(out, kNotifyGeneric, "rename_from", args[1]);
      Add(out, kNotifyGeneric, "rename_to", args[2]);
    }
  } else if (n == 1) {  // the EXPIRE family
    Add(out, kNotifyGeneric, DeadlinePassed(args, now) ? "del" : "expire", args[1]);
  }
}

void HashEvents(const std::vector<std::string>& args, std::string_view reply, Events& out) {
  const std::string& name = args[0];
  const std::string& key = args[1];
  auto n = IntegerReply(reply);
  if (name == "hset" || name == "hmset") return Add(out, kNotifyHash, "hset", key);
  if (name == "hsetnx") {
    if (n == 1) Add(out, kNotifyHash, "hset", key);
  } else if (name == "hdel") {
    if (n && *n > 0) Add(out, kNotifyHash, "hdel", key);
  } else if (name == "hincrby" || name == "hincrbyfloat") {
    Add(out, kNotifyHash, name, key);
  } else if (name == "hsetex") {
    if (n != 1) return;
    Add(out, kNotifyHash, "hset", key);
    if (HasExpiryOption(args, 2)) Add(out, kNotifyHash, "hexpire", key);
  } else if (name == "hgetdel") {
    if (reply.find('$') != std::string_view::npos) Add(out, kNotifyHash, "hdel", key);
  } else if (name == "hgetex") {
    if (reply.find('$') == std::string_view::npos) return;
    if (HasExpiryOption(args, 2)) Add(out, kNotifyHash, "hexpire", key);
    if (HasOption(args, 2, "persist")) Add(out, kNotifyHash, "hpersist", key);
  } else {  // hexpire family and hpersist: per-field codes, 1 changed, 2 deleted (past time)
    auto codes = IntegerArray(reply);
    bool changed = std::count(codes.begin(), codes.end(), 1) > 0;
    bool deleted = std::count(codes.begin(), codes.end(), 2) > 0;
    if (changed) Add(out, kNotifyHash, name == "hpersist" ? "hpersist" : "hexpire", key);
    if (deleted) Add(out, kNotifyHash, "hdel", key);
  }
}

void SetEvents(const std::vector<std::string>& args, std::string_view reply, Events& out) {
  const std::string& name = args[0];
  auto n = IntegerReply(reply);
  if (name == "sadd" || name == "srem") {
    if (n && *n > 0) Add(out, kNotifySet, name, args[1]);
  } else if (name == "spop") {
    if (!IsNullReply(reply) && !IsEmptyAggregate(reply)) Add(out, kNotifySet, "spop", args[1]);
  } else if (name == "smove") {
    if (n != 1) return;
    Add(out, kNotifySet, "srem", args[1]);
    Add(out, kNotifySet, "sadd", args[2]);
  } else if (n && *n > 0) {  // the STORE forms
    Add(out, kNotifySet, name, args[1]);
  }
}

// ---- "keymiss" and "new": the keys a command reads and may create ----

// Reads whose lookup of a missing key Redis announces as "keymiss" (lookupKeyRead), by the
// position of their keys.
bool ReadsFirstKey(std::string_view name) {
  static const auto* names = new std::unordered_set<std::string_view>{
      "get",   "getdel",  "getex",     "hget",       "hmget",       "hgetall", "hkeys", "hvals",
      "hlen",  "hexists", "hstrlen",   "hrandfield", "hscan",       "httl",    "hpttl", "smembers",
      "scard", "sscan",   "sismember", "smismember", "srandmember", "ttl",     "pttl",  "type"};
  return names->contains(name);
}

std::vector<std::string> ReadKeys(std::string_view name, const std::vector<std::string>& args) {
  if (ReadsFirstKey(name) || (name == "set" && HasOption(args, 3, "get"))) return {args[1]};
  if (name == "mget" || name == "sinter" || name == "sunion" || name == "sdiff") {
    return {args.begin() + 1, args.end()};
  }
  int64_t n = 0;
  if (name == "sintercard" && ParseInt64(args[1], &n) && n > 0 &&
      n <= static_cast<int64_t>(args.size()) - 2) {
    return {args.begin() + 2, args.begin() + 2 + n};
  }
  return {};
}

// The events that write a key, so that a key absent before them was created ("new").
bool CreatesKey(std::string_view event) {
  static const auto* names = new std::unordered_set<std::string_view>{
      "set",  "incrby",       "incrbyfloat", "append",      "hset",       "hincrby",
      "sadd", "hincrbyfloat", "sinterstore", "sunionstore", "sdiffstore", "rename_to"};
  return names->contains(event);
}

// Writes that may create their first key.
bool MayCreateFirstKey(std::string_view name) {
  static const auto* names = new std::unordered_set<std::string_view>{
      "set",    "setex",  "psetex",       "setnx",       "incr",        "decr",      "incrby",
      "decrby", "append", "incrbyfloat",  "hset",        "hmset",       "hsetnx",    "hincrby",
      "hsetex", "sadd",   "hincrbyfloat", "sinterstore", "sunionstore", "sdiffstore"};
  return names->contains(name);
}

std::vector<std::string> CreatedKeys(std::string_view name, const std::vector<std::string>& args) {
  if (MayCreateFirstKey(name)) return {args[1]};
  bool second_key = name == "smove" || name == "rename" || name == "renamenx";
  if (second_key && args.size() >= 3) return {args[2]};
  std::vector<std::string> keys;
  if (name == "mset") {
    for (size_t i = 1; i < args.size(); i += 2) keys.push_back(args[i]);
  }
  return keys;
}

// DeleteAnnounced's deletes: each key's reports here; the last report answers. Deliveries come
// in order after the transaction applied (and, in sync durability, committed), also in EXEC.
struct DeleteTally {
  std::vector<std::string> keys;
  std::vector<int64_t> deleted;
  std::optional<Error> error;
  ReplyFn reply;
  std::shared_ptr<KeyspaceNotifier::Handle> handle;
};

void AnswerDeletes(DeleteTally& tally) {
  if (tally.error) return tally.reply(ErrorReply(StoreErrorText(*tally.error)));
  std::vector<KeyEvent> events;
  for (size_t i = 0; i < tally.keys.size(); ++i) {
    if (tally.deleted[i] > 0) events.push_back(KeyEvent{kNotifyGeneric, "del", tally.keys[i]});
  }
  tally.handle->Publish(events);
  tally.reply(Integer(static_cast<int64_t>(events.size())));
}

// CollectionAnnounced's op and the EXISTS after it.
struct CollectionTally {
  std::optional<Result<StoreReply>> result;
  std::string key;
  Proto proto = Proto::kResp2;
  bool ok_reply = false;
  ReplyFn reply;
  std::shared_ptr<KeyspaceNotifier::Handle> handle;
};

// The op removed something (so an absent key afterwards was emptied by it).
bool RemovedSomething(const StoreReply& r) {
  if (r.type == StoreReply::Type::kInteger) return r.integer > 0;
  if (r.type == StoreReply::Type::kBulk) return true;
  return std::any_of(r.elements.begin(), r.elements.end(),
                     [](const StoreReply& e) { return e.type != StoreReply::Type::kNull; });
}

void AnswerCollection(CollectionTally& t, const Result<int64_t>& exists) {
  if (!t.result) return t.reply(ErrorReply("ERR the transaction lost its result"));
  const Result<StoreReply>& r = *t.result;
  if (!r.ok()) return t.reply(ErrorReply(StoreErrorText(r.error())));
  bool emptied = exists.ok() && *exists == 0 && RemovedSomething(*r);
  if (t.ok_reply) {
    t.reply(Simple("OK"));
  } else {
    Proto proto = t.proto;
    ReplyWithin(t.reply, StoreReplyBytes(*r), *r,
                [proto](const StoreReply& v) { return EncodeStoreReply(v, proto); });
  }
  if (emptied) t.handle->Publish({KeyEvent{kNotifyGeneric, "del", t.key}});
}

}  // namespace

bool MayEmpty(const CollectionOp& op) {
  switch (op.kind) {
    case CollectionOp::Kind::kHDel:
    case CollectionOp::Kind::kSRem:
    case CollectionOp::Kind::kSPop:
    case CollectionOp::Kind::kSMove:
    case CollectionOp::Kind::kHGetDel:
      return true;
    default:
      return false;
  }
}

void CollectionAnnounced(CommandContext& ctx, CollectionOp op, bool ok_reply) {
  auto tally = std::make_shared<CollectionTally>();
  tally->key = op.keys.front();
  tally->proto = ctx.client.proto;
  tally->ok_reply = ok_reply;
  tally->reply = std::move(ctx.reply);
  tally->handle = ctx.executor.notifier().handle();
  std::vector<TxOp> ops;
  ops.emplace_back(tx::Collection{std::move(op),
                                  [tally](Result<StoreReply> r) { tally->result = std::move(r); }});
  ops.emplace_back(
      tx::Exists{{tally->key}, [tally](Result<int64_t> n) { AnswerCollection(*tally, n); }});
  ctx.store().Transact(std::move(ops), nullptr, [tally](Result<bool> done) {
    if (!done.ok()) tally->reply(ErrorReply(StoreErrorText(done.error())));
  });
}

std::optional<uint32_t> ParseNotifyClasses(std::string_view text) {
  uint32_t bits = 0;
  for (char c : text) {
    const ClassLetter* found = std::find_if(std::begin(kLetters), std::end(kLetters),
                                            [c](const ClassLetter& l) { return l.letter == c; });
    if (found == std::end(kLetters)) return std::nullopt;
    bits |= found->bits;
  }
  return bits;
}

std::string NotifyClassesText(uint32_t classes) {
  std::string out;
  if ((classes & kNotifyAll) == kNotifyAll) {
    out += 'A';
  } else {
    for (const ClassLetter& l : kLetters) {
      bool type_class = l.letter != 'A' && l.letter != 'K' && l.letter != 'E' && l.letter != 'm';
      if (type_class && (classes & l.bits) != 0) out += l.letter;
    }
  }
  if (classes & kNotifyKeyspace) out += 'K';
  if (classes & kNotifyKeyevent) out += 'E';
  if (classes & kNotifyKeyMiss) out += 'm';
  return out;
}

uint32_t CommandEventClasses(std::string_view command) {
  const auto& table = ClassesByCommand();
  auto it = table.find(command);
  return it == table.end() ? 0 : it->second;
}

std::vector<std::string> KeyProbe::KeysOf(std::string_view name,
                                          const std::vector<std::string>& args, uint32_t classes) {
  std::vector<std::string> keys;
  if (args.size() < 2) return keys;
  if (classes & kNotifyKeyMiss) keys = ReadKeys(name, args);
  if (classes & kNotifyNew) {
    for (auto& key : CreatedKeys(name, args)) keys.push_back(std::move(key));
  }
  std::unordered_set<std::string_view> seen;
  std::vector<std::string> distinct;
  for (auto& key : keys) {
    if (seen.insert(key).second) distinct.push_back(key);
  }
  return distinct;
}

std::shared_ptr<KeyProbe> KeyProbe::Start(SessionStore& recorder, std::vector<std::string> keys) {
  auto probe = std::make_shared<KeyProbe>();
  probe->keys_ = std::move(keys);
  {
    MutexLock lock(probe->mu_);
    probe->absent_.assign(probe->keys_.size(), -1);
  }
  for (size_t i = 0; i < probe->keys_.size(); ++i) {
    recorder.Exists({probe->keys_[i]}, [probe, i](Result<int64_t> n) {
      MutexLock lock(probe->mu_);
      if (n.ok()) probe->absent_[i] = *n == 0 ? 1 : 0;
    });
  }
  return probe;
}

bool KeyProbe::Absent(const std::string& key) const {
  auto it = std::find(keys_.begin(), keys_.end(), key);
  if (it == keys_.end()) return false;
  MutexLock lock(mu_);
  return absent_[it - keys_.begin()] == 1;
}

std::vector<KeyEvent> WithProbedEvents(std::vector<KeyEvent> events,
                                       const std::vector<std::string>& args, std::string_view reply,
                                       const KeyProbe& probe) {
  if (IsErrorReply(reply) || args.size() < 2) return events;
  Events out;
  for (const auto& key : ReadKeys(args[0], args)) {
    if (probe.Absent(key)) Add(out, kNotifyKeyMiss, "keymiss", key);
  }
  std::unordered_set<std::string> created;
  for (auto& event : events) {
    if (event.name == "rename_from" && args.size() >= 3) {
      // Redis deletes an existing destination and adds it anew: "new" whether it was there.
      Add(out, kNotifyNew, "new", args[2]);
    } else if (event.name != "rename_to" && CreatesKey(event.name) && probe.Absent(event.key) &&
               created.insert(event.key).second) {
      Add(out, kNotifyNew, "new", event.key);
    }
    out.push_back(std::move(event));
  }
  return out;
}

std::vector<KeyEvent> EventsOfReply(const std::vector<std::string>& args, std::string_view reply,
                                    UnixMillis now) {
  Events out;
  uint32_t klass = CommandEventClasses(args[0]);
  if (klass == 0 || IsErrorReply(reply) || args.size() < 2) return out;
  if (klass & kNotifyHash) {
    HashEvents(args, reply, out);
  } else if (klass & kNotifySet) {
    SetEvents(args, reply, out);
  } else if (klass & kNotifyString) {
    StringEvents(args, reply, out);
  } else {
    GenericEvents(args, reply, now, out);
  }
  return out;
}

KeyspaceNotifier::KeyspaceNotifier(PubSubHub& hub)
    : hub_(hub), handle_(std::make_shared<Handle>(this)) {}

KeyspaceNotifier::~KeyspaceNotifier() { handle_->Forget(); }

void KeyspaceNotifier::Handle::Publish(const std::vector<KeyEvent>& events) {
  MutexLock lock(mu_);
  if (notifier_ == nullptr) return;
  for (const KeyEvent& event : events) notifier_->Publish(event);
}

bool KeyspaceNotifier::Handle::WantsExpired() const {
  MutexLock lock(mu_);
  return notifier_ != nullptr && notifier_->Wants(kNotifyExpired);
}

void KeyspaceNotifier::Handle::Expired(const std::vector<std::string>& keys) {
  std::vector<KeyEvent> events;
  events.reserve(keys.size());
  for (const auto& key : keys) events.push_back(KeyEvent{kNotifyExpired, "expired", key});
  Publish(events);
}

bool KeyspaceNotifier::Handle::WantsExpiredFields() const {
  MutexLock lock(mu_);
  return notifier_ != nullptr &&
         (notifier_->Wants(kNotifyHash) || notifier_->Wants(kNotifyGeneric));
}

void KeyspaceNotifier::Handle::FieldsExpired(const std::vector<ExpiredFields>& hashes) {
  std::vector<KeyEvent> events;
  for (const auto& hash : hashes) {
    events.push_back(KeyEvent{kNotifyHash, "hexpired", hash.key});
    if (hash.emptied) events.push_back(KeyEvent{kNotifyGeneric, "del", hash.key});
  }
  Publish(events);
}

void KeyspaceNotifier::Handle::Forget() {
  MutexLock lock(mu_);
  notifier_ = nullptr;
}

void KeyspaceNotifier::Publish(const KeyEvent& event) {
  uint32_t on = classes();
  if ((on & event.klass) == 0) return;
  auto ignore = [](size_t) {};
  if (on & kNotifyKeyspace) {
    hub_.Publish(std::string(kKeyspacePrefix) + event.key, event.name, ignore);
  }
  if (on & kNotifyKeyevent) {
    hub_.Publish(std::string(kKeyeventPrefix) + event.name, event.key, ignore);
  }
}

std::vector<std::string> KeyspaceNotifier::KeysToProbe(std::string_view lower_name,
                                                       const std::vector<std::string>& args) const {
  uint32_t wanted = 0;
  if (Wants(kNotifyKeyMiss)) wanted |= kNotifyKeyMiss;
  if (Wants(kNotifyNew)) wanted |= kNotifyNew;
  if (wanted == 0) return {};
  return KeyProbe::KeysOf(lower_name, args, wanted);
}

ReplyFn KeyspaceNotifier::Watch(ReplyFn reply, const std::vector<std::string>& args,
                                std::string_view lower_name, UnixMillis now,
                                std::shared_ptr<const KeyProbe> probe) {
  if (probe == nullptr && !Wants(CommandEventClasses(lower_name))) return reply;
  std::vector<std::string> kept;
  kept.reserve(args.size());
  kept.emplace_back(lower_name);
  for (size_t i = 1; i < args.size(); ++i) {
    kept.push_back(args[i].size() > kLongestKept ? std::string() : args[i]);
  }
  return std::move(reply).Observed(
      [handle = handle_, kept = std::move(kept), now, probe](std::string_view bytes) {
        auto events = EventsOfReply(kept, bytes, now);
        if (probe != nullptr) events = WithProbedEvents(std::move(events), kept, bytes, *probe);
        if (!events.empty()) handle->Publish(events);
      });
}

void DeleteAnnounced(CommandContext& ctx, std::vector<std::string> keys) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  auto tally = std::make_shared<DeleteTally>();
  tally->deleted.assign(keys.size(), 0);
  tally->reply = std::move(ctx.reply);
  tally->handle = ctx.executor.notifier().handle();
  std::vector<TxOp> ops;
  for (size_t i = 0; i < keys.size(); ++i) {
    ops.emplace_back(tx::Delete{{keys[i]}, [tally, i](Result<int64_t> n) {
                                  if (n.ok()) tally->deleted[i] = *n;
                                  if (!n.ok() && !tally->error) tally->error = n.error();
                                  if (i + 1 == tally->keys.size()) AnswerDeletes(*tally);
                                }});
  }
  tally->keys = std::move(keys);
  ctx.store().Transact(std::move(ops), nullptr, [tally](Result<bool> done) {
    if (!done.ok()) tally->reply(ErrorReply(StoreErrorText(done.error())));
  });
}

}  // namespace skydb::resp
