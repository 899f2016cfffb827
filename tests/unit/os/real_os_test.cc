// The real OS seams against the real OS: files in a temp dir and short child processes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "os/line_reader.h"
#include "skydb/env.h"
#include "skydb/process.h"

namespace skydb {
namespace {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (std::filesystem::temp_directory_path() / "skydb-os-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

// The coarse reading is the same clock as Now(), at most a scheduler tick behind it.
TEST(RealClockTest, CoarseNowIsNowWithinATick) {
  auto clock = NewRealClock();
  for (int i = 0; i < 100; ++i) {
    auto before = clock->Now();
    auto coarse = clock->CoarseNow();
    auto after = clock->Now();
    EXPECT_LE(coarse, after);
    EXPECT_GT(coarse, before - std::chrono::milliseconds(20));
  }
}

TEST_F(TempDirTest, WriteAtomicThenReadStatList) {
  auto fs = NewRealFileSystem();
  std::string path = dir_ + "/settings.conf";
  ASSERT_TRUE(fs->WriteFileAtomic(path, "a = 1\n", 0600).ok());
  EXPECT_EQ(*fs->ReadFile(path), "a = 1\n");
  auto info = fs->Stat(path);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->type, FileType::kRegular);
  EXPECT_EQ(info->mode, 0600u);
  EXPECT_EQ(info->size, 6u);
  EXPECT_EQ(*fs->ListDir(dir_), std::vector<std::string>{"settings.conf"});  // no temp left
  EXPECT_FALSE(fs->IsExecutable(path));
}

// The old temporary name (path.tmp.PID) was guessable: a link planted there made the writer
// overwrite the link's target. Links at that name and at the path itself are never followed.
TEST_F(TempDirTest, WriteAtomicNeverFollowsAPlantedLink) {
  auto fs = NewRealFileSystem();
  std::string victim = dir_ + "/victim";
  ASSERT_TRUE(fs->WriteFileAtomic(victim, "untouched", 0600).ok());
  std::string path = dir_ + "/status.json";
  std::filesystem::create_symlink(victim, path + ".tmp." + std::to_string(::getpid()));
  std::filesystem::create_symlink(victim, path);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(fs->WriteFileAtomic(path, "new", 0644).ok());
  EXPECT_EQ(*fs->ReadFile(victim), "untouched");
  EXPECT_EQ(fs->Stat(victim)->mode, 0600u);
  EXPECT_FALSE(std::filesystem::is_symlink(path)) << "the link itself is replaced";
  EXPECT_EQ(*fs->ReadFile(path), "new");
  EXPECT_EQ(fs->ListDir(dir_)->size(), 3u) << "a temporary file was left behind";
}

TEST_F(TempDirTest, MakeDirAppliesModeDespiteUmask) {
  auto fs = NewRealFileSystem();
  mode_t old = ::umask(077);
  ASSERT_TRUE(fs->MakeDir(dir_ + "/run", 0750).ok());
  ::umask(old);
  EXPECT_EQ(fs->Stat(dir_ + "/run")->mode, 0750u);
  EXPECT_EQ(fs->MakeDir(dir_ + "/run", 0750).error().code, ErrorCode::kConflict);
  EXPECT_EQ(fs->MakeDir(dir_ + "/a/b", 0750).error().code, ErrorCode::kNotFound);
}

TEST_F(TempDirTest, MissingFilesAreNotFoundAndNamed) {
  auto fs = NewRealFileSystem();
  auto missing = fs->ReadFile(dir_ + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find(dir_ + "/nope"), std::string::npos);
}

TEST(ProcessRunnerTest, CapturesOutputAndExitCode) {
  auto runner = NewRealProcessRunner();
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"};
  auto result = runner->Run(spec);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->exit_code, 3);
  EXPECT_EQ(result->out, "out\n");
  EXPECT_EQ(result->err, "err\n");
}

TEST(ProcessRunnerTest, AppliesAndRemovesEnvironment) {
  ::setenv("SKYDB_OS_TEST_REMOVE", "x", 1);
  auto runner = NewRealProcessRunner();
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo \"$SKYDB_OS_TEST_ADD-${SKYDB_OS_TEST_REMOVE:-unset}\""};
  spec.env["SKYDB_OS_TEST_ADD"] = "added";
  spec.env["SKYDB_OS_TEST_REMOVE"] = std::nullopt;
  auto result = runner->Run(spec);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->out, "added-unset\n");
}

