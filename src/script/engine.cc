// One script run: a fresh state under a capped allocator, everything that touches Lua inside one
// protected call (lua_cpcall), and the C++ state a run needs (the redis.call words and reply,
// the script's reply) in a RunContext that outlives it. Lua reports errors with longjmp, so no
// function below that can raise one keeps an object with a destructor on its own stack.
#include "script/engine.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "script/convert.h"
#include "script/sandbox.lua.h"

extern "C" {
#include <lauxlib.h>
#include <lualib.h>
}

namespace skydb::script {
namespace {

// Instructions between two looks at the kill flag.
constexpr int kHookInstructions = 100000;
// Room left for building the reply once the script has returned, whatever it took.
constexpr size_t kReplyHeadroom = size_t{1} << 20;

struct RunContext {
  const RunRequest& request;
  const CallFn* call;  // null: compile only
  std::string_view code;
  size_t used = 0;
  size_t limit = 0;
  std::vector<std::string> args;
  std::string call_reply;
  std::string reply;
};

void* Allocate(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* ctx = static_cast<RunContext*>(ud);
  if (nsize == 0) {
    std::free(ptr);
    ctx->used -= osize;
    return nullptr;
  }
  if (nsize > osize && ctx->used - osize + nsize > ctx->limit) return nullptr;
  void* p = std::realloc(ptr, nsize);
  if (p == nullptr) return nsize <= osize ? ptr : nullptr;  // Lua assumes shrinking succeeds
  ctx->used = ctx->used - osize + nsize;
  return p;
}

RunContext& Ctx(lua_State* L) {
  void* ud = nullptr;
  lua_getallocf(L, &ud);
  return *static_cast<RunContext*>(ud);
}

void Sha1Into(const char* data, size_t len, char out[41]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  EVP_Digest(data, len, md, &md_len, EVP_sha1(), nullptr);
  for (unsigned int i = 0; i < md_len && i < 20; ++i) {
    std::snprintf(out + 2 * i, 3, "%02x", md[i]);
  }
  out[40] = '\0';
}

void PushErrorTable(lua_State* L, const char* message) {
  lua_createtable(L, 0, 1);
  lua_pushstring(L, message);
  lua_setfield(L, -2, "err");
}

// The words of one redis.call into ctx.args; null, or Redis's refusal.
const char* CollectArgs(lua_State* L, RunContext& ctx) {
  int argc = lua_gettop(L);
  if (argc == 0) return "ERR Please specify at least one argument for this redis lib call";
  ctx.args.clear();
  for (int i = 1; i <= argc; ++i) {
    size_t len = 0;
    if (lua_type(L, i) == LUA_TNUMBER) {
      char buf[64];
      double d = lua_tonumber(L, i);
      int n = d == static_cast<double>(static_cast<long long>(d))
                  ? std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(d))
                  : std::snprintf(buf, sizeof(buf), "%.17g", d);
      ctx.args.emplace_back(buf, static_cast<size_t>(n));
    } else if (lua_type(L, i) == LUA_TSTRING) {
      const char* s = lua_tolstring(L, i, &len);
      ctx.args.emplace_back(s, len);
    } else {
      return "ERR Lua redis lib command arguments must be strings or integers";
    }
  }
  return nullptr;
}

// redis.call (raise: an error reply raises it) and redis.pcall (returns it as {err=...}).
int Call(lua_State* L, bool raise) {
  RunContext& ctx = Ctx(L);
  const char* refused = CollectArgs(L, ctx);
  if (refused != nullptr) {
    PushErrorTable(L, refused);
  } else {
    ctx.call_reply = (*ctx.call)(ctx.args);
    size_t pos = 0;
    PushReply(L, ctx.call_reply, &pos);
  }
  if (raise && lua_type(L, -1) == LUA_TTABLE) {
    lua_getfield(L, -1, "err");
    bool error = lua_type(L, -1) == LUA_TSTRING;
    lua_pop(L, 1);
    if (error) return lua_error(L);
  }
  return 1;
}

int RedisCall(lua_State* L) { return Call(L, true); }
int RedisPCall(lua_State* L) { return Call(L, false); }

int RedisSha1Hex(lua_State* L) {
  if (lua_gettop(L) != 1) return luaL_error(L, "wrong number of arguments");
  size_t len = 0;
  const char* s = lua_tolstring(L, 1, &len);
  char hex[41];
  Sha1Into(s != nullptr ? s : "", s != nullptr ? len : 0, hex);
  lua_pushstring(L, hex);
  return 1;
}

// redis.error_reply / redis.status_reply: {err=...} / {ok=...}; an error gets no second '-'.
int SingleField(lua_State* L, const char* field) {
  if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) {
    PushErrorTable(L, "ERR wrong number or type of arguments");
    return 1;
  }
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, field);
  return 1;
}
int RedisErrorReply(lua_State* L) { return SingleField(L, "err"); }
int RedisStatusReply(lua_State* L) { return SingleField(L, "ok"); }

