#include "pgconn/pgconn.h"

#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <map>

#include "base/strings.h"

namespace skydb::pg {
namespace {

// libpq conninfo quoting: single quotes, backslash escapes ' and \.
std::string Quote(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

// libpq's text on one line: its errors span several ("...failed: No such file or directory",
// "\tIs the server running locally...?"; "LINE 1: ..." and a caret), and every message skydb
// logs or returns is one line of the journal.
std::string OneLine(const char* message) { return FoldLines(message != nullptr ? message : ""); }

// Binary parameters: values, lengths and formats as libpq takes them. `params` must outlive it.
struct BinaryParams {
  explicit BinaryParams(const std::vector<std::string>& params) {
    for (const auto& p : params) {
      values.push_back(p.data());
      lengths.push_back(static_cast<int>(p.size()));
      formats.push_back(1);
    }
  }
  int count() const { return static_cast<int>(values.size()); }
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
};

std::vector<Oid> Oids(const Statement& statement) {
  return std::vector<Oid>(statement.param_types.begin(), statement.param_types.end());
}

}  // namespace

std::string UnixSocketConnInfo(const std::string& socket_dir, int port, const std::string& user,
                               const std::string& dbname, const std::string& application_name) {
  return "host=" + Quote(socket_dir) + " port=" + Quote(std::to_string(port)) +
         " user=" + Quote(user) + " dbname=" + Quote(dbname) +
         " application_name=" + Quote(application_name) + " connect_timeout='5'";
}

const char* PingStatusName(PingStatus s) {
  switch (s) {
    case PingStatus::kOk:
      return "ok";
    case PingStatus::kRejecting:
      return "rejecting";
    case PingStatus::kNoResponse:
      return "no response";
    case PingStatus::kNoAttempt:
      return "no attempt";
  }
  return "unknown";
}

PingStatus Ping(const std::string& conninfo) {
  switch (PQping(conninfo.c_str())) {
    case PQPING_OK:
      return PingStatus::kOk;
    case PQPING_REJECT:
      return PingStatus::kRejecting;
    case PQPING_NO_RESPONSE:
      return PingStatus::kNoResponse;
    case PQPING_NO_ATTEMPT:
      return PingStatus::kNoAttempt;
  }
  return PingStatus::kNoAttempt;
}

Result<std::string> DescribeConnInfo(const std::string& conninfo) {
  char* why = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &why);
  if (options == nullptr) {
    std::string message = why != nullptr ? OneLine(why) : "out of memory";
    if (why != nullptr) PQfreemem(why);
    return Error::InvalidArgument("not a valid libpq connection string (" + message +
                                  "); see docs/scaling.md for the forms accepted");
  }
  std::map<std::string, std::string> given;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val != nullptr && *o->val != '\0') given[o->keyword] = o->val;
  }
  PQconninfoFree(options);
  std::string out;
  for (const char* key : {"host", "hostaddr", "port", "dbname", "user", "target_session_attrs"}) {
    auto it = given.find(key);
    if (it == given.end()) continue;
    if (!out.empty()) out += ' ';
    out += it->first + "=" + it->second;
  }
  return out.empty() ? std::string("libpq defaults") : out;
}

void Connection::Free::operator()(pg_conn* c) const { PQfinish(c); }
Connection::Connection(pg_conn* conn, std::string name, bool named_statements)
    : conn_(conn), name_(std::move(name)), named_statements_(named_statements) {}

Result<Connection> Connection::Open(const std::string& conninfo, bool read_write) {
  ConnectOptions options;
  options.read_write = read_write;
  return Open(conninfo, options);
}

Result<Connection> Connection::Open(const std::string& conninfo, const ConnectOptions& options) {
  // Defaults first, then the operator's string (URI or keywords, several hosts allowed) as
  // dbname with expand_dbname, which overrides them. An unreachable host costs at most
  // connect_timeout.
  std::vector<const char*> keywords, values;
  if (!options.application_name.empty()) {
    keywords.push_back("application_name");
    values.push_back(options.application_name.c_str());
  }
  // No `options` startup parameter: PgBouncer refuses it, so skydb's SQL names its schema
  // (public) instead of pinning search_path.
  keywords.insert(keywords.end(), {"connect_timeout", "target_session_attrs", "dbname"});
  values.insert(values.end(), {"10", options.read_write ? "read-write" : "any", conninfo.c_str()});
  keywords.push_back(nullptr);
  values.push_back(nullptr);
  pg_conn* conn = PQconnectdbParams(keywords.data(), values.data(), /*expand_dbname=*/1);
  if (conn == nullptr) return Error::Unavailable("cannot allocate a libpq connection");
  // Server notices ("relation already exists, skipping") go to the debug log, not stderr.
  PQsetNoticeProcessor(
      conn,
      [](void*, const char* message) { spdlog::debug("postgres notice: {}", OneLine(message)); },
      nullptr);
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = OneLine(PQerrorMessage(conn));
    PQfinish(conn);
    std::string which = options.name.empty() ? "" : " (" + options.name + ")";
    return Error::Unavailable("cannot connect to PostgreSQL" + which + ": " + message);
  }
  return Connection(conn, options.name, options.named_statements);
}

