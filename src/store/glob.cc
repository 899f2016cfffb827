// Redis-style glob matching for SCAN MATCH: *, ?, [set], [^set], [a-z], backslash escapes.
#include <string_view>

#include "skydb/store.h"

namespace skydb {
namespace {

// Matches a [...] class at pattern[p] (p points after '['); sets `end` past the closing ']'.
bool MatchClass(std::string_view pattern, size_t p, char c, size_t& end) {
  bool negate = p < pattern.size() && pattern[p] == '^';
  if (negate) ++p;
  bool matched = false;
  while (p < pattern.size() && pattern[p] != ']') {
    if (pattern[p] == '\\' && p + 1 < pattern.size()) {
      ++p;
      if (pattern[p] == c) matched = true;
      ++p;
    } else if (p + 2 < pattern.size() && pattern[p + 1] == '-' && pattern[p + 2] != ']') {
      char lo = pattern[p], hi = pattern[p + 2];
      if (lo > hi) std::swap(lo, hi);
      if (c >= lo && c <= hi) matched = true;
      p += 3;
    } else {
      if (pattern[p] == c) matched = true;
      ++p;
    }
  }
  end = p < pattern.size() ? p + 1 : p;  // an unclosed class runs to the end, as in Redis
  return matched != negate;
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0;
  size_t star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      char pc = pattern[p];
      if (pc == '*') {
        star_p = ++p;
        star_t = t;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++t;
        continue;
      }
      if (pc == '[') {
        size_t end = 0;
        if (MatchClass(pattern, p + 1, text[t], end)) {
          p = end;
          ++t;
          continue;
        }
      } else {
        if (pc == '\\' && p + 1 < pattern.size()) pc = pattern[++p];
        if (pc == text[t]) {
          ++p;
          ++t;
          continue;
        }
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p;  // backtrack: let the last '*' swallow one more character
    t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace skydb
