// A Patroni-managed PostgreSQL 15 cluster for the HA tests (docs/scaling.md): a one-node etcd
// and N Patroni members with `synchronous_mode: true`, every process started by this object as
// SKYDB_TEST_USER (through setpriv, which execs: the pid is the program's), every port on
// 127.0.0.1 picked free, every data directory under `dir`. The destructor stops the members
// (SIGTERM: Patroni stops its PostgreSQL) and then etcd, each by its pid. Not thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skydb/result.h"
#include "supervisor_support.h"

namespace skydb::testing {

// The first column of the first row of `sql` at libpq `conninfo` (5 s connect timeout), or
// "ERROR: ..."; for the HA tests' direct looks at a member.
std::string QueryAt(const std::string& conninfo, const std::string& sql);

class PatroniCluster {
 public:
  // The reason the machine cannot run one ("" when it can): patroni, patronictl or etcd
  // missing.
  static std::string Missing();
  // Writes the configuration and starts etcd and `members` Patroni members; the cluster is
  // not yet healthy (WaitHealthy).
  static Result<std::unique_ptr<PatroniCluster>> Start(const std::string& dir, int members);
  ~PatroniCluster();

  struct Roles {
    int leader = -1;
    int sync_standby = -1;
  };
  // Polls until every member runs on one timeline with one leader and one synchronous
  // standby; who they are, or an error with the last /cluster answer.
  Result<Roles> WaitHealthy(std::chrono::seconds timeout) const;
  // The members' names and roles as Patroni's REST API reports them, for failure messages.
  std::string Describe() const;
  // A libpq multi-host URL of every member, database `dbname`.
  std::string Url(const std::string& dbname = "postgres") const;
  // Runs one statement on member `i` (psql, as the test user); the first column of the first
  // row, or "ERROR: ...".
  std::string Query(int i, const std::string& sql) const;

  // The faults. SIGKILL to member i's postmaster alone (Patroni restarts it).
  Status KillNinePostmaster(int i);
  // SIGTERM to member i's Patroni and its exit (it stops its PostgreSQL, releasing the leader
  // key); StartMember brings it back as a replica.
  Status StopMember(int i);
  void StartMember(int i);
  // `patronictl switchover --leader <i> --candidate <j> --force`.
  Status Switchover(int from, int to);
  // Stops and starts the DCS: without it no member can hold the leader key.
  Status StopEtcd();
  void StartEtcd();
  std::string Log(int i) const;
  int members() const { return static_cast<int>(members_.size()); }
  std::string Name(int i) const { return "m" + std::to_string(i); }

 private:
  struct Member {
    int rest_port = 0;
    int pg_port = 0;
    std::unique_ptr<DaemonProcess> process;
  };
  PatroniCluster() = default;
  std::unique_ptr<DaemonProcess> AsTestUser(const std::vector<std::string>& argv) const;
  std::string Config(int i) const { return dir_ + "/" + Name(i) + ".yml"; }
  std::string PgData(int i) const { return dir_ + "/" + Name(i) + "/data"; }
  std::string ClusterJson() const;  // GET /cluster from the first member that answers
  void WriteConfig(int i) const;

  std::string dir_;
  int etcd_port_ = 0;
  int etcd_peer_port_ = 0;
  std::unique_ptr<DaemonProcess> etcd_;
  std::vector<Member> members_;
};

}  // namespace skydb::testing
