// ACL users: Redis 7's rules, the categories of skydb's commands and the permission check.
#include "resp/acl.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <map>

#include "base/strings.h"
#include "skydb/store.h"  // GlobMatch

namespace skydb::resp::acl {
namespace {

// Redis 7's categories of each command skydb has (its commands' acl_categories).
const std::map<std::string_view, std::vector<std::string_view>>& Table() {
  using V = std::vector<std::string_view>;
  static const auto* table = new std::map<std::string_view, V>{
      {"acl", V{"admin", "slow", "dangerous"}},  // WHOAMI, CAT, GENPASS: anyone's
      {"append", V{"write", "string", "fast"}},
      {"auth", V{"fast", "connection"}},
      {"client", V{"slow", "connection"}},
      {"command", V{"slow", "connection"}},
      {"config", V{"admin", "slow", "dangerous"}},
      {"dbsize", V{"keyspace", "read", "fast"}},
      {"decr", V{"write", "string", "fast"}},
      {"decrby", V{"write", "string", "fast"}},
      {"del", V{"keyspace", "write", "slow"}},
      {"discard", V{"fast", "transaction"}},
      {"echo", V{"fast", "connection"}},
      {"eval", V{"slow", "scripting"}},
      {"eval_ro", V{"slow", "scripting"}},
      {"evalsha", V{"slow", "scripting"}},
      {"evalsha_ro", V{"slow", "scripting"}},
      {"exec", V{"slow", "transaction"}},
      {"exists", V{"keyspace", "read", "fast"}},
      {"expire", V{"keyspace", "write", "fast"}},
      {"expireat", V{"keyspace", "write", "fast"}},
      {"flushall", V{"keyspace", "write", "slow", "dangerous"}},
      {"flushdb", V{"keyspace", "write", "slow", "dangerous"}},
      {"get", V{"read", "string", "fast"}},
      {"getdel", V{"write", "string", "fast"}},
      {"getex", V{"write", "string", "fast"}},
      {"hdel", V{"write", "hash", "fast"}},
      {"hello", V{"fast", "connection"}},
      {"hexists", V{"read", "hash", "fast"}},
      {"hexpire", V{"write", "hash", "fast"}},
      {"hexpireat", V{"write", "hash", "fast"}},
      {"hget", V{"read", "hash", "fast"}},
      {"hgetall", V{"read", "hash", "slow"}},
      {"hgetdel", V{"write", "hash", "fast"}},
      {"hgetex", V{"write", "hash", "fast"}},
      {"hincrby", V{"write", "hash", "fast"}},
      {"hincrbyfloat", V{"write", "hash", "fast"}},
      {"hkeys", V{"read", "hash", "slow"}},
      {"hlen", V{"read", "hash", "fast"}},
      {"hmget", V{"read", "hash", "fast"}},
      {"hmset", V{"write", "hash", "fast"}},
      {"hpersist", V{"write", "hash", "fast"}},
      {"hpexpire", V{"write", "hash", "fast"}},
      {"hpexpireat", V{"write", "hash", "fast"}},
      {"hpttl", V{"read", "hash", "fast"}},
      {"hrandfield", V{"read", "hash", "slow"}},
      {"hscan", V{"read", "hash", "slow"}},
      {"hset", V{"write", "hash", "fast"}},
      {"hsetex", V{"write", "hash", "fast"}},
      {"hsetnx", V{"write", "hash", "fast"}},
      {"hstrlen", V{"read", "hash", "fast"}},
      {"httl", V{"read", "hash", "fast"}},
      {"hvals", V{"read", "hash", "slow"}},
      {"incr", V{"write", "string", "fast"}},
      {"incrby", V{"write", "string", "fast"}},
      {"incrbyfloat", V{"write", "string", "fast"}},
      {"info", V{"slow", "dangerous"}},
      {"keys", V{"keyspace", "read", "slow", "dangerous"}},
      {"latency", V{"admin", "slow", "dangerous"}},
      {"memory", V{"read", "slow"}},
      {"mget", V{"read", "string", "fast"}},
      {"mset", V{"write", "string", "slow"}},
      {"multi", V{"fast", "transaction"}},
      {"object", V{"keyspace", "read", "slow"}},
      {"persist", V{"keyspace", "write", "fast"}},
      {"pexpire", V{"keyspace", "write", "fast"}},
      {"pexpireat", V{"keyspace", "write", "fast"}},
      {"ping", V{"fast", "connection"}},
      {"psetex", V{"write", "string", "slow"}},
      {"psubscribe", V{"pubsub", "slow"}},
      {"pttl", V{"keyspace", "read", "fast"}},
      {"publish", V{"pubsub", "fast"}},
      {"pubsub", V{"pubsub", "slow"}},
      {"punsubscribe", V{"pubsub", "slow"}},
      {"quit", V{"fast", "connection"}},
      {"rename", V{"keyspace", "write", "slow"}},
      {"renamenx", V{"keyspace", "write", "fast"}},
      {"sadd", V{"write", "set", "fast"}},
      {"scan", V{"keyspace", "read", "slow"}},
      {"scard", V{"read", "set", "fast"}},
      {"script", V{"slow", "scripting"}},
      {"sdiff", V{"read", "set", "slow"}},
      {"sdiffstore", V{"write", "set", "slow"}},
      {"select", V{"fast", "connection"}},
      {"set", V{"write", "string", "slow"}},
      {"setex", V{"write", "string", "slow"}},
      {"setnx", V{"write", "string", "fast"}},
      {"sinter", V{"read", "set", "slow"}},
      {"sintercard", V{"read", "set", "slow"}},
      {"sinterstore", V{"write", "set", "slow"}},
      {"sismember", V{"read", "set", "fast"}},
      {"slowlog", V{"admin", "slow", "dangerous"}},
      {"smembers", V{"read", "set", "slow"}},
      {"smismember", V{"read", "set", "fast"}},
      {"smove", V{"write", "set", "fast"}},
      {"spop", V{"write", "set", "fast"}},
      {"srandmember", V{"read", "set", "slow"}},
      {"srem", V{"write", "set", "fast"}},
      {"sscan", V{"read", "set", "slow"}},
      {"subscribe", V{"pubsub", "slow"}},
      {"sunion", V{"read", "set", "slow"}},
      {"sunionstore", V{"write", "set", "slow"}},
      {"ttl", V{"keyspace", "read", "fast"}},
      {"type", V{"keyspace", "read", "fast"}},
      {"unlink", V{"keyspace", "write", "fast"}},
      {"unsubscribe", V{"pubsub", "slow"}},
      {"unwatch", V{"fast", "transaction"}},
      {"watch", V{"fast", "transaction"}},
  };
  return *table;
}

bool IsHexHash(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string Modifier(std::string_view rule, std::string_view why) {
  return "Error in ACL SETUSER modifier '" + std::string(rule) + "': " + std::string(why);
}

constexpr std::string_view kUnknownName = "Unknown command or category name in ACL";

// One command rule (+x, -x, +@x, -@x): the commands it names, or nullopt if none.
std::optional<std::vector<std::string_view>> RuleCommands(std::string_view name) {
  if (name.starts_with("@")) return CommandsIn(name.substr(1));
  const auto& table = Table();
  std::string lower = ToLower(name);
  auto it = table.find(lower);
  if (it == table.end()) return std::nullopt;
  return std::vector<std::string_view>{it->first};
}

Status ApplyRule(User& u, const std::string& rule) {
  std::string lower = ToLower(rule);
  if (lower == "on") {
    u.enabled = true;
  } else if (lower == "off") {
    u.enabled = false;
  } else if (lower == "nopass") {
    u.nopass = true;
    u.password_hashes.clear();
  } else if (lower == "resetpass") {
    u.nopass = false;
    u.password_hashes.clear();
  } else if (rule.starts_with(">")) {
    u.password_hashes.insert(PasswordHash(std::string_view(rule).substr(1)));
    u.nopass = false;
  } else if (rule.starts_with("<")) {
    if (u.password_hashes.erase(PasswordHash(std::string_view(rule).substr(1))) == 0) {
      return Error::InvalidArgument(
          Modifier(rule, "The password you are trying to remove from the user does not exist"));
    }
  } else if (rule.starts_with("#") || rule.starts_with("!")) {
    std::string_view hash = std::string_view(rule).substr(1);
    if (!IsHexHash(hash)) {
      return Error::InvalidArgument(
          Modifier(rule,
                   "The password hash must be exactly 64 characters and contain only "
                   "lowercase hexadecimal characters"));
    }
    if (rule[0] == '#') {
      u.password_hashes.insert(std::string(hash));
      u.nopass = false;
    } else if (u.password_hashes.erase(std::string(hash)) == 0) {
      return Error::InvalidArgument(
          Modifier(rule, "The password you are trying to remove from the user does not exist"));
    }
  } else if (lower == "allkeys" || rule == "~*") {
    u.keys = {KeyPattern{"*", true, true}};
  } else if (lower == "resetkeys") {
    u.keys.clear();
  } else if (rule.starts_with("~")) {
    u.keys.push_back(KeyPattern{rule.substr(1), true, true});
  } else if (rule.starts_with("%")) {
    size_t tilde = rule.find('~');
    std::string flags = tilde == std::string::npos ? "" : ToLower(rule.substr(1, tilde - 1));
    bool ok = !flags.empty() && flags.find_first_not_of("rw") == std::string::npos;
    if (!ok) return Error::InvalidArgument(Modifier(rule, "Syntax error"));
    u.keys.push_back(KeyPattern{rule.substr(tilde + 1), flags.find('r') != std::string::npos,
                                flags.find('w') != std::string::npos});
  } else if (lower == "allchannels" || rule == "&*") {
    u.channels = {"*"};
  } else if (lower == "resetchannels") {
    u.channels.clear();
  } else if (rule.starts_with("&")) {
    u.channels.push_back(rule.substr(1));
  } else if (lower == "allcommands" || lower == "nocommands" || rule.starts_with("+") ||
             rule.starts_with("-")) {
    bool add = lower == "allcommands" || rule.starts_with("+");
    std::string name = lower == "allcommands" || lower == "nocommands" ? "@all" : rule.substr(1);
    if (name.find('|') != std::string::npos) {
      return Error::InvalidArgument(Modifier(rule, "skydb allows or denies whole commands only"));
    }
    auto commands = RuleCommands(name);
    if (!commands) return Error::InvalidArgument(Modifier(rule, kUnknownName));
    for (std::string_view c : *commands) {
      if (add) {
        u.commands.insert(std::string(c));
      } else {
        u.commands.erase(std::string(c));
      }
    }
    if (name == "@all") u.command_rules.clear();
    u.command_rules.push_back((add ? "+" : "-") + ToLower(name));
  } else if (lower == "reset") {
    u = NewUser(u.name);
  } else {
    return Error::InvalidArgument(Modifier(rule, "Syntax error"));
  }
  return Ok();
}

}  // namespace

const std::vector<std::string_view>& CategoryNames() {
  static const auto* names = new std::vector<std::string_view>{
      "keyspace", "read",   "write",       "set",       "sortedset",  "list",        "hash",
      "string",   "bitmap", "hyperloglog", "geo",       "stream",     "pubsub",      "admin",
      "fast",     "slow",   "blocking",    "dangerous", "connection", "transaction", "scripting"};
  return *names;
}

std::optional<std::vector<std::string_view>> CommandsIn(std::string_view category) {
  std::string lower = ToLower(category);
  std::vector<std::string_view> out;
  if (lower == "all") {
    for (const auto& [name, categories] : Table()) out.push_back(name);
    return out;
  }
  const auto& names = CategoryNames();
  if (std::find(names.begin(), names.end(), lower) == names.end()) return std::nullopt;
  for (const auto& [name, categories] : Table()) {
    if (std::find(categories.begin(), categories.end(), lower) != categories.end()) {
      out.push_back(name);
    }
  }
  return out;
}

std::vector<std::string_view> CategoriesOf(std::string_view name) {
  auto it = Table().find(name);
  return it == Table().end() ? std::vector<std::string_view>{} : it->second;
}

User NewUser(std::string name) {
  User u;
  u.name = std::move(name);
  return u;
}

Result<User> ApplyRules(User user, const std::vector<std::string>& rules) {
  for (const auto& rule : rules) {
    if (rule.empty()) return Error::InvalidArgument(Modifier(rule, "Syntax error"));
    SKYDB_RETURN_IF_ERROR(ApplyRule(user, rule));
  }
  return user;
}

std::string Describe(const User& u) {
  std::string out = "user " + u.name + (u.enabled ? " on" : " off");
  if (u.nopass) out += " nopass";
  for (const auto& hash : u.password_hashes) out += " #" + hash;
  for (const auto& k : u.keys) {
    out += k.read && k.write ? " ~" : k.read ? " %R~" : " %W~";
    out += k.glob;
  }
  out += " resetchannels";
  for (const auto& c : u.channels) out += " &" + c;
  if (u.command_rules.empty() || u.command_rules.front() != "+@all") out += " -@all";
  for (const auto& r : u.command_rules) {
    if (r != "-@all") out += " " + r;
  }
  return out;
}

std::string PasswordHash(std::string_view password) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(password.data(), password.size(), digest.data(), &length, EVP_sha256(), nullptr) !=
      1) {
    return std::string();  // allocation failure: matches nothing
  }
  return HexOf(std::string_view(reinterpret_cast<const char*>(digest.data()), length));
}

