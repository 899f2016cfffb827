// A thin RAII wrapper over libpq: connection strings, PQping, parameterised statements and
// transactions. The supervisor uses it for readiness and migrations; the store reuses it.
//
// Thread-safety: a Connection is used by one thread at a time (libpq's rule). Ping and the
// conninfo helpers are safe from any thread.
// Ownership: Connection and QueryResult own their libpq handles and free them on destruction.
// Failure: every call returns a Result whose message carries libpq's own words (trimmed).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skydb/result.h"

struct pg_conn;
struct pg_result;

namespace skydb::pg {

// skydb's tables are found and created in schema public, whatever the role is called: with the
// default search_path ("$user", public) a role named like a schema that appears later (the
// cluster user skydb and migration 1's schema skydb) would move them. A connection string's own
// `options` overrides this (docs/scaling.md).
inline constexpr char kSearchPathOption[] = "-c search_path=public";

// Builds "host='DIR' port='5432' user='u' dbname='d'" with libpq quoting, for a unix socket.
std::string UnixSocketConnInfo(const std::string& socket_dir, int port, const std::string& user,
                               const std::string& dbname,
                               const std::string& application_name = "skydb");

// libpq's PQping outcomes.
enum class PingStatus {
  kOk,          // accepting connections
  kRejecting,   // alive but refusing: starting up, in crash recovery, or shutting down
  kNoResponse,  // nothing answers on the socket
  kNoAttempt,   // the connection string is malformed
};
const char* PingStatusName(PingStatus s);

// The hosts, ports, database and user a connection string names (URI or keywords), for logs:
// never its password. An error says why libpq cannot parse it.
Result<std::string> DescribeConnInfo(const std::string& conninfo);
PingStatus Ping(const std::string& conninfo);

// The rows of one statement's result.
class QueryResult {
 public:
  explicit QueryResult(pg_result* res);
  int rows() const;
  int columns() const;
  bool IsNull(int row, int col) const;
  std::string Get(int row, int col) const;  // "" for NULL
  // The number of rows an INSERT/UPDATE/DELETE touched.
  long AffectedRows() const;

 private:
  struct Free {
    void operator()(pg_result* r) const;
  };
  std::unique_ptr<pg_result, Free> res_;
};

class Connection {
 public:
  // Connects (blocking); Unavailable with libpq's message on failure. `read_write`: the
  // connection string's hosts are tried until one accepts writes (target_session_attrs =
  // read-write, unless the string says otherwise), each within a 10 s connect_timeout.
  static Result<Connection> Open(const std::string& conninfo, bool read_write = false);

  Connection(Connection&&) noexcept = default;
  Connection& operator=(Connection&&) noexcept = default;

  // One statement with $1..$n text parameters (nullopt = NULL); results come back as text.
  Result<QueryResult> Exec(const std::string& sql,
                           const std::vector<std::optional<std::string>>& params = {});
  // Runs a statement for its effect only.
  Status Run(const std::string& sql, const std::vector<std::optional<std::string>>& params = {});
  // BEGIN; body; COMMIT — or ROLLBACK when the body or the COMMIT fails.
  Status InTransaction(const std::function<Status(Connection&)>& body);

  int ServerVersionNum() const;  // 150018 for 15.18
  bool Healthy() const;          // the connection is still usable

 private:
  struct Free {
    void operator()(pg_conn* c) const;
  };
  explicit Connection(pg_conn* conn);
  std::string LastError() const;

  std::unique_ptr<pg_conn, Free> conn_;
};

}  // namespace skydb::pg
