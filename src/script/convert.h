// RESP <-> Lua, with the conversion rules Redis documents for scripts (RESP2 on the Lua side):
//
//   RESP2 reply -> Lua (what redis.call returns)
//     integer -> number; bulk string -> string; array -> table (nested as deep as the reply);
//     status -> table {ok=status}; error -> table {err=message}; null bulk / null array -> false
//   Lua -> reply (what the script returns)
//     number -> integer (truncated towards zero); string -> bulk string;
//     table with an `ok` string field -> status; table with an `err` string field -> error;
//     table with a `double` field -> double (RESP3) or its text as a bulk string (RESP2);
//     table with a `map` table field -> map (RESP3) / flat array (RESP2);
//     table with a `set` table field -> set (RESP3) / array (RESP2);
//     other tables -> array of t[1], t[2], ... up to the first nil (other keys are ignored);
//     true -> integer 1; false and nil -> null (the client's protocol's null).
//
// Thread-safety: pure functions on one Lua state. They may raise a Lua error (out of memory), so
// they run only inside a protected call and keep nothing on the C++ stack that needs a
// destructor (a Lua error unwinds with longjmp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

extern "C" {
#include <lua.h>
}

namespace skydb::script {

// How deep a script's result (or a command's reply) may nest before it is refused.
constexpr int kMaxNesting = 256;

// Pushes the Lua value of the RESP2 reply at resp[*pos...] and advances *pos past it. A reply
// the engine cannot read (never produced by skydb's commands) pushes an error table.
void PushReply(lua_State* L, std::string_view resp, size_t* pos);

// Appends to `out` the reply of the Lua value at `index`; false (out undefined) when it nests
// deeper than kMaxNesting or passes `max_bytes` (0: no limit); the reason is in *why.
bool AppendLuaValue(lua_State* L, int index, bool resp3, size_t max_bytes, std::string& out,
                    const char** why);

}  // namespace skydb::script
