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
  SessionStore* recording = nullptr;  // EXEC: where the queued commands' store operations go

  SessionStore& store() { return recording != nullptr ? *recording : executor.store(); }
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
void CmdAcl(CommandContext& ctx);
void CmdHello(CommandContext& ctx);
void CmdClient(CommandContext& ctx);
void CmdSelect(CommandContext& ctx);
void CmdQuit(CommandContext& ctx);
void CmdCommand(CommandContext& ctx);
void CmdGet(CommandContext& ctx);
void CmdSet(CommandContext& ctx);
void CmdSetNx(CommandContext& ctx);
void CmdIncr(CommandContext& ctx);
void CmdIncrBy(CommandContext& ctx);
void CmdDecr(CommandContext& ctx);
void CmdDecrBy(CommandContext& ctx);
void CmdIncrByFloat(CommandContext& ctx);
void CmdAppend(CommandContext& ctx);
void CmdType(CommandContext& ctx);
void CmdKeys(CommandContext& ctx);
void CmdFlush(CommandContext& ctx);
void CmdLatency(CommandContext& ctx);
void CmdSlowlog(CommandContext& ctx);
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
void CmdMulti(CommandContext& ctx);
void CmdExec(CommandContext& ctx);
void CmdDiscard(CommandContext& ctx);
void CmdWatch(CommandContext& ctx);
void CmdUnwatch(CommandContext& ctx);
void CmdMSet(CommandContext& ctx);
void CmdEval(CommandContext& ctx);
void CmdEvalSha(CommandContext& ctx);
void CmdEvalRo(CommandContext& ctx);
void CmdEvalShaRo(CommandContext& ctx);
void CmdScript(CommandContext& ctx);
// While a script has run past its busy threshold, every command but these answers BUSY (Redis's
// rule): the refusal, or nullopt.
std::optional<std::string> BusyRefusal(CommandExecutor& executor, const CommandSpec& spec,
                                       const std::vector<std::string>& args);
bool ArityOk(const CommandSpec& spec, size_t argc);
// INFO memory: the scripts the daemon caches, and their bytes.
size_t CachedScripts(CommandExecutor& executor);
size_t CachedScriptBytes(CommandExecutor& executor);
// Inside MULTI: queues `args` (already checked) and answers QUEUED, or refuses a transaction
// grown past its bounds.
void QueueInMulti(ClientState& client, std::vector<std::string> args, const ReplyFn& reply);
// A command whose "keymiss" or "new" events are wanted: runs it as a transaction of its own,
// after an EXISTS of each of `probed` (KeyProbe), and publishes its events with its reply.
void RunProbed(CommandContext& ctx, const CommandSpec& spec, std::vector<std::string> probed);
void CmdSubscribe(CommandContext& ctx);
void CmdUnsubscribe(CommandContext& ctx);
void CmdPSubscribe(CommandContext& ctx);
void CmdPUnsubscribe(CommandContext& ctx);
void CmdPublish(CommandContext& ctx);
void CmdPubSub(CommandContext& ctx);
void ClientList(CommandContext& ctx);  // CLIENT subcommands of resp/cmd_client.cc
void ClientInfoCommand(CommandContext& ctx);
void ClientKill(CommandContext& ctx);
void ClientReply(CommandContext& ctx);  // CLIENT REPLY, resp/cmd_connection.cc

// A RESP2 client with subscriptions may run only these (Redis 7's rule), else it gets
// SubscribedModeError: Redis's text, naming the command as Redis does ('client|list').
bool AllowedWhileSubscribed(std::string_view lower_name);
std::string SubscribedModeError(const std::vector<std::string>& args);

