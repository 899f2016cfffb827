// ACL SETUSER | GETUSER | DELUSER | LIST | USERS | WHOAMI | CAT | LOG | SAVE | LOAD | GENPASS |
// DRYRUN | HELP: Redis 7's replies over the server's AclService (resp/acl_users.h). A change
// answers once the database holds it.
#include <openssl/rand.h>

#include <map>

#include "base/strings.h"
#include "resp/acl_check.h"
#include "resp/command_table.h"
#include "resp/encoder.h"

namespace skydb::resp {
namespace {

constexpr std::string_view kNoFile =
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify "
    "users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a "
    "Redis configuration file set) in order to store users in the Redis configuration.";

ReplyFn StatusReply(CommandContext& ctx) { return std::move(ctx.reply); }

void Answer(const ReplyFn& reply, const Status& status) {
  reply(status.ok() ? Simple("OK") : ErrorReply("ERR " + status.error().message));
}

void SetUser(CommandContext& ctx) {
  const std::string& name = ctx.args[2];
  if (auto problem = UserNameProblem(name)) return ctx.ReplyError("ERR " + *problem);
  std::vector<std::string> rules(ctx.args.begin() + 3, ctx.args.end());
  for (const auto& rule : rules) {
    if (auto problem = RuleProblem(rule)) return ctx.ReplyError("ERR " + *problem);
  }
  auto current = ctx.executor.acl().Find(name);
  auto checked = acl::ApplyRules(current ? current->user : acl::NewUser(name), rules);
  if (!checked.ok()) return ctx.ReplyError("ERR " + checked.error().message);
  ctx.executor.acl().SetUser(name, std::move(rules),
                             [reply = StatusReply(ctx)](Status status) { Answer(reply, status); });
}

// GETUSER's parts, as ACL LIST writes them.
std::string KeysText(const acl::User& u) {
  std::string out;
  for (const auto& k : u.keys) {
    if (!out.empty()) out += ' ';
    out += k.read && k.write ? "~" : k.read ? "%R~" : "%W~";
    out += k.glob;
  }
  return out;
}

std::string ChannelsText(const acl::User& u) {
  std::string out;
  for (const auto& c : u.channels) out += (out.empty() ? "&" : " &") + c;
  return out;
}

std::string CommandsText(const acl::User& u) {
  std::string line = acl::Describe(u);
  // ACL LIST's line ends with the command rules: "-@all ..." or "+@all ...".
  size_t at = line.find(" -@all");
  if (at == std::string::npos) at = line.find(" +@all");
  return at == std::string::npos ? "" : line.substr(at + 1);
}

void GetUser(CommandContext& ctx) {
  auto found = ctx.executor.acl().Find(ctx.args[2]);
  Proto proto = ctx.client.proto;
  if (found == nullptr) return ctx.Reply(Null(proto));
  const acl::User& u = found->user;
  std::string out;
  AppendMapHeader(out, 6, proto);
  AppendBulk(out, "flags");
  std::vector<std::string_view> flags{u.enabled ? "on" : "off"};
  if (u.nopass) flags.push_back("nopass");
  AppendSetHeader(out, flags.size(), proto);
  for (auto f : flags) AppendBulk(out, f);
  AppendBulk(out, "passwords");
  AppendArrayHeader(out, u.password_hashes.size());
  for (const auto& hash : u.password_hashes) AppendBulk(out, hash);
  AppendBulk(out, "commands");
  AppendBulk(out, CommandsText(u));
  AppendBulk(out, "keys");
  AppendBulk(out, KeysText(u));
  AppendBulk(out, "channels");
  AppendBulk(out, ChannelsText(u));
  AppendBulk(out, "selectors");
  AppendArrayHeader(out, 0);
  ctx.Reply(std::move(out));
}

void DelUser(CommandContext& ctx) {
  std::vector<std::string> names(ctx.args.begin() + 2, ctx.args.end());
  for (const auto& name : names) {
    if (name == "default") return ctx.ReplyError("ERR The 'default' user cannot be removed");
    // As in Redis, a client deleting its own user is closed once it has the reply; other
    // clients of the user are closed at their next command.
    if (name == ctx.client.user_name) ctx.client.close_after_reply = true;
  }
  ctx.executor.acl().DelUsers(std::move(names), [reply = StatusReply(ctx)](Result<int64_t> n) {
    reply(n.ok() ? Integer(*n) : ErrorReply("ERR " + n.error().message));
  });
}

void Cat(CommandContext& ctx) {
  std::string out;
  if (ctx.args.size() == 2) {
    const auto& names = acl::CategoryNames();
    AppendArrayHeader(out, names.size());
    for (auto name : names) AppendBulk(out, name);
    return ctx.Reply(std::move(out));
  }
  auto commands = acl::CommandsIn(ctx.args[2]);
  if (!commands || ToLower(ctx.args[2]) == "all") {
    return ctx.ReplyError("ERR Unknown category '" + ctx.args[2].substr(0, 128) + "'");
  }
  AppendArrayHeader(out, commands->size());
  for (auto name : *commands) AppendBulk(out, name);
  ctx.Reply(std::move(out));
}

void Log(CommandContext& ctx) {
  auto& log = ctx.executor.acl().log();
  size_t count = 10;
  if (ctx.args.size() == 3) {
    if (EqualsIgnoreCase(ctx.args[2], "reset")) {
      log.Reset();
      return ctx.Reply(Simple("OK"));
    }
    int64_t n = 0;
    if (!ParseInt64(ctx.args[2], &n) || n < 0) return ctx.ReplyError(kNotInteger);
    count = static_cast<size_t>(n);
  }
  Proto proto = ctx.client.proto;
  UnixMillis now = ctx.executor.NowMs();
  auto entries = log.Newest(count);
  std::string out;
  AppendArrayHeader(out, entries.size());
  auto text = [&](std::string_view key, std::string_view value) {
    AppendBulk(out, key);
    AppendBulk(out, value);
  };
  auto number = [&](std::string_view key, uint64_t value) {
    AppendBulk(out, key);
    AppendInteger(out, static_cast<int64_t>(value));
  };
  for (const auto& e : entries) {
    AppendMapHeader(out, 10, proto);
    number("count", e.count);
    text("reason", e.reason);
    text("context", e.context);
    text("object", e.object);
    text("username", e.username);
    AppendBulk(out, "age-seconds");
    AppendDouble(out, static_cast<double>(now - e.created_ms) / 1000.0, proto);
    text("client-info", e.client_info);
    number("entry-id", e.entry_id);
    number("timestamp-created", static_cast<uint64_t>(e.created_ms));
    number("timestamp-last-updated", static_cast<uint64_t>(e.updated_ms));
  }
  ctx.Reply(std::move(out));
}

void GenPass(CommandContext& ctx) {
  int64_t bits = 256;
  if (ctx.args.size() == 3 && (!ParseInt64(ctx.args[2], &bits) || bits <= 0 || bits > 4096)) {
    return ctx.ReplyError(
        "ERR ACL GENPASS argument must be the number of bits for the output password, a "
        "positive number up to 4096");
  }
  size_t chars = static_cast<size_t>((bits + 3) / 4);
  std::string random((chars + 1) / 2, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(random.data()),
                 static_cast<int>(random.size())) != 1) {
    return ctx.ReplyError("ERR the random number generator failed");
  }
  std::string hex = HexOf(random);
  hex.resize(chars);
  ctx.Reply(Bulk(hex));
}

void DryRun(CommandContext& ctx) {
  auto user = ctx.executor.acl().Find(ctx.args[2]);
  if (user == nullptr)
    return ctx.ReplyError("ERR User '" + ctx.args[2].substr(0, 128) + "' not found");
  const CommandSpec* spec = FindCommand(ToLower(ctx.args[3]));
  if (spec == nullptr) {
    return ctx.ReplyError("ERR Command '" + ctx.args[3].substr(0, 128) + "' not found");
  }
  std::vector<std::string> args(ctx.args.begin() + 3, ctx.args.end());
  if (!ArityOk(*spec, args.size())) return ctx.ReplyError(WrongArity(spec->name));
  auto denied = AclRefusal(ctx.executor, ctx.client, *user, *spec, args, "toplevel",
                           /*dry_run=*/true);
  if (!denied) return ctx.Reply(Simple("OK"));
  // Redis answers the reason as a string, without the error code.
  ctx.Reply(Bulk("T" + denied->substr(std::string_view("NOPERM t").size())));
}

void Help(CommandContext& ctx) {
  static constexpr std::string_view kLines[] = {
      "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "CAT [<category>]",
      "DELUSER <username> [<username> ...]",
      "DRYRUN <username> <command> [<arg> ...]",
      "GETUSER <username>",
      "GENPASS [<bits>]",
      "LIST",
      "LOAD",
      "LOG [<count> | RESET]",
      "SAVE",
      "SETUSER <username> <attribs> ...",
      "USERS",
      "WHOAMI",
      "HELP"};
  std::string out;
  AppendArrayHeader(out, std::size(kLines));
  for (auto line : kLines) AppendSimple(out, line);
  ctx.Reply(std::move(out));
}

}  // namespace

