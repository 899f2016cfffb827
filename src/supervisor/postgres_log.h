// PostgreSQL's own log (its stderr, one line at a time) forwarded through skydb's logger:
// tagged "postgres: ", at the level its severity maps to, with the pid of the process that
// wrote it as the record's pid field (log_line_prefix is "[%p] ", src/supervisor/conf_render.cc).
//
// A message's DETAIL, HINT, CONTEXT and STATEMENT lines, and the lines that continue a message
// (a multi-line statement, indented), take the level and pid of the message they belong to, so
// `journalctl -p warning` shows an error with its detail and none of them loses its priority.
//
// What skydb itself causes is not an error: the fast shutdown ending skydb's backends while it
// stops ("terminating connection due to administrator command"), and the connections
// PostgreSQL turns away while it starts or replays WAL after a restore ("the database system
// is starting up", "... is not yet accepting connections"), which skydb's readiness check
// makes on every start. These are logged at info.
//
// Thread-safety: Classify and Forward may be called from any thread (one lock).
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <string_view>

#include "skydb/mutex.h"

namespace skydb::supervisor {

struct PostgresLogRecord {
  spdlog::level::level_enum level = spdlog::level::info;
  int64_t pid = 0;  // 0: the line names none (another program's output: restore_command's cp)
};

class PostgresLogForwarder {
 public:
  // The level and pid of `line`, the next line of PostgreSQL's stderr. `stopping`: skydb asked
  // PostgreSQL to stop.
  PostgresLogRecord Classify(std::string_view line, bool stopping);
  // Classify, then logs "postgres: LINE" at that level with that pid.
  void Forward(std::string_view line, bool stopping);

 private:
  Mutex mu_;
  PostgresLogRecord last_ GUARDED_BY(mu_);  // the message a continuation line belongs to
};

}  // namespace skydb::supervisor
