// Test payloads for pub/sub: deterministic bytes of any length, every byte value among them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace skydb::testing {

// `n` bytes of a xorshift sequence started from `seed`: two seeds give different messages.
inline std::string PubSubPayload(size_t n, int seed) {
  std::string out(n, '\0');
  uint32_t x = 2463534242u + static_cast<uint32_t>(seed);
  for (auto& c : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x & 0xff);
  }
  return out;
}

}  // namespace skydb::testing