// redis.log: skydb never logs what a script says (it may carry session data); the arguments are
// checked as Redis checks them.
int RedisLog(lua_State* L) {
  if (lua_gettop(L) < 2) return luaL_error(L, "redis.log() requires two arguments or more.");
  if (lua_type(L, 1) != LUA_TNUMBER)
    return luaL_error(L, "First argument must be a number (log level).");
  return 0;
}

int RedisSetResp(lua_State* L) {
  if (lua_gettop(L) != 1) return luaL_error(L, "redis.setresp() requires one argument.");
  if (lua_tointeger(L, 1) == 2) return 0;
  if (lua_tointeger(L, 1) == 3) {
    return luaL_error(L, "skydb scripts read replies as RESP2; redis.setresp(3) is not supported");
  }
  return luaL_error(L, "RESP version must be 2 or 3.");
}

int ReturnTrue(lua_State* L) {
  lua_pushboolean(L, 1);
  return 1;
}
int ReturnNothing(lua_State*) { return 0; }

void SetNumber(lua_State* L, const char* name, int value) {
  lua_pushinteger(L, value);
  lua_setfield(L, -2, name);
}

void OpenRedisTable(lua_State* L) {
  static const luaL_Reg kFunctions[] = {
      {"call", RedisCall},
      {"pcall", RedisPCall},
      {"sha1hex", RedisSha1Hex},
      {"error_reply", RedisErrorReply},
      {"status_reply", RedisStatusReply},
      {"log", RedisLog},
      {"setresp", RedisSetResp},
      {"set_repl", ReturnNothing},
      {"replicate_commands", ReturnTrue},
      {"debug", ReturnNothing},
      {"breakpoint", ReturnNothing},
      {nullptr, nullptr},
  };
  lua_newtable(L);
  luaL_register(L, nullptr, kFunctions);
  SetNumber(L, "LOG_DEBUG", 0);
  SetNumber(L, "LOG_VERBOSE", 1);
  SetNumber(L, "LOG_NOTICE", 2);
  SetNumber(L, "LOG_WARNING", 3);
  SetNumber(L, "REPL_NONE", 0);
  SetNumber(L, "REPL_AOF", 1);
  SetNumber(L, "REPL_SLAVE", 2);
  SetNumber(L, "REPL_REPLICA", 2);
  SetNumber(L, "REPL_ALL", 3);
  lua_setglobal(L, "redis");
}

void OpenLibraries(lua_State* L) {
  static const luaL_Reg kLibs[] = {{"", luaopen_base},
                                   {LUA_TABLIBNAME, luaopen_table},
                                   {LUA_STRLIBNAME, luaopen_string},
                                   {LUA_MATHLIBNAME, luaopen_math}};
  for (const auto& lib : kLibs) {
    lua_pushcfunction(L, lib.func);
    lua_pushstring(L, lib.name);
    lua_call(L, 1, 0);
  }
  OpenRedisTable(L);
}

