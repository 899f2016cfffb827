// Key commands: DEL/UNLINK, EXISTS, EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT, TTL/PTTL, PERSIST,
// TYPE, DBSIZE, SCAN, KEYS.
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <memory>
#include <unordered_set>

#include "base/strings.h"
#include "resp/acl_check.h"
#include "resp/command_table.h"
#include "resp/encoder.h"

namespace skydb::resp {
namespace {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinInt64 = std::numeric_limits<int64_t>::min();

bool Refuse(CommandContext& ctx, std::string_view error) {
  ctx.ReplyError(error);
  return false;
}

std::vector<std::string> KeysFrom(std::vector<std::string>& args, size_t first) {
  return {std::make_move_iterator(args.begin() + static_cast<ptrdiff_t>(first)),
          std::make_move_iterator(args.end())};
}

// EXPIRE's NX/XX/GT/LT, read before the time as Redis does (parseExtendedExpireArgumentsOrReply).
// False when an error was replied.
bool ParseExpireCondition(CommandContext& ctx, ExpireCondition* c) {
  for (size_t i = 3; i < ctx.args.size(); ++i) {
    const std::string& opt = ctx.args[i];
    if (EqualsIgnoreCase(opt, "nx")) {
      c->if_none = true;
    } else if (EqualsIgnoreCase(opt, "xx")) {
      c->if_any = true;
    } else if (EqualsIgnoreCase(opt, "gt")) {
      c->if_later = true;
    } else if (EqualsIgnoreCase(opt, "lt")) {
      c->if_earlier = true;
    } else {
      return Refuse(ctx, "ERR Unsupported option " + opt.substr(0, 128));
    }
  }
  if (c->if_none && (c->if_any || c->if_later || c->if_earlier)) {
    return Refuse(ctx, "ERR NX and XX, GT or LT options at the same time are not compatible");
  }
  if (c->if_later && c->if_earlier) {
    return Refuse(ctx, "ERR GT and LT options at the same time are not compatible");
  }
  return true;
}

// EXPIRE-family deadline, Redis's way: any integer (a past deadline deletes the key), seconds
// scaled to milliseconds, overflow refused. nullopt: an error was replied.
std::optional<UnixMillis> ParseExpireDeadline(CommandContext& ctx, ExpireUnit unit,
                                              std::string_view name) {
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
  ExpireCondition condition;
  if (!ParseExpireCondition(ctx, &condition)) return;
  auto at = ParseExpireDeadline(ctx, unit, name);
  if (!at) return;
  ctx.store().Expire(std::move(ctx.args[1]), Expiry::At(*at), condition,
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
  std::optional<ValueType> type;  // TYPE
  bool type_matches = true;       // false: a TYPE this store has no keys of (list, zset, stream...)
};

std::optional<ValueType> ValueTypeNamed(std::string_view name) {
  for (ValueType t : {ValueType::kString, ValueType::kHash, ValueType::kSet}) {
    if (EqualsIgnoreCase(name, ValueTypeName(t))) return t;
  }
  return std::nullopt;
}

}  // namespace

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

namespace {

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
      options->type = ValueTypeNamed(value);
      options->type_matches = options->type.has_value();
    } else {
      return Refuse(ctx, kSyntaxError);
    }
  }
  if (args.size() % 2 == 1) return Refuse(ctx, kSyntaxError);  // option without value
  return true;
}

// KEYS: SCAN pages gathered into one reply, each key once. Pages are asked for one after the
// other; a page answered inline (memory) continues the loop here rather than recursing, one
// answered on a store thread continues there. The reply's bytes are claimed as they grow, so
// a KEYS that would pass resp.max_output_buffer is refused instead of built.
class KeysGather : public std::enable_shared_from_this<KeysGather> {
 public:
  // `reader`: the user whose readable keys alone are shown; null: every key.
  KeysGather(SessionStore& store, std::string pattern, ReplyFn reply,
             std::shared_ptr<const AclUser> reader)
      : store_(store),
        reader_(std::move(reader)),
        pattern_(std::move(pattern)),
        claim_(reply.EmptyClaim()),
        reply_(std::move(reply)) {}

  void Start() {
    auto self = shared_from_this();
    while (true) {
      // 0: the page is pending; 1: it came inline, wanting more; 2: this loop returned first;
      // 3: finished (replied).
      auto state = std::make_shared<std::atomic<int>>(0);
      store_.Scan(cursor_, pattern_, kPage, std::nullopt, [self, state](Result<ScanReply> page) {
        if (!self->Absorb(std::move(page))) return state->store(3);
        int pending = 0;
        if (!state->compare_exchange_strong(pending, 1)) self->Start();  // answered late
      });
      int pending = 0;
      if (state->compare_exchange_strong(pending, 2) || state->load() == 3) return;
    }
  }