std::string Connection::LastError() const { return OneLine(PQerrorMessage(conn_.get())); }

Error Connection::Failure(const pg_result* res) {
  const char* state = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  last_sqlstate_ = state != nullptr ? state : "";
  return Error::Unavailable(res != nullptr ? OneLine(PQresultErrorMessage(res)) : LastError());
}

Result<QueryResult> Connection::Exec(const std::string& sql,
                                     const std::vector<std::optional<std::string>>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  pg_result* raw = PQexecParams(conn_.get(), sql.c_str(), static_cast<int>(values.size()), nullptr,
                                values.data(), nullptr, nullptr, 0);
  QueryResult result(raw);
  ExecStatusType status = PQresultStatus(raw);
  if (raw == nullptr || (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)) {
    return Failure(raw).Within("PostgreSQL");
  }
  return result;
}

Status Connection::Run(const std::string& sql,
                       const std::vector<std::optional<std::string>>& params) {
  auto result = Exec(sql, params);
  if (!result.ok()) return std::move(result).error();
  return Ok();
}

Status Connection::InTransaction(const std::function<Status(Connection&)>& body) {
  SKYDB_RETURN_IF_ERROR(Run("BEGIN"));
  Status status = body(*this);
  if (status.ok()) status = Run("COMMIT");
  if (!status.ok()) (void)Run("ROLLBACK");  // best effort; the original error is what matters
  return status;
}

Status Connection::PrepareOnce(const Statement& statement) {
  const char* name = NameOf(statement);
  if (name == nullptr || prepared_.count(std::string_view(name)) != 0) {
    return Ok();
  }
  std::vector<Oid> oids = Oids(statement);
  QueryResult made(
      PQprepare(conn_.get(), name, statement.sql, static_cast<int>(oids.size()), oids.data()));
  if (PQresultStatus(made.raw()) != PGRES_COMMAND_OK) return Failure(made.raw());
  prepared_.emplace(name);
  spdlog::debug("postgres: prepared statement {} on the {} connection", name,
                name_.empty() ? "unnamed" : name_);
  return Ok();
}

Result<QueryResult> Connection::ExecBinary(const Statement& statement,
                                           const std::vector<std::string>& params) {
  SKYDB_RETURN_IF_ERROR(PrepareOnce(statement));
  BinaryParams p(params);
  pg_result* raw;
  if (const char* name = NameOf(statement)) {
    raw = PQexecPrepared(conn_.get(), name, p.count(), p.values.data(), p.lengths.data(),
                         p.formats.data(), 1);
  } else {
    std::vector<Oid> oids = Oids(statement);
    raw = PQexecParams(conn_.get(), statement.sql, p.count(), oids.data(), p.values.data(),
                       p.lengths.data(), p.formats.data(), 1);
  }
  QueryResult result(raw);
  ExecStatusType status = PQresultStatus(raw);
  if (raw == nullptr || (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)) {
    return Failure(raw);
  }
  return result;
}

Status Connection::ForEachRow(const Statement& statement, const std::vector<std::string>& params,
                              const std::function<void(const QueryResult& row)>& visit) {
  SKYDB_RETURN_IF_ERROR(PrepareOnce(statement));
  std::vector<Oid> oids = Oids(statement);
  BinaryParams p(params);
  int sent = NameOf(statement) != nullptr
                 ? PQsendQueryPrepared(conn_.get(), NameOf(statement), p.count(), p.values.data(),
                                       p.lengths.data(), p.formats.data(), 1)
                 : PQsendQueryParams(conn_.get(), statement.sql, p.count(), oids.data(),
                                     p.values.data(), p.lengths.data(), p.formats.data(), 1);
  if (sent != 1 || PQsetSingleRowMode(conn_.get()) != 1) {
    return Error::Unavailable(LastError());
  }
  // Every result is read, even after a failure, so the connection is left idle.
  std::optional<Error> failure;
  while (pg_result* raw = PQgetResult(conn_.get())) {
    QueryResult row(raw);
    ExecStatusType status = PQresultStatus(raw);
    if (status == PGRES_SINGLE_TUPLE) {
      visit(row);
    } else if (status != PGRES_TUPLES_OK && !failure) {
      failure = Failure(raw);
    }
  }
  if (failure) return std::move(*failure);
  return Ok();
}

Result<std::string> Connection::EncryptPassword(const std::string& password,
                                                const std::string& role) {
  char* encrypted = PQencryptPasswordConn(conn_.get(), password.c_str(), role.c_str(), nullptr);
  if (encrypted == nullptr) return Error::Unavailable("cannot encrypt a password: " + LastError());
  std::string out = encrypted;
  PQfreemem(encrypted);
  return out;
}

int Connection::ServerVersionNum() const { return PQserverVersion(conn_.get()); }
bool Connection::Healthy() const { return PQstatus(conn_.get()) == CONNECTION_OK; }

bool Connection::ReadOnly() const {
  auto on = [this](const char* name) {
    const char* v = PQparameterStatus(conn_.get(), name);
    return v != nullptr && std::string_view(v) == "on";
  };
  return on("in_hot_standby") || on("default_transaction_read_only");
}

}  // namespace skydb::pg
