// Logging: one process-wide logger behind spdlog, configured once at start-up.
//
// Formats: "text" (human-readable with timestamps), "journal" (syslog priority prefixes "<6>",
// no timestamps: chosen automatically when stderr is the stream JOURNAL_STREAM names),
// "json" (one object a line, with the fields below as keys). Every record is one line in
// every format: a message of several lines is folded (FoldLines), so no line of the journal
// loses its priority.
// Thread-safety: all functions are safe to call from any thread after InitLogging.
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "skydb/result.h"

namespace skydb {

// format: "text", "json" or "auto": journal when JOURNAL_STREAM is set and names stderr's
// device and inode (as systemd sets it; a process whose stderr was redirected elsewhere
// inherits the variable but must not use the journal format), else text.
Status InitLogging(const std::string& level, const std::string& format);

// The structured fields of one record. A JSON line carries them as keys ("component", "pid",
// "peer"); text and journal lines show the message alone, which names them in words.
struct LogFields {
  // The subsystem: "" takes it from the message's "NAME: " prefix when NAME is one of
  // LogComponents(), else "skydb".
  std::string_view component;
  int64_t pid = 0;        // the PostgreSQL process that wrote a forwarded line; 0: none
  std::string_view peer;  // a client's address ("127.0.0.1:50312"); "": none
};

// Logs `message` at `level` with `fields`, through the default logger. The fields reach the
// formatter of the thread that logs (skydb's loggers are synchronous).
void Log(spdlog::level::level_enum level, const LogFields& fields, std::string_view message);

// The components a message's "NAME: " prefix names: postgres, resp, store, pubsub, backup,
// http, systemd, metrics.
const std::vector<std::string_view>& LogComponents();

// What a JSON line says of `message`: its component, and the message without the prefix that
// names it ("postgres: [812] LOG:  ..." with pid 812 → "postgres", "LOG:  ...").
struct LogBody {
  std::string_view component;
  std::string_view message;
};
LogBody SplitLogMessage(std::string_view message, const LogFields& fields);

// Whether JOURNAL_STREAM's "DEVICE:INODE" names the file with this device and inode.
bool JournalStreamMatches(std::string_view value, uint64_t dev, uint64_t ino);

}  // namespace skydb
