// String commands: GET, SET, SETEX, PSETEX, GETEX, GETDEL, MGET.
#include <limits>
#include <memory>
#include <mutex>

#include "resp/command_table.h"
#include "resp/encoder.h"

namespace skydb::resp {
namespace {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

struct ExpireOption {
  std::optional<ExpireUnit> unit;
  std::string_view value;
};

// SET's options, with Redis's rule that conflicting ones are a syntax error (repeating the
// same expiry option is allowed; the last one wins).
bool ParseSetOptions(CommandContext& ctx, SetRequest* request, ExpireOption* expire) {
  bool nx = false, xx = false, keepttl = false;
  auto& args = ctx.args;
  for (size_t i = 3; i < args.size(); ++i) {
    const std::string& opt = args[i];
    auto unit = ExpireUnitFromOption(opt);
    if (EqualsIgnoreCase(opt, "nx") && !xx) {
      nx = true;
    } else if (EqualsIgnoreCase(opt, "xx") && !nx) {
      xx = true;
    } else if (EqualsIgnoreCase(opt, "get")) {
      request->return_old = true;
    } else if (EqualsIgnoreCase(opt, "keepttl") && !expire->unit) {
      keepttl = true;
    } else if (unit && !keepttl && (!expire->unit || expire->unit == unit) && i + 1 < args.size()) {
      expire->unit = unit;
      expire->value = args[++i];
    } else {
      ctx.ReplyError(kSyntaxError);
      return false;
    }
  }
  request->condition = nx   ? SetCondition::kIfAbsent
                       : xx ? SetCondition::kIfPresent
                            : SetCondition::kAlways;
  if (keepttl) request->expiry = Expiry::Keep();
  return true;
}

void SubmitSet(CommandContext& ctx, SetRequest request) {
  bool return_old = request.return_old;
  ctx.store().Set(std::move(request), ReplyWith<SetReply>(ctx, [return_old](const SetReply& r) {
                    if (return_old) return OptionalBulk(r.old_value);
                    return r.applied ? Simple("OK") : NullBulk();
                  }));
}

// SETEX key seconds value / PSETEX key milliseconds value.
void SetWithExpire(CommandContext& ctx, ExpireUnit unit, std::string_view name) {
  auto at = ParseSetExpire(ctx, ctx.args[2], unit, name);
  if (!at) return;
  SetRequest request{std::move(ctx.args[1]), std::move(ctx.args[3]), Expiry::At(*at)};
  SubmitSet(ctx, std::move(request));
}

// GETEX's options, syntax only: Redis validates the expiry after looking the key up. False
// when an error was replied.
bool ParseGetExOptions(CommandContext& ctx, bool* persist, ExpireOption* expire) {
  auto& args = ctx.args;
  for (size_t i = 2; i < args.size(); ++i) {
    auto unit = ExpireUnitFromOption(args[i]);
    if (EqualsIgnoreCase(args[i], "persist") && !expire->unit) {
      *persist = true;
    } else if (unit && !*persist && (!expire->unit || expire->unit == unit) &&
               i + 1 < args.size()) {
      expire->unit = unit;
      expire->value = args[++i];
    } else {
      ctx.ReplyError(kSyntaxError);
      return false;
    }
  }
  return true;
}

// Collects MGET's per-key answers, which may arrive on several threads, into one reply.
struct MGetGather {
  explicit MGetGather(size_t n, ReplyFn r) : values(n), remaining(n), reply(std::move(r)) {}
  std::mutex mu;
  std::vector<std::optional<std::string>> values;
  size_t remaining;
  std::optional<Error> error;
  ReplyFn reply;

