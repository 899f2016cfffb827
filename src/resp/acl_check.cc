// The ACL check: a command's keys and channels, the user's verdict, and what a denial leaves.
#include "resp/acl_check.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/strings.h"
#include "resp/clients.h"

namespace skydb::resp {
namespace {

bool Has(const std::vector<std::string_view>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// Write commands that also hand back what the key held (Redis's ACCESS key flag): their keys
// need read permission too.
bool ReadsValueToo(std::string_view name, const std::vector<std::string>& args) {
  static constexpr std::string_view kReading[] = {
      "getdel",      "getex",   "incr",         "incrby",  "decr",   "decrby",
      "incrbyfloat", "hincrby", "hincrbyfloat", "hgetdel", "hgetex", "spop"};
  if (std::find(std::begin(kReading), std::end(kReading), name) != std::end(kReading)) {
    return true;
  }
  if (name != "set") return false;
  return std::any_of(args.begin() + 3, args.end(),
                     [](const std::string& a) { return EqualsIgnoreCase(a, "get"); });
}

// numkeys at args[at], the keys after it (as many as there are).
std::vector<std::string> CountedKeys(const std::vector<std::string>& args, size_t at) {
  int64_t n = 0;
  if (at >= args.size() || !ParseInt64(args[at], &n) || n < 0) return {};
  size_t end = std::min(args.size(), at + 1 + static_cast<size_t>(n));
  return {args.begin() + static_cast<std::ptrdiff_t>(at + 1),
          args.begin() + static_cast<std::ptrdiff_t>(end)};
}

std::string_view ReasonName(acl::Denied denied) {
  switch (denied) {
    case acl::Denied::kCommand:
      return "command";
    case acl::Denied::kKey:
      return "key";
    case acl::Denied::kChannel:
      return "channel";
    case acl::Denied::kNone:
      break;
  }
  return "";
}

void Record(CommandExecutor& executor, const ClientState& client, std::string_view username,
            std::string_view reason, std::string_view context, std::string object) {
  AclLogEntry entry;
  entry.reason = reason;
  entry.context = context;
  entry.object = std::move(object);
  entry.username = username;
  entry.client_info = FormatClientLine(InfoFromState(client));  // Redis's: a CLIENT LIST line
  if (executor.acl().log().Add(entry, executor.NowMs())) {
    // A new entry only: a client repeating one denial is counted, not logged again.
    spdlog::warn("acl: user '{}' from {} was denied: {} '{}' ({})", entry.username, client.peer,
                 reason, entry.object, context);
  }
}

// Whether some pattern lets `user` read `key` (if `read`) and some lets it write it (if `write`).
bool KeyAllowed(const AclUser& user, std::string_view key, bool read, bool write) {
  bool can_read = !read, can_write = !write;
  for (const auto& rule : user.keys) {
    if ((can_read || !rule.read) && (can_write || !rule.write)) continue;
    if (!rule.Matches(key)) continue;
    can_read = can_read || rule.read;
    can_write = can_write || rule.write;
    if (can_read && can_write) return true;
  }
  return can_read && can_write;
}

bool ChannelAllowed(const AclUser& user, const std::string& channel, bool pattern) {
  const auto& channels = user.user.channels;
  return std::any_of(channels.begin(), channels.end(), [&](const std::string& p) {
    return p == "*" || (pattern ? p == channel : GlobMatch(p, channel));
  });
}

// Per command of the table (by index): whether its keys are read, and written.
struct KeyUse {
  bool read = false;
  bool write = false;
  bool special = false;  // its keys or channels are not first..last (AccessOf says which)
};
const std::vector<KeyUse>& KeyUses() {
  static const auto* uses = [] {
    static constexpr std::string_view kSpecial[] = {
        "publish",     "subscribe", "psubscribe", "flushall",   "flushdb",    "eval",
        "evalsha",     "eval_ro",   "evalsha_ro", "sintercard", "sdiffstore", "sinterstore",
        "sunionstore", "smove",     "rename",     "renamenx",   "memory",     "object"};
    auto* out = new std::vector<KeyUse>;
    for (const auto& spec : AllCommands()) {
      auto categories = acl::CategoriesOf(spec.name);
      out->push_back({Has(categories, "read"), Has(categories, "write"),
                      std::find(std::begin(kSpecial), std::end(kSpecial),
                                std::string_view(spec.name)) != std::end(kSpecial)});
    }
    return out;
  }();
  return *uses;
}

// The command, key and channel verdict of `args` for `user` (not one with every right).
acl::Denied Verdict(const AclUser& user, const CommandSpec& spec,
                    const std::vector<std::string>& args, std::string* refused_channel) {
  size_t index = static_cast<size_t>(&spec - AllCommands().data());
  if (index >= kAclCommandSlots || !user.commands[index]) return acl::Denied::kCommand;
  const KeyUse& use = KeyUses()[index];
  if (!use.special) {  // the common case: keys first..last, nothing copied
    if (spec.first_key <= 0 || user.all_keys) return acl::Denied::kNone;
    bool read = use.read || ReadsValueToo(spec.name, args);
    size_t last = spec.last_key < 0 ? args.size() - 1 : static_cast<size_t>(spec.last_key);
    for (size_t i = static_cast<size_t>(spec.first_key); i <= last && i < args.size();
         i += static_cast<size_t>(spec.key_step)) {
      if (!KeyAllowed(user, args[i], read, use.write)) return acl::Denied::kKey;
    }
    return acl::Denied::kNone;
  }
  AclAccess access = AccessOf(spec, args);
  if (access.every_key && !user.all_keys) return acl::Denied::kKey;
  for (const auto& key : access.read) {
    if (!KeyAllowed(user, key, true, false)) return acl::Denied::kKey;
  }
  for (const auto& key : access.write) {
    if (!KeyAllowed(user, key, false, true)) return acl::Denied::kKey;
  }
  for (const auto& channel : access.channels) {
    if (!ChannelAllowed(user, channel, access.channel_patterns)) {
      *refused_channel = channel;
      return acl::Denied::kChannel;
    }
  }
  return acl::Denied::kNone;
}

}  // namespace

AclAccess AccessOf(const CommandSpec& spec, const std::vector<std::string>& args) {
  AclAccess a;
  std::string_view name = spec.name;
  auto from = [&](size_t i) {
    return std::vector<std::string>(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  };
  if (name == "publish") {
    a.channels = {args[1]};
    return a;
  }
  if (name == "subscribe" || name == "psubscribe") {
    a.channels = from(1);
    a.channel_patterns = name == "psubscribe";
    return a;
  }
  if (name == "flushall" || name == "flushdb") {
    a.every_key = true;
    return a;
  }
  std::vector<std::string> keys;
  if (name == "eval" || name == "evalsha" || name == "eval_ro" || name == "evalsha_ro") {
    keys = CountedKeys(args, 2);
    a.read = keys;
    if (!name.ends_with("_ro")) a.write = std::move(keys);
    return a;
  }
  if (name == "sintercard") {
    a.read = CountedKeys(args, 1);
    return a;
  }
  if (name == "sdiffstore" || name == "sinterstore" || name == "sunionstore") {
    a.write = {args[1]};
    a.read = from(2);
    return a;
  }
  if (name == "smove" || name == "rename" || name == "renamenx") {
    a.read = {args[1]};
    a.write = {args[1], args[2]};
    return a;
  }
  if (name == "memory" || name == "object") {
    if (args.size() > 2 && (name == "object" || EqualsIgnoreCase(args[1], "usage"))) {
      a.read = {args[2]};
    }
    return a;
  }
  if (spec.first_key <= 0) return a;
  auto categories = acl::CategoriesOf(name);
  bool reads = Has(categories, "read") || ReadsValueToo(name, args);
  bool writes = Has(categories, "write");
  size_t last = spec.last_key < 0 ? args.size() - 1 : static_cast<size_t>(spec.last_key);
  for (size_t i = static_cast<size_t>(spec.first_key); i <= last && i < args.size();
       i += static_cast<size_t>(spec.key_step)) {
    if (reads) a.read.push_back(args[i]);
    if (writes) a.write.push_back(args[i]);
  }
  return a;
}

const AclUser* ClientUser(CommandExecutor& executor, ClientState& client) {
  uint64_t generation = executor.acl().generation();
  if (client.acl_generation != generation) {
    client.user = executor.acl().Find(client.user_name);
    client.acl_generation = generation;
  }
  return client.user.get();
}

std::optional<std::string> AclRefusal(CommandExecutor& executor, const ClientState& client,
                                      const AclUser& user, const CommandSpec& spec,
                                      const std::vector<std::string>& args,
                                      std::string_view context, bool dry_run) {
  if (user.full_access || !spec.needs_auth) return std::nullopt;
  std::string_view name = spec.name;
  if (name == "acl" && args.size() >= 2) {
    // Redis's harmless subcommands, outside @dangerous: any user may ask them.
    for (std::string_view sub : {"whoami", "cat", "genpass", "help"}) {
      if (EqualsIgnoreCase(args[1], sub)) return std::nullopt;
    }
  }
  std::string command;  // on a denial: the command as Redis names it
  acl::Denied denied = acl::Denied::kNone;
  std::string channel;  // the one refused, for ACL LOG
  if (name == "client" && args.size() >= 2 && !user.all_commands) {
    // Redis's @admin @dangerous subcommands: they reach other users' connections, so only a
    // user with every command may run them (skydb's rules name whole commands).
    for (std::string_view sub : {"kill", "list", "pause", "unpause", "no-evict"}) {
      if (EqualsIgnoreCase(args[1], sub)) {
        command = "client|" + std::string(sub);
        denied = acl::Denied::kCommand;
      }
    }
  }
  if (denied == acl::Denied::kNone) denied = Verdict(user, spec, args, &channel);
  if (denied == acl::Denied::kNone) return std::nullopt;
  if (command.empty()) command = name;
  std::string text;
  std::string object = command;
  switch (denied) {
    case acl::Denied::kCommand:
      text = "NOPERM this user has no permissions to run the '" + command + "' command";
      break;
    case acl::Denied::kKey:
      text = "NOPERM this user has no permissions to access one of the keys used as arguments";
      break;
    default:
      text = "NOPERM this user has no permissions to access one of the channels used as arguments";
      object = channel;
      break;
  }
  if (dry_run) return text;
  auto& service = executor.acl();
  (denied == acl::Denied::kCommand ? service.denied_commands
   : denied == acl::Denied::kKey   ? service.denied_keys
                                   : service.denied_channels)
      .fetch_add(1, std::memory_order_relaxed);
  Record(executor, client, user.user.name, ReasonName(denied), context, std::move(object));
  return text;
}

bool MayRead(const AclUser& user, std::string_view key) {
  return user.all_keys || KeyAllowed(user, key, /*read=*/true, /*write=*/false);
}

bool PatternWithin(const AclUser& user, std::string_view pattern) {
  if (user.all_keys) return true;
  // Taken literally, the pattern must be matched by a pattern of the user's that ends in '*'
  // after a plain prefix ("app1:*"): then every key it names starts with that prefix.
  return std::any_of(user.user.keys.begin(), user.user.keys.end(), [&](const acl::KeyPattern& p) {
    if (!p.read || p.glob.empty() || p.glob.back() != '*') return false;
    std::string_view prefix = std::string_view(p.glob).substr(0, p.glob.size() - 1);
    if (prefix.find_first_of("*?[\\") != std::string_view::npos) return false;
    return pattern.starts_with(prefix);
  });
}

std::string KeyPatternRefusal(CommandExecutor& executor, const ClientState& client,
                              const AclUser& user, std::string_view command) {
  executor.acl().denied_keys.fetch_add(1, std::memory_order_relaxed);
  Record(executor, client, user.user.name, "key", "toplevel", std::string(command));
  return "NOPERM this user has no permissions to access one of the keys used as arguments";
}

void LogAuthFailure(CommandExecutor& executor, const ClientState& client,
                    std::string_view username) {
  Record(executor, client, username, "auth", "toplevel", "AUTH");
}

}  // namespace skydb::resp
