// Internal to the command layer: the table of supported commands and the helpers their
// handlers share (argument parsing with Redis's error texts, store-error mapping).
// Thread-safety: the table is immutable after static initialisation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resp/commands.h"
#include "resp/encoder.h"
#include "skydb/result.h"

namespace skydb::resp {

// Everything one handler invocation needs.
struct CommandContext {
  CommandExecutor& executor;
  ClientState& client;
  std::vector<std::string>& args;
  ReplyFn& reply;

  SessionStore& store() { return executor.store(); }
  void Reply(std::string bytes) { reply(std::move(bytes)); }
  void ReplyError(std::string_view text);
};

using CommandHandler = void (*)(CommandContext& ctx);

struct CommandSpec {
  const char* name;  // lower case, as Redis names it in errors
  int arity;         // Redis convention: n exact, -n at least n (the name counts)
  CommandHandler handler;
  bool needs_auth;  // false: allowed before AUTH when a password is set
  bool write;       // for COMMAND's flags
  int first_key;    // for COMMAND: key positions (0: no keys)
  int last_key;
  int key_step;
};

// Lookup by lower-case name; nullptr when unknown.
const CommandSpec* FindCommand(std::string_view lower_name);
const std::vector<CommandSpec>& AllCommands();

// Handlers, grouped by file.
void CmdPing(CommandContext& ctx);
void CmdEcho(CommandContext& ctx);
void CmdAuth(CommandContext& ctx);
void CmdHello(CommandContext& ctx);
void CmdClient(CommandContext& ctx);
void CmdSelect(CommandContext& ctx);
void CmdQuit(CommandContext& ctx);
void CmdCommand(CommandContext& ctx);
void CmdGet(CommandContext& ctx);
void CmdSet(CommandContext& ctx);
void CmdSetEx(CommandContext& ctx);
void CmdPSetEx(CommandContext& ctx);
void CmdGetEx(CommandContext& ctx);
void CmdGetDel(CommandContext& ctx);
void CmdMGet(CommandContext& ctx);
void CmdDel(CommandContext& ctx);
void CmdExists(CommandContext& ctx);
void CmdExpire(CommandContext& ctx);
void CmdPExpire(CommandContext& ctx);
void CmdExpireAt(CommandContext& ctx);
void CmdPExpireAt(CommandContext& ctx);
void CmdTtl(CommandContext& ctx);
void CmdPTtl(CommandContext& ctx);
void CmdPersist(CommandContext& ctx);
void CmdDbSize(CommandContext& ctx);
void CmdScan(CommandContext& ctx);
void CmdInfo(CommandContext& ctx);
void CmdConfig(CommandContext& ctx);

// Shared argument helpers.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
bool ParseInt64(std::string_view text, int64_t* out);  // Redis's string2ll rules
std::string WrongArity(std::string_view name);         // "ERR wrong number of arguments ..."
std::string StoreErrorText(const Error& error);        // "ERR <message>" (or "OOM ...")
std::string InvalidExpire(std::string_view command);   // "ERR invalid expire time in '...' ..."

inline constexpr std::string_view kNotInteger = "ERR value is not an integer or out of range";
inline constexpr std::string_view kSyntaxError = "ERR syntax error";

// The expiry option of SET/GETEX ("EX 10"): converts to an absolute deadline the way Redis
// does, rejecting non-positive and overflowing values. nullopt: an error was replied.
enum class ExpireUnit { kSeconds, kMillis, kUnixSeconds, kUnixMillis };
std::optional<UnixMillis> ParseSetExpire(CommandContext& ctx, std::string_view value,
                                         ExpireUnit unit, std::string_view command);
// The same rules without replying: nullopt and `error` set to the reply's text.
std::optional<UnixMillis> SetExpireDeadline(std::string_view value, ExpireUnit unit,
                                            std::string_view command, UnixMillis now,
                                            std::string* error);
std::optional<ExpireUnit> ExpireUnitFromOption(std::string_view option);

}  // namespace skydb::resp

namespace skydb::resp {

// A store callback that replies with encode(value), or with the store's error.
template <typename T, typename Encode>
StoreCallback<T> ReplyWith(CommandContext& ctx, Encode encode) {
  return [reply = std::move(ctx.reply), encode = std::move(encode)](Result<T> result) {
    if (!result.ok()) return reply(ErrorReply(StoreErrorText(result.error())));
    reply(encode(result.value()));
  };
}

}  // namespace skydb::resp
