// ChildLauncher over fork/execve, for long-running children (the postmaster).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "os/line_reader.h"
#include "os/spawn_support.h"
#include "skydb/process.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace skydb {

std::string ExitStatus::Describe() const {
  if (term_signal != 0) {
    return "killed by signal " + std::to_string(term_signal) + " (" + ::strsignal(term_signal) +
           ")";
  }
  return "exited with status " + std::to_string(exit_code);
}

namespace {

class RealChildProcess final : public ChildProcess {
 public:
  RealChildProcess(pid_t pid, int stderr_fd, LineSink sink)
      : pid_(pid), reader_(stderr_fd, std::move(sink)) {}

  pid_t pid() const override { return pid_; }

  Status Signal(int sig) override {
    if (exit_) return Error::Unavailable("process " + std::to_string(pid_) + " already exited");
    if (::kill(pid_, sig) != 0) return ErrnoError("kill " + std::to_string(pid_), errno);
    return Ok();
  }

  std::optional<ExitStatus> TryWait() override {
    if (exit_) return exit_;
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      ExitStatus es;
      if (WIFEXITED(status)) es.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) es.term_signal = WTERMSIG(status);
      exit_ = es;
    } else if (r < 0 && errno == ECHILD) {
      exit_ = ExitStatus{};  // reaped elsewhere; nothing more to learn
    }
    return exit_;
  }

  std::optional<ExitStatus> WaitFor(std::chrono::milliseconds timeout) override {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (auto done = TryWait()) return done;
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  bool WaitOutputClosed(std::chrono::milliseconds timeout) override {
    return reader_.WaitClosed(timeout);
  }

 private:
  pid_t pid_;
  std::optional<ExitStatus> exit_;
  LineReader reader_;
};

// Everything the child needs, prepared before fork: after fork only async-signal-safe calls.
struct Prepared {
  std::vector<std::string> argv_strings;
  std::vector<std::string> env_strings;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

[[noreturn]] void ReportAndExit(int report_fd) {
  int err = errno;
  (void)!::write(report_fd, &err, sizeof err);
  ::_exit(127);
}

[[noreturn]] void RunChild(const ChildSpec& spec, Prepared& p, int err_fd, int report_fd,
                           pid_t parent) {
  ChildResetSignals();
  ::setpgid(0, 0);
  int devnull = ::open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    ::dup2(devnull, STDIN_FILENO);
    ::dup2(devnull, STDOUT_FILENO);
  }
  ::dup2(err_fd, STDERR_FILENO);
  ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  if (spec.run_as) ChildDropPrivilegesOrDie(*spec.run_as, report_fd);
  if (spec.parent_death_signal != 0) {
    if (::prctl(PR_SET_PDEATHSIG, spec.parent_death_signal) != 0) ReportAndExit(report_fd);
    // The parent may have died between fork and prctl; then nobody would signal us.
    if (::getppid() != parent) ::_exit(126);
  }
  if (!spec.working_dir.empty() && ::chdir(spec.working_dir.c_str()) != 0) {
    ReportAndExit(report_fd);
  }
  ::execve(p.argv[0], p.argv.data(), p.envp.data());
  ReportAndExit(report_fd);
}

class RealChildLauncher final : public ChildLauncher {
 public:
  Result<std::unique_ptr<ChildProcess>> Spawn(const ChildSpec& spec, LineSink sink) override {
    if (spec.argv.empty()) return Error::InvalidArgument("empty command");
    if (ExecutesAsRoot(spec.run_as)) SKYDB_RETURN_IF_ERROR(CheckRootMayRun(spec.argv[0]));
    Prepared p;
    p.argv_strings = spec.argv;
    auto env = spec.env;
    env["NOTIFY_SOCKET"] = std::nullopt;
    p.env_strings = BuildEnvironment(env);
    p.argv = CStringArray(p.argv_strings);
    p.envp = CStringArray(p.env_strings);

    int err_pipe[2], report_pipe[2];
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) return ErrnoError("pipe", errno);
    if (::pipe2(report_pipe, O_CLOEXEC) != 0) {
      int e = errno;
      ::close(err_pipe[0]);
      ::close(err_pipe[1]);
      return ErrnoError("pipe", e);
    }
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid == 0) RunChild(spec, p, err_pipe[1], report_pipe[1], parent);
    int fork_errno = errno;
    ::close(err_pipe[1]);
    ::close(report_pipe[1]);
    if (pid < 0) {
      ::close(err_pipe[0]);
      ::close(report_pipe[0]);
      return ErrnoError("cannot fork for " + spec.argv[0], fork_errno);
    }
    return Finish(spec, pid, err_pipe[0], report_pipe[0], std::move(sink));
  }

 private:
  // Reads the exec report: EOF means exec succeeded; an errno means the child failed to start.
  static Result<std::unique_ptr<ChildProcess>> Finish(const ChildSpec& spec, pid_t pid, int err_fd,
                                                      int report_fd, LineSink sink) {
    int child_errno = 0;
    ssize_t got;
    do {
      got = ::read(report_fd, &child_errno, sizeof child_errno);
    } while (got < 0 && errno == EINTR);
    ::close(report_fd);
    auto child = std::make_unique<RealChildProcess>(pid, err_fd, std::move(sink));
    if (got == static_cast<ssize_t>(sizeof child_errno)) {
      child->WaitFor(std::chrono::seconds(5));
      std::string who = spec.run_as ? " as user " + spec.run_as->name : "";
      return ErrnoError("cannot start " + spec.argv[0] + who, child_errno);
    }
    return std::unique_ptr<ChildProcess>(std::move(child));
  }
};

}  // namespace

std::unique_ptr<ChildLauncher> NewRealChildLauncher() {
  return std::make_unique<RealChildLauncher>();
}

}  // namespace skydb