void SetArray(lua_State* L, const char* name, const std::vector<std::string>* values) {
  size_t n = values != nullptr ? values->size() : 0;
  lua_createtable(L, static_cast<int>(n), 0);
  for (size_t i = 0; i < n; ++i) {
    lua_pushlstring(L, (*values)[i].data(), (*values)[i].size());
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  lua_setglobal(L, name);
}

// Turns what was raised into {err=..., source=..., line=...}: a string or other value becomes
// "ERR <it>", and the script line that raised it (not redis.call's) is added.
int ErrorHandler(lua_State* L) {
  bool table = lua_type(L, 1) == LUA_TTABLE;
  if (table) {
    lua_getfield(L, 1, "err");
    table = lua_type(L, -1) == LUA_TSTRING;
    lua_pop(L, 1);
  }
  if (!table) {
    const char* text = lua_tostring(L, 1);
    lua_createtable(L, 0, 3);
    lua_pushfstring(L, "ERR %s", text != nullptr ? text : luaL_typename(L, 1));
    lua_setfield(L, -2, "err");
    lua_replace(L, 1);
  }
  // The innermost frame of the script itself (not redis.call's, nor the sandbox's).
  lua_Debug ar{};
  int level = 1;
  bool found = false;
  while (!found && lua_getstack(L, level, &ar) != 0) {
    found = lua_getinfo(L, "Sl", &ar) != 0 && std::strcmp(ar.source, "@user_script") == 0;
    ++level;
  }
  if (found && ar.currentline > 0) {
    lua_pushinteger(L, ar.currentline);
    lua_setfield(L, 1, "line");
    lua_pushstring(L, ar.source);
    lua_setfield(L, 1, "source");
  }
  lua_settop(L, 1);
  return 1;
}

void Hook(lua_State* L, lua_Debug*) {
  RunningScript* running = Ctx(L).request.running;
  if (running == nullptr) return;
  bool killed = running->killed.load(std::memory_order_relaxed);
  bool overdue = !killed && running->clock != nullptr &&
                 !running->wrote.load(std::memory_order_relaxed) &&
                 running->clock->Now() - running->started > kReadOnlyTimeLimit;
  if (!killed && !overdue) return;
  // From now on at every line, so that a pcall in the script cannot swallow the kill.
  lua_sethook(L, Hook, LUA_MASKLINE, 0);
  PushErrorTable(L, killed ? "ERR Script killed by user with SCRIPT KILL..."
                           : "ERR Script killed: it ran 60 s without writing (skydb's limit)");
  lua_error(L);
}

void AppendSanitized(std::string& out, const char* s) {
  for (; *s != '\0'; ++s) out.push_back(*s == '\r' || *s == '\n' ? ' ' : *s);
}

// The error reply for the error table at the top: its message, and where the script raised it.
void ReplyError(lua_State* L, RunContext& ctx) {
  lua_getfield(L, -1, "err");
  const char* err = lua_tostring(L, -1);
  ctx.reply = "-";
  if (err == nullptr || *err == '\0') err = "ERR";
  AppendSanitized(ctx.reply, *err == '-' ? err + 1 : err);
  lua_getfield(L, -2, "line");
  lua_getfield(L, -3, "source");
  if (lua_isnumber(L, -2) && lua_isstring(L, -1)) {
    ctx.reply += " script: ";
    ctx.reply.append(ctx.request.sha);
    ctx.reply += ", on ";
    AppendSanitized(ctx.reply, lua_tostring(L, -1));
    ctx.reply += ":";
    ctx.reply += std::to_string(lua_tointeger(L, -2));
    ctx.reply += ".";
  }
  ctx.reply += "\r\n";
}

int AppendChunk(lua_State* /*L*/, const void* p, size_t size, void* out) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(p), size);
  return 0;
}

// The sandbox's prelude as Lua text, or as bytecode compiled from it.
int LoadPreludeChunk(lua_State* L, std::string_view chunk) {
  return luaL_loadbuffer(L, chunk.data(), chunk.size(), "=sandbox");
}

// The sandbox's prelude compiled once, as bytecode: a run loads it instead of parsing it again.
// Empty if it could not be compiled (then each run compiles the text, and reports why).
const std::string& PreludeBytecode() {
  static const std::string bytecode = [] {
    std::string out;
    lua_State* L = luaL_newstate();
    if (L == nullptr) return out;
    if (LoadPreludeChunk(L, kSandboxPrelude) == 0 && lua_dump(L, AppendChunk, &out) != 0) {
      out.clear();
    }
    lua_close(L);
    return out;
  }();
  return bytecode;
}

int LoadPrelude(lua_State* L) {
  const std::string& bytecode = PreludeBytecode();
  return LoadPreludeChunk(L, bytecode.empty() ? std::string_view(kSandboxPrelude) : bytecode);
}

