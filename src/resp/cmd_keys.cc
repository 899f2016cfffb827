// Key commands: DEL/UNLINK, EXISTS, EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT, TTL/PTTL, PERSIST,
// DBSIZE, SCAN.
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include "resp/command_table.h"
#include "resp/encoder.h"

namespace skydb::resp {
namespace {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinInt64 = std::numeric_limits<int64_t>::min();

std::vector<std::string> KeysFrom(std::vector<std::string>& args, size_t first) {
  return {std::make_move_iterator(args.begin() + static_cast<ptrdiff_t>(first)),
          std::make_move_iterator(args.end())};
}

// EXPIRE-family deadline, Redis's way: any integer (a past deadline deletes the key), seconds
// scaled to milliseconds, overflow refused. nullopt: an error was replied.
std::optional<UnixMillis> ParseExpireDeadline(CommandContext& ctx, ExpireUnit unit,
                                              std::string_view name) {
  if (ctx.args.size() > 3) {
    ctx.ReplyError("ERR Unsupported option " + ctx.args[3].substr(0, 128));
    return std::nullopt;
  }
  int64_t when = 0;
  if (!ParseInt64(ctx.args[2], &when)) {
    ctx.ReplyError(kNotInteger);
    return std::nullopt;
  }
  bool seconds = unit == ExpireUnit::kSeconds || unit == ExpireUnit::kUnixSeconds;
  bool relative = unit == ExpireUnit::kSeconds || unit == ExpireUnit::kMillis;
  if (seconds && (when > kMaxInt64 / 1000 || when < kMinInt64 / 1000)) {
    ctx.ReplyError(InvalidExpire(name));
    return std::nullopt;
  }
  if (seconds) when *= 1000;
  UnixMillis now = ctx.executor.NowMs();
  if (relative && (when > kMaxInt64 - now || when < kMinInt64 + now)) {
    ctx.ReplyError(InvalidExpire(name));
    return std::nullopt;
  }
  return relative ? now + when : when;
}

void ExpireCommand(CommandContext& ctx, ExpireUnit unit, std::string_view name) {
  auto at = ParseExpireDeadline(ctx, unit, name);
  if (!at) return;
  ctx.store().Expire(std::move(ctx.args[1]), Expiry::At(*at),
                     ReplyWith<bool>(ctx, [](bool changed) { return Integer(changed ? 1 : 0); }));
}

void TtlCommand(CommandContext& ctx, bool millis) {
  ctx.store().Ttl(std::move(ctx.args[1]), ReplyWith<TtlReply>(ctx, [millis](const TtlReply& r) {
                    if (r.state == TtlReply::State::kMissing) return Integer(-2);
                    if (r.state == TtlReply::State::kNoExpiry) return Integer(-1);
                    return Integer(millis ? r.remaining_ms : (r.remaining_ms + 500) / 1000);
                  }));
}

struct ScanOptions {
  uint64_t cursor = 0;
  std::string pattern;
  size_t count = 10;
  bool type_matches = true;  // TYPE other than "string" matches nothing in a string store
};

bool Refuse(CommandContext& ctx, std::string_view error) {
  ctx.ReplyError(error);
  return false;
}

// Redis's parseScanCursorOrReply: strtoul's rules (an optional sign, "-1" wraps to the largest
// cursor, "" is 0) without its leading spaces, and nothing after the digits.
bool ParseScanCursor(const std::string& text, uint64_t* cursor) {
  if (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE || end != text.c_str() + text.size()) return false;
  *cursor = value;
  return true;
}

bool ParseScanOptions(CommandContext& ctx, ScanOptions* options) {
  if (!ParseScanCursor(ctx.args[1], &options->cursor)) return Refuse(ctx, "ERR invalid cursor");
  auto& args = ctx.args;
  for (size_t i = 2; i < args.size(); i += 2) {
    if (i + 1 >= args.size()) break;
    const std::string& value = args[i + 1];
    if (EqualsIgnoreCase(args[i], "count")) {
      int64_t count = 0;
      if (!ParseInt64(value, &count)) return Refuse(ctx, kNotInteger);
      if (count < 1) return Refuse(ctx, kSyntaxError);
      options->count = static_cast<size_t>(count);
    } else if (EqualsIgnoreCase(args[i], "match")) {
      options->pattern = value == "*" ? "" : value;
    } else if (EqualsIgnoreCase(args[i], "type")) {
      options->type_matches = EqualsIgnoreCase(value, "string");
    } else {
      return Refuse(ctx, kSyntaxError);
    }
  }
  if (args.size() % 2 == 1) return Refuse(ctx, kSyntaxError);  // option without value
  return true;
}

}  // namespace

void CmdDel(CommandContext& ctx) {
  ctx.store().Delete(KeysFrom(ctx.args, 1),
                     ReplyWith<int64_t>(ctx, [](int64_t n) { return Integer(n); }));
}

void CmdExists(CommandContext& ctx) {
  ctx.store().Exists(KeysFrom(ctx.args, 1),
                     ReplyWith<int64_t>(ctx, [](int64_t n) { return Integer(n); }));
}

void CmdExpire(CommandContext& ctx) { ExpireCommand(ctx, ExpireUnit::kSeconds, "expire"); }
void CmdPExpire(CommandContext& ctx) { ExpireCommand(ctx, ExpireUnit::kMillis, "pexpire"); }
void CmdExpireAt(CommandContext& ctx) { ExpireCommand(ctx, ExpireUnit::kUnixSeconds, "expireat"); }
void CmdPExpireAt(CommandContext& ctx) { ExpireCommand(ctx, ExpireUnit::kUnixMillis, "pexpireat"); }

void CmdTtl(CommandContext& ctx) { TtlCommand(ctx, false); }
void CmdPTtl(CommandContext& ctx) { TtlCommand(ctx, true); }

void CmdPersist(CommandContext& ctx) {
  ctx.store().Expire(std::move(ctx.args[1]), Expiry::None(),
                     ReplyWith<bool>(ctx, [](bool changed) { return Integer(changed ? 1 : 0); }));
}

void CmdDbSize(CommandContext& ctx) { ctx.Reply(Integer(ctx.store().Count())); }

// SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]: [next cursor, [keys...]].
void CmdScan(CommandContext& ctx) {
  ScanOptions options;
  if (!ParseScanOptions(ctx, &options)) return;
  bool keep = options.type_matches;
  ctx.store().Scan(options.cursor, std::move(options.pattern), options.count,
                   ReplyWith<ScanReply>(ctx, [keep](const ScanReply& r) {
                     std::string out;
                     AppendArrayHeader(out, 2);
                     AppendBulk(out, std::to_string(r.next_cursor));
                     AppendBulkArray(out, keep ? r.keys : std::vector<std::string>{});
                     return out;
                   }));
}

}  // namespace skydb::resp
