// Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT LOAD|EXISTS|FLUSH|KILL|HELP, with
// Redis's semantics on the engine of src/script.
//
// A script is one store transaction. EVAL hands the store a tx::Script holding the keys it
// declares (numkeys); the store loads them, locks their shards and runs the script there, on
// its own thread, through a ScriptScope. Each redis.call runs the command's own handler against
// an OpForwarder whose ops the scope applies at once, so a command means in a script what it
// means outside, and the script reads its own writes. Every write the script makes joins the
// one unit the store commits: in sync mode the reply is sent once that unit is committed, and a
// crash leaves all of a script's writes or none. A command that touches a key the script did not
// declare is refused (a Lua error for redis.call, an error table for redis.pcall), as Redis
// Cluster requires; commands that are not about keys (SCAN, KEYS, INFO, pub/sub, transactions,
// scripts) are not allowed from scripts.
//
// Time: a script runs on the thread that reached its keys (its client's loop thread, or a reader
// thread after a load), holding its keys' shards. Past script::kBusyThreshold every other command
// answers BUSY until it ends or SCRIPT KILL stops it, which it may do only while the script has
// not written (what it wrote would otherwise be half a transaction). The clients of the script's
// own loop thread wait for it meanwhile, so with one loop thread nobody could send SCRIPT KILL:
// the engine also stops a script that has run script::kReadOnlyTimeLimit without writing.
#include <memory>
#include <string>
#include <utility>

#include "base/strings.h"
#include "resp/acl_check.h"
#include "resp/command_table.h"
#include "resp/encoder.h"
#include "resp/keyspace_events.h"
#include "resp/op_forwarder.h"
#include "script/engine.h"

namespace skydb::resp {

struct ScriptState {
  explicit ScriptState(const Clock& clock) : watchdog(clock) {}
  script::ScriptCache cache;
  script::Watchdog watchdog;
};

std::shared_ptr<ScriptState> MakeScriptState(const Clock& clock) {
  return std::make_shared<ScriptState>(clock);
}

namespace {

constexpr std::string_view kNoScript = "NOSCRIPT No matching script. Please use EVAL.";

// Redis's words for a denial inside a script, after "The user executing the script ".
std::string ScriptDenial(std::string_view refusal) {
  if (refusal.find("to run") != std::string_view::npos) {
    return "can't run this command or subcommand";
  }
  if (refusal.find("keys") != std::string_view::npos) {
    return "can't access at least one of the keys mentioned in the command arguments";
  }
  return "can't publish to the channel mentioned in the command";
}

// What a script may call: the commands about keys, and a few that touch nothing.
bool AllowedInScript(const CommandSpec& spec) {
  std::string_view name = spec.name;
  if (name == "ping" || name == "echo") return true;
  if (spec.first_key <= 0) return false;
  return name != "eval" && name != "evalsha" && name != "eval_ro" && name != "evalsha_ro" &&
         name != "watch";
}

// One EVAL: what the script needs on the store's thread, and its reply once it has run.
class ScriptJob {
 public:
  ScriptJob(CommandExecutor& executor, std::string body, std::string sha, bool read_only,
            bool resp3, size_t reply_limit)
      : executor_(executor),
        body_(std::move(body)),
        sha_(std::move(sha)),
        read_only_(read_only),
        resp3_(resp3),
        reply_limit_(reply_limit) {}

  std::vector<std::string> keys;
  std::vector<std::string> argv;
  // Who runs the script: its calls are checked against this user (null: every right).
  std::shared_ptr<const AclUser> user;
  ClientState caller;  // the caller's id, peer and names, for ACL LOG

  // Runs the script in `scope` (the store's thread, its keys locked); may run more than once.
  void Run(ScriptScope& scope) {
    events_.clear();
    auto running = executor_.scripts().watchdog.Start();
    script::RunRequest request;
    request.body = body_;
    request.sha = sha_;
    request.keys = &keys;
    request.argv = &argv;
    request.resp3 = resp3_;
    request.max_reply_bytes = reply_limit_;
    request.running = running.get();
    reply_ = script::Run(
        request, [&](std::vector<std::string>& args) { return Call(scope, *running, args); });
    executor_.scripts().watchdog.Finish(running);
  }

  std::string TakeReply() { return std::move(reply_); }
  // Announces the keyspace events of the script's writes, once they are committed.
  void PublishEvents() {
    if (!events_.empty()) executor_.notifier().handle()->Publish(events_);
  }

