// Listening sockets for skydb's servers: the RESP store and the HTTP endpoints.
//
// ListenUnix binds `path` and applies `mode` and `group` before it listens, so no connection is
// accepted under the umask's mode. A socket file left by a dead server (nothing answers on it)
// is replaced; one a live server answers on is refused (Conflict), as is a path that is not a
// socket. ListenTcp sets SO_REUSEADDR (a restart may bind over TIME_WAIT connections) and never
// SO_REUSEPORT, so a port another socket holds is refused with EADDRINUSE instead of shared.
//
// Each returns a non-blocking, close-on-exec listening fd that the caller owns; the caller
// removes the socket file when it stops. Thread-safe: no shared state.
#pragma once

#include <cstdint>
#include <string>

#include "skydb/result.h"

namespace skydb {

Result<int> ListenUnix(const std::string& path, uint32_t mode, const std::string& group);
// `port` 0 binds an ephemeral port; `*bound_port` is the port bound.
Result<int> ListenTcp(const std::string& host, int port, int* bound_port);

}  // namespace skydb
