// The ACL check of one command: which keys it reads and writes and which channels it uses (as
// Redis's key specs say), whether the client's user may, and what a denial answers, counts and
// logs (the peer and the command, never a key: session keys are credentials).
// Thread-safety: called on the client's loop thread (or a script's) with that client's state.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resp/acl_users.h"
#include "resp/command_table.h"

namespace skydb::resp {

struct AclAccess {
  std::vector<std::string> read;   // keys whose value the command reads
  std::vector<std::string> write;  // keys it writes or deletes
  std::vector<std::string> channels;
  bool channel_patterns = false;  // PSUBSCRIBE's patterns: each must be one of the user's
  bool every_key = false;         // FLUSHALL / FLUSHDB: allowed only with every key
};
AclAccess AccessOf(const CommandSpec& spec, const std::vector<std::string>& args);

// The client's user as it is now (re-read when any user changed); null once it was deleted.
const AclUser* ClientUser(CommandExecutor& executor, ClientState& client);

// nullopt when `user` may run `args`; else the NOPERM reply's text, the denial counted, logged
// and put in ACL LOG (`context`: "toplevel", "multi" or "lua"), unless `dry_run`.
std::optional<std::string> AclRefusal(CommandExecutor& executor, const ClientState& client,
                                      const AclUser& user, const CommandSpec& spec,
                                      const std::vector<std::string>& args,
                                      std::string_view context, bool dry_run = false);

// Whether `user` may read `key` (what KEYS and SCAN show a user without every key).
bool MayRead(const AclUser& user, std::string_view key);
// Whether every key `pattern` names is readable by `user`, as far as a pattern taken literally
// is matched by one of the user's (KEYS and SCAN refuse a pattern that is not, with NOPERM).
bool PatternWithin(const AclUser& user, std::string_view pattern);
// The NOPERM of a KEYS or SCAN pattern outside the user's keys; counted and logged.
std::string KeyPatternRefusal(CommandExecutor& executor, const ClientState& client,
                              const AclUser& user, std::string_view command);

// A failed AUTH or HELLO AUTH, in ACL LOG (reason "auth", the user it named).
void LogAuthFailure(CommandExecutor& executor, const ClientState& client,
                    std::string_view username);

}  // namespace skydb::resp
