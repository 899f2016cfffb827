// ACL users of the session store: Redis 7's rules for what matters here (issue 45: one daemon,
// several apps, each walled off), the categories of skydb's commands, and the check a command
// passes before it runs. This part knows users and rules only: who stores them and when they
// are consulted is the server's business.
//
// Rules (ACL SETUSER name rule...), applied in order: `on`/`off`; `>pass` / `<pass` add or remove
// a password, `#hex` / `!hex` the same by SHA-256, `nopass`, `resetpass`; `~pattern` (read and
// write), `%R~pattern`, `%W~pattern`, `allkeys`, `resetkeys`; `&pattern`, `allchannels`,
// `resetchannels`; `+command`, `-command`, `+@category`, `-@category`, `allcommands`,
// `nocommands`; `reset`. Passwords are kept as SHA-256, never in clear.
//
// Thread-safety: values; share them read-only or copy them.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "skydb/result.h"

namespace skydb::resp::acl {

// Redis's categories of skydb's commands (`ACL CAT`), in Redis's order.
const std::vector<std::string_view>& CategoryNames();
// The commands of `category` (without the @), sorted; nullopt for a category Redis does not have.
std::optional<std::vector<std::string_view>> CommandsIn(std::string_view category);
// The categories of command `name` (lower case); empty for a command skydb does not have.
std::vector<std::string_view> CategoriesOf(std::string_view name);

struct KeyPattern {
  std::string glob;
  bool read = true;
  bool write = true;
  bool operator==(const KeyPattern&) const = default;
};

struct User {
  std::string name;
  bool enabled = false;
  bool nopass = false;
  std::set<std::string> password_hashes;  // lowercase hex SHA-256
  std::vector<KeyPattern> keys;
  std::vector<std::string> channels;
  std::set<std::string> commands;  // the commands it may run (lower case)
  // The command rules as given since the last reset of them, for Describe.
  std::vector<std::string> command_rules;
};

// A new user as ACL SETUSER makes it: off, no password, no keys, no channels, no commands.
User NewUser(std::string name);
// `user` with `rules` applied in order; Redis's error (without "ERR ") when one is not valid,
// and then none is applied.
Result<User> ApplyRules(User user, const std::vector<std::string>& rules);
// ACL LIST's line: "user NAME on|off [nopass] [#HASH...] [~PATTERN...] [resetchannels]
// [&PATTERN...] RULES".
std::string Describe(const User& user);
// Whether `password` opens `user` (enabled, and nopass or a matching hash).
bool Opens(const User& user, std::string_view password);
std::string PasswordHash(std::string_view password);

// What a check refused. kNone: allowed.
enum class Denied { kNone, kCommand, kKey, kChannel };
// Whether `user` may run command `name` (lower case) reading `read_keys`, writing
// `write_keys`, and publishing or subscribing to `channels` (patterns for PSUBSCRIBE must equal
// one of the user's patterns, as in Redis).
Denied Check(const User& user, std::string_view name, const std::vector<std::string>& read_keys,
             const std::vector<std::string>& write_keys, const std::vector<std::string>& channels,
             bool channel_patterns = false);

}  // namespace skydb::resp::acl
