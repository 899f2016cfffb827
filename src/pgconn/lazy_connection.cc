// LazyConnection: the reconnect policy for connections that must reach a read-write server.
#include <spdlog/spdlog.h>

#include "pgconn/pgconn.h"

namespace skydb::pg {
namespace {

constexpr char kReadOnlySqlState[] = "25006";  // read_only_sql_transaction

}  // namespace

LazyConnection::LazyConnection(std::string conninfo, std::string name, bool named_statements)
    : conninfo_(std::move(conninfo)), name_(std::move(name)), named_statements_(named_statements) {}

bool LazyConnection::Healthy() const { return conn_.has_value() && conn_->Healthy(); }

void LazyConnection::Close() {
  conn_.reset();
  open_ = false;
}

Result<Connection*> LazyConnection::Get() {
  if (Healthy()) {
    if (!conn_->ReadOnly()) return &*conn_;
    // The server says (PostgreSQL 14+ reports it) that it became a standby or read-only:
    // a failover happened; find the read-write server among the hosts again.
    spdlog::warn("postgres: the server of the {} connection became read-only; reconnecting", name_);
  }
  Close();
  ConnectOptions options;
  options.read_write = true;  // a standby or a read-only server is skipped for the next host
  options.application_name = "skydb";
  options.name = name_;
  options.named_statements = named_statements_;
  auto opened = Connection::Open(conninfo_, options);
  if (!opened.ok()) return std::move(opened).error();
  conn_.emplace(std::move(opened).value());
  open_ = true;
  return &*conn_;
}

Result<QueryResult> LazyConnection::Exec(const Statement& statement,
                                         const std::vector<std::string>& params) {
  SKYDB_ASSIGN_OR_RETURN(Connection * conn, Get());
  busy_ = true;
  auto result = conn->ExecBinary(statement, params);
  busy_ = false;
  if (conn->ReadOnly()) {
    // The server reported, with this very result, that it turned read-only: what it
    // answered may already be stale, as a new primary may be taking writes.
    Close();
    return Error::Unavailable(
        "the server became read-only (a standby, or default_transaction_read_only): "
        "reconnecting to find the read-write primary among the hosts");
  }
  if (result.ok()) return result;
  if (conn->LastSqlState() == kReadOnlySqlState) {
    // This server became a standby or read-only. Reconnecting lets libpq find the read-write
    // server among the connection string's hosts.
    Close();
    Error error = std::move(result).error();
    error.message +=
        " (SQLSTATE 25006: the server is read-only; reconnecting to find a read-write primary "
        "among the hosts)";
    return error;
  }
  if (!conn->Healthy()) Close();
  return result;
}

Status LazyConnection::ForEachRow(const Statement& statement,
                                  const std::vector<std::string>& params,
                                  const std::function<void(const QueryResult& row)>& visit) {
  SKYDB_ASSIGN_OR_RETURN(Connection * conn, Get());
  busy_ = true;
  Status status = conn->ForEachRow(statement, params, visit);
  busy_ = false;
  if (!conn->Healthy()) Close();
  return status;
}

}  // namespace skydb::pg
