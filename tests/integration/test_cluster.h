// A throwaway PostgreSQL 15 cluster for integration tests that need a database but are not
// about the supervisor: initdb --nosync into a temp dir, socket-only, started with pg_ctl -w,
// stopped (fast) and removed by the destructor. When the tests run as root the cluster runs as
// $SKYDB_TEST_USER (default skydbtest). One per test binary is usually enough.
#pragma once

#include <memory>
#include <string>

#include "skydb/result.h"

namespace skydb::testing {

class TestCluster {
 public:
  // Starts a cluster, or returns the reason it could not.
  static Result<std::unique_ptr<TestCluster>> Start();
  ~TestCluster();

  // libpq connection string for the cluster's socket, database "postgres".
  std::string ConnInfo() const;
  const std::string& dir() const { return dir_; }

 private:
  TestCluster() = default;
  std::string dir_;
  std::string bin_dir_ = "/usr/lib/postgresql/15/bin";
  std::string user_;
  bool started_ = false;
};

}  // namespace skydb::testing
