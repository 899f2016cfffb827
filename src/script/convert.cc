#include "script/convert.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace skydb::script {
namespace {

// The line at resp[*pos] up to its CRLF, advancing past it; false when there is none.
bool ReadLine(std::string_view resp, size_t* pos, std::string_view* line) {
  size_t end = resp.find("\r\n", *pos);
  if (end == std::string_view::npos) return false;
  *line = resp.substr(*pos, end - *pos);
  *pos = end + 2;
  return true;
}

bool ParseCount(std::string_view text, long long* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// A table {name = value}.
void PushField(lua_State* L, const char* name, std::string_view value) {
  lua_createtable(L, 0, 1);
  lua_pushlstring(L, value.data(), value.size());
  lua_setfield(L, -2, name);
}

void PushUnreadable(lua_State* L, size_t* pos, std::string_view resp) {
  *pos = resp.size();
  PushField(L, "err", "ERR skydb could not convert a command's reply for the script");
}

void PushValue(lua_State* L, std::string_view resp, size_t* pos, int depth) {
  std::string_view line;
  if (*pos >= resp.size() || depth > kMaxNesting || !lua_checkstack(L, 4)) {
    return PushUnreadable(L, pos, resp);
  }
  char type = resp[(*pos)++];
  if (!ReadLine(resp, pos, &line)) return PushUnreadable(L, pos, resp);
  long long n = 0;
  switch (type) {
    case '+':
      return PushField(L, "ok", line);
    case '-':
      return PushField(L, "err", line);
    case ':':
      if (!ParseCount(line, &n)) return PushUnreadable(L, pos, resp);
      return lua_pushnumber(L, static_cast<lua_Number>(n));
    case '$':
      if (!ParseCount(line, &n)) return PushUnreadable(L, pos, resp);
      if (n < 0) return lua_pushboolean(L, 0);
      if (resp.size() - *pos < static_cast<size_t>(n) + 2) return PushUnreadable(L, pos, resp);
      lua_pushlstring(L, resp.data() + *pos, static_cast<size_t>(n));
      *pos += static_cast<size_t>(n) + 2;
      return;
    case '*':
      if (!ParseCount(line, &n)) return PushUnreadable(L, pos, resp);
      if (n < 0) return lua_pushboolean(L, 0);
      lua_createtable(L, static_cast<int>(std::min<long long>(n, 1 << 16)), 0);
      for (long long i = 1; i <= n; ++i) {
        PushValue(L, resp, pos, depth + 1);
        lua_rawseti(L, -2, static_cast<int>(i));
      }
      return;
    default:
      return PushUnreadable(L, pos, resp);
  }
}

void AppendHeader(std::string& out, char type, long long n) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), n);
  (void)ec;
  out.push_back(type);
  out.append(buf, end);
  out.append("\r\n");
}

// Replaces the placeholder "*0\r\n" at `at` with the real header (no std::string is built: a
// Lua error may unwind through the callers).
void ReplaceHeader(std::string& out, size_t at, char type, long long n) {
  char buf[32];
  buf[0] = type;
  auto [end, ec] = std::to_chars(buf + 1, buf + sizeof(buf) - 2, n);
  (void)ec;
  *end++ = '\r';
  *end++ = '\n';
  out.replace(at, 4, buf, static_cast<size_t>(end - buf));
}

void AppendBulk(std::string& out, const char* s, size_t len) {
  AppendHeader(out, '$', static_cast<long long>(len));
  out.append(s, len);
  out.append("\r\n");
}

void AppendNull(std::string& out, bool resp3) { out.append(resp3 ? "_\r\n" : "$-1\r\n"); }

// A status or error line: CR and LF would break the protocol, so they become spaces (as Redis
// does); an error's own leading '-' is not doubled, and an empty one is "ERR".
void AppendLine(std::string& out, char type, const char* s, size_t len) {
  if (type == '-' && len > 0 && s[0] == '-') ++s, --len;
  out.push_back(type);
  if (type == '-' && len == 0) out.append("ERR");
  for (size_t i = 0; i < len; ++i) out.push_back(s[i] == '\r' || s[i] == '\n' ? ' ' : s[i]);
  out.append("\r\n");
}

// The field `name` of the table at `index` (absolute), pushed when it is of `type`: true.
bool Field(lua_State* L, int index, const char* name, int type) {
  lua_pushstring(L, name);
  lua_rawget(L, index);
  if (lua_type(L, -1) == type) return true;
  lua_pop(L, 1);
  return false;
}

struct Emit {
  lua_State* L;
  bool resp3;
  size_t max_bytes;
  std::string& out;
  const char** why;

