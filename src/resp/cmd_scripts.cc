// EVAL and EVALSHA, for the one script session stacks send: phpredis's session handler releases
// its lock with a compare-and-delete (delete KEYS[1] if its value is ARGV[1]). skydb runs no
// Lua; it recognises that script by its exact text or SHA1 and runs it natively and atomically:
// WATCH the key, read it, and delete it in a transaction that applies only if the key did not
// change meanwhile (retried a few times). Any other script is refused, saying so.
#include <memory>

#include "resp/command_table.h"
#include "resp/encoder.h"

namespace skydb::resp {
namespace {

constexpr std::string_view kLockReleaseScript =
    "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1]) else "
    "return 0 end";
constexpr std::string_view kLockReleaseSha = "b70c2384248f88e6b75b9f89241a180f856ad852";
constexpr int kMaxAttempts = 8;

constexpr std::string_view kNoLua =
    "ERR skydb runs no Lua scripts; it knows only the lock-release script of phpredis's session "
    "handler (docs/protocol.md)";

// One compare-and-delete, from WATCH to the transaction's outcome.
class CompareAndDelete : public std::enable_shared_from_this<CompareAndDelete> {
 public:
  CompareAndDelete(SessionStore& store, std::string key, std::string token, ReplyFn reply)
      : store_(store), key_(std::move(key)), token_(std::move(token)), reply_(std::move(reply)) {}

  void Attempt(int attempt) {
    auto self = shared_from_this();
    auto watch = std::make_shared<WatchList>();
    store_.Watch({key_}, watch, [self, watch, attempt](Result<bool> watched) {
      if (!watched.ok()) return self->Fail(watch, watched.error());
      self->store_.Get(self->key_, [self, watch, attempt](Result<std::optional<std::string>> v) {
        if (!v.ok()) return self->Fail(watch, v.error());
        if (!*v || **v != self->token_) return self->Finish(watch, 0);
        std::vector<TxOp> del;
        del.emplace_back(tx::Delete{{self->key_}, [](Result<int64_t>) {}});
        self->store_.Transact(std::move(del), watch, [self, watch, attempt](Result<bool> applied) {
          if (!applied.ok()) return self->Fail(watch, applied.error());
          if (*applied) return self->Finish(watch, 1);
          self->store_.Unwatch(*watch);
          if (attempt + 1 >= kMaxAttempts) {
            return self->reply_(
                ErrorReply("ERR the lock key kept changing while it was being released; retry"));
          }
          self->Attempt(attempt + 1);
        });
      });
    });
  }

 private:
  void Finish(const std::shared_ptr<WatchList>& watch, int64_t deleted) {
    store_.Unwatch(*watch);
    reply_(Integer(deleted));
  }
  void Fail(const std::shared_ptr<WatchList>& watch, const Error& error) {
    store_.Unwatch(*watch);
    reply_(ErrorReply(StoreErrorText(error)));
  }

  SessionStore& store_;
  std::string key_;
  std::string token_;
  ReplyFn reply_;
};

// EVAL script|EVALSHA sha, numkeys, key..., arg...
void RunScript(CommandContext& ctx, bool known) {
  int64_t numkeys = 0;
  if (!ParseInt64(ctx.args[2], &numkeys)) return ctx.ReplyError(kNotInteger);
  if (numkeys < 0) return ctx.ReplyError("ERR Number of keys can't be negative");
  if (numkeys > static_cast<int64_t>(ctx.args.size()) - 3) {
    return ctx.ReplyError("ERR Number of keys can't be greater than number of args");
  }
  if (!known) return ctx.ReplyError(kNoLua);
  if (numkeys != 1 || ctx.args.size() != 5) {
    return ctx.ReplyError("ERR the lock-release script takes one key and one argument");
  }
  auto job = std::make_shared<CompareAndDelete>(ctx.store(), std::move(ctx.args[3]),
                                                std::move(ctx.args[4]), std::move(ctx.reply));
  job->Attempt(0);
}

}  // namespace

void CmdEval(CommandContext& ctx) { RunScript(ctx, ctx.args[1] == kLockReleaseScript); }

void CmdEvalSha(CommandContext& ctx) {
  if (!EqualsIgnoreCase(ctx.args[1], kLockReleaseSha)) {
    return ctx.ReplyError("NOSCRIPT No matching script. Please use EVAL.");
  }
  RunScript(ctx, true);
}

}  // namespace skydb::resp
