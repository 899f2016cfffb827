#include "resp/encoder.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace skydb::resp {
namespace {

void AppendLineSafe(std::string& out, std::string_view text) {
  for (char c : text) out.push_back(c == '\r' || c == '\n' ? ' ' : c);
}

// Built whole on the stack, then one append.
void AppendNumberLine(std::string& out, char type, int64_t value) {
  char line[32];
  line[0] = type;
  auto [end, ec] = std::to_chars(line + 1, line + sizeof line - 2, value);
  (void)ec;  // 29 bytes always hold an int64
  end[0] = '\r';
  end[1] = '\n';
  out.append(line, static_cast<size_t>(end + 2 - line));
}

}  // namespace

void AppendSimple(std::string& out, std::string_view text) {
  out.push_back('+');
  AppendLineSafe(out, text);
  out.append("\r\n");
}

void AppendError(std::string& out, std::string_view text) {
  out.push_back('-');
  AppendLineSafe(out, text);
  out.append("\r\n");
}

void AppendInteger(std::string& out, int64_t value) { AppendNumberLine(out, ':', value); }

void AppendBulk(std::string& out, std::string_view value) {
  AppendNumberLine(out, '$', static_cast<int64_t>(value.size()));
  out.append(value);
  out.append("\r\n");
}

void AppendNullBulk(std::string& out) { out.append("$-1\r\n"); }

void AppendOptionalBulk(std::string& out, const std::optional<std::string>& value) {
  if (value) {
    AppendBulk(out, *value);
  } else {
    AppendNullBulk(out);
  }
}

void AppendArrayHeader(std::string& out, size_t count) {
  AppendNumberLine(out, '*', static_cast<int64_t>(count));
}

void AppendNullArray(std::string& out) { out.append("*-1\r\n"); }

void AppendBulkArray(std::string& out, const std::vector<std::string>& values) {
  AppendArrayHeader(out, values.size());
  for (const auto& v : values) AppendBulk(out, v);
}

void AppendNull(std::string& out, Proto proto) {
  out.append(proto == Proto::kResp3 ? "_\r\n" : "$-1\r\n");
}

void AppendOptionalBulk(std::string& out, const std::optional<std::string>& value, Proto proto) {
  if (value) {
    AppendBulk(out, *value);
  } else {
    AppendNull(out, proto);
  }
}

void AppendMapHeader(std::string& out, size_t pairs, Proto proto) {
  if (proto == Proto::kResp3) return AppendNumberLine(out, '%', static_cast<int64_t>(pairs));
  AppendArrayHeader(out, pairs * 2);
}

void AppendSetHeader(std::string& out, size_t count, Proto proto) {
  AppendNumberLine(out, proto == Proto::kResp3 ? '~' : '*', static_cast<int64_t>(count));
}

void AppendPushHeader(std::string& out, size_t count, Proto proto) {
  AppendNumberLine(out, proto == Proto::kResp3 ? '>' : '*', static_cast<int64_t>(count));
}

// Redis writes doubles with "%.17g" and spells the infinities "inf" and "-inf".
void AppendDouble(std::string& out, double value, Proto proto) {
  char text[40];
  int n = std::isinf(value) ? std::snprintf(text, sizeof text, "%s", value > 0 ? "inf" : "-inf")
                            : std::snprintf(text, sizeof text, "%.17g", value);
  std::string_view digits(text, static_cast<size_t>(n));
  if (proto == Proto::kResp2) return AppendBulk(out, digits);
  out.push_back(',');
  out.append(digits);
  out.append("\r\n");
}

void AppendBoolean(std::string& out, bool value, Proto proto) {
  if (proto == Proto::kResp2) return AppendInteger(out, value ? 1 : 0);
  out.append(value ? "#t\r\n" : "#f\r\n");
}

void AppendVerbatim(std::string& out, std::string_view text, Proto proto) {
  if (proto == Proto::kResp2) return AppendBulk(out, text);
  AppendNumberLine(out, '=', static_cast<int64_t>(text.size() + 4));
  out.append("txt:");
  out.append(text);
  out.append("\r\n");
}

std::string Simple(std::string_view text) {
  std::string out;
  AppendSimple(out, text);
  return out;
}

std::string ErrorReply(std::string_view text) {
  std::string out;
  AppendError(out, text);
  return out;
}

std::string Integer(int64_t value) {
  std::string out;
  AppendInteger(out, value);
  return out;
}

std::string Bulk(std::string_view value) {
  std::string out;
  out.reserve(value.size() + 16);
  AppendBulk(out, value);
  return out;
}

std::string NullBulk() { return "$-1\r\n"; }

std::string OptionalBulk(const std::optional<std::string>& value) {
  return value ? Bulk(*value) : NullBulk();
}

std::string Null(Proto proto) { return proto == Proto::kResp3 ? "_\r\n" : NullBulk(); }

std::string OptionalBulk(const std::optional<std::string>& value, Proto proto) {
  return value ? Bulk(*value) : Null(proto);
}

}  // namespace skydb::resp
