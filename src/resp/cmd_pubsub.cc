// Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB. They run
// on the connection's loop thread and reply before returning; the hub (resp/pubsub.h) is
// shared by every connection.
#include "base/strings.h"
#include "resp/command_table.h"
#include "resp/encoder.h"
#include "resp/pubsub.h"

namespace skydb::resp {
namespace {

constexpr std::string_view kCannotSubscribe = "ERR this client cannot subscribe";

// One confirmation per name, all in the command's single reply (its slot).
void ReplyConfirmations(CommandContext& ctx, std::string_view kind,
                        const std::vector<std::string>& names,
                        bool (PubSubHub::*change)(PubSubState&, const std::string&)) {
  auto& state = ctx.client.pubsub;
  if (state.subscriber == nullptr) return ctx.ReplyError(kCannotSubscribe);
  std::string out;
  for (const auto& name : names) {
    (ctx.executor.pubsub().*change)(state, name);
    out += SubscriptionFrame(ctx.client.proto, kind, &name, state.count());
  }
  ctx.Reply(std::move(out));
}

// UNSUBSCRIBE / PUNSUBSCRIBE: the names given or, with none, every current one; with none and
// nothing subscribed, one confirmation with a null name (Redis 7).
void ReplyUnsubscribe(CommandContext& ctx, std::string_view kind, const std::set<std::string>& all,
                      bool (PubSubHub::*change)(PubSubState&, const std::string&)) {
  std::vector<std::string> names(ctx.args.begin() + 1, ctx.args.end());
  if (names.empty()) names.assign(all.begin(), all.end());
  if (names.empty()) {
    return ctx.Reply(SubscriptionFrame(ctx.client.proto, kind, nullptr, ctx.client.pubsub.count()));
  }
  ReplyConfirmations(ctx, kind, names, change);
}

}  // namespace

void CmdSubscribe(CommandContext& ctx) {
  ReplyConfirmations(ctx, "subscribe", {ctx.args.begin() + 1, ctx.args.end()},
                     &PubSubHub::Subscribe);
}

void CmdPSubscribe(CommandContext& ctx) {
  ReplyConfirmations(ctx, "psubscribe", {ctx.args.begin() + 1, ctx.args.end()},
                     &PubSubHub::PSubscribe);
}

void CmdUnsubscribe(CommandContext& ctx) {
  ReplyUnsubscribe(ctx, "unsubscribe", ctx.client.pubsub.channels, &PubSubHub::Unsubscribe);
}

void CmdPUnsubscribe(CommandContext& ctx) {
  ReplyUnsubscribe(ctx, "punsubscribe", ctx.client.pubsub.patterns, &PubSubHub::PUnsubscribe);
}

void CmdPublish(CommandContext& ctx) {
  auto receivers = ctx.executor.pubsub().Publish(ctx.args[1], ctx.args[2]);
  if (!receivers.ok()) return ctx.ReplyError(receivers.error().message);
  ctx.Reply(Integer(static_cast<int64_t>(receivers.value())));
}

// PUBSUB CHANNELS [pattern] | NUMSUB [channel...] | NUMPAT, with Redis 7's errors.
void CmdPubSub(CommandContext& ctx) {
  std::string sub = ToLower(ctx.args[1]);
  size_t argc = ctx.args.size();
  auto& hub = ctx.executor.pubsub();
  std::string out;
  if (sub == "channels" && argc <= 3) {
    std::optional<std::string_view> pattern;
    if (argc == 3) pattern = ctx.args[2];
    AppendBulkArray(out, hub.Channels(pattern));
  } else if (sub == "numsub") {
    AppendArrayHeader(out, (argc - 2) * 2);
    for (size_t i = 2; i < argc; ++i) {
      AppendBulk(out, ctx.args[i]);
      AppendInteger(out, static_cast<int64_t>(hub.NumSub(ctx.args[i])));
    }
  } else if (sub == "numpat") {
    if (argc != 2) return ctx.ReplyError(WrongArity("pubsub|numpat"));
    AppendInteger(out, static_cast<int64_t>(hub.NumPat()));
  } else if (sub == "channels") {
    return ctx.ReplyError("ERR unknown subcommand or wrong number of arguments for '" +
                          ctx.args[1].substr(0, 128) + "'. Try PUBSUB HELP.");
  } else {
    return ctx.ReplyError("ERR unknown subcommand '" + ctx.args[1].substr(0, 128) +
                          "'. Try PUBSUB HELP.");
  }
  ctx.Reply(std::move(out));
}

bool AllowedWhileSubscribed(std::string_view name) {
  return name == "ping" || name == "subscribe" || name == "unsubscribe" || name == "psubscribe" ||
         name == "punsubscribe" || name == "quit";
}

std::string SubscribedModeError(const std::vector<std::string>& args) {
  std::string name = ToLower(args[0]);
  if (args.size() > 1 &&
      (name == "client" || name == "pubsub" || name == "config" || name == "command")) {
    name += "|" + ToLower(args[1]);
  }
  return "ERR Can't execute '" + name.substr(0, 128) +
         "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
         "context";
}

}  // namespace skydb::resp
