#include "patroni_cluster.h"

#include <httplib.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "skydb/env.h"
#include "skydb/process.h"

namespace skydb::testing {
namespace {

constexpr char kPatroni[] = "/usr/bin/patroni";
constexpr char kPatronictl[] = "/usr/bin/patronictl";
constexpr char kEtcd[] = "/usr/bin/etcd";
constexpr char kSetpriv[] = "/usr/bin/setpriv";

bool Executable(const char* path) { return ::access(path, X_OK) == 0; }

Status MakeOwnedDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return ErrnoError("mkdir " + path, errno);
  if (::geteuid() != 0) return Ok();
  SKYDB_ASSIGN_OR_RETURN(RunAs user, LookupUser(TestUser()));
  if (::chown(path.c_str(), user.uid, user.gid) != 0) return ErrnoError("chown " + path, errno);
  return Ok();
}

}  // namespace

std::string PatroniCluster::Missing() {
  for (const char* path : {kPatroni, kPatronictl, kEtcd, kSetpriv}) {
    if (!Executable(path)) {
      return std::string(path) +
             " is not installed (tools/install-deps.sh installs patroni and "
             "etcd-server)";
    }
  }
  return "";
}

std::unique_ptr<DaemonProcess> PatroniCluster::AsTestUser(
    const std::vector<std::string>& argv) const {
  std::vector<std::string> args;
  if (::geteuid() == 0) {
    args = {"--reuid=" + TestUser(), "--regid=" + TestUser(), "--init-groups", "--"};
  }
  args.insert(args.end(), argv.begin(), argv.end());
  std::map<std::string, std::optional<std::string>> env = {{"HOME", dir_}};
  if (::geteuid() != 0) {
    return std::make_unique<DaemonProcess>(
        argv.front(), std::vector<std::string>(argv.begin() + 1, argv.end()), env);
  }
  return std::make_unique<DaemonProcess>(kSetpriv, args, env);
}

// Short timings so that a test sees a failover in seconds: the leader key lives 10 s
// (ttl), members run their loop every second. Only loopback TCP; trust for the test user.
void PatroniCluster::WriteConfig(int i) const {
  const Member& m = members_[static_cast<size_t>(i)];
  std::string home = dir_ + "/" + Name(i);
  std::ofstream(Config(i)) << "scope: skydb-ha\n"
                           << "namespace: /skydb-test/\n"
                           << "name: " << Name(i) << "\n"
                           << "log: {level: INFO}\n"
                           << "restapi:\n"
                           << "  listen: 127.0.0.1:" << m.rest_port << "\n"
                           << "  connect_address: 127.0.0.1:" << m.rest_port << "\n"
                           << "etcd3: {hosts: '127.0.0.1:" << etcd_port_ << "'}\n"
                           << "bootstrap:\n"
                           << "  dcs:\n"
                           << "    ttl: 10\n"
                           << "    loop_wait: 1\n"
                           << "    retry_timeout: 3\n"
                           << "    maximum_lag_on_failover: 1048576\n"
                           << "    synchronous_mode: true\n"
                           << "    postgresql:\n"
                           << "      use_pg_rewind: true\n"
                           << "      parameters: {wal_log_hints: 'on'}\n"
                           << "  initdb: [{encoding: UTF8}, {auth: trust}]\n"
                           << "postgresql:\n"
                           << "  listen: 127.0.0.1:" << m.pg_port << "\n"
                           << "  connect_address: 127.0.0.1:" << m.pg_port << "\n"
                           << "  data_dir: " << PgData(i) << "\n"
                           << "  bin_dir: /usr/lib/postgresql/15/bin\n"
                           << "  pgpass: " << home << "/pgpass\n"
                           << "  authentication:\n"
                           << "    superuser: {username: " << TestUser() << "}\n"
                           << "    replication: {username: " << TestUser() << "}\n"
                           << "    rewind: {username: " << TestUser() << "}\n"
                           << "  parameters: {unix_socket_directories: '" << home << "'}\n"
                           << "  pg_hba:\n"
                           << "    - local all all trust\n"
                           << "    - host all all 127.0.0.1/32 trust\n"
                           << "    - host replication all 127.0.0.1/32 trust\n";
}

Result<std::unique_ptr<PatroniCluster>> PatroniCluster::Start(const std::string& dir, int members) {
  std::unique_ptr<PatroniCluster> c(new PatroniCluster());
  c->dir_ = dir;
  SKYDB_RETURN_IF_ERROR(MakeOwnedDir(dir));
  c->etcd_port_ = FreePort();
  c->etcd_peer_port_ = FreePort();
  for (int i = 0; i < members; ++i) {
    Member m;
    m.rest_port = FreePort();
    m.pg_port = FreePort();
    c->members_.push_back(std::move(m));
    SKYDB_RETURN_IF_ERROR(MakeOwnedDir(dir + "/" + c->Name(i)));
    c->WriteConfig(i);
  }
  c->StartEtcd();
  for (int i = 0; i < members; ++i) c->StartMember(i);
  return c;
}

PatroniCluster::~PatroniCluster() {
  for (auto& m : members_) {
    if (m.process) (void)m.process->Signal(SIGTERM);
  }
  for (auto& m : members_) {
    if (m.process) m.process->WaitExit(std::chrono::seconds(30));
    m.process.reset();  // SIGKILL of the pid if it did not exit
  }
  etcd_.reset();
}

