// Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH, with Redis 7's replies; and MSET, which
// is one transaction of SETs.
//
// EXEC runs each queued command's own handler against a recorder, a SessionStore that only
// collects the store operations the handlers ask for; the recorded operations then go to the
// real store as one SessionStore::Transact, which applies them together under their keys'
// locks and commits them as one unit. So every command means inside a transaction exactly what
// it means outside, and EXEC's replies are the handlers' replies, sent only once the unit is
// as durable as a single write would be.
#include <atomic>
#include <memory>
#include <utility>

#include "resp/command_table.h"
#include "resp/encoder.h"
#include "resp/op_forwarder.h"
#include "skydb/mutex.h"

namespace skydb::resp {
namespace {

// Bounds of one transaction, so a client cannot grow the daemon's memory without end by
// queuing: beyond them the transaction is refused (EXEC answers EXECABORT).
constexpr size_t kMaxQueuedCommands = 100000;
constexpr size_t kMaxQueuedBytes = size_t{64} << 20;

constexpr std::string_view kExecAbort =
    "EXECABORT Transaction discarded because of previous errors.";

// EXEC's reply: one slot per queued command, sent as one array once every slot is filled and
// the transaction applied — or nil when a WATCHed key changed, or the store's error. Before the
// store applies anything it asks Admit for the most its replies may take, which is claimed
// against the connection's reply budget: a transaction whose reply would pass
// resp.max_output_buffer (or the server's reply memory) is refused whole, having applied nothing.
// Replies of commands that are not store operations fill their slots at once and are claimed as
// they arrive.
class ExecGather : public std::enable_shared_from_this<ExecGather> {
 public:
  ExecGather(size_t n, ReplyFn reply, Proto proto)
      : slots_(n),
        remaining_(n),
        claim_(reply.EmptyClaim()),
        reply_(std::move(reply)),
        proto_(proto) {}

  ReplyFn SlotReply(size_t index) {
    return ReplyFn([self = shared_from_this(), index](std::string reply) {
      self->Fill(index, std::move(reply));
    });
  }

  // The store's bound on its operations' replies, under their keys' locks.
  Status Admit(size_t store_bytes) {
    MutexLock lock(mu_);
    size_t more = store_bytes + kArrayHeaderBytes;
    // The texts carry Redis's "ERR " already; the store's error reply adds it again.
    auto without_code = [](std::string text) { return text.substr(text.find(' ') + 1); };
    if (claim_.bytes() + more > reply_.limit()) {
      return Error::InvalidArgument(
          without_code(ReplyTooLarge(reply_.limit(), "split the transaction")));
    }
    if (!claim_.Extend(more)) return Error::Unavailable(without_code(std::string(kReplyDropped)));
    admitted_ = true;
    return Ok();
  }

  void Applied(Result<bool> applied) {
    MutexLock lock(mu_);
    if (!applied.ok()) return Finish(ErrorReply(StoreErrorText(applied.error())));
    if (!*applied) return Finish(proto_ == Proto::kResp3 ? "_\r\n" : "*-1\r\n");
    applied_ = true;
    if (remaining_ == 0) FinishArray();
  }

 private:
  void Fill(size_t index, std::string reply) {
    MutexLock lock(mu_);
    if (finished_) return;
    if (admitted_) {  // claimed whole by Admit
      slots_[index] = std::move(reply);
      if (--remaining_ == 0 && applied_) FinishArray();
      return;
    }
    if (claim_.bytes() + reply.size() + 32 > reply_.limit()) {
      return Finish(ErrorReply(ReplyTooLarge(reply_.limit(), "split the transaction")));
    }
    if (!claim_.Extend(reply.size())) return Finish(ErrorReply(kReplyDropped));
    slots_[index] = std::move(reply);
    if (--remaining_ == 0 && applied_) FinishArray();
  }