  bool Value(int index, int depth);
  bool Table(int index, int depth);
  bool Array(int index, int depth);
  bool Pairs(int index, int depth, bool map);
  bool Double(int index);
};

bool Emit::Double(int index) {
  double d = lua_tonumber(L, index);
  char buf[64];
  int len = std::snprintf(buf, sizeof(buf), "%.17g", d);
  if (std::isinf(d)) len = std::snprintf(buf, sizeof(buf), "%s", d > 0 ? "inf" : "-inf");
  if (std::isnan(d)) len = std::snprintf(buf, sizeof(buf), "nan");
  if (!resp3) {
    AppendBulk(out, buf, static_cast<size_t>(len));
    return true;
  }
  out.push_back(',');
  out.append(buf, static_cast<size_t>(len));
  out.append("\r\n");
  return true;
}

bool Emit::Array(int index, int depth) {
  size_t header = out.size();
  out.append("*0\r\n");  // rewritten once the length is known
  long long n = 0;
  for (int i = 1;; ++i) {
    lua_rawgeti(L, index, i);
    if (lua_type(L, -1) == LUA_TNIL) {
      lua_pop(L, 1);
      break;
    }
    bool ok = Value(lua_gettop(L), depth + 1);
    lua_pop(L, 1);
    if (!ok) return false;
    ++n;
  }
  ReplaceHeader(out, header, '*', n);
  return true;
}

// A `map` (key, value pairs) or `set` (keys) field's table.
bool Emit::Pairs(int index, int depth, bool map) {
  long long n = 0;
  size_t header = out.size();
  out.append("*0\r\n");
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    int value = lua_gettop(L);
    if (!Value(value - 1, depth + 1) || (map && !Value(value, depth + 1))) return false;
    lua_pop(L, 1);
    ++n;
  }
  ReplaceHeader(out, header, resp3 ? (map ? '%' : '~') : '*', map && !resp3 ? 2 * n : n);
  return true;
}

bool Emit::Table(int index, int depth) {
  if (Field(L, index, "err", LUA_TSTRING) || Field(L, index, "ok", LUA_TSTRING)) {
    size_t len = 0;
    const char* s = lua_tolstring(L, -1, &len);
    lua_pushstring(L, "err");
    lua_rawget(L, index);
    bool error = lua_type(L, -1) == LUA_TSTRING;
    AppendLine(out, error ? '-' : '+', s, len);
    lua_pop(L, 2);
    return true;
  }
  if (Field(L, index, "double", LUA_TNUMBER)) {
    Double(lua_gettop(L));
    lua_pop(L, 1);
    return true;
  }
  for (const char* kind : {"map", "set"}) {
    if (Field(L, index, kind, LUA_TTABLE)) {
      bool ok = Pairs(lua_gettop(L), depth, kind[0] == 'm');
      lua_pop(L, 1);
      return ok;
    }
  }
  return Array(index, depth);
}

bool Emit::Value(int index, int depth) {
  if (depth > kMaxNesting || !lua_checkstack(L, 8)) {
    *why = "ERR reached lua stack limit";
    return false;
  }
  if (max_bytes != 0 && out.size() > max_bytes) {
    *why = "ERR the script's reply is larger than the client's reply limit";
    return false;
  }
  size_t len = 0;
  switch (lua_type(L, index)) {
    case LUA_TSTRING: {
      const char* s = lua_tolstring(L, index, &len);
      AppendBulk(out, s, len);
      return true;
    }
    case LUA_TBOOLEAN:
      if (lua_toboolean(L, index)) {
        out.append(":1\r\n");
      } else {
        AppendNull(out, resp3);
      }
      return true;
    case LUA_TNUMBER: {
      double d = lua_tonumber(L, index);
      long long n = 0;
      if (d >= static_cast<double>(std::numeric_limits<long long>::min()) &&
          d < static_cast<double>(std::numeric_limits<long long>::max())) {
        n = static_cast<long long>(d);
      }
      AppendHeader(out, ':', n);
      return true;
    }
    case LUA_TTABLE:
      return Table(index, depth);
    default:
      AppendNull(out, resp3);
      return true;
  }
}

}  // namespace

void PushReply(lua_State* L, std::string_view resp, size_t* pos) { PushValue(L, resp, pos, 0); }

bool AppendLuaValue(lua_State* L, int index, bool resp3, size_t max_bytes, std::string& out,
                    const char** why) {
  if (index < 0) index = lua_gettop(L) + index + 1;
  Emit emit{L, resp3, max_bytes, out, why};
  return emit.Value(index, 0) && (max_bytes == 0 || out.size() <= max_bytes ||
                                  (*why = "ERR the script's reply is larger than the client's "
                                          "reply limit",
                                   false));
}

}  // namespace skydb::script
