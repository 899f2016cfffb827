// String commands: GET, SET, SETNX, SETEX, PSETEX, GETEX, GETDEL, MGET, and the counters INCR,
// INCRBY, DECR, DECRBY, INCRBYFLOAT.
#include <atomic>
#include <limits>
#include <memory>
#include <mutex>

#include "base/strings.h"
#include "resp/command_table.h"
#include "resp/encoder.h"
#include "skydb/log.h"
#include "skydb/mutex.h"

namespace skydb::resp {
namespace {

constexpr int64_t kMaxMillis = std::numeric_limits<int64_t>::max();

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

// Encodes a value or its absence in the client's protocol.
auto OptionalBulkIn(const CommandContext& ctx) {
  return [proto = ctx.client.proto](const std::optional<std::string>& v) {
    return OptionalBulk(v, proto);
  };
}

void SubmitSet(CommandContext& ctx, SetRequest request) {
  bool return_old = request.return_old;
  Proto proto = ctx.client.proto;
  ctx.store().Set(std::move(request),
                  ReplyWith<SetReply>(ctx, [return_old, proto](const SetReply& r) {
                    if (return_old) return OptionalBulk(r.old_value, proto);
                    return r.applied ? Simple("OK") : Null(proto);
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

// Collects MGET's per-key answers, which may arrive on several threads, into one reply. Each
// value is claimed against the connection's budget as it arrives, so the gather never holds
// more than the connection may: a reply that would pass max_output_buffer on its own is refused
// with an error (the values so far are dropped), and one refused by a budget already full
// closes the connection. Either way later values are dropped as they come.
class MGetGather {
 public:
  MGetGather(size_t n, ReplyFn reply, uint64_t client_id, Proto proto)
      : header_(BulkReplySize(n) - n),  // "*<n>\r\n" and a little more
        proto_(proto),
        values_(n),
        remaining_(n),
        claim_(reply.EmptyClaim()),
        reply_(std::move(reply)),
        client_id_(client_id) {}

  bool finished() const { return finished_.load(std::memory_order_acquire); }

  void Done(size_t index, Result<std::optional<std::string>> result) {
    MutexLock lock(mu_);  // held to the end: the reply reads the gathered values
    std::optional<std::string> refusal;
    if (finished()) {
      // replied already: drop the value
    } else if (!result.ok()) {
      if (!error_) error_ = std::move(result).error();
    } else if (!Keep(index, std::move(result.value()), &refusal)) {
      values_.clear();
      claim_ = ReplyClaim();  // released now, not when the last key's answer comes
      finished_.store(true, std::memory_order_release);
      return reply_(ErrorReply(*refusal));
    }
    if (--remaining_ > 0 || finished()) return;
    finished_.store(true, std::memory_order_release);
    if (error_) return reply_(ErrorReply(StoreErrorText(*error_)));
    std::string out;
    out.reserve(header_ + claim_.bytes());
    AppendArrayHeader(out, values_.size());
    for (auto& v : values_) {
      AppendOptionalBulk(out, v, proto_);
      v.reset();  // freed as it is copied, so the gather and the reply are not both whole
    }
    reply_(std::move(out), std::move(claim_));
  }

 private:
  // Claims and keeps one value; false with the refusal's text when the budget says no.
  bool Keep(size_t index, std::optional<std::string> value, std::optional<std::string>* refusal)
      REQUIRES(mu_) {
    size_t bytes = value ? BulkReplySize(value->size()) : NullBulk().size();
    if (header_ + claim_.bytes() + bytes > reply_.limit()) {
      spdlog::info(
          "resp: client id={}: MGET of {} keys refused: its reply would exceed "
          "resp.max_output_buffer = {} bytes",
          client_id_, values_.size(), reply_.limit());
      *refusal = ReplyTooLarge(reply_.limit(), "ask for fewer keys at a time");
      return false;
    }
    if (!claim_.Extend(bytes)) {
      *refusal = kReplyDropped;
      return false;
    }
    values_[index] = std::move(value);
    return true;
  }

  const size_t header_;
  const Proto proto_;
  Mutex mu_;
  std::vector<std::optional<std::string>> values_ GUARDED_BY(mu_);
  size_t remaining_ GUARDED_BY(mu_);
  std::optional<Error> error_ GUARDED_BY(mu_);
  ReplyClaim claim_ GUARDED_BY(mu_);
  std::atomic<bool> finished_{false};  // replied (or replying)
  ReplyFn reply_;
  uint64_t client_id_;
};

void SubmitIncrement(CommandContext& ctx, IncrRequest request) {
  bool is_float = request.is_float;
  ctx.store().Increment(std::move(request),
                        ReplyWith<IncrReply>(ctx, [is_float](const IncrReply& r) {
                          return is_float ? Bulk(r.text) : Integer(r.integer);
                        }));
}

// INCR/DECR (by 1) and INCRBY/DECRBY (by the argument); `sign` -1 for the DECRs.
void IntegerIncrement(CommandContext& ctx, int64_t sign) {
  int64_t by = 1;
  if (ctx.args.size() > 2 && !ParseInt64(ctx.args[2], &by)) return ctx.ReplyError(kNotInteger);
  if (sign < 0 && by == std::numeric_limits<int64_t>::min()) {
    return ctx.ReplyError("ERR decrement would overflow");  // Redis's text for DECRBY
  }
  SubmitIncrement(ctx, IncrRequest::Integer(std::move(ctx.args[1]), sign * by));
}

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
  int64_t ms = seconds && amount <= kMaxMillis / 1000 ? amount * 1000 : amount;
  if (amount <= 0 || (seconds && amount > kMaxMillis / 1000) ||
      (relative && ms > kMaxMillis - now)) {
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

namespace {

// GET's reply built where the store keeps the value (one copy), under the claim ReplyWith
// would take for it.
struct InPlaceReply {
  std::string text;
  std::optional<ReplyClaim> claim;
  bool given = false;  // built straight into the connection's output
};

void EncodeInPlace(const ReplyFn& reply, Proto proto, const std::string* value, InPlaceReply* out) {
  if (value == nullptr) {
    AppendNull(out->text, proto);
    return;
  }
  size_t bytes = BulkReplySize(value->size());
  out->claim = ClaimWithin(reply, bytes, &out->text);
  if (!out->claim) return;
  out->given =
      reply.BuildInPlace(*out->claim, [&](std::string& into) { AppendBulk(into, *value); });
  if (out->given) return;
  out->text.reserve(bytes);
  AppendBulk(out->text, *value);
}

}  // namespace

void CmdGet(CommandContext& ctx) {
  InPlaceReply in_place;
  bool served = ctx.store().GetInPlace(ctx.args[1], [&](const std::string* value) {
    EncodeInPlace(ctx.reply, ctx.client.proto, value, &in_place);
  });
  if (served) {
    if (in_place.given) return;
    if (!in_place.claim) return ctx.reply(std::move(in_place.text));
    return ctx.reply(std::move(in_place.text), std::move(*in_place.claim));
  }
  ctx.store().Get(std::move(ctx.args[1]),
                  ReplyWith<std::optional<std::string>>(ctx, OptionalBulkIn(ctx)));
}

void CmdGetDel(CommandContext& ctx) {
  ctx.store().GetDel(std::move(ctx.args[1]),
                     ReplyWith<std::optional<std::string>>(ctx, OptionalBulkIn(ctx)));
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

// SETNX key value: SET NX answering 1 or 0.
void CmdSetNx(CommandContext& ctx) {
  SetRequest request{std::move(ctx.args[1]), std::move(ctx.args[2]), Expiry::Default(),
                     SetCondition::kIfAbsent};
  ctx.store().Set(std::move(request), ReplyWith<SetReply>(ctx, [](const SetReply& r) {
                    return Integer(r.applied ? 1 : 0);
                  }));
}

void CmdIncr(CommandContext& ctx) { IntegerIncrement(ctx, 1); }
void CmdIncrBy(CommandContext& ctx) { IntegerIncrement(ctx, 1); }
void CmdDecr(CommandContext& ctx) { IntegerIncrement(ctx, -1); }
void CmdDecrBy(CommandContext& ctx) { IntegerIncrement(ctx, -1); }

void CmdIncrByFloat(CommandContext& ctx) {
  long double by = 0;
  if (!ParseRedisLongDouble(ctx.args[2], &by)) {
    return ctx.ReplyError("ERR value is not a valid float");
  }
  SubmitIncrement(ctx, IncrRequest::Float(std::move(ctx.args[1]), by));
}

// APPEND key value: the value's new length; a missing key is created as INCR creates one.
void CmdAppend(CommandContext& ctx) {
  SubmitIncrement(ctx, IncrRequest::Append(std::move(ctx.args[1]), std::move(ctx.args[2])));
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
    return ctx.store().Get(std::move(ctx.args[1]),
                           ReplyWith<std::optional<std::string>>(
                               ctx,
                               [error = std::move(error), proto = ctx.client.proto](const auto& v) {
                                 return v ? ErrorReply(error) : Null(proto);
                               },
                               /*small=*/true));
  }
  ctx.store().GetEx(std::move(ctx.args[1]), change,
                    ReplyWith<std::optional<std::string>>(ctx, OptionalBulkIn(ctx)));
}

// Every GET is issued before any answer is awaited, so a durable store can load them together;
// once the gather has refused the reply, the remaining keys are not asked for.
void CmdMGet(CommandContext& ctx) {
  size_t n = ctx.args.size() - 1;
  auto gather =
      std::make_shared<MGetGather>(n, std::move(ctx.reply), ctx.client.id, ctx.client.proto);
  for (size_t i = 0; i < n && !gather->finished(); ++i) {
    ctx.store().Get(std::move(ctx.args[i + 1]), [gather, i](Result<std::optional<std::string>> r) {
      gather->Done(i, std::move(r));
    });
  }
}

}  // namespace skydb::resp
