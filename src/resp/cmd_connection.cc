// Connection commands: PING, ECHO, AUTH, HELLO, CLIENT, SELECT, QUIT. They touch only the
// client's state and always reply before returning.
#include "base/strings.h"
#include "resp/acl_check.h"
#include "resp/command_table.h"
#include "resp/encoder.h"

namespace skydb::resp {
namespace {

constexpr std::string_view kWrongPass =
    "WRONGPASS invalid username-password pair or user is disabled.";
constexpr std::string_view kVersionCompat = "7.0.0";  // the Redis version whose replies we match

// AUTH's and HELLO AUTH's check: true when `pass` opens user `name`, which the client then runs
// as; a failure is in ACL LOG (the caller counts it).
bool Authenticate(CommandContext& ctx, const std::string& name, std::string_view pass) {
  auto user = ctx.executor.acl().Find(name);
  if (user == nullptr || !acl::Opens(user->user, pass)) {
    LogAuthFailure(ctx.executor, ctx.client, name);
    return false;
  }
  ctx.client.authenticated = true;
  ctx.client.user_name = name;
  ctx.client.user = std::move(user);
  ctx.client.acl_generation = 0;  // read again at the next command, in step with the service
  return true;
}

// The default user opens without a password: a bare AUTH is a mistake, and every client starts
// authenticated.
bool DefaultNeedsNoPassword(CommandExecutor& executor) {
  auto user = executor.acl().Find("default");
  return user != nullptr && user->user.enabled && user->user.nopass;
}

bool ValidClientName(std::string_view name) {
  for (char c : name) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

void AppendHelloMap(std::string& out, const ClientState& client) {
  AppendMapHeader(out, 7, client.proto);
  AppendBulk(out, "server");
  AppendBulk(out, "skydb");
  AppendBulk(out, "version");
  AppendBulk(out, kVersionCompat);
  AppendBulk(out, "proto");
  AppendInteger(out, static_cast<int64_t>(client.proto));
  AppendBulk(out, "id");
  AppendInteger(out, static_cast<int64_t>(client.id));
  AppendBulk(out, "mode");
  AppendBulk(out, "standalone");
  AppendBulk(out, "role");
  AppendBulk(out, "master");
  AppendBulk(out, "modules");
  AppendArrayHeader(out, 0);
}

// HELLO's options after the protocol version; false when an error was replied.
bool ApplyHelloOptions(CommandContext& ctx) {
  auto& args = ctx.args;
  for (size_t i = 2; i < args.size(); ++i) {
    bool more = i + 1 < args.size();
    if (EqualsIgnoreCase(args[i], "auth") && i + 2 < args.size()) {
      if (!Authenticate(ctx, args[i + 1], args[i + 2])) {
        ++ctx.client.auth_failures;
        ctx.ReplyError(kWrongPass);
        return false;
      }
      i += 2;
    } else if (EqualsIgnoreCase(args[i], "setname") && more) {
      if (!ValidClientName(args[i + 1])) {
        ctx.ReplyError("ERR Client names cannot contain spaces, newlines or special characters.");
        return false;
      }
      ctx.client.name = args[++i];
    } else {
      ctx.ReplyError("ERR Syntax error in HELLO option '" + args[i].substr(0, 128) + "'");
      return false;
    }
  }
  return true;
}

void ClientSetInfo(CommandContext& ctx) {
  const std::string& attr = ctx.args[2];
  const std::string& value = ctx.args[3];
  if (!ValidClientName(value)) {
    return ctx.ReplyError("ERR " + attr +
                          " cannot contain spaces, newlines or special characters.");
  }
  if (EqualsIgnoreCase(attr, "lib-name")) {
    ctx.client.lib_name = value;
  } else if (EqualsIgnoreCase(attr, "lib-ver")) {
    ctx.client.lib_ver = value;
  } else {
    return ctx.ReplyError("ERR Unrecognized option '" + attr.substr(0, 128) + "'");
  }
  ctx.Reply(Simple("OK"));
}

}  // namespace

void CmdPing(CommandContext& ctx) {
  if (ctx.args.size() > 2) return ctx.ReplyError(WrongArity("ping"));
  // A subscribed RESP2 client gets a two-element array, which its reader expects (Redis 7).
  if (ctx.client.proto == Proto::kResp2 && ctx.client.pubsub.count() > 0) {
    std::string out;
    AppendArrayHeader(out, 2);
    AppendBulk(out, "pong");
    AppendBulk(out, ctx.args.size() == 2 ? std::string_view(ctx.args[1]) : "");
    return ctx.Reply(std::move(out));
  }
  ctx.Reply(ctx.args.size() == 2 ? Bulk(ctx.args[1]) : Simple("PONG"));
}

void CmdEcho(CommandContext& ctx) { ctx.Reply(Bulk(ctx.args[1])); }

void CmdAuth(CommandContext& ctx) {
  if (ctx.args.size() > 3) return ctx.ReplyError(kSyntaxError);
  if (ctx.args.size() == 2 && DefaultNeedsNoPassword(ctx.executor)) {
    return ctx.ReplyError(
        "ERR AUTH <password> called without any password configured for the default user. "
        "Are you sure your configuration is correct?");
  }
  std::string user = ctx.args.size() == 3 ? ctx.args[1] : "default";
  if (!Authenticate(ctx, user, ctx.args.back())) {
    ++ctx.client.auth_failures;
    return ctx.ReplyError(kWrongPass);
  }
  ctx.Reply(Simple("OK"));
}

// HELLO [protover [AUTH user pass] [SETNAME name]]: protover 2 or 3 switches the connection's
// protocol (its reply is already in the new one); others get NOPROTO, changing nothing.
void CmdHello(CommandContext& ctx) {
  std::optional<Proto> proto;
  if (ctx.args.size() >= 2) {
    int64_t version = 0;
    if (!ParseInt64(ctx.args[1], &version)) {
      return ctx.ReplyError("ERR Protocol version is not an integer or out of range");
    }
    if (version != 2 && version != 3) {
      return ctx.ReplyError("NOPROTO unsupported protocol version");
    }
    proto = version == 3 ? Proto::kResp3 : Proto::kResp2;
  }
  ClientState saved = ctx.client;
  if (!ApplyHelloOptions(ctx)) {
    uint32_t auth_failures = ctx.client.auth_failures;
    ctx.client = saved;  // a failed HELLO changes nothing but the count of failed AUTHs
    ctx.client.auth_failures = auth_failures;
    return;
  }
  if (!ctx.client.authenticated && !DefaultNeedsNoPassword(ctx.executor)) {
    return ctx.ReplyError(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
        "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
        "select the RESP protocol version at the same time");
  }
  if (proto) ctx.client.proto = *proto;
  std::string out;
  AppendHelloMap(out, ctx.client);
  ctx.Reply(std::move(out));
}

// CLIENT REPLY ON|OFF|SKIP: OFF sends no reply from now on, SKIP not the next command's; both
// answer nothing themselves, ON answers +OK. Pub/sub messages still come, as in Redis.
void ClientReply(CommandContext& ctx) {
  if (ctx.args.size() != 3) return ctx.ReplyError(WrongArity("client|reply"));
  if (EqualsIgnoreCase(ctx.args[2], "on")) {
    ctx.client.replies_off = false;
    return ctx.Reply(Simple("OK"));
  }
  if (EqualsIgnoreCase(ctx.args[2], "off")) {
    ctx.client.replies_off = true;
    return ctx.Reply(std::string());
  }
  if (EqualsIgnoreCase(ctx.args[2], "skip")) {
    ctx.client.skip_next_reply = true;
    return ctx.Reply(std::string());
  }
  ctx.ReplyError(kSyntaxError);
}

// CLIENT SETNAME name | GETNAME | ID | SETINFO LIB-NAME|LIB-VER value | LIST | INFO | KILL |
// REPLY.
void CmdClient(CommandContext& ctx) {
  std::string sub = ToLower(ctx.args[1]);
  size_t argc = ctx.args.size();
  if (sub == "setname" || sub == "getname" || sub == "id" || sub == "setinfo") {
    size_t want = sub == "setname" ? 3 : sub == "setinfo" ? 4 : 2;
    if (argc != want) return ctx.ReplyError(WrongArity("client|" + sub));
  }
  if (sub == "setname") {
    if (!ValidClientName(ctx.args[2])) {
      return ctx.ReplyError(
          "ERR Client names cannot contain spaces, newlines or special characters.");
    }
    ctx.client.name = ctx.args[2];
    return ctx.Reply(Simple("OK"));
  }
  if (sub == "getname") {
    return ctx.Reply(ctx.client.name.empty() ? Null(ctx.client.proto) : Bulk(ctx.client.name));
  }
  if (sub == "id") return ctx.Reply(Integer(static_cast<int64_t>(ctx.client.id)));
  if (sub == "setinfo") return ClientSetInfo(ctx);
  if (sub == "list") return ClientList(ctx);
  if (sub == "info") {
    if (argc != 2) return ctx.ReplyError(WrongArity("client|info"));
    return ClientInfoCommand(ctx);
  }
  if (sub == "kill") {
    if (argc < 3) return ctx.ReplyError(WrongArity("client|kill"));
    return ClientKill(ctx);
  }
  if (sub == "reply") return ClientReply(ctx);
  ctx.ReplyError("ERR unknown subcommand '" + ctx.args[1].substr(0, 128) + "'. Try CLIENT HELP.");
}

void CmdSelect(CommandContext& ctx) {
  int64_t index = 0;
  if (!ParseInt64(ctx.args[1], &index)) return ctx.ReplyError(kNotInteger);
  if (index != 0) return ctx.ReplyError("ERR DB index is out of range");
  ctx.Reply(Simple("OK"));
}

void CmdQuit(CommandContext& ctx) {
  ctx.client.close_after_reply = true;
  ctx.Reply(Simple("OK"));
}

}  // namespace skydb::resp
