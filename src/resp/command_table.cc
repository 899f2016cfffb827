// The command table, dispatch (lookup, arity, authentication) and the COMMAND command.
#include "resp/command_table.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "base/strings.h"
#include "resp/acl_check.h"
#include "resp/encoder.h"

namespace skydb::resp {
namespace {

// name, arity, handler, needs_auth, write, first_key, last_key, key_step
const std::vector<CommandSpec> kCommands = {
    {"acl", -2, CmdAcl, true, false, 0, 0, 0},  // resp/cmd_acl.cc
    {"append", 3, CmdAppend, true, true, 1, 1, 1},
    {"auth", -2, CmdAuth, false, false, 0, 0, 0},
    {"client", -2, CmdClient, true, false, 0, 0, 0},
    {"command", -1, CmdCommand, true, false, 0, 0, 0},
    {"config", -2, CmdConfig, true, false, 0, 0, 0},  // resp/cmd_config.cc
    {"dbsize", 1, CmdDbSize, true, false, 0, 0, 0},
    {"decr", 2, CmdDecr, true, true, 1, 1, 1},
    {"decrby", 3, CmdDecrBy, true, true, 1, 1, 1},
    {"del", -2, CmdDel, true, true, 1, -1, 1},
    {"discard", 1, CmdDiscard, true, false, 0, 0, 0},
    {"echo", 2, CmdEcho, true, false, 0, 0, 0},
    {"eval", -3, CmdEval, true, true, 3, 3, 1},
    {"evalsha", -3, CmdEvalSha, true, true, 3, 3, 1},
    {"eval_ro", -3, CmdEvalRo, true, false, 3, 3, 1},
    {"evalsha_ro", -3, CmdEvalShaRo, true, false, 3, 3, 1},
    {"script", -2, CmdScript, true, false, 0, 0, 0},
    {"exec", 1, CmdExec, true, false, 0, 0, 0},
    {"exists", -2, CmdExists, true, false, 1, -1, 1},
    {"expire", -3, CmdExpire, true, true, 1, 1, 1},
    {"expireat", -3, CmdExpireAt, true, true, 1, 1, 1},
    {"flushall", -1, CmdFlush, true, true, 0, 0, 0},
    {"flushdb", -1, CmdFlush, true, true, 0, 0, 0},
    {"get", 2, CmdGet, true, false, 1, 1, 1},
    {"getdel", 2, CmdGetDel, true, true, 1, 1, 1},
    {"getex", -2, CmdGetEx, true, true, 1, 1, 1},
    {"hdel", -3, CmdHashFields, true, true, 1, 1, 1},
    {"hello", -1, CmdHello, false, false, 0, 0, 0},
    {"hexists", 3, CmdHashFields, true, false, 1, 1, 1},
    {"hexpire", -6, CmdHExpire, true, true, 1, 1, 1},
    {"hexpireat", -6, CmdHExpireAt, true, true, 1, 1, 1},
    {"hget", 3, CmdHashFields, true, false, 1, 1, 1},
    {"hgetall", 2, CmdCollectionKey, true, false, 1, 1, 1},
    {"hgetdel", -5, CmdHFieldsOnly, true, true, 1, 1, 1},
    {"hgetex", -5, CmdHGetEx, true, true, 1, 1, 1},
    {"hincrby", 4, CmdHIncrBy, true, true, 1, 1, 1},
    {"hincrbyfloat", 4, CmdHIncrByFloat, true, true, 1, 1, 1},
    {"hkeys", 2, CmdCollectionKey, true, false, 1, 1, 1},
    {"hlen", 2, CmdCollectionKey, true, false, 1, 1, 1},
    {"hmget", -3, CmdHashFields, true, false, 1, 1, 1},
    {"hmset", -4, CmdHSet, true, true, 1, 1, 1},
    {"hpersist", -5, CmdHFieldsOnly, true, true, 1, 1, 1},
    {"hpexpire", -6, CmdHPExpire, true, true, 1, 1, 1},
    {"hpexpireat", -6, CmdHPExpireAt, true, true, 1, 1, 1},
    {"hpttl", -5, CmdHFieldsOnly, true, false, 1, 1, 1},
    {"hrandfield", -2, CmdHRandField, true, false, 1, 1, 1},
    {"hscan", -3, CmdHScan, true, false, 1, 1, 1},
    {"hset", -4, CmdHSet, true, true, 1, 1, 1},
    {"hsetex", -6, CmdHSetEx, true, true, 1, 1, 1},
    {"hsetnx", 4, CmdHSetNx, true, true, 1, 1, 1},
    {"hstrlen", 3, CmdHashFields, true, false, 1, 1, 1},
    {"httl", -5, CmdHFieldsOnly, true, false, 1, 1, 1},
    {"hvals", 2, CmdCollectionKey, true, false, 1, 1, 1},
    {"incr", 2, CmdIncr, true, true, 1, 1, 1},
    {"incrby", 3, CmdIncrBy, true, true, 1, 1, 1},
    {"incrbyfloat", 3, CmdIncrByFloat, true, true, 1, 1, 1},
    {"info", -1, CmdInfo, true, false, 0, 0, 0},
    {"keys", 2, CmdKeys, true, false, 0, 0, 0},
    {"latency", -2, CmdLatency, true, false, 0, 0, 0},
    {"memory", -2, CmdMemory, true, false, 2, 2, 1},
    {"mget", -2, CmdMGet, true, false, 1, -1, 1},
    {"mset", -3, CmdMSet, true, true, 1, -1, 2},
    {"multi", 1, CmdMulti, true, false, 0, 0, 0},
    {"object", -2, CmdObject, true, false, 2, 2, 1},
    {"persist", 2, CmdPersist, true, true, 1, 1, 1},
    {"pexpire", -3, CmdPExpire, true, true, 1, 1, 1},
    {"pexpireat", -3, CmdPExpireAt, true, true, 1, 1, 1},
    {"ping", -1, CmdPing, true, false, 0, 0, 0},
    {"psetex", 4, CmdPSetEx, true, true, 1, 1, 1},
    {"psubscribe", -2, CmdPSubscribe, true, false, 0, 0, 0},
    {"pttl", 2, CmdPTtl, true, false, 1, 1, 1},
    {"publish", 3, CmdPublish, true, false, 0, 0, 0},
    {"pubsub", -2, CmdPubSub, true, false, 0, 0, 0},
    {"punsubscribe", -1, CmdPUnsubscribe, true, false, 0, 0, 0},
    {"quit", -1, CmdQuit, false, false, 0, 0, 0},
    {"rename", 3, CmdRename, true, true, 1, 2, 1},
    {"renamenx", 3, CmdRenameNx, true, true, 1, 2, 1},
    {"sadd", -3, CmdSAddRem, true, true, 1, 1, 1},
    {"scan", -2, CmdScan, true, false, 0, 0, 0},
    {"scard", 2, CmdCollectionKey, true, false, 1, 1, 1},
    {"sdiff", -2, CmdSetAlgebra, true, false, 1, -1, 1},
    {"sdiffstore", -3, CmdSetAlgebra, true, true, 1, -1, 1},
    {"select", 2, CmdSelect, true, false, 0, 0, 0},
    {"set", -3, CmdSet, true, true, 1, 1, 1},
    {"setex", 4, CmdSetEx, true, true, 1, 1, 1},
    {"setnx", 3, CmdSetNx, true, true, 1, 1, 1},
    {"sinter", -2, CmdSetAlgebra, true, false, 1, -1, 1},
    {"sintercard", -3, CmdSInterCard, true, false, 0, 0, 0},
    {"sinterstore", -3, CmdSetAlgebra, true, true, 1, -1, 1},
    {"sismember", 3, CmdSIsMember, true, false, 1, 1, 1},
    {"slowlog", -2, CmdSlowlog, true, false, 0, 0, 0},
    {"smembers", 2, CmdCollectionKey, true, false, 1, 1, 1},
    {"smismember", -3, CmdSIsMember, true, false, 1, 1, 1},
    {"smove", 4, CmdSMove, true, true, 1, 2, 1},
    {"spop", -2, CmdSPop, true, true, 1, 1, 1},
    {"srandmember", -2, CmdSPop, true, false, 1, 1, 1},
    {"srem", -3, CmdSAddRem, true, true, 1, 1, 1},
    {"sscan", -3, CmdSScan, true, false, 1, 1, 1},
    {"subscribe", -2, CmdSubscribe, true, false, 0, 0, 0},
    {"sunion", -2, CmdSetAlgebra, true, false, 1, -1, 1},
    {"sunionstore", -3, CmdSetAlgebra, true, true, 1, -1, 1},
    {"ttl", 2, CmdTtl, true, false, 1, 1, 1},
    {"type", 2, CmdType, true, false, 1, 1, 1},
    {"unlink", -2, CmdDel, true, true, 1, -1, 1},
    {"unsubscribe", -1, CmdUnsubscribe, true, false, 0, 0, 0},
    {"unwatch", 1, CmdUnwatch, true, false, 0, 0, 0},
    {"watch", -2, CmdWatch, true, false, 1, -1, 1},
};

const std::unordered_map<std::string_view, const CommandSpec*>& Index() {
  static const auto* index = [] {
    auto* map = new std::unordered_map<std::string_view, const CommandSpec*>();
    for (const auto& spec : kCommands) (*map)[spec.name] = &spec;
    return map;
  }();
  return *index;
}

// What Redis runs at once inside MULTI instead of queuing.
bool RunsInsideMulti(const CommandSpec& spec) {
  return spec.handler == CmdExec || spec.handler == CmdDiscard || spec.handler == CmdMulti ||
         spec.handler == CmdWatch || spec.handler == CmdQuit;
}

// What CLIENT REPLY OFF / SKIP does not silence: CLIENT REPLY itself (ON replies while replies
// were off) and the (un)subscribe confirmations, which Redis pushes like messages.
bool NeverMuted(const CommandSpec& spec, const std::vector<std::string>& args) {
  if (spec.handler == CmdSubscribe || spec.handler == CmdPSubscribe ||
      spec.handler == CmdUnsubscribe || spec.handler == CmdPUnsubscribe) {
    return true;
  }
  return spec.handler == CmdClient && args.size() > 1 && EqualsIgnoreCase(args[1], "reply");
}

// Redis 7's text: the name and up to ~128 bytes of the arguments, each quoted.
std::string UnknownCommand(const std::vector<std::string>& args) {
  std::string text =
      "ERR unknown command '" + args[0].substr(0, 128) + "', with args beginning with: ";
  for (size_t i = 1; i < args.size() && text.size() < 128 + 60; ++i) {
    text += "'" + args[i].substr(0, 128) + "' ";
  }
  return text;
}

void AppendCommandInfo(std::string& out, const CommandSpec& spec, Proto proto) {
  AppendArrayHeader(out, 10);
  AppendBulk(out, spec.name);
  AppendInteger(out, spec.arity);
  std::vector<std::string> flags;
  flags.emplace_back(spec.write ? "write" : "readonly");
  if (!spec.needs_auth) flags.emplace_back("no_auth");
  AppendSetHeader(out, flags.size(), proto);
  for (const auto& f : flags) AppendSimple(out, f);
  AppendInteger(out, spec.first_key);
  AppendInteger(out, spec.last_key);
  AppendInteger(out, spec.key_step);
  // ACL categories, tips, key specs, subcommands: sets in RESP3, as Redis 7 sends them.
  for (int i = 0; i < 4; ++i) AppendSetHeader(out, 0, proto);
}

}  // namespace

bool ArityOk(const CommandSpec& spec, size_t argc) {
  auto n = static_cast<size_t>(spec.arity < 0 ? -spec.arity : spec.arity);
  return spec.arity < 0 ? argc >= n : argc == n;
}

const CommandSpec* FindCommand(std::string_view lower_name) {
  auto it = Index().find(lower_name);
  return it == Index().end() ? nullptr : it->second;
}

const std::vector<CommandSpec>& AllCommands() { return kCommands; }

CommandExecutor::CommandExecutor(ExecutorConfig config, SessionStore& store, Clock& clock,
                                 const ServerCounters& counters)
    : config_(std::move(config)),
      store_(store),
      clock_(clock),
      counters_(counters),
      started_(clock.Now()),
      scripts_(MakeScriptState(clock)) {
  AclService::Options acl;
  acl.requirepass = config_.requirepass;
  acl.storage = config_.acl_storage;
  acl.file = config_.acl_file;
  acl.files = config_.acl_files;
  if (acl.files == nullptr && !acl.file.empty()) {
    own_files_ = NewRealFileSystem();
    acl.files = own_files_.get();
  }
  acl_ = std::make_unique<AclService>(std::move(acl));
  settings_.set_idle_timeout(config_.idle_timeout);
  notifier_.set_classes(config_.notify_classes);
  store_.SetExpiryListener(notifier_.handle());
}

UnixMillis CommandExecutor::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.WallNow().time_since_epoch())
      .count();
}