 private:
  static constexpr size_t kPage = 1000;

  // Takes one page; false when the reply was sent (complete, refused or failed).
  bool Absorb(Result<ScanReply> page) {
    if (!page.ok()) {
      reply_(ErrorReply(StoreErrorText(page.error())));
      return false;
    }
    for (auto& key : page->keys) {
      if (seen_.count(key) > 0 || (reader_ && !MayRead(*reader_, key))) continue;
      size_t bytes = BulkReplySize(key.size());
      if (kHeader + claim_.bytes() + bytes > reply_.limit()) {
        reply_(
            ErrorReply(ReplyTooLarge(reply_.limit(), "use SCAN with MATCH to page through keys")));
        return false;
      }
      if (!claim_.Extend(bytes)) {
        reply_(ErrorReply(kReplyDropped));
        return false;
      }
      seen_.insert(key);
      keys_.push_back(std::move(key));
    }
    cursor_ = page->next_cursor;
    if (cursor_ != 0) return true;
    std::string out;
    AppendBulkArray(out, keys_);
    reply_(std::move(out), std::move(claim_));
    return false;
  }

  static constexpr size_t kHeader = 32;
  SessionStore& store_;
  std::shared_ptr<const AclUser> reader_;
  std::string pattern_;
  uint64_t cursor_ = 0;
  std::vector<std::string> keys_;
  std::unordered_set<std::string> seen_;
  ReplyClaim claim_;
  ReplyFn reply_;
};

}  // namespace

void CmdDel(CommandContext& ctx) {
  if (ctx.args.size() > 2 && ctx.executor.notifier().Wants(kNotifyGeneric)) {
    return DeleteAnnounced(ctx, KeysFrom(ctx.args, 1));
  }
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
  ctx.store().Expire(std::move(ctx.args[1]), Expiry::None(), {},
                     ReplyWith<bool>(ctx, [](bool changed) { return Integer(changed ? 1 : 0); }));
}

// TYPE key: every value skydb holds is a string.
void CmdType(CommandContext& ctx) {
  ctx.store().Type(std::move(ctx.args[1]),
                   ReplyWith<std::optional<KeyInfo>>(ctx, [](const std::optional<KeyInfo>& info) {
                     return Simple(info ? ValueTypeName(info->type) : "none");
                   }));
}

// OBJECT ENCODING key (and HELP); the other subcommands (FREQ, IDLETIME, REFCOUNT) answer what
// Redis answers for a policy or a sharing skydb does not have.
void CmdObject(CommandContext& ctx) {
  std::string sub = ToLower(ctx.args[1]);
  if (sub == "help") {
    std::string out;
    AppendBulkArray(
        out, {"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "ENCODING <key>",
              "    Return the kind of internal representation used "
              "in order to store the value associated with a <key>.",
              "HELP", "    Print this help."});
    return ctx.Reply(std::move(out));
  }
  if (sub != "encoding" || ctx.args.size() != 3) {
    return ctx.ReplyError("ERR unknown subcommand or wrong number of arguments for '" +
                          ctx.args[1].substr(0, 128) + "'. Try OBJECT HELP.");
  }
  Proto proto = ctx.client.proto;
  ctx.store().Type(std::move(ctx.args[2]), ReplyWith<std::optional<KeyInfo>>(
                                               ctx, [proto](const std::optional<KeyInfo>& info) {
                                                 return info ? Bulk(info->encoding) : Null(proto);
                                               }));
}

// MEMORY USAGE key [SAMPLES count]: the bytes the memory tier holds for the key (its value's
// only while the value is in memory: an evicted value is in PostgreSQL, not in RAM); nil for
// no key. MEMORY HELP. Redis's other subcommands are unknown here.
void CmdMemory(CommandContext& ctx) {
  std::string sub = ToLower(ctx.args[1]);
  if (sub == "help" && ctx.args.size() == 2) {
    std::string out;
    AppendBulkArray(out, {"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                          "USAGE <key> [SAMPLES <count>]",
                          "    Return memory in bytes used by <key> and its value.", "HELP",
                          "    Print this help."});
    return ctx.Reply(std::move(out));
  }
  if (sub != "usage" || ctx.args.size() < 3) {
    return ctx.ReplyError("ERR unknown subcommand or wrong number of arguments for '" +
                          ctx.args[1].substr(0, 128) + "'. Try MEMORY HELP.");
  }
  if (ctx.args.size() != 3) {
    int64_t samples = 0;
    bool ok = ctx.args.size() == 5 && EqualsIgnoreCase(ctx.args[3], "samples");
    if (!ok) return ctx.ReplyError("ERR syntax error");
    if (!ParseInt64(ctx.args[4], &samples)) return ctx.ReplyError(kNotInteger);
  }
  Proto proto = ctx.client.proto;
  ctx.store().Type(
      std::move(ctx.args[2]),
      ReplyWith<std::optional<KeyInfo>>(ctx, [proto](const std::optional<KeyInfo>& info) {
        return info ? Integer(static_cast<int64_t>(info->memory_bytes)) : Null(proto);
      }));
}

