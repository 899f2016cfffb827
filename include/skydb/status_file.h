// DIR/run/skydb.status.json: what the daemon is doing, for `skydb status` (which also probes the
// lock to tell a live daemon from a stale file). Rewritten atomically on every state change.
// A text field that is not UTF-8 (a --data-dir may be any bytes) is written as the array of its
// byte values and read back exactly; rendering never throws.
// Thread-safety: pure functions.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "skydb/result.h"

namespace skydb::supervisor {

struct StatusRecord {
  std::string state;  // SupervisorStateName
  pid_t daemon_pid = 0;
  int64_t started_at = 0;   // epoch seconds: when the daemon started
  int64_t ready_since = 0;  // epoch seconds: last time PostgreSQL became ready; 0 never
  int64_t updated_at = 0;   // epoch seconds
  pid_t postgres_pid = 0;   // 0 when not running
  int restarts = 0;
  std::string last_exit;  // how the last unexpected exit ended
  std::string data_dir;
  std::string socket_dir;
  int port = 0;
  std::string bin_dir;
  std::string server_version;
  std::string superuser;  // the role (and OS user) that owns the cluster
  std::string database;
  std::string error;  // why the daemon failed, when state is "failed"
};

std::string RenderStatusJson(const StatusRecord& record);
// InvalidArgument when the text is not a status record.
Result<StatusRecord> ParseStatusJson(const std::string& text);

}  // namespace skydb::supervisor