  void Done(size_t index, Result<std::optional<std::string>> result) {
    std::unique_lock<std::mutex> lock(mu);
    if (result.ok()) {
      values[index] = std::move(result.value());
    } else if (!error) {
      error = std::move(result).error();
    }
    if (--remaining > 0) return;
    lock.unlock();  // the last answer replies; nobody else touches the gather any more
    if (error) return reply(ErrorReply(StoreErrorText(*error)));
    std::string out;
    AppendArrayHeader(out, values.size());
    for (const auto& v : values) AppendOptionalBulk(out, v);
    reply(std::move(out));
  }
};

}  // namespace

std::optional<ExpireUnit> ExpireUnitFromOption(std::string_view option) {
  if (EqualsIgnoreCase(option, "ex")) return ExpireUnit::kSeconds;
  if (EqualsIgnoreCase(option, "px")) return ExpireUnit::kMillis;
  if (EqualsIgnoreCase(option, "exat")) return ExpireUnit::kUnixSeconds;
  if (EqualsIgnoreCase(option, "pxat")) return ExpireUnit::kUnixMillis;
  return std::nullopt;
}

std::optional<UnixMillis> SetExpireDeadline(std::string_view value, ExpireUnit unit,
                                            std::string_view command, UnixMillis now,
                                            std::string* error) {
  int64_t amount = 0;
  if (!ParseInt64(value, &amount)) {
    *error = kNotInteger;
    return std::nullopt;
  }
  bool seconds = unit == ExpireUnit::kSeconds || unit == ExpireUnit::kUnixSeconds;
  bool relative = unit == ExpireUnit::kSeconds || unit == ExpireUnit::kMillis;
  int64_t ms = seconds && amount <= kMaxInt64 / 1000 ? amount * 1000 : amount;
  if (amount <= 0 || (seconds && amount > kMaxInt64 / 1000) || (relative && ms > kMaxInt64 - now)) {
    *error = InvalidExpire(command);
    return std::nullopt;
  }
  return relative ? now + ms : ms;
}

std::optional<UnixMillis> ParseSetExpire(CommandContext& ctx, std::string_view value,
                                         ExpireUnit unit, std::string_view command) {
  std::string error;
  auto at = SetExpireDeadline(value, unit, command, ctx.executor.NowMs(), &error);
  if (!at) ctx.ReplyError(error);
  return at;
}

void CmdGet(CommandContext& ctx) {
  ctx.store().Get(std::move(ctx.args[1]), ReplyWith<std::optional<std::string>>(
                                              ctx, [](const auto& v) { return OptionalBulk(v); }));
}

void CmdGetDel(CommandContext& ctx) {
  ctx.store().GetDel(
      std::move(ctx.args[1]),
      ReplyWith<std::optional<std::string>>(ctx, [](const auto& v) { return OptionalBulk(v); }));
}

// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ms|KEEPTTL]
void CmdSet(CommandContext& ctx) {
  SetRequest request;
  ExpireOption expire;
  if (!ParseSetOptions(ctx, &request, &expire)) return;
  if (expire.unit) {
    auto at = ParseSetExpire(ctx, expire.value, *expire.unit, "set");
    if (!at) return;
    request.expiry = Expiry::At(*at);
  }
  request.key = std::move(ctx.args[1]);
  request.value = std::move(ctx.args[2]);
  SubmitSet(ctx, std::move(request));
}

void CmdSetEx(CommandContext& ctx) { SetWithExpire(ctx, ExpireUnit::kSeconds, "setex"); }
void CmdPSetEx(CommandContext& ctx) { SetWithExpire(ctx, ExpireUnit::kMillis, "psetex"); }

// GETEX key [EX s|PX ms|EXAT ts|PXAT ms|PERSIST]. An invalid expiry is an error only for a key
// that exists; a missing key is nil, as in Redis 7.
void CmdGetEx(CommandContext& ctx) {
  bool persist = false;
  ExpireOption expire;
  if (!ParseGetExOptions(ctx, &persist, &expire)) return;
  std::optional<Expiry> change;
  if (persist) change = Expiry::None();
  std::string error;
  if (expire.unit) {
    auto at = SetExpireDeadline(expire.value, *expire.unit, "getex", ctx.executor.NowMs(), &error);
    if (at) change = Expiry::At(*at);
  }
  if (!error.empty()) {
    return ctx.store().Get(
        std::move(ctx.args[1]),
        ReplyWith<std::optional<std::string>>(ctx, [error = std::move(error)](const auto& v) {
          return v ? ErrorReply(error) : NullBulk();
        }));
  }
  ctx.store().GetEx(
      std::move(ctx.args[1]), change,
      ReplyWith<std::optional<std::string>>(ctx, [](const auto& v) { return OptionalBulk(v); }));
}

// Every GET is issued before any answer is awaited, so a durable store can load them together.
void CmdMGet(CommandContext& ctx) {
  size_t n = ctx.args.size() - 1;
  auto gather = std::make_shared<MGetGather>(n, std::move(ctx.reply));
  for (size_t i = 0; i < n; ++i) {
    ctx.store().Get(std::move(ctx.args[i + 1]), [gather, i](Result<std::optional<std::string>> r) {
      gather->Done(i, std::move(r));
    });
  }
}

}  // namespace skydb::resp