void CommandExecutor::ExecuteIn(ClientState& client, std::vector<std::string>& args,
                                ReplyFn reply) {
  std::string name = ToLower(args[0]);
  const CommandSpec* spec = FindCommand(name);
  size_t slot =
      spec == nullptr ? CommandStats::kUnknownSlot : static_cast<size_t>(spec - kCommands.data());
  counters_.commands->CountCall(slot);
  auto start = clock_.Now();
  // A command refused inside MULTI dooms the transaction, as in Redis.
  auto refuse = [&](std::string text) {
    if (client.in_multi) client.multi_refused = true;
    CountingReply(std::move(reply), counters_, slot, clock_, start,
                  /*ran=*/false)(ErrorReply(text));
  };
  if (spec == nullptr) return refuse(UnknownCommand(args));
  if (!ArityOk(*spec, args.size())) return refuse(WrongArity(spec->name));
  const AclUser* user = ClientUser(*this, client);
  if (user == nullptr) {  // deleted since this client authenticated as it: Redis closes it
    client.close_after_reply = true;
    return refuse("ERR the user this connection authenticated as was deleted");
  }
  if (spec->needs_auth && !client.authenticated && !(user->user.enabled && user->user.nopass)) {
    return refuse("NOAUTH Authentication required.");
  }
  if (auto busy = BusyRefusal(*this, *spec, args)) return refuse(std::move(*busy));
  if (client.proto == Proto::kResp2 && client.pubsub.count() > 0 &&
      !AllowedWhileSubscribed(spec->name)) {
    return refuse(SubscribedModeError(args));
  }
  if (!user->full_access) {
    auto denied =
        AclRefusal(*this, client, *user, *spec, args, client.in_multi ? "multi" : "toplevel");
    if (denied) return refuse(std::move(*denied));
  }
  if (client.in_multi && !RunsInsideMulti(*spec)) {
    return QueueInMulti(client, std::move(args),
                        CountingReply(std::move(reply), counters_, slot, clock_, start, false));
  }
  reply = CountingReply(std::move(reply), counters_, slot, clock_, start, /*ran=*/true);
  bool mute = client.replies_off || client.skip_next_reply;
  client.skip_next_reply = false;
  if (mute && !NeverMuted(*spec, args)) reply = std::move(reply).Muted();
  std::vector<std::string> probed;
  if (notifier_.classes() != 0) probed = notifier_.KeysToProbe(name, args);
  if (probed.empty() && notifier_.classes() != 0) {
    reply = notifier_.Watch(std::move(reply), args, name, NowMs());
  }
  CommandContext ctx{*this, client, args, reply};
  if (!probed.empty()) return RunProbed(ctx, *spec, std::move(probed));
  spec->handler(ctx);
}