// Everything that touches Lua, under lua_cpcall.
int Protected(lua_State* L) {
  RunContext& ctx = *static_cast<RunContext*>(lua_touserdata(L, 1));
  lua_settop(L, 0);
  OpenLibraries(L);
  SetArray(L, "KEYS", ctx.request.keys);
  SetArray(L, "ARGV", ctx.request.argv);
  if (LoadPrelude(L) != 0) return lua_error(L);
  lua_call(L, 0, 1);                   // the script's environment, at 1
  lua_pushcfunction(L, ErrorHandler);  // 2
  if (luaL_loadbuffer(L, ctx.code.data(), ctx.code.size(), "@user_script") != 0) {
    ctx.reply = "-ERR Error compiling script (new function): ";
    AppendSanitized(ctx.reply, lua_tostring(L, -1));
    ctx.reply += "\r\n";
    return 0;
  }
  lua_pushvalue(L, 1);
  lua_setfenv(L, -2);
  if (ctx.call == nullptr) return 0;  // compile only
  lua_sethook(L, Hook, LUA_MASKCOUNT, kHookInstructions);
  int status = lua_pcall(L, 0, 1, 2);
  lua_sethook(L, nullptr, 0, 0);
  ctx.limit = std::max(ctx.limit, ctx.used + kReplyHeadroom);
  if (status == LUA_ERRMEM) {
    ctx.reply = "-ERR the script ran out of memory (skydb gives a script at most " +
                std::to_string(ctx.request.memory_limit >> 20) + " MiB)\r\n";
    return 0;
  }
  if (status != 0) {
    if (lua_type(L, -1) != LUA_TTABLE) return lua_error(L);
    ReplyError(L, ctx);
    return 0;
  }
  const char* why = "ERR the script's reply could not be converted";
  if (!AppendLuaValue(L, -1, ctx.request.resp3, ctx.request.max_reply_bytes, ctx.reply, &why)) {
    ctx.reply = "-";
    ctx.reply += why;
    ctx.reply += "\r\n";
  }
  return 0;
}

// Redis 7's "#!lua [flags=...]" first line: blanked (so line numbers stay), its flags checked.
std::optional<std::string> StripShebang(std::string_view body, std::string_view* code,
                                        ScriptFlags* flags) {
  *code = body;
  if (body.substr(0, 2) != "#!") return std::nullopt;
  size_t eol = body.find('\n');
  std::string_view line = body.substr(0, eol);
  *code = eol == std::string_view::npos ? std::string_view() : body.substr(eol);
  std::string_view rest = line.substr(2);
  size_t space = rest.find(' ');
  if (rest.substr(0, space) != "lua") {
    return "-ERR Unexpected engine in script shebang: " +
           std::string(rest.substr(0, space).substr(0, 64)) + "\r\n";
  }
  flags->shebang = true;
  rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.empty()) return std::nullopt;
  if (rest.substr(0, 6) != "flags=") {
    return "-ERR Unknown lua shebang option: " + std::string(rest.substr(0, 64)) + "\r\n";
  }
  rest.remove_prefix(6);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view flag = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (flag == "no-writes") {
      flags->no_writes = true;
    } else if (flag != "allow-oom" && flag != "allow-stale" && flag != "no-cluster" &&
               flag != "allow-cross-slot-keys" && !flag.empty()) {
      return "-ERR Unexpected flag in script shebang: " + std::string(flag.substr(0, 64)) + "\r\n";
    }
  }
  return std::nullopt;
}

std::string Execute(const RunRequest& request, const CallFn* call) {
  RunContext ctx{request, call, {}, 0, request.memory_limit, {}, {}, {}};
  ScriptFlags flags;
  if (auto refused = StripShebang(request.body, &ctx.code, &flags)) return *refused;
  lua_State* L = lua_newstate(Allocate, &ctx);
  if (L == nullptr) return "-ERR the script's Lua state could not be created\r\n";
  int status = lua_cpcall(L, Protected, &ctx);
  if (status != 0) {
    const char* text = lua_tostring(L, -1);
    ctx.reply = status == LUA_ERRMEM ? "-ERR the script ran out of memory\r\n"
                                     : "-ERR " + std::string(text != nullptr ? text : "") + "\r\n";
  }
  lua_close(L);
  return std::move(ctx.reply);
}

}  // namespace

std::string Sha1Hex(std::string_view text) {
  char hex[41];
  Sha1Into(text.data(), text.size(), hex);
  return std::string(hex, 40);
}

std::optional<std::string> ParseFlags(std::string_view body, ScriptFlags* flags) {
  std::string_view code;
  return StripShebang(body, &code, flags);
}

std::string Run(const RunRequest& request, const CallFn& call) { return Execute(request, &call); }

std::optional<std::string> CheckCompiles(std::string_view body) {
  RunRequest request;
  request.body = body;
  std::string reply = Execute(request, nullptr);
  if (reply.empty()) return std::nullopt;
  return reply;
}

}  // namespace skydb::script