 private:
  std::string Call(ScriptScope& scope, script::RunningScript& running,
                   std::vector<std::string>& args) {
    const CommandSpec* spec = FindCommand(ToLower(args[0]));
    if (spec == nullptr) return ErrorReply("ERR Unknown Redis command called from script");
    if (!AllowedInScript(*spec)) {
      return ErrorReply("ERR This Redis command is not allowed from script");
    }
    if (!ArityOk(*spec, args.size())) {
      return ErrorReply("ERR Wrong number of args calling Redis command from script");
    }
    if (spec->write && read_only_) {
      return ErrorReply("ERR Write commands are not allowed from read-only scripts.");
    }
    if (user && !user->full_access) {
      if (auto denied = AclRefusal(executor_, caller, *user, *spec, args, "lua")) {
        return ErrorReply("ERR The user executing the script " + ScriptDenial(*denied));
      }
    }
    if (spec->write) running.wrote.store(true);
    ClientState client;
    client.authenticated = true;
    std::string out;
    bool replied = false;
    ReplyFn reply([&](std::string r) {
      out = std::move(r);
      replied = true;
    });
    OpForwarder store(
        executor_.store(), [&scope](std::vector<TxOp> ops) { return scope.Apply(std::move(ops)); },
        "This Redis command is not allowed from script");
    // The command as its events name it, kept before the handler takes the arguments over.
    std::vector<std::string> named;
    std::shared_ptr<KeyProbe> probe;
    bool announce = executor_.notifier().classes() != 0;
    if (announce) {
      named = args;
      named[0] = spec->name;
      if (auto probed = executor_.notifier().KeysToProbe(spec->name, named); !probed.empty()) {
        probe = KeyProbe::Start(store, std::move(probed));
      }
      announce = spec->write || probe != nullptr;
    }
    CommandContext ctx{executor_, client, args, reply, &store};
    spec->handler(ctx);
    if (!replied) return ErrorReply("ERR the command did not answer inside the script");
    if (announce) {
      auto caused = EventsOfReply(named, out, executor_.NowMs());
      if (probe != nullptr) caused = WithProbedEvents(std::move(caused), named, out, *probe);
      events_.insert(events_.end(), caused.begin(), caused.end());
    }
    return out;
  }