TEST(ProcessRunnerTest, MissingBinaryIsAnErrorNamingIt) {
  auto runner = NewRealProcessRunner();
  CommandSpec spec;
  spec.argv = {"/nonexistent/postgres", "--version"};
  auto result = runner->Run(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kNotFound);
  EXPECT_NE(result.error().message.find("/nonexistent/postgres"), std::string::npos);
}

TEST(ProcessRunnerTest, TimeoutKillsTheChild) {
  auto runner = NewRealProcessRunner();
  CommandSpec spec;
  spec.argv = {"/bin/sleep", "10"};
  spec.timeout = std::chrono::milliseconds(200);
  auto start = std::chrono::steady_clock::now();
  auto result = runner->Run(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ProcessRunnerTest, DropsPrivilegesWhenRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to drop privileges";
  const char* name = std::getenv("SKYDB_TEST_USER");
  auto user = LookupUser(name != nullptr ? name : "skydbtest");
  ASSERT_TRUE(user.ok()) << user.error().message;
  CommandSpec spec;
  spec.argv = {"/usr/bin/id", "-u"};
  spec.run_as = *user;
  auto result = NewRealProcessRunner()->Run(spec);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->out, std::to_string(user->uid) + "\n");
}

// What root may execute: a program root owns, in directories root owns that no one else may
// write, reached through symlinks that live in such directories. The trusted tree is made under
// /run (root's, 0755): every temporary directory is under /tmp, which everyone may write.
class RootExecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (ownership is the point)";
    std::string templ = "/run/skydb-exec-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) GTEST_SKIP() << "cannot make a directory in /run";
    trusted_ = templ;
    ::chmod(trusted_.c_str(), 0755);
    std::string tmpl = (std::filesystem::temp_directory_path() / "skydb-exec-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    open_ = tmpl;
  }
  void TearDown() override {
    if (!trusted_.empty()) std::filesystem::remove_all(trusted_);
    if (!open_.empty()) std::filesystem::remove_all(open_);
  }
  std::string Program(const std::string& dir, mode_t mode = 0755) {
    std::filesystem::create_directories(dir);
    std::string path = dir + "/prog";
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("#!/bin/sh\nexit 0\n", f);
    std::fclose(f);
    ::chmod(path.c_str(), mode);
    return path;
  }
  static std::string Refusal(const std::string& program) {
    Status s = CheckRootMayExecute(program);
    return s.ok() ? "" : s.error().message;
  }
  std::string trusted_, open_;
};

TEST_F(RootExecTest, RootOwnedProgramsInRootOwnedDirectoriesRun) {
  EXPECT_EQ(Refusal("/bin/sh"), "");  // /bin may be a symlink to usr/bin: followed, root's
  EXPECT_EQ(Refusal(Program(trusted_ + "/bin")), "");
  EXPECT_EQ(Refusal(trusted_ + "/bin/../bin/./prog"), "");
  EXPECT_EQ(Refusal(trusted_ + "/nothing/here"), "") << "exec reports a missing program itself";
}

TEST_F(RootExecTest, AnyPlaceAnotherUserCouldChangeIsNamed) {
  std::string group_writable = Program(trusted_ + "/g", 0775);
  EXPECT_NE(Refusal(group_writable).find(group_writable + " is writable by its group"),
            std::string::npos)
      << Refusal(group_writable);
  std::string theirs = Program(trusted_ + "/theirs/bin");
  ASSERT_EQ(::chown((trusted_ + "/theirs").c_str(), 65534, 65534), 0);
  EXPECT_NE(Refusal(theirs).find(trusted_ + "/theirs belongs to "), std::string::npos)
      << Refusal(theirs);
  EXPECT_NE(Refusal(theirs).find("uid 65534"), std::string::npos) << Refusal(theirs);
  std::string in_tmp = Program(open_);
  EXPECT_NE(Refusal(in_tmp).find("root does not run " + in_tmp + ": "), std::string::npos);
  EXPECT_NE(Refusal("bin/prog").find("not an absolute path"), std::string::npos);
}