// Hash and set commands (cmd_collections.cc, cmd_hash_deadlines.cc).
void CmdHSet(CommandContext& ctx);
void CmdHSetNx(CommandContext& ctx);
void CmdHashFields(CommandContext& ctx);
void CmdCollectionKey(CommandContext& ctx);
void CmdHIncrBy(CommandContext& ctx);
void CmdHIncrByFloat(CommandContext& ctx);
void CmdHScan(CommandContext& ctx);
void CmdSScan(CommandContext& ctx);
void CmdHRandField(CommandContext& ctx);
void CmdSAddRem(CommandContext& ctx);
void CmdSIsMember(CommandContext& ctx);
void CmdSPop(CommandContext& ctx);
void CmdSMove(CommandContext& ctx);
void CmdSetAlgebra(CommandContext& ctx);
void CmdSInterCard(CommandContext& ctx);
void CmdHExpire(CommandContext& ctx);
void CmdHPExpire(CommandContext& ctx);
void CmdHExpireAt(CommandContext& ctx);
void CmdHPExpireAt(CommandContext& ctx);
void CmdHFieldsOnly(CommandContext& ctx);
void CmdHGetEx(CommandContext& ctx);
void CmdHSetEx(CommandContext& ctx);
void CmdObject(CommandContext& ctx);
void CmdMemory(CommandContext& ctx);
void CmdRename(CommandContext& ctx);
void CmdRenameNx(CommandContext& ctx);
// Sends `op` to the store and replies its StoreReply (or +OK, for HMSET).
void SubmitCollection(CommandContext& ctx, CollectionOp op, bool ok_reply = false);
// "FIELDS numfields field [value] ..." from args[at] to the end into `op`; false when it
// replied Redis's error.
bool FieldsClause(CommandContext& ctx, size_t at, bool values, CollectionOp* op);

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
// A SCAN cursor as Redis reads one (strtoul's rules, nothing after the digits).
bool ParseScanCursor(const std::string& text, uint64_t* cursor);

}  // namespace skydb::resp

namespace skydb::resp {

// How many bytes the reply to a store result may take, claimed before it is built: the values
// it carries plus framing. 0: small whatever the result, counted when handed over.
inline size_t ReplyBytesFor(const std::optional<std::string>& value) {
  return value ? BulkReplySize(value->size()) : 0;
}
inline size_t ReplyBytesFor(const SetReply& reply) { return ReplyBytesFor(reply.old_value); }
inline size_t ReplyBytesFor(const ScanReply& reply) {
  size_t bytes = 64;
  for (const auto& key : reply.keys) bytes += BulkReplySize(key.size());
  return bytes;
}
template <typename T>
size_t ReplyBytesFor(const T&) {
  return 0;  // integers, TTLs, booleans
}

// Claims `bytes` of the connection's reply budget, or sets `refusal` to the error to send
// instead: a reply that alone exceeds the connection's limit gets an error naming it; a
// connection over its budget gets a short error and is closed when it arrives.
inline std::optional<ReplyClaim> ClaimWithin(const ReplyFn& reply, size_t bytes,
                                             std::string* refusal) {
  if (bytes > reply.limit()) {
    *refusal = ErrorReply(ReplyTooLarge(reply.limit(), ""));
    return std::nullopt;
  }
  auto claim = reply.Claim(bytes);
  if (!claim) *refusal = ErrorReply(kReplyDropped);
  return claim;
}

// Replies `encode(result)` if the budget holds `bytes` more (ClaimWithin); otherwise builds
// nothing and replies the refusal.
template <typename T, typename Encode>
void ReplyWithin(const ReplyFn& reply, size_t bytes, const T& value, const Encode& encode) {
  if (bytes == 0) return reply(encode(value));
  std::string refusal;
  auto claim = ClaimWithin(reply, bytes, &refusal);
  if (!claim) return reply(std::move(refusal));
  reply(encode(value), std::move(*claim));
}

// A store callback that replies with encode(value), or with the store's error. The reply's
// size is claimed from the connection's budget first (ReplyBytesFor) unless `small`: the
// encoder never carries the value (GETEX's refusal of an existing key).
template <typename T, typename Encode>
StoreCallback<T> ReplyWith(CommandContext& ctx, Encode encode, bool small = false) {
  return [reply = std::move(ctx.reply), encode = std::move(encode), small](Result<T> result) {
    if (!result.ok()) return reply(ErrorReply(StoreErrorText(result.error())));
    ReplyWithin(reply, small ? 0 : ReplyBytesFor(result.value()), result.value(), encode);
  };
}

}  // namespace skydb::resp
