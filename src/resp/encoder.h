// RESP2 reply encoding: pure functions that append one reply element to a byte string.
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

// Whole replies, for the common one-element answers.
std::string Simple(std::string_view text);
std::string ErrorReply(std::string_view text);
std::string Integer(int64_t value);
std::string Bulk(std::string_view value);
std::string NullBulk();
std::string OptionalBulk(const std::optional<std::string>& value);

}  // namespace skydb::resp
