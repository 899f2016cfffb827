// Where skydb keeps each thing under its data directory DIR: the one place that knows these
// names (docs/supervisor.md draws the tree). Every library that needs a path under DIR asks this
// layout instead of appending its own "/run/…".
//
// Thread-safety: a value type; For is a pure function of its argument.
#pragma once

#include <string>

namespace skydb {

struct DataDirLayout {
  std::string root;             // DIR, without trailing slashes
  std::string pgdata;           // DIR/pgdata: the private cluster
  std::string run;              // DIR/run: sockets, the status file, the published contract
  std::string runtime;          // DIR/runtime: extracted bundles
  std::string lock_file;        // DIR/skydb.lock: one daemon per DIR
  std::string status_file;      // DIR/run/skydb.status.json
  std::string store_socket;     // DIR/run/skydb.sock: the store's socket unless resp.socket
  std::string postgres_socket;  // DIR/run/.s.PGSQL.5432: the private cluster's socket
  std::string app_env;          // DIR/run/app.env: the connection contract for systemd
  std::string app_json;         // DIR/run/app.json: the same as JSON, for skydb status and env
  std::string archive_failure;  // DIR/run/archive-failure.txt: the last WAL archiving failure

  // `root` as given (absolute or relative), trailing slashes dropped.
  static DataDirLayout For(const std::string& root);
  // A path under DIR/run: `name` when it is absolute, else DIR/run/name.
  std::string InRun(const std::string& name) const;
};

}  // namespace skydb
