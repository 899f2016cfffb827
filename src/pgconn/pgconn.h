// A thin RAII wrapper over libpq: connection strings, PQping, parameterised statements (text,
// or binary and prepared once per connection), transactions, and a connection that reopens
// itself. The supervisor uses it for readiness and migrations; the store for every statement.
//
// Thread-safety: a Connection or LazyConnection is used by one thread at a time (libpq's rule);
// LazyConnection::open() and busy() may be read from any thread (metrics). Ping, the conninfo
// helpers and the binary encoders are safe from any thread.
// Ownership: Connection and QueryResult own their libpq handles and free them on destruction;
// a LazyConnection owns its Connection.
// Failure: every call returns a Result whose message carries libpq's own words (trimmed). A
// LazyConnection closes a connection that broke or whose server turned read-only, and opens a
// new one at its next use.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "skydb/result.h"

struct pg_conn;
struct pg_result;

namespace skydb::pg {

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

// Type OIDs of the binary parameters skydb sends.
inline constexpr unsigned kByteaOid = 17;
inline constexpr unsigned kInt8Oid = 20;
inline constexpr unsigned kByteaArrayOid = 1001;
inline constexpr unsigned kInt8ArrayOid = 1016;

// An int8 in PostgreSQL's binary format (8 bytes, network order), as a parameter.
std::string Int8Param(int64_t v);

// A one-dimensional array in PostgreSQL's binary wire format, without NULLs: bytea[] (Add) or
// int8[] (AddInt64). Every byte value travels as is: no escaping.
// The encoding is built in place: Encode() on an rvalue hands it over without a copy.
class BinaryArray {
 public:
  explicit BinaryArray(unsigned element_oid);
  // Room for `elements` more elements of `bytes` bytes in total (no regrowth while adding).
  void Reserve(size_t elements, size_t bytes);
  // Writes into `buffer` (emptied, its capacity kept): a caller that hands back what Encode
  // returned after the statement ran fills the same memory again, not fresh pages.
  void Reuse(std::string buffer);
  void Add(std::string_view bytes);
  void AddInt64(int64_t v);
  bool empty() const { return count_ == 0; }
  std::string Encode() const&;
  std::string Encode() &&;  // leaves the array empty

 private:
  void StartElement(int32_t length);

  unsigned oid_;
  int32_t count_ = 0;
  std::string encoded_;  // the header, then each element's length and bytes (once one is added)
};

// A statement with binary parameters and results. With a name it is prepared once on each
// connection (no parse and plan per call: it matters for the store's commit, which runs once
// per batch) and executed by name; without one it is parsed every time.
struct Statement {
  const char* name = nullptr;
  const char* sql = nullptr;
  std::vector<unsigned> param_types;  // the OIDs of $1..$n
};

// The rows of one statement's result.
class QueryResult {
 public:
  explicit QueryResult(pg_result* res);
  int rows() const;
  int columns() const;
  bool IsNull(int row, int col) const;
  std::string Get(int row, int col) const;  // "" for NULL
  // A value's bytes, valid while this result lives (binary results: every byte value).
  std::string_view Bytes(int row, int col) const;
  // Binary results only: an int8, int4 or bool column (0 / false when the value is not one).
  int64_t Int8(int row, int col) const;
  int32_t Int4(int row, int col) const;
  bool Bool(int row, int col) const;
  // The number of rows an INSERT/UPDATE/DELETE touched.
  long AffectedRows() const;

 private:
  friend class Connection;
  struct Free {
    void operator()(pg_result* r) const;
  };
  pg_result* raw() const { return res_.get(); }
  std::unique_ptr<pg_result, Free> res_;
};

struct ConnectOptions {
  // The connection string's hosts are tried until one accepts writes (target_session_attrs =
  // read-write, unless the string says otherwise).
  bool read_write = false;
  std::string application_name;  // the default application_name; "" leaves libpq's
  std::string name;              // names the connection in messages ("writer 0"); "" for none
  // false behind a transaction-pooling PgBouncer (store.pooler = "transaction"): a
  // statement's next transaction may run on another server connection, where its name was
  // never prepared, so every statement goes as the unnamed one (parse, bind, execute each
  // time).
  bool named_statements = true;
};

class Connection {
 public:
  // Connects (blocking), each host within a 10 s connect_timeout; Unavailable with libpq's
  // message on failure. The connection string overrides every default given here.
  static Result<Connection> Open(const std::string& conninfo, const ConnectOptions& options);
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

