// CLIENT LIST, CLIENT INFO and CLIENT KILL: they need every connection of the server, which
// live on other loop threads, so they reply when the server's ClientControl has gathered them.
// Without one (the command layer's own tests) the server is this client alone.
#include <limits>
#include <memory>

#include "base/strings.h"
#include "resp/clients.h"
#include "resp/command_table.h"
#include "resp/encoder.h"

namespace skydb::resp {
namespace {

// Redis's client id argument: an integer 1..LONG_MAX, else `error`.
bool ParseClientId(std::string_view text, uint64_t* id) {
  int64_t value = 0;
  if (!ParseInt64(text, &value) || value < 1) return false;
  *id = static_cast<uint64_t>(value);
  return true;
}

// TYPE's argument; false for a name Redis does not know. `none` is set for the types skydb
// never has (master, replica, slave): nothing matches them.
bool ParseClientType(std::string_view text, ClientType* type, bool* none) {
  std::string name = ToLower(text);
  *none = name == "master" || name == "replica" || name == "slave";
  if (name == "normal") *type = ClientType::kNormal;
  if (name == "pubsub") *type = ClientType::kPubSub;
  return *none || name == "normal" || name == "pubsub";
}

std::string UnknownType(std::string_view text) {
  return "ERR Unknown client type '" + std::string(text.substr(0, 128)) + "'";
}

void ListVia(CommandContext& ctx, ClientFilter filter,
             std::function<void(std::vector<ClientInfo>)> done) {
  ClientControl* control = ctx.executor.client_control();
  if (control != nullptr) return control->List(std::move(filter), std::move(done));
  std::vector<ClientInfo> alone;
  ClientInfo self = InfoFromState(ctx.client);
  if (filter.Matches(self)) alone.push_back(std::move(self));
  done(std::move(alone));
}

void ReplyLines(const ReplyFn& reply, Proto proto, const std::vector<ClientInfo>& clients) {
  std::string text;
  for (const auto& info : clients) text += FormatClientLine(info) + "\n";
  std::string out;
  AppendVerbatim(out, text, proto);
  reply(std::move(out));
}

// The options of the new KILL form (pairs); false when an error was replied.
bool ParseKillOptions(CommandContext& ctx, ClientFilter* filter, bool* none) {
  auto& args = ctx.args;
  filter->skip_id = ctx.client.id;
  for (size_t i = 2; i < args.size(); i += 2) {
    if (i + 1 >= args.size()) return ctx.ReplyError(kSyntaxError), false;
    std::string option = ToLower(args[i]);
    const std::string& value = args[i + 1];
    if (option == "id") {
      uint64_t id = 0;
      if (!ParseClientId(value, &id)) {
        return ctx.ReplyError("ERR client-id should be greater than 0"), false;
      }
      filter->ids = {id};
    } else if (option == "type") {
      bool no_such = false;
      if (!ParseClientType(value, &filter->type, &no_such)) {
        return ctx.ReplyError(UnknownType(value)), false;
      }
      *none = *none || no_such;
    } else if (option == "addr") {
      filter->addr = value;
    } else if (option == "skipme" &&
               (EqualsIgnoreCase(value, "yes") || EqualsIgnoreCase(value, "no"))) {
      filter->skip_id.reset();
      if (EqualsIgnoreCase(value, "yes")) filter->skip_id = ctx.client.id;
    } else {
      return ctx.ReplyError(kSyntaxError), false;
    }
  }
  return true;
}

}  // namespace

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id...]
void ClientList(CommandContext& ctx) {
  auto& args = ctx.args;
  ClientFilter filter;
  if (args.size() == 4 && EqualsIgnoreCase(args[2], "type")) {
    bool none = false;
    if (!ParseClientType(args[3], &filter.type, &none)) return ctx.ReplyError(UnknownType(args[3]));
    if (none) return ReplyLines(ctx.reply, ctx.client.proto, {});
  } else if (args.size() > 3 && EqualsIgnoreCase(args[2], "id")) {
    for (size_t i = 3; i < args.size(); ++i) {
      uint64_t id = 0;
      if (!ParseClientId(args[i], &id)) return ctx.ReplyError("ERR Invalid client ID");
      filter.ids.push_back(id);
    }
  } else if (args.size() != 2) {
    return ctx.ReplyError(kSyntaxError);
  }
  ListVia(ctx, std::move(filter),
          [reply = std::move(ctx.reply), proto = ctx.client.proto](std::vector<ClientInfo> all) {
            ReplyLines(reply, proto, all);
          });
}

void ClientInfoCommand(CommandContext& ctx) {
  ClientFilter filter;
  filter.ids = {ctx.client.id};
  ListVia(ctx, std::move(filter),
          [reply = std::move(ctx.reply), proto = ctx.client.proto](std::vector<ClientInfo> self) {
            ReplyLines(reply, proto, self);
          });
}

// CLIENT KILL ip:port (the old form: +OK or "No such client", and it may kill the caller) or
// CLIENT KILL [ID id] [TYPE type] [ADDR addr] [SKIPME yes|no]... (a count; the caller is
// spared unless SKIPME no).
void ClientKill(CommandContext& ctx) {
  ClientFilter filter;
  bool old_form = ctx.args.size() == 3;
  bool none = false;
  if (old_form) {
    filter.addr = ctx.args[2];
  } else if (!ParseKillOptions(ctx, &filter, &none)) {
    return;
  }
  auto done = [reply = std::move(ctx.reply), old_form](size_t killed) {
    if (!old_form) return reply(Integer(static_cast<int64_t>(killed)));
    reply(killed == 0 ? ErrorReply("ERR No such client") : Simple("OK"));
  };
  ClientControl* control = ctx.executor.client_control();
  if (none || control == nullptr) return done(0);
  control->Kill(std::move(filter), ctx.client.id, std::move(done));
}

}  // namespace skydb::resp
