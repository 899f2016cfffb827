#include "pgconn/pgconn.h"

#include <libpq-fe.h>

#include <map>

#include <spdlog/spdlog.h>

#include <cstdlib>

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

std::string Trimmed(const char* message) {
  return std::string(Trim(message != nullptr ? message : ""));
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
    case PingStatus::kOk: return "ok";
    case PingStatus::kRejecting: return "rejecting";
    case PingStatus::kNoResponse: return "no response";
    case PingStatus::kNoAttempt: return "no attempt";
  }
  return "unknown";
}

PingStatus Ping(const std::string& conninfo) {
  switch (PQping(conninfo.c_str())) {
    case PQPING_OK: return PingStatus::kOk;
    case PQPING_REJECT: return PingStatus::kRejecting;
    case PQPING_NO_RESPONSE: return PingStatus::kNoResponse;
    case PQPING_NO_ATTEMPT: return PingStatus::kNoAttempt;
  }
  return PingStatus::kNoAttempt;
}

QueryResult::QueryResult(pg_result* res) : res_(res) {}
void QueryResult::Free::operator()(pg_result* r) const { PQclear(r); }
int QueryResult::rows() const { return PQntuples(res_.get()); }
int QueryResult::columns() const { return PQnfields(res_.get()); }
bool QueryResult::IsNull(int row, int col) const { return PQgetisnull(res_.get(), row, col); }
std::string QueryResult::Get(int row, int col) const {
  return IsNull(row, col) ? "" : std::string(PQgetvalue(res_.get(), row, col));
}
long QueryResult::AffectedRows() const {
  const char* n = PQcmdTuples(res_.get());
  return (n != nullptr && *n != '\0') ? std::strtol(n, nullptr, 10) : 0;
}

void Connection::Free::operator()(pg_conn* c) const { PQfinish(c); }
Connection::Connection(pg_conn* conn) : conn_(conn) {}

Result<std::string> DescribeConnInfo(const std::string& conninfo) {
  char* why = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &why);
  if (options == nullptr) {
    std::string message = why != nullptr ? Trimmed(why) : "out of memory";
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

Result<Connection> Connection::Open(const std::string& conninfo, bool read_write) {
  const char* const keywords[] = {"connect_timeout", "target_session_attrs", "options", "dbname",
                                  nullptr};
  const char* const values[] = {"10", read_write ? "read-write" : "any", kSearchPathOption,
                                conninfo.c_str(), nullptr};
  pg_conn* conn = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (conn == nullptr) return Error::Unavailable("cannot allocate a libpq connection");
  // Server notices ("relation already exists, skipping") go to the debug log, not stderr.
  PQsetNoticeProcessor(
      conn, [](void*, const char* message) { spdlog::debug("postgres notice: {}", Trimmed(message)); },
      nullptr);
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = Trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    return Error::Unavailable("cannot connect to PostgreSQL: " + message);
  }
  return Connection(conn);
}

std::string Connection::LastError() const { return Trimmed(PQerrorMessage(conn_.get())); }

Result<QueryResult> Connection::Exec(const std::string& sql,
                                     const std::vector<std::optional<std::string>>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  pg_result* raw = PQexecParams(conn_.get(), sql.c_str(), static_cast<int>(values.size()),
                                nullptr, values.data(), nullptr, nullptr, 0);
  QueryResult result(raw);
  if (raw == nullptr) return Error::Unavailable("PostgreSQL: " + LastError());
  ExecStatusType status = PQresultStatus(raw);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return Error::Unavailable("PostgreSQL: " + Trimmed(PQresultErrorMessage(raw)));
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

int Connection::ServerVersionNum() const { return PQserverVersion(conn_.get()); }
bool Connection::Healthy() const { return PQstatus(conn_.get()) == CONNECTION_OK; }

}  // namespace skydb::pg
