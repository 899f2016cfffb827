// SHA-256 through OpenSSL's EVP interface. Internal to src/bundle. Thread-safety: value type.
#pragma once

#include <string>
#include <string_view>

namespace skydb::bundle {

// Lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);
// The 32 raw digest bytes.
std::string Sha256Raw(std::string_view data);

}  // namespace skydb::bundle
