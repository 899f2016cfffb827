// Hash and set commands: their arguments checked with Redis's errors and turned into a
// CollectionOp, which the store applies (src/store/collection_ops.h); the StoreReply it answers
// is encoded for the client's protocol (resp/store_reply.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/strings.h"
#include "resp/command_table.h"
#include "resp/encoder.h"
#include "resp/store_reply.h"

namespace skydb::resp {
namespace {

using Kind = CollectionOp::Kind;

constexpr std::string_view kNotFloat = "ERR value is not a valid float";

}  // namespace

void SubmitCollection(CommandContext& ctx, CollectionOp op, bool ok_reply) {
  if (MayEmpty(op) && ctx.executor.notifier().Wants(kNotifyGeneric)) {
    return CollectionAnnounced(ctx, std::move(op), ok_reply);
  }
  Proto proto = ctx.client.proto;
  ctx.store().Collection(
      std::move(op), [reply = std::move(ctx.reply), proto, ok_reply](Result<StoreReply> r) {
        if (!r.ok()) return reply(ErrorReply(StoreErrorText(r.error())));
        if (ok_reply) return reply(Simple("OK"));
        ReplyWithin(reply, StoreReplyBytes(*r), *r,
                    [proto](const StoreReply& v) { return EncodeStoreReply(v, proto); });
      });
}

namespace {

CollectionOp Op(CommandContext& ctx, Kind kind, size_t keys = 1) {
  CollectionOp op;
  op.kind = kind;
  for (size_t i = 1; i <= keys; ++i) op.keys.push_back(std::move(ctx.args[i]));
  return op;
}

// The arguments from `from` on, as fields (members).
void FieldsFrom(CommandContext& ctx, size_t from, CollectionOp* op) {
  for (size_t i = from; i < ctx.args.size(); ++i) op->fields.push_back(std::move(ctx.args[i]));
}

}  // namespace

bool FieldsClause(CommandContext& ctx, size_t at, bool values, CollectionOp* op) {
  auto& args = ctx.args;
  if (at >= args.size() || !EqualsIgnoreCase(args[at], "fields") || at + 1 >= args.size()) {
    ctx.ReplyError("ERR Mandatory argument FIELDS is missing or not at the right position");
    return false;
  }
  int64_t n = 0;
  if (!ParseInt64(args[at + 1], &n) || n <= 0) {
    ctx.ReplyError("ERR Number of fields must be a positive integer");
    return false;
  }
  size_t per = values ? 2 : 1;
  if (args.size() - at - 2 != static_cast<size_t>(n) * per) {
    ctx.ReplyError("ERR The `numfields` parameter must match the number of arguments");
    return false;
  }
  for (size_t i = at + 2; i < args.size(); i += per) {
    op->fields.push_back(std::move(args[i]));
    if (values) op->values.push_back(std::move(args[i + 1]));
  }
  return true;
}

namespace {

// [MATCH pattern] [COUNT count] [NOVALUES] after HSCAN/SSCAN's cursor.
bool ScanClauses(CommandContext& ctx, CollectionOp* op, bool hash) {
  auto& args = ctx.args;
  std::string_view refusal;
  if (!ParseScanCursor(args[2], &op->cursor)) refusal = "ERR invalid cursor";
  op->with_values = hash;
  for (size_t i = 3; i < args.size() && refusal.empty(); ++i) {
    int64_t count = 0;
    if (hash && EqualsIgnoreCase(args[i], "novalues")) {
      op->with_values = false;
    } else if (i + 1 < args.size() && EqualsIgnoreCase(args[i], "match")) {
      ++i;
      op->pattern = args[i] == "*" ? "" : args[i];
    } else if (i + 1 < args.size() && EqualsIgnoreCase(args[i], "count")) {
      if (!ParseInt64(args[++i], &count))
        refusal = kNotInteger;
      else if (count < 1)
        refusal = kSyntaxError;
      op->count = static_cast<size_t>(std::max<int64_t>(count, 1));
    } else {
      refusal = kSyntaxError;
    }
  }
  if (refusal.empty()) return true;
  ctx.ReplyError(refusal);
  return false;
}

// The most elements a negative HRANDFIELD/SRANDMEMBER count may ask for (docs/protocol.md).
constexpr int64_t kMaxRepeatedCount = 1 << 20;

// An optional count (HRANDFIELD, SRANDMEMBER, SPOP) at args[2].
bool CountArgument(CommandContext& ctx, CollectionOp* op, bool positive) {
  if (ctx.args.size() < 3) return true;
  std::string_view refusal;
  if (!ParseInt64(ctx.args[2], &op->integer)) {
    refusal = kNotInteger;
  } else if (positive && op->integer < 0) {
    refusal = "ERR value is out of range, must be positive";
  } else if (op->integer < -kMaxRepeatedCount) {
    // A negative count repeats elements: its reply is built whole, so it is bounded.
    refusal = "ERR value is out of range";
  }
  if (refusal.empty()) {
    op->has_count = true;
    return true;
  }
  ctx.ReplyError(refusal);
  return false;
}

}  // namespace

void CmdHSet(CommandContext& ctx) {
  bool hmset = EqualsIgnoreCase(ctx.args[0], "hmset");
  if (ctx.args.size() % 2 != 0) return ctx.ReplyError(WrongArity(hmset ? "hmset" : "hset"));
  CollectionOp op = Op(ctx, Kind::kHSet);
  for (size_t i = 2; i + 1 < ctx.args.size(); i += 2) {
    op.fields.push_back(std::move(ctx.args[i]));
    op.values.push_back(std::move(ctx.args[i + 1]));
  }
  SubmitCollection(ctx, std::move(op), hmset);
}

void CmdHSetNx(CommandContext& ctx) {
  CollectionOp op = Op(ctx, Kind::kHSetNx);
  op.fields.push_back(std::move(ctx.args[2]));
  op.values.push_back(std::move(ctx.args[3]));
  SubmitCollection(ctx, std::move(op));
}

// HGET, HMGET, HDEL, HEXISTS, HSTRLEN: the key, then fields.
void CmdHashFields(CommandContext& ctx) {
  static const std::pair<std::string_view, Kind> kKinds[] = {{"hget", Kind::kHGet},
                                                             {"hmget", Kind::kHMGet},
                                                             {"hdel", Kind::kHDel},
                                                             {"hexists", Kind::kHExists},
                                                             {"hstrlen", Kind::kHStrLen}};
  Kind kind = Kind::kHGet;
  for (const auto& [name, k] : kKinds) {
    if (EqualsIgnoreCase(ctx.args[0], name)) kind = k;
  }
  CollectionOp op = Op(ctx, kind);
  FieldsFrom(ctx, 2, &op);
  SubmitCollection(ctx, std::move(op));
}

// HGETALL, HLEN, HKEYS, HVALS, SMEMBERS, SCARD: the key alone.
void CmdCollectionKey(CommandContext& ctx) {
  static const std::pair<std::string_view, Kind> kKinds[] = {
      {"hgetall", Kind::kHGetAll}, {"hlen", Kind::kHLen},         {"hkeys", Kind::kHKeys},
      {"hvals", Kind::kHVals},     {"smembers", Kind::kSMembers}, {"scard", Kind::kSCard}};
  Kind kind = Kind::kHLen;
  for (const auto& [name, k] : kKinds) {
    if (EqualsIgnoreCase(ctx.args[0], name)) kind = k;
  }
  SubmitCollection(ctx, Op(ctx, kind));
}

void CmdHIncrBy(CommandContext& ctx) {
  CollectionOp op = Op(ctx, Kind::kHIncrBy);
  if (!ParseInt64(ctx.args[3], &op.integer)) return ctx.ReplyError(kNotInteger);
  op.fields.push_back(std::move(ctx.args[2]));
  SubmitCollection(ctx, std::move(op));
}

void CmdHIncrByFloat(CommandContext& ctx) {
  CollectionOp op = Op(ctx, Kind::kHIncrByFloat);
  if (!ParseRedisLongDouble(ctx.args[3], &op.real)) return ctx.ReplyError(kNotFloat);
  if (std::isnan(op.real) || std::isinf(op.real)) {
    return ctx.ReplyError("ERR value is NaN or Infinity");  // Redis checks before the lookup
  }
  op.fields.push_back(std::move(ctx.args[2]));
  SubmitCollection(ctx, std::move(op));
}

void CmdHScan(CommandContext& ctx) {
  CollectionOp op = Op(ctx, Kind::kHScan);
  if (!ScanClauses(ctx, &op, true)) return;
  SubmitCollection(ctx, std::move(op));
}

void CmdSScan(CommandContext& ctx) {
  CollectionOp op = Op(ctx, Kind::kSScan);
  if (!ScanClauses(ctx, &op, false)) return;
  SubmitCollection(ctx, std::move(op));
}

void CmdHRandField(CommandContext& ctx) {
  CollectionOp op = Op(ctx, Kind::kHRandField);
  if (ctx.args.size() > 4 ||
      (ctx.args.size() == 4 && !EqualsIgnoreCase(ctx.args[3], "withvalues"))) {
    return ctx.ReplyError(kSyntaxError);
  }
  if (!CountArgument(ctx, &op, false)) return;
  op.with_values = ctx.args.size() == 4;
  SubmitCollection(ctx, std::move(op));
}

void CmdSAddRem(CommandContext& ctx) {
  CollectionOp op = Op(ctx, EqualsIgnoreCase(ctx.args[0], "sadd") ? Kind::kSAdd : Kind::kSRem);
  FieldsFrom(ctx, 2, &op);
  SubmitCollection(ctx, std::move(op));
}

void CmdSIsMember(CommandContext& ctx) {
  bool many = EqualsIgnoreCase(ctx.args[0], "smismember");
  CollectionOp op = Op(ctx, many ? Kind::kSMIsMember : Kind::kSIsMember);
  FieldsFrom(ctx, 2, &op);
  SubmitCollection(ctx, std::move(op));
}

void CmdSPop(CommandContext& ctx) {
  if (ctx.args.size() > 3) return ctx.ReplyError(kSyntaxError);
  bool pop = EqualsIgnoreCase(ctx.args[0], "spop");
  CollectionOp op = Op(ctx, pop ? Kind::kSPop : Kind::kSRandMember);
  if (!CountArgument(ctx, &op, pop)) return;
  SubmitCollection(ctx, std::move(op));
}

void CmdSMove(CommandContext& ctx) {
  CollectionOp op = Op(ctx, Kind::kSMove, 2);
  op.fields.push_back(std::move(ctx.args[3]));
  SubmitCollection(ctx, std::move(op));
}

// SINTER, SUNION, SDIFF and their STORE forms: every argument is a key.
void CmdSetAlgebra(CommandContext& ctx) {
  static const std::pair<std::string_view, Kind> kKinds[] = {{"sinter", Kind::kSInter},
                                                             {"sunion", Kind::kSUnion},
                                                             {"sdiff", Kind::kSDiff},
                                                             {"sinterstore", Kind::kSInterStore},
                                                             {"sunionstore", Kind::kSUnionStore},
                                                             {"sdiffstore", Kind::kSDiffStore}};
  Kind kind = Kind::kSInter;
  for (const auto& [name, k] : kKinds) {
    if (EqualsIgnoreCase(ctx.args[0], name)) kind = k;
  }
  SubmitCollection(ctx, Op(ctx, kind, ctx.args.size() - 1));
}

// SINTERCARD numkeys key [key ...] [LIMIT limit].
void CmdSInterCard(CommandContext& ctx) {
  int64_t n = 0;
  if (!ParseInt64(ctx.args[1], &n) || n <= 0) {
    return ctx.ReplyError("ERR numkeys should be greater than 0");
  }
  size_t keys_end = 2 + static_cast<size_t>(n);
  if (keys_end > ctx.args.size()) {
    return ctx.ReplyError("ERR Number of keys can't be greater than number of args");
  }
  CollectionOp op;
  op.kind = Kind::kSInterCard;
  for (size_t i = 2; i < keys_end; ++i) op.keys.push_back(std::move(ctx.args[i]));
  if (keys_end < ctx.args.size()) {
    if (keys_end + 2 != ctx.args.size() || !EqualsIgnoreCase(ctx.args[keys_end], "limit")) {
      return ctx.ReplyError(kSyntaxError);
    }
    if (!ParseInt64(ctx.args[keys_end + 1], &op.integer) || op.integer < 0) {
      return ctx.ReplyError("ERR LIMIT can't be negative");
    }
  }
  SubmitCollection(ctx, std::move(op));
}

}  // namespace skydb::resp
