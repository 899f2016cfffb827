#include "test_cluster.h"

#include <libpq-fe.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "skydb/env.h"

namespace skydb::testing {
namespace {

Result<CommandOutput> RunAsClusterUser(const std::vector<std::string>& argv,
                                       const std::optional<RunAs>& user) {
  CommandSpec spec;
  spec.argv = argv;
  spec.run_as = user;
  spec.timeout = std::chrono::seconds(120);
  spec.env["LC_ALL"] = "C";
  return NewRealProcessRunner()->Run(spec);
}

}  // namespace

Result<std::unique_ptr<TestCluster>> TestCluster::Prepare() {
  std::unique_ptr<TestCluster> cluster(new TestCluster());
  std::optional<RunAs> user;
  if (::geteuid() == 0) {
    const char* name = std::getenv("SKYDB_TEST_USER");
    SKYDB_ASSIGN_OR_RETURN(RunAs found, LookupUser(name != nullptr ? name : "skydbtest"));
    user = found;
    cluster->user_ = found.name;
  }
  std::string templ = "/tmp/skydb-pgtest-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return ErrnoError("mkdtemp", errno);
  cluster->dir_ = templ;
  if (user && ::chown(templ.c_str(), user->uid, user->gid) != 0) {
    return ErrnoError("chown " + templ, errno);
  }
  return cluster;
}

static std::optional<RunAs> OptionalRunAs(const std::string& name) {
  if (name.empty()) return std::nullopt;
  auto found = LookupUser(name);
  if (!found.ok()) return std::nullopt;
  return *found;
}

Status TestCluster::Launch(const std::vector<std::string>& settings) {
  std::string options = "-c listen_addresses='' -c unix_socket_directories=" + dir_ +
                        " -c fsync=off -c max_connections=60 -c shared_buffers=64MB";
  for (const auto& s : settings) options += " -c " + s;
  SKYDB_ASSIGN_OR_RETURN(CommandOutput start,
                         RunAsClusterUser({bin_dir_ + "/pg_ctl", "-w", "-D", pgdata(), "-l",
                                           dir_ + "/log", "-o", options, "start"},
                                          OptionalRunAs(user_)));
  if (start.exit_code != 0) {
    return Error::Unavailable("pg_ctl start failed: " + start.out + start.err);
  }
  started_ = true;
  return Ok();
}

Result<std::unique_ptr<TestCluster>> TestCluster::Start(const std::vector<std::string>& settings) {
  SKYDB_ASSIGN_OR_RETURN(auto cluster, Prepare());
  SKYDB_ASSIGN_OR_RETURN(
      CommandOutput init,
      RunAsClusterUser({cluster->bin_dir_ + "/initdb", "--nosync", "--auth=trust", "-E", "UTF8",
                        "--locale=C", "-D", cluster->pgdata()},
                       OptionalRunAs(cluster->user_)));
  if (init.exit_code != 0) return Error::Unavailable("initdb failed: " + init.err);
  SKYDB_RETURN_IF_ERROR(cluster->Launch(settings));
  return cluster;
}

Result<std::unique_ptr<TestCluster>> TestCluster::StartStandby(const TestCluster& primary) {
  SKYDB_ASSIGN_OR_RETURN(auto cluster, Prepare());
  SKYDB_ASSIGN_OR_RETURN(
      CommandOutput copy,
      RunAsClusterUser({cluster->bin_dir_ + "/pg_basebackup", "-D", cluster->pgdata(), "-R", "-X",
                        "stream", "-c", "fast", "-h", primary.dir_, "-p", "5432"},
                       OptionalRunAs(cluster->user_)));
  if (copy.exit_code != 0) return Error::Unavailable("pg_basebackup failed: " + copy.err);
  // Promoted, it must not wait for a standby of its own.
  SKYDB_RETURN_IF_ERROR(cluster->Launch({"synchronous_standby_names=''"}));
  return cluster;
}

Status TestCluster::Promote() {
  SKYDB_ASSIGN_OR_RETURN(CommandOutput out,
                         RunAsClusterUser({bin_dir_ + "/pg_ctl", "-w", "-D", pgdata(), "promote"},
                                          OptionalRunAs(user_)));
  if (out.exit_code != 0) return Error::Unavailable("pg_ctl promote failed: " + out.out + out.err);
  return Ok();
}

void TestCluster::KillNine() {
  std::error_code ec;
  auto canonical = std::filesystem::weakly_canonical(pgdata(), ec).string();
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || name[0] < '0' || name[0] > '9') continue;
    std::error_code link_ec;
    auto cwd = std::filesystem::read_symlink(entry.path() / "cwd", link_ec);
    if (!link_ec && cwd.string() == canonical) ::kill(std::stoi(name), SIGKILL);
  }
  started_ = false;
}

Result<std::string> TestCluster::Query(const std::string& sql, const std::string& dbname) const {
  PGconn* conn = PQconnectdb(ConnInfo(dbname).c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string why = PQerrorMessage(conn);
    PQfinish(conn);
    return Error::Unavailable(why);
  }
  PGresult* res = PQexec(conn, sql.c_str());
  ExecStatusType st = PQresultStatus(res);
  Result<std::string> out = std::string();
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    out = Error::Unavailable(PQresultErrorMessage(res));
  } else if (st == PGRES_TUPLES_OK && PQntuples(res) > 0) {
    out = std::string(PQgetvalue(res, 0, 0));
  }
  PQclear(res);
  PQfinish(conn);
  return out;
}

Status TestCluster::Sql(const std::string& sql, const std::string& dbname) const {
  auto done = Query(sql, dbname);
  if (!done.ok()) return std::move(done).error();
  return Ok();
}

TestCluster::~TestCluster() {
  std::optional<RunAs> user;
  if (!user_.empty()) {
    auto found = LookupUser(user_);
    if (found.ok()) user = *found;
  }
  if (started_) {
    (void)RunAsClusterUser(
        {bin_dir_ + "/pg_ctl", "-w", "-D", dir_ + "/pgdata", "-m", "fast", "stop"}, user);
  }
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::string TestCluster::ConnInfo(const std::string& dbname) const {
  std::string role = user_.empty() ? "" : " user=" + user_;
  return "host=" + dir_ + " port=5432 dbname=" + dbname + role;
}

}  // namespace skydb::testing