void PatroniCluster::StartEtcd() {
  std::string client = "http://127.0.0.1:" + std::to_string(etcd_port_);
  std::string peer = "http://127.0.0.1:" + std::to_string(etcd_peer_port_);
  etcd_ = AsTestUser({kEtcd, "--name", "e0", "--data-dir", dir_ + "/etcd", "--listen-client-urls",
                      client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
                      "--initial-advertise-peer-urls", peer, "--initial-cluster", "e0=" + peer});
}

Status PatroniCluster::StopEtcd() {
  SKYDB_RETURN_IF_ERROR(etcd_->Signal(SIGTERM));
  if (!etcd_->WaitExit(std::chrono::seconds(20))) return Error::Timeout("etcd did not stop");
  return Ok();
}

void PatroniCluster::StartMember(int i) {
  members_[static_cast<size_t>(i)].process = AsTestUser({kPatroni, Config(i)});
}

Status PatroniCluster::StopMember(int i) {
  auto& process = members_[static_cast<size_t>(i)].process;
  SKYDB_RETURN_IF_ERROR(process->Signal(SIGTERM));
  if (!process->WaitExit(std::chrono::seconds(60))) {
    return Error::Timeout("patroni " + Name(i) + " did not stop within 60 s");
  }
  return Ok();
}

Status PatroniCluster::KillNinePostmaster(int i) {
  std::ifstream pidfile(PgData(i) + "/postmaster.pid");
  pid_t pid = 0;
  if (!(pidfile >> pid) || pid <= 0) return Error::Unavailable("no postmaster.pid in " + PgData(i));
  if (::kill(pid, SIGKILL) != 0) return ErrnoError("kill -9 " + std::to_string(pid), errno);
  return Ok();
}

Status PatroniCluster::Switchover(int from, int to) {
  DaemonProcess ctl(kPatronictl, {"-c", Config(from), "switchover", "--leader", Name(from),
                                  "--candidate", Name(to), "--force"});
  auto status = ctl.WaitExit(std::chrono::seconds(90));
  if (!status) return Error::Timeout("patronictl switchover did not finish: " + ctl.Log());
  if (status->exit_code != 0) {
    return Error::Unavailable("patronictl switchover " + status->Describe() + ": " + ctl.Log());
  }
  return Ok();
}

std::string PatroniCluster::ClusterJson() const {
  for (const auto& m : members_) {
    httplib::Client client("127.0.0.1", m.rest_port);
    client.set_connection_timeout(1, 0);
    client.set_read_timeout(2, 0);
    auto res = client.Get("/cluster");
    if (res && res->status == 200) return res->body;
  }
  return "";
}

std::string PatroniCluster::Describe() const {
  std::string body = ClusterJson();
  return body.empty() ? "no member's REST API answered" : body;
}

Result<PatroniCluster::Roles> PatroniCluster::WaitHealthy(std::chrono::seconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    last = ClusterJson();
    auto json = nlohmann::json::parse(last, nullptr, false);
    if (json.is_object() && json.contains("members") && json["members"].is_array() &&
        json["members"].size() == members_.size()) {
      Roles roles;
      int sync = 0, running = 0;
      std::set<long> timelines;
      for (const auto& member : json["members"]) {
        std::string role = member.value("role", ""), name = member.value("name", "");
        running += member.value("state", "") == "running" ? 1 : 0;
        timelines.insert(member.value("timeline", -1L));
        int index = name.size() > 1 ? std::stoi(name.substr(1)) : -1;
        if (role == "sync_standby") {
          ++sync;
          roles.sync_standby = index;
        }
        if (role == "leader") roles.leader = index;
      }
      if (roles.leader >= 0 && sync == 1 && running == members() && timelines.size() == 1) {
        return roles;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Error::Timeout("the Patroni cluster was not healthy within " +
                        std::to_string(timeout.count()) + " s: " + last);
}

std::string PatroniCluster::Url(const std::string& dbname) const {
  std::string hosts, ports;
  for (const auto& m : members_) {
    hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1");
    ports += (ports.empty() ? "" : ",") + std::to_string(m.pg_port);
  }
  return "host=" + hosts + " port=" + ports + " dbname=" + dbname + " user=" + TestUser();
}

std::string QueryAt(const std::string& conninfo, const std::string& sql) {
  PGconn* conn = PQconnectdb((conninfo + " connect_timeout=5").c_str());
  std::string out;
  if (PQstatus(conn) != CONNECTION_OK) {
    out = std::string("ERROR: ") + PQerrorMessage(conn);
  } else {
    PGresult* res = PQexec(conn, sql.c_str());
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      out = std::string("ERROR: ") + PQresultErrorMessage(res);
    } else if (st == PGRES_TUPLES_OK && PQntuples(res) > 0) {
      out = PQgetvalue(res, 0, 0);
    }
    PQclear(res);
  }
  PQfinish(conn);
  return out;
}

std::string PatroniCluster::Query(int i, const std::string& sql) const {
  return QueryAt("host=127.0.0.1 port=" + std::to_string(members_[static_cast<size_t>(i)].pg_port) +
                     " dbname=postgres user=" + TestUser(),
                 sql);
}

std::string PatroniCluster::Log(int i) const {
  const auto& process = members_[static_cast<size_t>(i)].process;
  return process ? process->Log() : "";
}

}  // namespace skydb::testing
