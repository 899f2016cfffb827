// WAL segment names, pg_waldump's commit lines and UTC times: pure functions.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>

#include "base/strings.h"
#include "skydb/backup.h"

namespace skydb {
namespace {

constexpr uint64_t kSegmentsPerLog = 256;  // 4 GiB of WAL per "log" id at 16 MiB a segment

bool IsHex(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); });
}

}  // namespace

std::optional<WalSegment> ParseWalSegmentName(const std::string& name) {
  if (name.size() != 24 || !IsHex(name)) return std::nullopt;
  WalSegment s;
  s.timeline = static_cast<uint32_t>(std::stoul(name.substr(0, 8), nullptr, 16));
  uint64_t log = std::stoull(name.substr(8, 8), nullptr, 16);
  uint64_t seg = std::stoull(name.substr(16, 8), nullptr, 16);
  if (seg >= kSegmentsPerLog) return std::nullopt;
  s.number = log * kSegmentsPerLog + seg;
  return s;
}

std::string WalSegmentName(const WalSegment& segment) {
  char text[32];
  std::snprintf(text, sizeof text, "%08X%08X%08X", segment.timeline,
                static_cast<unsigned>(segment.number / kSegmentsPerLog),
                static_cast<unsigned>(segment.number % kSegmentsPerLog));
  return text;
}

std::vector<std::string> MissingWalSegments(const std::vector<std::string>& names, size_t limit) {
  std::map<uint32_t, std::set<uint64_t>> by_timeline;
  for (const auto& name : names) {
    if (auto s = ParseWalSegmentName(name)) by_timeline[s->timeline].insert(s->number);
  }
  std::vector<std::string> missing;
  for (const auto& [timeline, numbers] : by_timeline) {
    uint64_t expected = *numbers.begin();
    for (uint64_t n : numbers) {
      for (; expected < n && missing.size() < limit; ++expected) {
        missing.push_back(WalSegmentName({timeline, expected}));
      }
      expected = n + 1;
    }
  }
  return missing;
}

std::optional<int64_t> ParseUtcTimeMicros(const std::string& text) {
  std::string t(Trim(text));
  if (EndsWith(t, " UTC")) t = t.substr(0, t.size() - 4);
  if (EndsWith(t, "Z")) t.pop_back();
  std::tm tm{};
  int frac_start = 0;
  int year = 0;
  int month = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2d%*[ T]%2d:%2d:%2d%n", &year, &month, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &frac_start) != 6) {
    return std::nullopt;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  int64_t micros = 0;
  std::string rest = t.substr(static_cast<size_t>(frac_start));
  if (!rest.empty()) {
    if (rest[0] != '.' || rest.size() < 2 || rest.size() > 7) return std::nullopt;
    std::string digits = rest.substr(1);
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    digits.resize(6, '0');
    micros = std::stoll(digits);
  }
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60) {
    return std::nullopt;
  }
  return static_cast<int64_t>(timegm(&tm)) * 1000000 + micros;
}

std::string FormatUtcMicros(int64_t micros) {
  std::time_t seconds = static_cast<std::time_t>(micros / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02d %02d:%02d:%02d.%06lld UTC", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(micros % 1000000));
  return text;
}

std::optional<int64_t> LastCommitMicros(const std::string& waldump_output) {
  std::optional<int64_t> last;
  for (const auto& line : Split(waldump_output, '\n')) {
    auto at = line.find("COMMIT ");
    if (at == std::string::npos || line.find("desc: ") == std::string::npos) continue;
    // "desc: COMMIT 2026-12-02 06:15:01.123456 UTC; ..."
    std::string rest = line.substr(at + 7);
    auto end = rest.find(" UTC");
    if (end == std::string::npos) continue;
    if (auto t = ParseUtcTimeMicros(rest.substr(0, end))) {
      if (!last || *t > *last) last = *t;
    }
  }
  return last;
}

}  // namespace skydb
