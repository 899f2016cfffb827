// Logging: one process-wide logger behind spdlog, configured once at start-up.
//
// Formats: "text" (human-readable with timestamps), "journal" (syslog priority prefixes "<6>",
// no timestamps: chosen automatically when stderr is the stream JOURNAL_STREAM names),
// "json" (one object a line). Every record is one line in every format: a message of several
// lines is folded (FoldLines), so no line of the journal loses its priority.
// Thread-safety: all functions are safe to call from any thread after InitLogging.
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "skydb/result.h"

namespace skydb {

// format: "text", "json" or "auto": journal when JOURNAL_STREAM is set and names stderr's
// device and inode (as systemd sets it; a process whose stderr was redirected elsewhere
// inherits the variable but must not use the journal format), else text.
Status InitLogging(const std::string& level, const std::string& format);

// Whether JOURNAL_STREAM's "DEVICE:INODE" names the file with this device and inode.
bool JournalStreamMatches(std::string_view value, uint64_t dev, uint64_t ino);

}  // namespace skydb
