#include "test_cluster.h"

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

Result<std::unique_ptr<TestCluster>> TestCluster::Start() {
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
  std::string pgdata = templ + "/pgdata";
  SKYDB_ASSIGN_OR_RETURN(
      CommandOutput init,
      RunAsClusterUser({cluster->bin_dir_ + "/initdb", "--nosync", "--auth=trust", "-E", "UTF8",
                        "--locale=C", "-D", pgdata},
                       user));
  if (init.exit_code != 0) return Error::Unavailable("initdb failed: " + init.err);
  std::string options = "-c listen_addresses='' -c unix_socket_directories=" + templ +
                        " -c fsync=off -c max_connections=60 -c shared_buffers=64MB";
  SKYDB_ASSIGN_OR_RETURN(
      CommandOutput start,
      RunAsClusterUser({cluster->bin_dir_ + "/pg_ctl", "-w", "-D", pgdata, "-l",
                        templ + "/log", "-o", options, "start"},
                       user));
  if (start.exit_code != 0) {
    return Error::Unavailable("pg_ctl start failed: " + start.out + start.err);
  }
  cluster->started_ = true;
  return cluster;
}

TestCluster::~TestCluster() {
  std::optional<RunAs> user;
  if (!user_.empty()) {
    auto found = LookupUser(user_);
    if (found.ok()) user = *found;
  }
  if (started_) {
    (void)RunAsClusterUser({bin_dir_ + "/pg_ctl", "-w", "-D", dir_ + "/pgdata", "-m", "fast",
                            "stop"},
                           user);
  }
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::string TestCluster::ConnInfo() const {
  std::string role = user_.empty() ? "" : " user=" + user_;
  return "host=" + dir_ + " port=5432 dbname=postgres" + role;
}

}  // namespace skydb::testing