// RENAME key newkey / RENAMENX key newkey.
void CmdRename(CommandContext& ctx) {
  ctx.store().Rename(std::move(ctx.args[1]), std::move(ctx.args[2]), false,
                     ReplyWith<bool>(ctx, [](bool) { return Simple("OK"); }));
}
void CmdRenameNx(CommandContext& ctx) {
  ctx.store().Rename(std::move(ctx.args[1]), std::move(ctx.args[2]), true,
                     ReplyWith<bool>(ctx, [](bool moved) { return Integer(moved ? 1 : 0); }));
}

// KEYS pattern: O(n) in the live keys, from one full SCAN (every key live for the whole call
// is returned once; keys changed meanwhile may or may not be).
// The user KEYS and SCAN answer for, when it may not read every key (null: no filter). Such a
// user's pattern must lie inside its keys (PatternWithin), and only keys it may read are shown.
std::shared_ptr<const AclUser> KeyReader(CommandContext& ctx) {
  const auto& user = ctx.client.user;
  return user != nullptr && !user->all_keys ? user : nullptr;
}

void CmdKeys(CommandContext& ctx) {
  auto reader = KeyReader(ctx);
  if (reader && !PatternWithin(*reader, ctx.args[1])) {
    return ctx.ReplyError(KeyPatternRefusal(ctx.executor, ctx.client, *reader, "keys"));
  }
  std::string pattern = ctx.args[1] == "*" ? "" : std::move(ctx.args[1]);
  std::make_shared<KeysGather>(ctx.store(), std::move(pattern), std::move(ctx.reply),
                               std::move(reader))
      ->Start();
}

// FLUSHDB / FLUSHALL [ASYNC|SYNC]: one database, so the same. Both modes delete at once and,
// in sync durability, answer after the delete committed (ASYNC changes nothing but is accepted).
void CmdFlush(CommandContext& ctx) {
  if (ctx.args.size() > 2 || (ctx.args.size() == 2 && !EqualsIgnoreCase(ctx.args[1], "async") &&
                              !EqualsIgnoreCase(ctx.args[1], "sync"))) {
    return ctx.ReplyError(kSyntaxError);
  }
  if (!ctx.executor.config().allow_flush) {
    return ctx.ReplyError(
        "ERR " + ToLower(ctx.args[0]) +
        " is disabled: it would delete every session; set resp.allow_flush = true to allow it");
  }
  ctx.store().DeleteAll(ReplyWith<int64_t>(ctx, [](int64_t) { return Simple("OK"); }));
}

void CmdDbSize(CommandContext& ctx) { ctx.Reply(Integer(ctx.store().Count())); }

// SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]: [next cursor, [keys...]].
void CmdScan(CommandContext& ctx) {
  ScanOptions options;
  if (!ParseScanOptions(ctx, &options)) return;
  bool keep = options.type_matches;
  auto reader = KeyReader(ctx);
  if (reader && !PatternWithin(*reader, options.pattern)) {
    return ctx.ReplyError(KeyPatternRefusal(ctx.executor, ctx.client, *reader, "scan"));
  }
  ctx.store().Scan(options.cursor, std::move(options.pattern), options.count, options.type,
                   ReplyWith<ScanReply>(ctx, [keep, reader](const ScanReply& r) {
                     std::string out;
                     AppendArrayHeader(out, 2);
                     AppendBulk(out, std::to_string(r.next_cursor));
                     if (keep && !reader) {
                       AppendBulkArray(out, r.keys);
                       return out;
                     }
                     std::vector<std::string> shown;
                     for (const auto& key : keep ? r.keys : std::vector<std::string>{}) {
                       if (MayRead(*reader, key)) shown.push_back(key);
                     }
                     AppendBulkArray(out, shown);
                     return out;
                   }));
}

}  // namespace skydb::resp
