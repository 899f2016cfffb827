// CONFIG GET / SET / RESETSTAT / HELP: Redis's parameters that mean something to skydb, each
// mapped to the skydb setting behind it. Those that can change while the server runs
// (notify-keyspace-events, timeout, loglevel, maxmemory, and Redis's encoding thresholds, kept
// without effect) are settable; the others answer Redis's
// "can't set immutable config", and names Redis does not have, or skydb has no meaning for,
// are absent from GET and "Unknown option" to SET, as in Redis. One declarative row per
// parameter.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <optional>

#include "base/strings.h"
#include "resp/command_table.h"
#include "resp/encoder.h"

namespace skydb::resp {
namespace {

// CONFIG SET's check and change of one parameter: nullopt when `value` is applied, else the
// reason Redis gives after "CONFIG SET failed (possibly related to argument '...') - ".
using ConfigSetter =
    std::function<std::optional<std::string>(CommandContext&, const std::string&, bool apply)>;

struct ConfigParam {
  const char* name;
  std::function<std::string(CommandContext&)> get;
  ConfigSetter set;  // null: immutable
};

// Redis's loglevel names and the spdlog levels they map to (verbose and notice are both info).
struct LogLevelName {
  const char* redis;
  spdlog::level::level_enum level;
};
constexpr LogLevelName kLogLevels[] = {{"debug", spdlog::level::debug},
                                       {"verbose", spdlog::level::info},
                                       {"notice", spdlog::level::info},
                                       {"warning", spdlog::level::warn}};

std::string CurrentLogLevel() {
  spdlog::level::level_enum now = spdlog::get_level();
  if (now <= spdlog::level::debug) return "debug";
  if (now == spdlog::level::info) return "notice";
  return "warning";
}

std::optional<std::string> SetLogLevel(CommandContext&, const std::string& value, bool apply) {
  const auto* found =
      std::find_if(std::begin(kLogLevels), std::end(kLogLevels),
                   [&](const LogLevelName& l) { return EqualsIgnoreCase(value, l.redis); });
  if (found == std::end(kLogLevels)) {
    return "argument(s) must be one of the following: debug, verbose, notice, warning";
  }
  if (apply) spdlog::set_level(found->level);
  return std::nullopt;
}

std::optional<std::string> SetTimeout(CommandContext& ctx, const std::string& value, bool apply) {
  int64_t seconds = 0;
  if (!ParseInt64(value, &seconds)) return "argument couldn't be parsed into an integer";
  if (seconds < 0 || seconds > 24 * 3600) return "argument must be between 0 and 86400 inclusive";
  if (apply) ctx.executor.settings().set_idle_timeout(std::chrono::seconds(seconds));
  return std::nullopt;
}

std::optional<std::string> SetNotify(CommandContext& ctx, const std::string& value, bool apply) {
  auto classes = ParseNotifyClasses(value);
  if (!classes) return std::string(kBadNotifyClasses);
  if (apply) ctx.executor.notifier().set_classes(*classes);
  return std::nullopt;
}

// One of Redis's encoding thresholds (RuntimeSettings::Threshold): a size, kept and shown.
ConfigParam Threshold(const char* name, RuntimeSettings::Threshold which) {
  return {
      name,
      [which](CommandContext& c) { return std::to_string(c.executor.settings().threshold(which)); },
      [which](CommandContext& c, const std::string& value,
              bool apply) -> std::optional<std::string> {
        int64_t n = 0;
        if (!ParseInt64(value, &n)) return "argument couldn't be parsed into an integer";
        if (n < 0) return "argument must be between 0 and 9223372036854775807 inclusive";
        if (apply) c.executor.settings().set_threshold(which, n);
        return std::nullopt;
      }};
}

// A memory value as Redis reads one: digits and an optional unit, k/m/g (10^3) or kb/mb/gb
// (2^10), any case.
std::optional<uint64_t> ParseMemory(const std::string& value) {
  size_t digits = 0;
  while (digits < value.size() && value[digits] >= '0' && value[digits] <= '9') ++digits;
  int64_t n = 0;
  if (digits == 0 || !ParseInt64(value.substr(0, digits), &n)) return std::nullopt;
  static const std::pair<const char*, uint64_t> kUnits[] = {
      {"", 1},        {"b", 1},        {"k", 1000},       {"kb", 1024},
      {"m", 1000000}, {"mb", 1 << 20}, {"g", 1000000000}, {"gb", uint64_t{1} << 30}};
  std::string unit = ToLower(value.substr(digits));
  for (const auto& [name, factor] : kUnits) {
    if (unit != name) continue;
    if (static_cast<uint64_t>(n) > UINT64_MAX / factor) return std::nullopt;
    return static_cast<uint64_t>(n) * factor;
  }
  return std::nullopt;
}

std::optional<std::string> SetMaxMemory(CommandContext& ctx, const std::string& value, bool apply) {
  auto bytes = ParseMemory(value);
  if (!bytes) return "argument must be a memory value";
  if (!apply) return std::nullopt;
  Status set = ctx.executor.store().SetMaxMemory(*bytes);
  if (!set.ok()) return set.error().message;
  return std::nullopt;
}

std::string Fixed(const char* value) { return value; }

const std::vector<ConfigParam>& Params() {
  static const auto* params = new std::vector<ConfigParam>{
      {"notify-keyspace-events",
       [](CommandContext& c) { return NotifyClassesText(c.executor.notifier().classes()); },
       SetNotify},
      {"timeout",
       [](CommandContext& c) {
         auto ms = c.executor.settings().idle_timeout();
         return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(ms).count());
       },
       SetTimeout},
      {"loglevel", [](CommandContext&) { return CurrentLogLevel(); }, SetLogLevel},
      {"maxclients",
       [](CommandContext& c) { return std::to_string(c.executor.config().max_clients); }, nullptr},
      {"maxmemory",
       [](CommandContext& c) {
         return std::to_string(c.executor.store().Stats().max_memory_bytes);
       },
       SetMaxMemory},
      // Keys never leave: only clean values leave memory, and PostgreSQL keeps them.
      {"maxmemory-policy", [](CommandContext&) { return Fixed("noeviction"); }, nullptr},
      // store.durability: sync is always, async everysec; a memory store keeps nothing.
      {"appendfsync",
       [](CommandContext& c) {
         std::string durability = c.executor.store().Stats().durability;
         if (durability == "sync") return Fixed("always");
         return Fixed(durability == "async" ? "everysec" : "no");
       },
       nullptr},
      {"port", [](CommandContext& c) { return std::to_string(c.executor.config().tcp_port); },
       nullptr},
      {"unixsocket", [](CommandContext& c) { return c.executor.config().unix_path; }, nullptr},
      {"io-threads", [](CommandContext& c) { return std::to_string(c.executor.config().threads); },
       nullptr},
      // No snapshots: "" (none, which Redis's tests and tools set) is taken, nothing else.
      {"save", [](CommandContext&) { return Fixed(""); },
       [](CommandContext&, const std::string& value, bool) -> std::optional<std::string> {
         if (value.find_first_not_of(' ') == std::string::npos) return std::nullopt;
         return "skydb writes no snapshots (sessions are durable in PostgreSQL): only \"\" is "
                "accepted";
       }},
      {"appendonly", [](CommandContext&) { return Fixed("no"); }, nullptr},
      {"databases", [](CommandContext&) { return Fixed("1"); }, nullptr},
      // Accepted and shown, without effect: skydb keeps every hash and set one way.
      Threshold("hash-max-listpack-entries", RuntimeSettings::kHashEntries),
      Threshold("hash-max-ziplist-entries", RuntimeSettings::kHashEntries),
      Threshold("hash-max-listpack-value", RuntimeSettings::kHashValue),
      Threshold("hash-max-ziplist-value", RuntimeSettings::kHashValue),
      Threshold("set-max-intset-entries", RuntimeSettings::kSetIntsetEntries),
  };
  return *params;
}

const ConfigParam* FindParam(std::string_view name) {
  for (const ConfigParam& p : Params()) {
    if (EqualsIgnoreCase(p.name, name)) return &p;
  }
  return nullptr;
}

// CONFIG GET pattern [pattern ...]: every parameter some pattern matches (Redis globs, case
// folded), once each.
void ConfigGet(CommandContext& ctx) {
  if (ctx.args.size() < 3) return ctx.ReplyError(WrongArity("config|get"));
  std::vector<std::pair<std::string, std::string>> found;
  for (const ConfigParam& p : Params()) {
    bool asked = std::any_of(ctx.args.begin() + 2, ctx.args.end(),
                             [&](const std::string& a) { return GlobMatch(ToLower(a), p.name); });
    if (asked) found.emplace_back(p.name, p.get(ctx));
  }
  std::string out;
  AppendMapHeader(out, found.size(), ctx.client.proto);
  for (const auto& [name, value] : found) {
    AppendBulk(out, name);
    AppendBulk(out, value);
  }
  ctx.Reply(std::move(out));
}

std::string SetFailed(std::string_view name, std::string_view why) {
  return "ERR CONFIG SET failed (possibly related to argument '" + std::string(name) + "') - " +
         std::string(why);
}

// CONFIG SET name value [name value ...]: all checked first, then all applied, as Redis 7 does.
void ConfigSet(CommandContext& ctx) {
  if (ctx.args.size() < 4) return ctx.ReplyError(WrongArity("config|set"));
  if (ctx.args.size() % 2 != 0) return ctx.ReplyError(kSyntaxError);
  std::vector<const ConfigParam*> params;
  for (size_t i = 2; i < ctx.args.size(); i += 2) {
    const ConfigParam* p = FindParam(ctx.args[i]);
    if (p == nullptr) {
      return ctx.ReplyError("ERR Unknown option or number of arguments for CONFIG SET - '" +
                            ctx.args[i].substr(0, 128) + "'");
    }
    if (!p->set) return ctx.ReplyError(SetFailed(ctx.args[i], "can't set immutable config"));
    if (std::find(params.begin(), params.end(), p) != params.end()) {
      return ctx.ReplyError(SetFailed(ctx.args[i], "duplicate parameter"));
    }
    if (auto why = p->set(ctx, ctx.args[i + 1], /*apply=*/false)) {
      return ctx.ReplyError(SetFailed(p->name, *why));
    }
    params.push_back(p);
  }
  for (size_t i = 0; i < params.size(); ++i) params[i]->set(ctx, ctx.args[3 + 2 * i], true);
  ctx.Reply(Simple("OK"));
}

void ConfigHelp(CommandContext& ctx) {
  static const char* const kHelp[] = {
      "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "GET <pattern>",
      "    Return parameters matching the glob-like <pattern> and their values.",
      "SET <directive> <value>",
      "    Set the configuration <directive> to <value>.",
      "RESETSTAT",
      "    Reset statistics reported by the INFO command.",
      "HELP",
      "    Print this help."};
  std::string out;
  AppendArrayHeader(out, std::size(kHelp));
  for (const char* line : kHelp) AppendSimple(out, line);
  ctx.Reply(std::move(out));
}

}  // namespace

void CmdConfig(CommandContext& ctx) {
  const std::string& sub = ctx.args[1];
  if (EqualsIgnoreCase(sub, "get")) return ConfigGet(ctx);
  if (EqualsIgnoreCase(sub, "set")) return ConfigSet(ctx);
  if (EqualsIgnoreCase(sub, "help") && ctx.args.size() == 2) return ConfigHelp(ctx);
  if (EqualsIgnoreCase(sub, "resetstat") && ctx.args.size() == 2) {
    ctx.executor.counters().commands->Reset();
    return ctx.Reply(Simple("OK"));
  }
  if (EqualsIgnoreCase(sub, "help") || EqualsIgnoreCase(sub, "resetstat")) {
    return ctx.ReplyError(WrongArity("config|" + ToLower(sub)));
  }
  ctx.ReplyError("ERR unknown subcommand '" + sub.substr(0, 128) + "'. Try CONFIG HELP.");
}

}  // namespace skydb::resp
