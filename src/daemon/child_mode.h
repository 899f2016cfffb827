// Child mode: skydb started by an app that owns it (`skydb serve … --exit-with-parent
// --ready-fd N`).
//
//   --exit-with-parent  the parent's exit becomes a SIGTERM, the ordinary ordered stop (drain,
//                       fast stop): daemon/parent_watch.h.
//   --ready-fd N        at READY, one JSON line on descriptor N, which is then closed:
//                       {"database_url":…,"store_socket":…,"http":…,"pid":…}
//
// Thread-safety: CheckReadyFd on the main thread before other threads;
// WriteReadyLine once, from the lifecycle's on_ready.
// Failure: one sentence naming the flag.
#pragma once

#include <string>

#include "daemon/lifecycle.h"
#include "skydb/config.h"
#include "skydb/result.h"

namespace skydb::daemon {

// InvalidArgument unless `fd` is an open descriptor; marks it close-on-exec so PostgreSQL and
// the app never hold it open.
Status CheckReadyFd(int fd);
// The ready line (with its newline) for `info`; database_url from the connection contract
// (null for a memory store), http as "http://BIND:PORT", "unix:PATH" or null.
std::string ReadyLine(const Config& config, const ReadyInfo& info);
// Writes the line to `fd` and closes it; a parent that stopped reading is logged, not fatal.
void WriteReadyLine(int fd, const std::string& line);

}  // namespace skydb::daemon
