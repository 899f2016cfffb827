// A throwaway PostgreSQL 15 cluster for integration tests that need a database but are not
// about the supervisor: initdb --nosync into a temp dir, socket-only, started with pg_ctl -w,
// stopped (fast) and removed by the destructor. When the tests run as root the cluster runs as
// $SKYDB_TEST_USER (default skydbtest). One per test binary is usually enough.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "skydb/result.h"

namespace skydb::testing {

class TestCluster {
 public:
  // Starts a cluster, or returns the reason it could not. `settings`: more "-c name=value"
  // options for postgres.
  static Result<std::unique_ptr<TestCluster>> Start(const std::vector<std::string>& settings = {});
  // A streaming hot standby of `primary` (pg_basebackup -R), started on its own socket.
  static Result<std::unique_ptr<TestCluster>> StartStandby(const TestCluster& primary);
  ~TestCluster();

  // libpq connection string for the cluster's socket, database `dbname`.
  std::string ConnInfo(const std::string& dbname = "postgres") const;
  const std::string& dir() const { return dir_; }
  std::string pgdata() const { return dir_ + "/pgdata"; }
  const std::string& user() const { return user_; }

  // Runs one statement (any result discarded); the error, if it failed.
  Status Sql(const std::string& sql, const std::string& dbname = "postgres") const;
  // The first column of the first row, as text ("" when there is none).
  Result<std::string> Query(const std::string& sql, const std::string& dbname = "postgres") const;
  Status Promote();  // pg_ctl promote -w
  // SIGKILL to the postmaster and every backend: the machine's PostgreSQL "dies".
  void KillNine();

 private:
  TestCluster() = default;
  static Result<std::unique_ptr<TestCluster>> Prepare();
  Status Launch(const std::vector<std::string>& settings);
  std::string dir_;
  std::string bin_dir_ = "/usr/lib/postgresql/15/bin";
  std::string user_;
  bool started_ = false;
};

}  // namespace skydb::testing
