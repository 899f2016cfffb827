// JSON text that never throws. nlohmann's dump() throws (type_error 316) on a string that is not
// UTF-8, and the strings skydb renders include paths and names a user chose: no such input may
// end the process.
//
// Header-only so that skydb_base does not depend on nlohmann_json: include it after
// <nlohmann/json.hpp>, with nlohmann::json or nlohmann::ordered_json as `Json`.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "base/strings.h"

namespace skydb {

// The text of `j`; bytes that are not UTF-8 are shown as U+FFFD. For text people and
// dashboards read; where the bytes must read back exactly, build the value with JsonBytes.
template <typename Json>
std::string JsonText(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// `s` as a JSON string when it is UTF-8, otherwise as the array of its byte values (as
// `journalctl -o json` writes such a field), so that a reader gets the exact bytes back.
template <typename Json>
Json JsonBytes(std::string_view s) {
  if (IsValidUtf8(s)) return Json(std::string(s));
  Json bytes = Json::array();
  for (char c : s) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

}  // namespace skydb
