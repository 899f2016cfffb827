// Blocking one-shot requests on their own connection, outside the measured load: the server's
// INFO before and after a run (and, for redis-server, its persistence settings).
#pragma once

#include <map>
#include <string>

namespace skydb::loadgen {

// Fills `info` with INFO's fields; for store "redis" also CONFIG GET appendonly/appendfsync as
// "config:appendonly"/"config:appendfsync". Returns "" or what went wrong (5 s timeout).
std::string ReadServerInfo(const std::string& socket_path, const std::string& store,
                           std::map<std::string, std::string>* info);

}  // namespace skydb::loadgen