  CommandExecutor& executor_;
  std::string body_;
  std::string sha_;
  bool read_only_;
  bool resp3_;
  size_t reply_limit_;
  std::string reply_;
  std::vector<KeyEvent> events_;  // of this run's writes, in the order they were made
};

// EVAL body|EVALSHA sha, numkeys, key..., arg...: runs `body` as one store transaction.
void RunScript(CommandContext& ctx, std::string body, std::string sha, bool read_only) {
  int64_t numkeys = 0;
  if (!ParseInt64(ctx.args[2], &numkeys)) return ctx.ReplyError(kNotInteger);
  if (numkeys < 0) return ctx.ReplyError("ERR Number of keys can't be negative");
  if (numkeys > static_cast<int64_t>(ctx.args.size()) - 3) {
    return ctx.ReplyError("ERR Number of keys can't be greater than number of args");
  }
  script::ScriptFlags flags;
  if (auto refused = script::ParseFlags(body, &flags)) return ctx.Reply(std::move(*refused));
  auto job = std::make_shared<ScriptJob>(ctx.executor, std::move(body), std::move(sha),
                                         read_only || flags.no_writes,
                                         ctx.client.proto == Proto::kResp3, ctx.reply.limit());
  if (ctx.client.user && !ctx.client.user->full_access) {
    job->user = ctx.client.user;
    job->caller.id = ctx.client.id;
    job->caller.peer = ctx.client.peer;
    job->caller.name = ctx.client.name;
    job->caller.user_name = ctx.client.user_name;
  }
  auto first_arg = ctx.args.begin() + 3 + numkeys;
  job->keys.assign(std::make_move_iterator(ctx.args.begin() + 3),
                   std::make_move_iterator(first_arg));
  job->argv.assign(std::make_move_iterator(first_arg), std::make_move_iterator(ctx.args.end()));
  // The reply comes with the op's result (delivered once the unit is durable, and inside EXEC
  // in EXEC's array); Transact's own outcome answers only when the store refused the unit.
  auto reply = std::make_shared<ReplyFn>(std::move(ctx.reply));
  tx::Script op{job->keys, [job](ScriptScope& scope) { job->Run(scope); },
                [job, reply](Result<bool> done) {
                  if (done.ok()) job->PublishEvents();
                  (*reply)(job->TakeReply());
                }};
  std::vector<TxOp> ops;
  ops.emplace_back(std::move(op));
  ctx.store().Transact(std::move(ops), nullptr, [reply](Result<bool> done) {
    if (!done.ok()) (*reply)(ErrorReply(StoreErrorText(done.error())));
  });
}

void Eval(CommandContext& ctx, bool read_only) {
  std::string sha = script::Sha1Hex(ctx.args[1]);
  // Kept for EVALSHA, as Redis does; a full cache drops its oldest EVAL'd script first.
  ctx.executor.scripts().cache.Add(sha, ctx.args[1], /*loaded=*/false);
  RunScript(ctx, std::move(ctx.args[1]), std::move(sha), read_only);
}

void EvalSha(CommandContext& ctx, bool read_only) {
  std::string sha = ToLower(ctx.args[1]);
  std::optional<std::string> body = ctx.executor.scripts().cache.Find(sha);
  if (!body) return ctx.ReplyError(kNoScript);
  RunScript(ctx, std::move(*body), std::move(sha), read_only);
}

void ScriptLoad(CommandContext& ctx) {
  script::ScriptFlags flags;
  if (auto refused = script::ParseFlags(ctx.args[2], &flags)) return ctx.Reply(std::move(*refused));
  if (auto error = script::CheckCompiles(ctx.args[2])) return ctx.Reply(std::move(*error));
  std::string sha = script::Sha1Hex(ctx.args[2]);
  if (!ctx.executor.scripts().cache.Add(sha, std::move(ctx.args[2]), /*loaded=*/true)) {
    return ctx.ReplyError("ERR the script cache is full (" +
                          std::to_string(script::ScriptCache::kMaxScripts) + " scripts or " +
                          std::to_string(script::ScriptCache::kMaxBytes >> 20) +
                          " MiB); SCRIPT FLUSH frees it");
  }
  std::string out;
  AppendBulk(out, sha);
  ctx.Reply(std::move(out));
}

void ScriptKill(CommandContext& ctx) {
  switch (ctx.executor.scripts().watchdog.Kill()) {
    case script::Watchdog::KillOutcome::kNotBusy:
      return ctx.ReplyError("NOTBUSY No scripts in execution right now.");
    case script::Watchdog::KillOutcome::kUnkillable:
      return ctx.ReplyError(
          "UNKILLABLE Sorry the script already executed write commands against the dataset. You "
          "can either wait the script termination or kill the server in a hard way using the "
          "SHUTDOWN NOSAVE command.");
    case script::Watchdog::KillOutcome::kKilled:
      return ctx.Reply(Simple("OK"));
  }
}

void ScriptHelp(CommandContext& ctx) {
  static const char* const kLines[] = {
      "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "EXISTS <sha1> [<sha1> ...]",
      "    Return information about the existence of the scripts in the script cache.",
      "FLUSH [ASYNC|SYNC]",
      "    Flush the Lua scripts cache.",
      "KILL",
      "    Kill the currently executing Lua script (one that has not written).",
      "LOAD <script>",
      "    Load a script into the scripts cache without executing it.",
      "HELP",
      "    Print this help.",
  };
  std::string out;
  AppendArrayHeader(out, std::size(kLines));
  for (const char* line : kLines) AppendSimple(out, line);
  ctx.Reply(std::move(out));
}

}  // namespace

void CmdEval(CommandContext& ctx) { Eval(ctx, false); }
void CmdEvalRo(CommandContext& ctx) { Eval(ctx, true); }
void CmdEvalSha(CommandContext& ctx) { EvalSha(ctx, false); }
void CmdEvalShaRo(CommandContext& ctx) { EvalSha(ctx, true); }

void CmdScript(CommandContext& ctx) {
  std::string sub = ToLower(ctx.args[1]);
  size_t n = ctx.args.size();
  if (sub == "load" && n == 3) return ScriptLoad(ctx);
  if (sub == "kill" && n == 2) return ScriptKill(ctx);
  if (sub == "help" && n == 2) return ScriptHelp(ctx);
  if (sub == "exists" && n >= 3) {
    std::string out;
    AppendArrayHeader(out, n - 2);
    for (size_t i = 2; i < n; ++i) {
      AppendInteger(out, ctx.executor.scripts().cache.Contains(ToLower(ctx.args[i])) ? 1 : 0);
    }
    return ctx.Reply(std::move(out));
  }
  if (sub == "flush" && n <= 3) {
    if (n == 3 && !EqualsIgnoreCase(ctx.args[2], "sync") &&
        !EqualsIgnoreCase(ctx.args[2], "async")) {
      return ctx.ReplyError("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    }
    ctx.executor.scripts().cache.Clear();
    return ctx.Reply(Simple("OK"));
  }
  if (sub == "load" || sub == "kill" || sub == "exists" || sub == "help") {
    return ctx.ReplyError(WrongArity("script|" + sub));
  }
  ctx.ReplyError("ERR unknown subcommand '" + ctx.args[1].substr(0, 128) + "'. Try SCRIPT HELP.");
}

size_t CachedScripts(CommandExecutor& executor) { return executor.scripts().cache.size(); }
size_t CachedScriptBytes(CommandExecutor& executor) { return executor.scripts().cache.bytes(); }

std::optional<std::string> BusyRefusal(CommandExecutor& executor, const CommandSpec& spec,
                                       const std::vector<std::string>& args) {
  if (!executor.scripts().watchdog.Busy()) return std::nullopt;
  std::string_view name = spec.name;
  if (name == "auth" || name == "hello" || name == "quit") return std::nullopt;
  if (name == "script" && args.size() == 2 && EqualsIgnoreCase(args[1], "kill")) {
    return std::nullopt;
  }
  return "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
}

}  // namespace skydb::resp