  void FinishArray() REQUIRES(mu_) {
    std::string out;
    out.reserve(claim_.bytes() + 32);
    AppendArrayHeader(out, slots_.size());
    for (auto& slot : slots_) out += slot;
    slots_.clear();
    finished_ = true;
    claim_.Resize(out.size());
    reply_(std::move(out), std::move(claim_));
  }

  void Finish(std::string reply) REQUIRES(mu_) {
    if (finished_) return;
    finished_ = true;
    slots_.clear();
    claim_ = ReplyClaim();
    reply_(std::move(reply));
  }

  Mutex mu_;
  std::vector<std::string> slots_ GUARDED_BY(mu_);
  size_t remaining_ GUARDED_BY(mu_);
  static constexpr size_t kArrayHeaderBytes = 32;
  bool applied_ GUARDED_BY(mu_) = false;
  bool admitted_ GUARDED_BY(mu_) = false;
  bool finished_ GUARDED_BY(mu_) = false;
  ReplyClaim claim_ GUARDED_BY(mu_);
  ReplyFn reply_;
  Proto proto_;
};

// Records the store operations of the commands run against it into `ops`, for one Transact.
OpForwarder RecorderInto(SessionStore& store, std::vector<TxOp>& ops) {
  return OpForwarder(
      store,
      [&ops](std::vector<TxOp> more) {
        for (auto& op : more) ops.push_back(std::move(op));
        return Ok();
      },
      "WATCH inside MULTI is not allowed");
}

void EndMulti(ClientState& client) {
  client.in_multi = false;
  client.multi_refused = false;
  client.queued.clear();
  client.queued_bytes = 0;
}

// Forgets the client's WATCHed keys; the list goes with them, so a WATCH that follows starts
// a new one while a transaction may still be checking the old.
void ReleaseWatch(CommandContext& ctx) {
  if (!ctx.client.watch) return;
  ctx.executor.store().Unwatch(*ctx.client.watch);
  ctx.client.watch.reset();
}

}  // namespace

void QueueInMulti(ClientState& client, std::vector<std::string> args, const ReplyFn& reply) {
  size_t bytes = 0;
  for (const auto& a : args) bytes += a.size() + 16;
  if (client.queued.size() >= kMaxQueuedCommands || client.queued_bytes + bytes > kMaxQueuedBytes) {
    client.multi_refused = true;
    return reply(ErrorReply("ERR the transaction would hold more than " +
                            std::to_string(kMaxQueuedCommands) + " commands or " +
                            std::to_string(kMaxQueuedBytes >> 20) +
                            " MiB; it is discarded at EXEC: split it into smaller ones"));
  }
  client.queued_bytes += bytes;
  client.queued.push_back(std::move(args));
  reply(Simple("QUEUED"));
}

void CmdMulti(CommandContext& ctx) {
  if (ctx.client.in_multi) return ctx.ReplyError("ERR MULTI calls can not be nested");
  ctx.client.in_multi = true;
  ctx.Reply(Simple("OK"));
}

void CmdDiscard(CommandContext& ctx) {
  if (!ctx.client.in_multi) return ctx.ReplyError("ERR DISCARD without MULTI");
  EndMulti(ctx.client);
  ReleaseWatch(ctx);
  ctx.Reply(Simple("OK"));
}

void CmdExec(CommandContext& ctx) {
  if (!ctx.client.in_multi) return ctx.ReplyError("ERR EXEC without MULTI");
  bool refused = ctx.client.multi_refused;
  std::vector<std::vector<std::string>> commands = std::move(ctx.client.queued);
  EndMulti(ctx.client);
  std::shared_ptr<WatchList> watch = std::move(ctx.client.watch);
  ctx.client.watch.reset();
  SessionStore& store = ctx.executor.store();
  if (refused) {
    if (watch) store.Unwatch(*watch);
    return ctx.ReplyError(kExecAbort);
  }
  auto gather =
      std::make_shared<ExecGather>(commands.size(), std::move(ctx.reply), ctx.client.proto);
  std::vector<ReplyFn> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) replies.push_back(gather->SlotReply(i));
  std::vector<TxOp> ops;
  OpForwarder recorder = RecorderInto(store, ops);
  ctx.executor.RunQueued(ctx.client, std::move(commands), recorder, std::move(replies));
  store.Transact(
      std::move(ops), watch,
      [gather, watch, &store](Result<bool> applied) {
        if (watch) store.Unwatch(*watch);
        gather->Applied(std::move(applied));
      },
      [gather](size_t reply_bytes) { return gather->Admit(reply_bytes); });
}

