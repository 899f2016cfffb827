// skydb::Embedded's logging: skydb logs through spdlog's default logger; these decide where
// its lines go (stderr as the daemon writes them, or the app's LogSink) and remember the last
// error line, which is why the lifecycle stopped when it stops before ready.
//
// Thread-safety: the sinks are spdlog sinks (one mutex each); LastError::Get from any thread.
// Failure: InstallLogging fails only for a log.format or log.level InitLogging refuses.
#pragma once

#include <memory>
#include <string>

#include "skydb/config.h"
#include "skydb/embedded.h"
#include "skydb/result.h"

namespace skydb::embed {

class LastError {
 public:
  virtual ~LastError() = default;
  // The last error-level message logged since InstallLogging, or "".
  virtual std::string Get() const = 0;
};

// Replaces spdlog's default logger: stderr in config.log_format when `sink` is null, else
// `sink`; either way at config.log_level, with the returned LastError attached.
Result<std::shared_ptr<LastError>> InstallLogging(const Config& config, const LogSink& sink);

// After skydb stopped: when the default logger is still the one that forwards to an app's
// sink, it becomes a plain stderr logger, so that the sink (and what it captured) may go.
void ReleaseLogSink();

}  // namespace skydb::embed
