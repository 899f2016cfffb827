// The real HostOps lock and lock probe on a temporary directory.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "skydb/supervisor.h"

namespace skydb {
namespace {

class HostOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (std::filesystem::temp_directory_path() / "skydb-hostops-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    lock_ = dir_ + "/skydb.lock";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_, lock_;
};

TEST_F(HostOpsTest, LockWritesOurPidAndASecondLockNamesIt) {
  auto host = NewRealHostOps();
  auto first = host->LockExclusive(lock_);
  ASSERT_TRUE(first.ok()) << first.error().message;
  std::ifstream in(lock_);
  pid_t written = 0;
  in >> written;
  EXPECT_EQ(written, ::getpid());

  auto second = host->LockExclusive(lock_);  // a new open file description: conflicts
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, ErrorCode::kConflict);
  EXPECT_NE(second.error().message.find("pid " + std::to_string(::getpid())), std::string::npos)
      << second.error().message;

  auto probe = ProbeDirLock(lock_);
  ASSERT_TRUE(probe.ok());
  EXPECT_TRUE(probe->held);
  EXPECT_EQ(probe->holder, ::getpid());

  first->reset();  // released with the handle
  probe = ProbeDirLock(lock_);
  ASSERT_TRUE(probe.ok());
  EXPECT_FALSE(probe->held);
  EXPECT_TRUE(host->LockExclusive(lock_).ok());
}

TEST_F(HostOpsTest, ProbeOfAMissingLockIsNotHeld) {
  auto probe = ProbeDirLock(dir_ + "/none.lock");
  ASSERT_TRUE(probe.ok());
  EXPECT_FALSE(probe->held);
}

TEST_F(HostOpsTest, ProcessExistsSeesUsAndNotAReapedChild) {
  auto host = NewRealHostOps();
  EXPECT_TRUE(host->ProcessExists(::getpid()));
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  // Until reaped it is a zombie: it no longer runs, so it does not count.
  for (int i = 0; i < 200 && host->ProcessExists(child); ++i) ::usleep(10000);
  EXPECT_FALSE(host->ProcessExists(child));
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_FALSE(host->ProcessExists(child));
  EXPECT_FALSE(host->ProcessExists(0));
}

}  // namespace
}  // namespace skydb
