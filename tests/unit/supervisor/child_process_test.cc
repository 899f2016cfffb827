// The real ChildLauncher against /bin/sh: stderr capture, exit status, environment, signals.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <mutex>

#include "skydb/process.h"

namespace skydb {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct Lines {
  std::mutex mu;
  std::vector<std::string> lines;
  LineSink Sink() {
    return [this](std::string_view l) {
      std::lock_guard lock(mu);
      lines.emplace_back(l);
    };
  }
};

std::unique_ptr<ChildProcess> SpawnShell(const std::string& script, Lines& lines,
                                         ChildSpec spec = {}) {
  spec.argv = {"/bin/sh", "-c", script};
  auto child = NewRealChildLauncher()->Spawn(spec, lines.Sink());
  EXPECT_TRUE(child.ok()) << child.error().message;
  return child.ok() ? std::move(child).value() : nullptr;
}

TEST(ChildProcessTest, CapturesStderrLinesAndExitStatus) {
  Lines lines;
  auto child = SpawnShell("echo one >&2; printf 'two\\nthree' >&2; exit 3", lines);
  ASSERT_NE(child, nullptr);
  auto status = child->WaitFor(seconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->exit_code, 3);
  EXPECT_EQ(status->Describe(), "exited with status 3");
  ASSERT_TRUE(child->WaitOutputClosed(seconds(10)));
  std::lock_guard lock(lines.mu);
  EXPECT_EQ(lines.lines, (std::vector<std::string>{"one", "two", "three"}));
}

TEST(ChildProcessTest, ScrubsNotifySocketAndAppliesEnv) {
  ::setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1);
  Lines lines;
  ChildSpec spec;
  spec.env["SKYDB_CHILD_TEST"] = "yes";
  auto child = SpawnShell("echo \"${NOTIFY_SOCKET:-unset} $SKYDB_CHILD_TEST\" >&2", lines, spec);
  ::unsetenv("NOTIFY_SOCKET");
  ASSERT_NE(child, nullptr);
  ASSERT_TRUE(child->WaitFor(seconds(10)).has_value());
  ASSERT_TRUE(child->WaitOutputClosed(seconds(10)));
  std::lock_guard lock(lines.mu);
  EXPECT_EQ(lines.lines, std::vector<std::string>{"unset yes"});
}

TEST(ChildProcessTest, SignalTerminatesAndIsReported) {
  Lines lines;
  auto child = SpawnShell("exec sleep 30", lines);
  ASSERT_NE(child, nullptr);
  EXPECT_FALSE(child->TryWait().has_value());
  ASSERT_TRUE(child->Signal(SIGTERM).ok());
  auto status = child->WaitFor(seconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->term_signal, SIGTERM);
  EXPECT_FALSE(child->Signal(SIGTERM).ok()) << "signalling a reaped child must fail";
}

TEST(ChildProcessTest, RunsInItsOwnProcessGroup) {
  Lines lines;
  auto child = SpawnShell("cut -d' ' -f5 /proc/$$/stat >&2; echo $$ >&2", lines);
  ASSERT_NE(child, nullptr);
  ASSERT_TRUE(child->WaitFor(seconds(10)).has_value());
  ASSERT_TRUE(child->WaitOutputClosed(seconds(10)));
  std::lock_guard lock(lines.mu);
  ASSERT_EQ(lines.lines.size(), 2u);
  EXPECT_EQ(std::string(lines.lines[0].substr(lines.lines[0].find_first_not_of(' '))),
            lines.lines[1]);
}

TEST(ChildProcessTest, ExecFailureIsAnError) {
  Lines lines;
  ChildSpec spec;
  spec.argv = {"/nonexistent/postgres"};
  auto child = NewRealChildLauncher()->Spawn(spec, lines.Sink());
  ASSERT_FALSE(child.ok());
  EXPECT_NE(child.error().message.find("/nonexistent/postgres"), std::string::npos);
}

TEST(ChildProcessTest, WaitForTimesOutOnARunningChild) {
  Lines lines;
  auto child = SpawnShell("exec sleep 30", lines);
  ASSERT_NE(child, nullptr);
  EXPECT_FALSE(child->WaitFor(milliseconds(100)).has_value());
  ASSERT_TRUE(child->Signal(SIGKILL).ok());
  EXPECT_TRUE(child->WaitFor(seconds(10)).has_value());
}

}  // namespace
}  // namespace skydb
