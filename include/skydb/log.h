// Logging: one process-wide logger behind spdlog, configured once at start-up.
//
// Formats: "text" (human-readable with timestamps), "journal" (syslog priority prefixes "<6>",
// no timestamps: chosen automatically when JOURNAL_STREAM is set), "json" (one object a line).
// Thread-safety: all functions are safe to call from any thread after InitLogging.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

#include "skydb/result.h"

namespace skydb {

// format: "text", "json" or "auto" (journal when JOURNAL_STREAM is set, else text).
Status InitLogging(const std::string& level, const std::string& format);

}  // namespace skydb
