#include "bundle/sha256.h"

#include <openssl/evp.h>

#include <array>

namespace skydb::bundle {

std::string Sha256Raw(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  // EVP_Digest only fails on allocation failure; an empty result then fails every comparison.
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    return "";
  }
  return std::string(reinterpret_cast<const char*>(digest.data()), length);
}

std::string Sha256Hex(std::string_view data) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : Sha256Raw(data)) {
    hex.push_back(kHex[c >> 4]);
    hex.push_back(kHex[c & 0xf]);
  }
  return hex;
}

}  // namespace skydb::bundle