void CmdAcl(CommandContext& ctx) {
  std::string sub = ToLower(ctx.args[1]);
  size_t n = ctx.args.size();
  auto arity = [&](size_t min, size_t max) { return n >= min && n <= max; };
  auto& service = ctx.executor.acl();
  if (sub == "setuser" && n >= 3) return SetUser(ctx);
  if (sub == "getuser" && n == 3) return GetUser(ctx);
  if (sub == "deluser" && n >= 3) return DelUser(ctx);
  if (sub == "cat" && arity(2, 3)) return Cat(ctx);
  if (sub == "log" && arity(2, 3)) return Log(ctx);
  if (sub == "genpass" && arity(2, 3)) return GenPass(ctx);
  if (sub == "dryrun" && n >= 4) return DryRun(ctx);
  if (sub == "help" && n == 2) return Help(ctx);
  if (sub == "whoami" && n == 2) return ctx.Reply(Bulk(ctx.client.user_name));
  if ((sub == "list" || sub == "users") && n == 2) {
    auto users = service.All();
    std::string out;
    AppendArrayHeader(out, users.size());
    for (const auto& u : users) {
      AppendBulk(out, sub == "list" ? acl::Describe(u->user) : u->user.name);
    }
    return ctx.Reply(std::move(out));
  }
  if ((sub == "save" || sub == "load") && n == 2) {
    if (!service.has_file()) return ctx.ReplyError(kNoFile);
    auto done = [reply = StatusReply(ctx)](Status status) { Answer(reply, status); };
    return sub == "save" ? service.SaveFile(std::move(done)) : service.LoadFile(std::move(done));
  }
  // Redis 7's subcommand arities: too few (or a fixed arity missed) is the usual arity error;
  // too many for CAT, LOG and GENPASS, and an unknown subcommand, have their own texts.
  static const std::map<std::string_view, int> kArity{
      {"setuser", -3}, {"getuser", 3}, {"deluser", -3}, {"cat", -2},   {"log", -2},
      {"genpass", -2}, {"dryrun", -4}, {"help", 2},     {"whoami", 2}, {"list", 2},
      {"users", 2},    {"save", 2},    {"load", 2}};
  auto known = kArity.find(sub);
  if (known == kArity.end()) {
    return ctx.ReplyError("ERR unknown subcommand '" + ctx.args[1].substr(0, 128) +
                          "'. Try ACL HELP.");
  }
  if (known->second > 0 || n < static_cast<size_t>(-known->second)) {
    return ctx.ReplyError(WrongArity("acl|" + sub));
  }
  ctx.ReplyError("ERR unknown subcommand or wrong number of arguments for '" +
                 ctx.args[1].substr(0, 128) + "'. Try ACL HELP.");
}

}  // namespace skydb::resp
