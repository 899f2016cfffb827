// The hash field deadline commands of Redis 7.4 and 8: HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT,
// HTTL, HPTTL, HPERSIST, HGETEX, HSETEX and HGETDEL, their arguments checked with Redis's errors.
#include <limits>

#include "base/strings.h"
#include "resp/command_table.h"
#include "resp/encoder.h"
#include "resp/store_reply.h"

namespace skydb::resp {
namespace {

using Kind = CollectionOp::Kind;

// An expiry option at `at` (EX/PX/EXAT/PXAT value, and PERSIST or KEEPTTL when allowed):
// how many arguments it took (0: none there), or -1 when it replied an error.
int ExpiryOption(CommandContext& ctx, size_t at, std::string_view also, CollectionOp* op) {
  auto& args = ctx.args;
  if (at >= args.size()) return 0;
  if (!also.empty() && EqualsIgnoreCase(args[at], also)) {
    op->expiry = EqualsIgnoreCase(also, "persist") ? Expiry::None() : Expiry::Keep();
    return 1;
  }
  auto unit = ExpireUnitFromOption(args[at]);
  if (!unit) return 0;
  if (at + 1 >= args.size()) {
    ctx.ReplyError(kSyntaxError);
    return -1;
  }
  auto when = ParseSetExpire(ctx, args[at + 1], *unit, ToLower(args[0]));
  if (!when) return -1;
  op->expiry = Expiry::At(*when);
  return 2;
}

// HEXPIRE key time [NX|XX|GT|LT] FIELDS n field...: the deadline from `unit`.
void FieldExpire(CommandContext& ctx, ExpireUnit unit) {
  CollectionOp op;
  op.kind = Kind::kHExpire;
  op.keys.push_back(ctx.args[1]);
  int64_t amount = 0;
  if (!ParseInt64(ctx.args[2], &amount)) return ctx.ReplyError(kNotInteger);
  // Redis accepts 0 and past times here: the fields are deleted (reply 2).
  bool seconds = unit == ExpireUnit::kSeconds || unit == ExpireUnit::kUnixSeconds;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 1000;
  if (amount < 0 || (seconds && amount > kMax))
    return ctx.ReplyError(InvalidExpire(ToLower(ctx.args[0])));
  int64_t millis = seconds ? amount * 1000 : amount;
  bool relative = unit == ExpireUnit::kSeconds || unit == ExpireUnit::kMillis;
  UnixMillis now = ctx.executor.NowMs();
  if (relative && millis > std::numeric_limits<int64_t>::max() - now) {
    return ctx.ReplyError(InvalidExpire(ToLower(ctx.args[0])));
  }
  op.expiry = Expiry::At(relative ? now + millis : millis);
  size_t at = 3;
  if (at < ctx.args.size()) {
    std::string cond = ToLower(ctx.args[at]);
    if (cond == "nx" || cond == "xx" || cond == "gt" || cond == "lt") {
      op.condition.if_none = cond == "nx";
      op.condition.if_any = cond == "xx";
      op.condition.if_later = cond == "gt";
      op.condition.if_earlier = cond == "lt";
      ++at;
    }
  }
  if (!FieldsClause(ctx, at, false, &op)) return;
  SubmitCollection(ctx, std::move(op));
}

}  // namespace

void CmdHExpire(CommandContext& ctx) { FieldExpire(ctx, ExpireUnit::kSeconds); }
void CmdHPExpire(CommandContext& ctx) { FieldExpire(ctx, ExpireUnit::kMillis); }
void CmdHExpireAt(CommandContext& ctx) { FieldExpire(ctx, ExpireUnit::kUnixSeconds); }
void CmdHPExpireAt(CommandContext& ctx) { FieldExpire(ctx, ExpireUnit::kUnixMillis); }

// HTTL / HPTTL / HPERSIST / HGETDEL key FIELDS n field...
void CmdHFieldsOnly(CommandContext& ctx) {
  CollectionOp op;
  std::string name = ToLower(ctx.args[0]);
  op.kind = name == "hpersist" ? Kind::kHPersist : name == "hgetdel" ? Kind::kHGetDel : Kind::kHTtl;
  op.millis = name == "hpttl";
  op.keys.push_back(ctx.args[1]);
  if (!FieldsClause(ctx, 2, false, &op)) return;
  SubmitCollection(ctx, std::move(op));
}

// HGETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST] FIELDS n field...
void CmdHGetEx(CommandContext& ctx) {
  CollectionOp op;
  op.kind = Kind::kHGetEx;
  op.keys.push_back(ctx.args[1]);
  int took = ExpiryOption(ctx, 2, "persist", &op);
  if (took < 0) return;
  if (!FieldsClause(ctx, 2 + static_cast<size_t>(took), false, &op)) return;
  SubmitCollection(ctx, std::move(op));
}

// HSETEX key [FNX|FXX] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL] FIELDS n field value...
void CmdHSetEx(CommandContext& ctx) {
  CollectionOp op;
  op.kind = Kind::kHSetEx;
  op.keys.push_back(ctx.args[1]);
  size_t at = 2;
  if (at < ctx.args.size() && EqualsIgnoreCase(ctx.args[at], "fnx")) {
    op.fields_condition = SetCondition::kIfAbsent;
    ++at;
  } else if (at < ctx.args.size() && EqualsIgnoreCase(ctx.args[at], "fxx")) {
    op.fields_condition = SetCondition::kIfPresent;
    ++at;
  }
  int took = ExpiryOption(ctx, at, "keepttl", &op);
  if (took < 0) return;
  if (!FieldsClause(ctx, at + static_cast<size_t>(took), true, &op)) return;
  SubmitCollection(ctx, std::move(op));
}

}  // namespace skydb::resp