void CommandExecutor::RunQueued(ClientState& client, std::vector<std::vector<std::string>> commands,
                                SessionStore& store, std::vector<ReplyFn> replies) {
  for (size_t i = 0; i < commands.size(); ++i) {
    const CommandSpec* spec = FindCommand(ToLower(commands[i][0]));
    if (spec == nullptr) {  // checked when queued; kept for safety
      replies[i](ErrorReply(UnknownCommand(commands[i])));
      continue;
    }
    // Allowed when queued; the user may have lost the right since (Redis checks again).
    const AclUser* user = ClientUser(*this, client);
    auto denied = user == nullptr ? std::optional<std::string>("NOPERM the user was deleted")
                  : user->full_access
                      ? std::nullopt
                      : AclRefusal(*this, client, *user, *spec, commands[i], "multi");
    if (denied) {
      replies[i](ErrorReply(
          "NOPERM ACLs rules changed between the moment the transaction was accumulated and the "
          "EXEC call. This command is no longer allowed for the following reason: " +
          denied->substr(std::string_view("NOPERM ").size())));
      continue;
    }
    if (notifier_.classes() != 0) {
      std::shared_ptr<KeyProbe> probe;
      if (auto probed = notifier_.KeysToProbe(spec->name, commands[i]); !probed.empty()) {
        probe = KeyProbe::Start(store, std::move(probed));
      }
      replies[i] = notifier_.Watch(std::move(replies[i]), commands[i], spec->name, NowMs(), probe);
    }
    CommandContext ctx{*this, client, commands[i], replies[i], &store};
    spec->handler(ctx);
  }
}