TEST_F(RootExecTest, SymlinksAreFollowedToWhereTheyLead) {
  std::string outside = Program(open_ + "/bin");
  std::filesystem::create_directory_symlink(open_ + "/bin", trusted_ + "/link");
  std::string why = Refusal(trusted_ + "/link/prog");
  EXPECT_NE(why.find(std::filesystem::path(open_).parent_path().string() + " is writable by "
                                                                           "every user"),
            std::string::npos)
      << why;
  // A link the other user may replace: it lives in their directory.
  std::filesystem::create_directories(trusted_ + "/theirs");
  Program(trusted_ + "/real");
  std::filesystem::create_directory_symlink(trusted_ + "/real", trusted_ + "/theirs/link");
  ASSERT_EQ(::chown((trusted_ + "/theirs").c_str(), 65534, 65534), 0);
  EXPECT_NE(Refusal(trusted_ + "/theirs/link/prog").find(trusted_ + "/theirs belongs to "),
            std::string::npos);
  std::filesystem::create_directory_symlink("real", trusted_ + "/relative");
  EXPECT_EQ(Refusal(trusted_ + "/relative/prog"), "");
}

// The real runner and launcher apply the rule to what they would execute as root, and not to
// a program run as another user (it is dropped to that user before exec).
TEST_F(RootExecTest, RunnerAndLauncherRefuseWhatRootMustNotRun) {
  std::string planted = Program(open_ + "/bin");
  CommandSpec spec;
  spec.argv = {planted};
  auto ran = NewRealProcessRunner()->Run(spec);
  ASSERT_FALSE(ran.ok());
  EXPECT_EQ(ran.error().code, ErrorCode::kPermission);
  EXPECT_NE(ran.error().message.find("run the command as the user who owns it"), std::string::npos);
  ChildSpec child;
  child.argv = {planted};
  auto spawned = NewRealChildLauncher()->Spawn(child, [](std::string_view) {});
  ASSERT_FALSE(spawned.ok());
  EXPECT_EQ(spawned.error().code, ErrorCode::kPermission);
  ::chmod(open_.c_str(), 0755);
  spec.run_as = RunAs{"nobody", 65534, 65534, "/"};
  auto as_nobody = NewRealProcessRunner()->Run(spec);
  ASSERT_TRUE(as_nobody.ok()) << as_nobody.error().message;
  EXPECT_EQ(as_nobody->exit_code, 0);
}

TEST(UsersTest, UnknownUserSaysHowToFix) {
  auto user = LookupUser("no-such-skydb-user");
  ASSERT_FALSE(user.ok());
  EXPECT_EQ(user.error().code, ErrorCode::kNotFound);
  EXPECT_NE(user.error().message.find("useradd"), std::string::npos);
}

// The app launcher makes the app's output pipe non-blocking while it drains it beside the
// daemon's reader (src/daemon/app_launcher.cc): a line the other reader took first is not EOF.
TEST(LineReaderTest, ANonBlockingPipeSharedWithAnotherReaderEndsOnlyAtEof) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
  int second = ::fcntl(fds[0], F_DUPFD_CLOEXEC, 0);  // the same open pipe, as after a fork
  ASSERT_GE(second, 0);
  std::atomic<int> lines{0};
  auto count = [&lines](std::string_view) { ++lines; };
  LineReader first_reader(fds[0], count);
  LineReader second_reader(second, count);
  constexpr int kLines = 2000;
  for (int i = 0; i < kLines; ++i) {
    ASSERT_EQ(::write(fds[1], "line\n", 5), 5);
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  EXPECT_FALSE(first_reader.WaitClosed(std::chrono::milliseconds(0))) << "ended before EOF";
  EXPECT_FALSE(second_reader.WaitClosed(std::chrono::milliseconds(0))) << "ended before EOF";
  ::close(fds[1]);
  EXPECT_TRUE(first_reader.WaitClosed(std::chrono::seconds(5)));
  EXPECT_TRUE(second_reader.WaitClosed(std::chrono::seconds(5)));
  EXPECT_EQ(lines.load(), kLines);
}

TEST(AffinityTest, CountsAtLeastOneCpu) { EXPECT_GE(SchedAffinityCpuCount(), 1); }

}  // namespace
}  // namespace skydb
