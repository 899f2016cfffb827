#include "supervisor/postgres_log.h"

#include <array>
#include <charconv>
#include <string>

#include "skydb/log.h"

namespace skydb::supervisor {
namespace {

using Level = spdlog::level::level_enum;

struct Severity {
  std::string_view word;  // as PostgreSQL writes it, before ":"
  Level level;
  bool belongs_to_previous;  // a part of the message before it, not a message of its own
};

constexpr std::array<Severity, 13> kSeverities{{
    {"PANIC", Level::err, false},
    {"FATAL", Level::err, false},
    {"ERROR", Level::warn, false},
    {"WARNING", Level::warn, false},
    {"LOG", Level::info, false},
    {"INFO", Level::info, false},
    {"NOTICE", Level::info, false},
    {"DEBUG", Level::debug, false},
    {"DETAIL", Level::info, true},
    {"HINT", Level::info, true},
    {"CONTEXT", Level::info, true},
    {"STATEMENT", Level::info, true},
    {"LOCATION", Level::info, true},
}};

// FATALs skydb causes itself, by its readiness check while PostgreSQL starts or recovers, and
// by its fast shutdown (only while it stops).
struct Expected {
  std::string_view message;
  bool only_while_stopping;
};
constexpr std::array<Expected, 5> kExpectedFatals{{
    {"the database system is starting up", false},
    {"the database system is not yet accepting connections", false},
    {"terminating connection due to administrator command", true},
    {"terminating autovacuum process due to administrator command", true},
    {"the database system is shutting down", true},
}};

// "[812] FATAL:  ..." → 812 and "FATAL:  ..."; 0 and the whole line without the prefix.
int64_t TakePid(std::string_view& line) {
  if (line.size() < 4 || line.front() != '[') return 0;
  size_t close = line.find("] ");
  if (close == std::string_view::npos) return 0;
  int64_t pid = 0;
  auto [end, ec] = std::from_chars(line.data() + 1, line.data() + close, pid);
  if (ec != std::errc() || end != line.data() + close || pid <= 0) return 0;
  line.remove_prefix(close + 2);
  return pid;
}

const Severity* SeverityOf(std::string_view text) {
  for (const Severity& s : kSeverities) {
    // "DEBUG1:" .. "DEBUG5:" are DEBUG's.
    if (text.substr(0, s.word.size()) != s.word) continue;
    std::string_view rest = text.substr(s.word.size());
    if (s.word == "DEBUG" && !rest.empty() && rest.front() >= '1' && rest.front() <= '5') {
      rest.remove_prefix(1);
    }
    if (!rest.empty() && rest.front() == ':') return &s;
  }
  return nullptr;
}

bool IsExpectedFatal(std::string_view text, bool stopping) {
  for (const Expected& e : kExpectedFatals) {
    if ((stopping || !e.only_while_stopping) && text.find(e.message) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

// A line with no "[pid] " prefix that is not a continuation: another program's output
// (restore_command's cp, initdb), leveled by the words it holds.
Level LevelOfForeignLine(std::string_view line) {
  auto has = [&](std::string_view word) { return line.find(word) != std::string_view::npos; };
  if (has("PANIC:") || has("FATAL:")) return Level::err;
  if (has("ERROR:") || has("WARNING:")) return Level::warn;
  return Level::info;
}

}  // namespace

PostgresLogRecord PostgresLogForwarder::Classify(std::string_view line, bool stopping) {
  MutexLock lock(mu_);
  std::string_view text = line;
  int64_t pid = TakePid(text);
  if (pid == 0) {
    bool continues = !line.empty() && (line.front() == '\t' || line.front() == ' ');
    if (continues) return last_;
    last_ = {LevelOfForeignLine(line), 0};
    return last_;
  }
  const Severity* severity = SeverityOf(text);
  if (severity == nullptr) return last_ = {Level::info, pid};
  if (severity->belongs_to_previous) {
    return last_.pid == pid ? last_ : last_ = {severity->level, pid};
  }
  Level level = severity->level;
  if (level == Level::err && severity->word == "FATAL" && IsExpectedFatal(text, stopping)) {
    level = Level::info;
  }
  return last_ = {level, pid};
}

void PostgresLogForwarder::Forward(std::string_view line, bool stopping) {
  PostgresLogRecord record = Classify(line, stopping);
  Log(record.level, {.component = "postgres", .pid = record.pid, .peer = ""},
      "postgres: " + std::string(line));
}

}  // namespace skydb::supervisor
