// RESP2 and RESP3 reply encoding: pure functions that append one reply element to a byte
// string. Where the two protocols differ (null, map, set, push, double, boolean, verbatim
// text), the function takes the connection's protocol and writes what Redis 7 writes in it.
//
// Errors and simple strings must not contain CR or LF; AppendError and AppendSimple replace
// them with spaces so a message can never break the framing (a store error, a client's name).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skydb::resp {

// The protocol a connection speaks: RESP2 until HELLO 3.
enum class Proto : uint8_t { kResp2 = 2, kResp3 = 3 };

void AppendSimple(std::string& out, std::string_view text);  // +OK
// `text` starts with its code ("ERR syntax error", "WRONGPASS ..."): -ERR syntax error
void AppendError(std::string& out, std::string_view text);
void AppendInteger(std::string& out, int64_t value);        // :42
void AppendBulk(std::string& out, std::string_view value);  // $3 abc
void AppendNullBulk(std::string& out);                      // $-1
void AppendOptionalBulk(std::string& out, const std::optional<std::string>& value);
void AppendArrayHeader(std::string& out, size_t count);  // *2, then the elements
void AppendNullArray(std::string& out);                  // *-1
void AppendBulkArray(std::string& out, const std::vector<std::string>& values);

// Where RESP3 has a type of its own. RESP2 writes a null bulk, a flat array of 2n elements, an
// array, an array, a bulk string, an integer 1/0 and a bulk string.
void AppendNull(std::string& out, Proto proto);  // _
void AppendOptionalBulk(std::string& out, const std::optional<std::string>& value, Proto proto);
void AppendMapHeader(std::string& out, size_t pairs, Proto proto);   // %n, then key, value...
void AppendSetHeader(std::string& out, size_t count, Proto proto);   // ~n
void AppendPushHeader(std::string& out, size_t count, Proto proto);  // >n (pub/sub messages)
void AppendDouble(std::string& out, double value, Proto proto);      // ,3.14 (Redis's %.17g)
void AppendBoolean(std::string& out, bool value, Proto proto);       // #t / #f
void AppendVerbatim(std::string& out, std::string_view text, Proto proto);  // =n txt:...

// Whole replies, for the common one-element answers.
std::string Simple(std::string_view text);
std::string ErrorReply(std::string_view text);
std::string Integer(int64_t value);
std::string Bulk(std::string_view value);
std::string NullBulk();
std::string OptionalBulk(const std::optional<std::string>& value);
std::string Null(Proto proto);
std::string OptionalBulk(const std::optional<std::string>& value, Proto proto);

}  // namespace skydb::resp