void RunProbed(CommandContext& ctx, const CommandSpec& spec, std::vector<std::string> probed) {
  SessionStore& store = ctx.executor.store();
  std::vector<TxOp> ops;
  OpForwarder recorder = RecorderInto(store, ops);
  auto probe = KeyProbe::Start(recorder, std::move(probed));
  size_t probes = ops.size();
  // The store answers a failed unit through Transact alone; `answered` keeps it to one reply.
  auto answered = std::make_shared<std::atomic<bool>>(false);
  ReplyFn watched = ctx.executor.notifier().Watch(std::move(ctx.reply), ctx.args, spec.name,
                                                  ctx.executor.NowMs(), probe);
  auto reply = std::make_shared<ReplyFn>(
      std::move(watched).Observed([answered](std::string_view) { answered->store(true); }));
  ctx.reply = *reply;
  CommandContext recorded{ctx.executor, ctx.client, ctx.args, ctx.reply, &recorder};
  spec.handler(recorded);
  if (ops.size() == probes) return;  // answered without the store (a refusal)
  store.Transact(std::move(ops), nullptr, [reply, answered](Result<bool> done) {
    if (!done.ok() && !answered->exchange(true)) {
      (*reply)(ErrorReply(StoreErrorText(done.error())));
    }
  });
}

// WATCH key...: inside MULTI it is an error and does not doom the transaction, as in Redis.
void CmdWatch(CommandContext& ctx) {
  if (ctx.client.in_multi) return ctx.ReplyError("ERR WATCH inside MULTI is not allowed");
  if (!ctx.client.watch) ctx.client.watch = std::make_shared<WatchList>();
  std::vector<std::string> keys(std::make_move_iterator(ctx.args.begin() + 1),
                                std::make_move_iterator(ctx.args.end()));
  ctx.store().Watch(
      std::move(keys), ctx.client.watch, [reply = std::move(ctx.reply)](Result<bool> watched) {
        reply(watched.ok() ? Simple("OK") : ErrorReply(StoreErrorText(watched.error())));
      });
}

// MSET key value [key value ...]: every pair applied together, in one commit. The last SET's
// result answers, so that inside EXEC (or a probed run) the reply too waits for the commit.
void CmdMSet(CommandContext& ctx) {
  if (ctx.args.size() % 2 == 0) return ctx.ReplyError(WrongArity("mset"));
  auto reply = std::make_shared<ReplyFn>(std::move(ctx.reply));
  std::vector<TxOp> ops;
  for (size_t i = 1; i + 1 < ctx.args.size(); i += 2) {
    SetRequest set{std::move(ctx.args[i]), std::move(ctx.args[i + 1]), Expiry::Default()};
    bool last = i + 3 >= ctx.args.size();
    ops.emplace_back(tx::Set{std::move(set), [reply, last](Result<SetReply> r) {
                               if (!last) return;
                               (*reply)(r.ok() ? Simple("OK")
                                               : ErrorReply(StoreErrorText(r.error())));
                             }});
  }
  ctx.store().Transact(std::move(ops), nullptr, [reply](Result<bool> done) {
    if (!done.ok()) (*reply)(ErrorReply(StoreErrorText(done.error())));
  });
}

void CmdUnwatch(CommandContext& ctx) {
  ReleaseWatch(ctx);
  ctx.Reply(Simple("OK"));
}

}  // namespace skydb::resp