void CommandExecutor::ClientClosed(ClientState& client) {
  if (client.watch) store_.Unwatch(*client.watch);
}

void CommandContext::ReplyError(std::string_view text) { reply(ErrorReply(text)); }

// COMMAND, COMMAND COUNT, COMMAND LIST, COMMAND INFO name..., COMMAND DOCS [name...].
void CmdCommand(CommandContext& ctx) {
  std::string out;
  if (ctx.args.size() == 1) {
    AppendArrayHeader(out, kCommands.size());
    for (const auto& spec : kCommands) AppendCommandInfo(out, spec, ctx.client.proto);
    return ctx.Reply(std::move(out));
  }
  std::string sub = ToLower(ctx.args[1]);
  if (sub == "count" && ctx.args.size() == 2) return ctx.Reply(Integer(int64_t(kCommands.size())));
  if (sub == "docs") {  // clients only use it for hints
    AppendMapHeader(out, 0, ctx.client.proto);
    return ctx.Reply(std::move(out));
  }
  if (sub == "list" && ctx.args.size() == 2) {
    AppendArrayHeader(out, kCommands.size());
    for (const auto& spec : kCommands) AppendBulk(out, spec.name);
    return ctx.Reply(std::move(out));
  }
  if (sub == "info") {
    AppendArrayHeader(out, ctx.args.size() - 2);
    for (size_t i = 2; i < ctx.args.size(); ++i) {
      const CommandSpec* spec = FindCommand(ToLower(ctx.args[i]));
      if (spec == nullptr) AppendNull(out, ctx.client.proto);
      if (spec != nullptr) AppendCommandInfo(out, *spec, ctx.client.proto);
    }
    return ctx.Reply(std::move(out));
  }
  if (sub == "count" || sub == "list") return ctx.ReplyError(WrongArity("command|" + sub));
  ctx.ReplyError("ERR unknown subcommand '" + ctx.args[1].substr(0, 128) + "'. Try COMMAND HELP.");
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool ParseInt64(std::string_view text, int64_t* out) { return ParseRedisInt64(text, out); }

std::string WrongArity(std::string_view name) {
  return "ERR wrong number of arguments for '" + std::string(name) + "' command";
}

std::string InvalidExpire(std::string_view command) {
  return "ERR invalid expire time in '" + std::string(command) + "' command";
}

std::string StoreErrorText(const Error& error) {
  if (error.message.rfind("OOM ", 0) == 0 || error.message.rfind("WRONGTYPE ", 0) == 0) {
    return error.message;
  }
  return "ERR " + error.message;
}

}  // namespace skydb::resp
