// ProcessRunner over fork/execve: no shell, pipes for output, a hard timeout.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/spawn_support.h"
#include "skydb/env.h"

extern char** environ;

namespace skydb {

std::vector<std::string> BuildEnvironment(
    const std::map<std::string, std::optional<std::string>>& changes) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    merged[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [name, value] : changes) {
    if (value) {
      merged[name] = *value;
    } else {
      merged.erase(name);
    }
  }
  std::vector<std::string> out;
  out.reserve(merged.size());
  for (const auto& [name, value] : merged) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> CStringArray(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void ChildResetSignals() {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
}

bool ExecutesAsRoot(const std::optional<RunAs>& run_as) {
  return ::geteuid() == 0 && (!run_as || run_as->uid == 0);
}

Status CheckRootMayRun(const std::string& program) {
  Status trusted = CheckRootMayExecute(program);
  if (trusted.ok()) return trusted;
  return Error::Permission(trusted.error().message +
                           "; run the command as the user who owns it, or use root-owned "
                           "binaries");
}

void ChildDropPrivilegesOrDie(const RunAs& user, int report_fd) {
  gid_t gid = user.gid;
  if (::setgroups(1, &gid) != 0 || ::setgid(user.gid) != 0 || ::setuid(user.uid) != 0) {
    int err = errno;
    (void)!::write(report_fd, &err, sizeof err);
    ::_exit(127);
  }
}

namespace {

void CloseIfOpen(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

class RealProcessRunner final : public ProcessRunner {
 public:
  Result<CommandOutput> Run(const CommandSpec& spec) override {
    if (spec.argv.empty()) return Error::InvalidArgument("empty command");
    if (ExecutesAsRoot(spec.run_as)) SKYDB_RETURN_IF_ERROR(CheckRootMayRun(spec.argv[0]));
    std::vector<std::string> argv_strings = spec.argv;
    std::vector<std::string> env_strings = BuildEnvironment(spec.env);
    std::vector<char*> argv = CStringArray(argv_strings);
    std::vector<char*> envp = CStringArray(env_strings);

    int out_pipe[2], err_pipe[2], exec_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) return ErrnoError("pipe", errno);
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
      ::close(out_pipe[0]);
      ::close(out_pipe[1]);
      return ErrnoError("pipe", errno);
    }
    if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
      for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
      return ErrnoError("pipe", errno);
    }

    pid_t pid = ::fork();
    if (pid < 0) {
      int err = errno;
      for (int fd :
           {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1]}) {
        ::close(fd);
      }
      return ErrnoError("fork for " + spec.argv[0], err);
    }
    if (pid == 0) {
      int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
      ::dup2(out_pipe[1], STDOUT_FILENO);
      ::dup2(err_pipe[1], STDERR_FILENO);
      if (spec.run_as) ChildDropPrivilegesOrDie(*spec.run_as, exec_pipe[1]);
      if (!spec.working_dir.empty() && ::chdir(spec.working_dir.c_str()) != 0) {
        int err = errno;
        (void)!::write(exec_pipe[1], &err, sizeof err);
        ::_exit(127);
      }
      ::execve(argv[0], argv.data(), envp.data());
      int err = errno;
      (void)!::write(exec_pipe[1], &err, sizeof err);
      ::_exit(127);
    }

    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    ::close(exec_pipe[1]);
    int exec_errno = 0;
    ssize_t got = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno);
    ::close(exec_pipe[0]);

    CommandOutput result;
    bool timed_out = !Drain(out_pipe[0], err_pipe[0], spec.timeout, result);
    if (timed_out) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got == static_cast<ssize_t>(sizeof exec_errno)) {
      return ErrnoError("cannot run " + spec.argv[0], exec_errno);
    }
    if (timed_out) {
      return Error::Timeout(spec.argv[0] + " did not finish within " +
                            std::to_string(spec.timeout.count()) + " ms and was killed");
    }
    if (WIFEXITED(status)) {
      result.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      result.term_signal = WTERMSIG(status);
    }
    return result;
  }

 private:
  // Reads both pipes until EOF; false if the timeout ran out first.
  static bool Drain(int out_fd, int err_fd, std::chrono::milliseconds timeout,
                    CommandOutput& result) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int fds[2] = {out_fd, err_fd};
    std::string* sinks[2] = {&result.out, &result.err};
    bool done = true;
    while (fds[0] >= 0 || fds[1] >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        done = false;
        break;
      }
      struct pollfd pfds[2];
      for (int i = 0; i < 2; ++i) pfds[i] = {fds[i], POLLIN, 0};
      int n = ::poll(pfds, 2, static_cast<int>(left.count()));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      for (int i = 0; i < 2; ++i) {
        if (fds[i] < 0 || pfds[i].revents == 0) continue;
        char buf[8192];
        ssize_t r = ::read(fds[i], buf, sizeof buf);
        if (r > 0) {
          sinks[i]->append(buf, static_cast<size_t>(r));
        } else if (r == 0 || errno != EINTR) {
          CloseIfOpen(fds[i]);
        }
      }
    }
    CloseIfOpen(fds[0]);
    CloseIfOpen(fds[1]);
    return done;
  }
};

}  // namespace

std::unique_ptr<ProcessRunner> NewRealProcessRunner() {
  return std::make_unique<RealProcessRunner>();
}

}  // namespace skydb