  // One statement with binary parameters (`params[i]` of type `statement.param_types[i]`);
  // results come back binary.
  Result<QueryResult> ExecBinary(const Statement& statement,
                                 const std::vector<std::string>& params);
  // ExecBinary whose rows are handed to `visit` one at a time as they arrive (single-row mode),
  // each as a one-row result; for results too large to hold at once.
  Status ForEachRow(const Statement& statement, const std::vector<std::string>& params,
                    const std::function<void(const QueryResult& row)>& visit);

  // `password` as the server's password_encryption method (scram-sha-256) would store it, so
  // that a statement setting it never carries the password itself.
  Result<std::string> EncryptPassword(const std::string& password, const std::string& role);

  int ServerVersionNum() const;  // 150018 for 15.18
  bool Healthy() const;          // the connection is still usable
  // The server reports (PostgreSQL 14+, with every result) that it is a hot standby or that
  // default_transaction_read_only is on.
  bool ReadOnly() const;
  // The SQLSTATE of the last failed statement ("" when it had none, or none failed yet).
  const std::string& LastSqlState() const { return last_sqlstate_; }
  // The libpq handle, for what this wrapper does not cover: LISTEN's socket and notifications
  // (pgconn/notify_carrier.cc). Owned by this Connection.
  pg_conn* native() const { return conn_.get(); }

 private:
  struct Free {
    void operator()(pg_conn* c) const;
  };
  Connection(pg_conn* conn, std::string name, bool named_statements);
  std::string LastError() const;
  // The statement's name on this connection; nullptr runs it as the unnamed statement.
  const char* NameOf(const Statement& statement) const {
    return named_statements_ ? statement.name : nullptr;
  }
  Status PrepareOnce(const Statement& statement);
  // The error of a failed statement: the server's message, or libpq's when there is no result.
  Error Failure(const pg_result* res);

  std::unique_ptr<pg_conn, Free> conn_;
  std::string name_;
  bool named_statements_ = true;
  std::set<std::string, std::less<>> prepared_;  // statement names prepared on conn_
  std::string last_sqlstate_;
};

// One read-write connection, opened at its first use and replaced at the next use after it
// broke or its server turned read-only (a failover: libpq then finds the read-write server among
// the connection string's hosts). Nothing connects in the constructor; a failed connect is
// retried at the next use, at once (no lock-out), so a restarted PostgreSQL is picked up by the
// first retry.
class LazyConnection {
 public:
  // `name` names the connection in messages and logs ("writer 0"). Its application_name is
  // skydb unless the connection string names another.
  // `named_statements`: ConnectOptions::named_statements.
  LazyConnection(std::string conninfo, std::string name, bool named_statements = true);

  // ExecBinary on the connection, opened first if need be. A failure that broke the connection,
  // SQLSTATE 25006 (read_only_sql_transaction) or a result carrying the server's report that it
  // turned read-only close it; the error says so.
  Result<QueryResult> Exec(const Statement& statement, const std::vector<std::string>& params);
  // ForEachRow on the connection, opened first if need be.
  Status ForEachRow(const Statement& statement, const std::vector<std::string>& params,
                    const std::function<void(const QueryResult& row)>& visit);
  void Close();
  bool Healthy() const;  // open and usable now (owner thread)

  // For metrics, from any thread.
  bool open() const { return open_.load(std::memory_order_relaxed); }
  bool busy() const { return busy_.load(std::memory_order_relaxed); }

 private:
  Result<Connection*> Get();

  std::string conninfo_;
  std::string name_;
  bool named_statements_;
  std::optional<Connection> conn_;
  std::atomic<bool> open_{false};
  std::atomic<bool> busy_{false};
};

}  // namespace skydb::pg