bool Opens(const User& user, std::string_view password) {
  if (!user.enabled) return false;
  if (user.nopass) return true;
  std::string hash = PasswordHash(password);
  return !hash.empty() && user.password_hashes.count(hash) > 0;
}

Denied Check(const User& user, std::string_view name, const std::vector<std::string>& read_keys,
             const std::vector<std::string>& write_keys, const std::vector<std::string>& channels,
             bool channel_patterns) {
  if (user.commands.count(std::string(name)) == 0) return Denied::kCommand;
  auto key_allowed = [&](const std::string& key, bool write) {
    return std::any_of(user.keys.begin(), user.keys.end(), [&](const KeyPattern& p) {
      return (write ? p.write : p.read) && GlobMatch(p.glob, key);
    });
  };
  for (const auto& key : read_keys) {
    if (!key_allowed(key, false)) return Denied::kKey;
  }
  for (const auto& key : write_keys) {
    if (!key_allowed(key, true)) return Denied::kKey;
  }
  for (const auto& channel : channels) {
    bool allowed = std::any_of(user.channels.begin(), user.channels.end(), [&](const auto& p) {
      return p == "*" || (channel_patterns ? p == channel : GlobMatch(p, channel));
    });
    if (!allowed) return Denied::kChannel;
  }
  return Denied::kNone;
}

}  // namespace skydb::resp::acl
