// Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB. They run
// on the connection's loop thread; the hub (resp/pubsub.h) is shared by every connection. On a
// daemon with peers (a carrier) their replies wait for the database: a (un)subscription's
// until it is recorded, so a client told of it on another daemon finds it counted there; a
// PUBLISH's until its message is committed for the other daemons; PUBSUB's for their counts.
#include "base/strings.h"
#include "resp/command_table.h"
#include "resp/encoder.h"
#include "resp/pubsub.h"

namespace skydb::resp {
namespace {

constexpr std::string_view kCannotSubscribe = "ERR this client cannot subscribe";

// One confirmation per name, all in the command's single reply (its slot), sent once every
// change is recorded.
void ReplyConfirmations(CommandContext& ctx, std::string_view kind,
                        const std::vector<std::string>& names,
                        bool (PubSubHub::*change)(PubSubState&, const std::string&, Barrier*)) {
  auto& state = ctx.client.pubsub;
  if (state.subscriber == nullptr) return ctx.ReplyError(kCannotSubscribe);
  PubSubHub& hub = ctx.executor.pubsub();
  auto recorded = hub.carrier() != nullptr ? std::make_shared<Barrier>() : nullptr;
  std::string out;
  for (const auto& name : names) {
    (hub.*change)(state, name, recorded.get());
    out += SubscriptionFrame(ctx.client.proto, kind, &name, state.count());
  }
  if (recorded == nullptr) return ctx.Reply(std::move(out));
  recorded->Then([reply = std::move(ctx.reply), out = std::move(out)] { reply(out); });
}

// UNSUBSCRIBE / PUNSUBSCRIBE: the names given or, with none, every current one; with none and
// nothing subscribed, one confirmation with a null name (Redis 7).
void ReplyUnsubscribe(CommandContext& ctx, std::string_view kind, const std::set<std::string>& all,
                      bool (PubSubHub::*change)(PubSubState&, const std::string&, Barrier*)) {
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
  ctx.executor.pubsub().Publish(ctx.args[1], ctx.args[2],
                                [reply = std::move(ctx.reply)](size_t receivers) {
                                  reply(Integer(static_cast<int64_t>(receivers)));
                                });
}

// PUBSUB CHANNELS [pattern] | NUMSUB [channel...] | NUMPAT, with Redis 7's errors; answered for
// every daemon on the database.
void CmdPubSub(CommandContext& ctx) {
  std::string sub = ToLower(ctx.args[1]);
  size_t argc = ctx.args.size();
  auto& hub = ctx.executor.pubsub();
  if (sub == "channels" && argc <= 3) {
    std::optional<std::string> pattern;
    if (argc == 3) pattern = ctx.args[2];
    return hub.ChannelsAll(std::move(pattern),
                           [reply = std::move(ctx.reply)](std::vector<std::string> channels) {
                             std::string out;
                             AppendBulkArray(out, channels);
                             reply(std::move(out));
                           });
  }
  if (sub == "numsub") {
    std::vector<std::string> channels(ctx.args.begin() + 2, ctx.args.end());
    return hub.NumSubAll(channels,
                         [reply = std::move(ctx.reply), channels](std::vector<size_t> counts) {
                           std::string out;
                           AppendArrayHeader(out, channels.size() * 2);
                           for (size_t i = 0; i < channels.size(); ++i) {
                             AppendBulk(out, channels[i]);
                             AppendInteger(out, static_cast<int64_t>(counts[i]));
                           }
                           reply(std::move(out));
                         });
  }
  if (sub == "numpat") {
    if (argc != 2) return ctx.ReplyError(WrongArity("pubsub|numpat"));
    return hub.NumPatAll([reply = std::move(ctx.reply)](size_t patterns) {
      reply(Integer(static_cast<int64_t>(patterns)));
    });
  }
  if (sub == "channels") {
    return ctx.ReplyError("ERR unknown subcommand or wrong number of arguments for '" +
                          ctx.args[1].substr(0, 128) + "'. Try PUBSUB HELP.");
  }
  ctx.ReplyError("ERR unknown subcommand '" + ctx.args[1].substr(0, 128) + "'. Try PUBSUB HELP.");
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
