// The real app launcher (skydb/process.h): the launcher process, forked by the daemon, and the
// daemon's end of its socket.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "os/app_protocol.h"
#include "os/spawn_support.h"
#include "skydb/mutex.h"
#include "skydb/process.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace skydb {
namespace {

bool SendAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Every descriptor above stderr but `keep` closed: the launcher holds nothing of the daemon's.
void CloseAllBut(std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned from = 3;
  for (int fd : keep) {
    if (static_cast<unsigned>(fd) > from) ::syscall(SYS_close_range, from, fd - 1U, 0U);
    from = static_cast<unsigned>(fd) + 1;
  }
  ::syscall(SYS_close_range, from, ~0U, 0U);
}

// Between fork and exec of the app (the launcher is single-threaded, so this is safe).
[[noreturn]] void ExecApp(std::vector<char*>& argv, std::vector<char*>& envp, int output,
                          int report, pid_t launcher) {
  ChildResetSignals();
  ::setpgid(0, 0);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  ::dup2(output, STDOUT_FILENO);
  ::dup2(output, STDERR_FILENO);
  ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  if (::prctl(PR_SET_PDEATHSIG, SIGTERM) == 0 && ::getppid() != launcher) ::_exit(126);
  ::execvpe(argv[0], argv.data(), envp.data());
  int err = errno;
  (void)!::write(report, &err, sizeof err);
  ::_exit(127);
}

// The launcher's parent-death signal. Not SIGTERM: that one (a terminal's or `kill -- -PGID`)
// is the daemon's to act on, which stops the app in order; the launcher ignores it.
constexpr int kDaemonGone = SIGUSR1;

// The launcher process: one loop over the daemon's socket and a signalfd (SIGCHLD and
// kDaemonGone).
class Launcher {
 public:
  Launcher(int socket, int output, int drain, int signals, std::chrono::milliseconds stop_timeout)
      : socket_(socket),
        output_(output),
        drain_(drain),
        signals_(signals),
        stop_timeout_(stop_timeout) {}

  [[noreturn]] void Loop() {
    while (true) {
      struct pollfd pfds[2] = {{socket_, POLLIN, 0}, {signals_, POLLIN, 0}};
      if (::poll(pfds, 2, -1) < 0) continue;  // EINTR
      if ((pfds[1].revents & POLLIN) != 0 && TakeSignal() == kDaemonGone) Shutdown();
      if ((pfds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) ReadRequests();
    }
  }

  void Report(const AppReport& report) {
    (void)SendAll(socket_, EncodeAppFrame(ReportFields(report)));
  }

 private:
  // The signal read from the signalfd; a SIGCHLD reaps what exited.
  int TakeSignal() {
    struct signalfd_siginfo info {};
    if (::read(signals_, &info, sizeof info) != sizeof info) return 0;
    if (info.ssi_signo == SIGCHLD) Reap(WNOHANG);
    return static_cast<int>(info.ssi_signo);
  }

  void Reap(int flags) {
    int status = 0;
    for (pid_t pid; (pid = ::waitpid(-1, &status, flags)) > 0;) {
      if (pid != app_) continue;
      app_ = 0;
      AppReport exited;
      exited.kind = AppReport::Kind::kExited;
      if (WIFEXITED(status)) exited.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) exited.term_signal = WTERMSIG(status);
      Report(exited);
      if (flags == 0) return;
    }
  }

  void ReadRequests() {
    char buf[65536];
    ssize_t n = ::read(socket_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) return;
    if (n <= 0) Shutdown();  // the daemon is gone
    decoder_.Feed(std::string_view(buf, static_cast<size_t>(n)));
    AppFields fields;
    AppFrameDecoder::Next next;
    while ((next = decoder_.Pop(fields)) == AppFrameDecoder::Next::kMessage) {
      auto request = ParseRequest(fields);
      if (!request.ok()) Shutdown();
      if (request->kind == AppRequest::Kind::kSignal) {
        Signal(request->signal);
      } else {
        Start(*request);
      }
    }
    if (next == AppFrameDecoder::Next::kMalformed) Shutdown();
  }

  void Signal(int sig) {
    if (app_ == 0) return;
    // SIGKILL ends the whole group, so nothing the app started keeps its output pipe open.
    ::kill(sig == SIGKILL ? -app_ : app_, sig);
  }

  void Start(AppRequest& request) {
    AppReport report;
    report.kind = AppReport::Kind::kExecFailed;
    if (app_ != 0) {
      report.error_number = EBUSY;
      report.text = "an app is already running (pid " + std::to_string(app_) + ")";
      return Report(report);
    }
    std::vector<char*> argv = CStringArray(request.argv);
    std::vector<char*> envp = CStringArray(request.env);
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      report.error_number = errno;
      report.text = std::string("pipe: ") + std::strerror(errno);
      return Report(report);
    }
    pid_t self = ::getpid();
    pid_t pid = ::fork();
    if (pid == 0) ExecApp(argv, envp, output_, pipe_fds[1], self);
    int fork_errno = errno;
    ::close(pipe_fds[1]);
    int child_errno = 0;
    ssize_t got = pid < 0 ? 0 : -1;
    while (pid > 0 && (got = ::read(pipe_fds[0], &child_errno, sizeof child_errno)) < 0 &&
           errno == EINTR) {
    }
    ::close(pipe_fds[0]);
    if (pid < 0 || got == static_cast<ssize_t>(sizeof child_errno)) {
      if (pid > 0) ::waitpid(pid, nullptr, 0);
      report.error_number = pid < 0 ? fork_errno : child_errno;
      report.text = std::string(pid < 0 ? "fork: " : "") + std::strerror(report.error_number);
      return Report(report);
    }
    app_ = pid;
    report.kind = AppReport::Kind::kStarted;
    report.pid = pid;
    Report(report);
  }

  // The daemon is gone: the app is stopped, SIGKILL after stop_timeout. Its output, which
  // nobody reads now, is copied to the launcher's stderr (the daemon's: the journal under
  // systemd), so an app that logs while it shuts down is neither blocked nor hit by SIGPIPE.
  // A daemon that closed the socket while alive still reads the same pipe and may take the
  // bytes poll announced: a blocking read would then wait for the app's next line, forever
  // (the launcher holds a writer), so the app would never get its SIGKILL. The pipe is made
  // non-blocking (the daemon's reader, src/os/line_reader.cc, takes EAGAIN as "not yet").
  [[noreturn]] void Shutdown() {
    if (app_ != 0) {
      ::fcntl(drain_, F_SETFL, ::fcntl(drain_, F_GETFL) | O_NONBLOCK);
      ::kill(app_, SIGTERM);
      auto deadline = std::chrono::steady_clock::now() + stop_timeout_;
      while (app_ != 0 && std::chrono::steady_clock::now() < deadline) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        struct pollfd pfds[2] = {{signals_, POLLIN, 0}, {drain_, POLLIN, 0}};
        if (::poll(pfds, 2, static_cast<int>(std::max<int64_t>(left.count(), 1))) <= 0) continue;
        if ((pfds[0].revents & POLLIN) != 0) TakeSignal();
        if ((pfds[1].revents & POLLIN) != 0) Drain();
      }
      if (app_ != 0) {
        ::kill(-app_, SIGKILL);
        Reap(0);
      }
    }
    ::_exit(0);
  }

  void Drain() {
    char buf[4096];
    ssize_t n = ::read(drain_, buf, sizeof buf);  // -1 with EAGAIN: the daemon took them
    if (n > 0) (void)!::write(STDERR_FILENO, buf, static_cast<size_t>(n));
  }

  int socket_;
  int output_;
  int drain_;  // the output pipe's read end, read only once the daemon is gone
  int signals_;
  std::chrono::milliseconds stop_timeout_;
  pid_t app_ = 0;
  AppFrameDecoder decoder_;
};

[[noreturn]] void LauncherMain(HostOps& host, const AppLauncherSetup& setup, int socket, int output,
                               int drain, pid_t daemon) {
  CloseAllBut({socket, output, drain});
  // SIGPIPE too: the app's last lines, copied to a stderr that went with the daemon, fail
  // with EPIPE instead of killing the launcher before its SIGKILL. The app starts unblocked.
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE})
    sigaddset(&set, sig);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  sigset_t taken;
  sigemptyset(&taken);
  sigaddset(&taken, SIGCHLD);
  sigaddset(&taken, kDaemonGone);
  int signals = ::signalfd(-1, &taken, SFD_CLOEXEC);
  Launcher launcher(socket, output, drain, signals, setup.stop_timeout);
  AppReport report;
  report.kind = AppReport::Kind::kLauncherFailed;
  Status dropped =
      setup.user.drop_privileges ? host.DropPrivileges(setup.user.user, setup.groups) : Ok();
  if (signals < 0) dropped = ErrnoError("signalfd", errno);
  if (!dropped.ok()) {
    report.text = dropped.error().message;
    launcher.Report(report);
    ::_exit(1);
  }
  // After the credential change, which clears it; then the daemon may already be gone.
  if (::prctl(PR_SET_PDEATHSIG, kDaemonGone) != 0 || ::getppid() != daemon) ::_exit(1);
  report.kind = AppReport::Kind::kLauncherReady;
  report.text = setup.user.user.name;
  launcher.Report(report);
  launcher.Loop();
}

// The daemon's end: the socket, the output pipe's read end, and the launcher to reap.
class RealAppLauncher final : public AppLauncher {
 public:
  RealAppLauncher(pid_t pid, int socket, int output, std::chrono::milliseconds stop_timeout)
      : pid_(pid), socket_(socket), output_(output), stop_timeout_(stop_timeout) {}
  ~RealAppLauncher() override;
  RealAppLauncher(const RealAppLauncher&) = delete;
  RealAppLauncher& operator=(const RealAppLauncher&) = delete;

  Status AwaitReady(std::chrono::milliseconds timeout) override;
  Status Send(const AppRequest& request) override;
  Result<std::optional<AppReport>> Next(std::chrono::milliseconds timeout) override;
  int TakeOutput() override { return std::exchange(output_, -1); }
  pid_t pid() const override { return pid_; }

 private:
  pid_t pid_;
  int socket_;
  int output_;
  std::chrono::milliseconds stop_timeout_;
  Mutex send_mu_;
  AppFrameDecoder decoder_;  // Next's thread only
};

class RealAppLauncherForker final : public AppLauncherForker {
 public:
  explicit RealAppLauncherForker(HostOps& host) : host_(host) {}
  Result<std::unique_ptr<AppLauncher>> Fork(const AppLauncherSetup& setup) override {
    return ForkRealAppLauncher(host_, setup);
  }

 private:
  HostOps& host_;
};

}  // namespace

Result<std::unique_ptr<AppLauncher>> ForkRealAppLauncher(HostOps& host,
                                                         const AppLauncherSetup& setup) {
  int sockets[2], output[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
    return ErrnoError("socketpair for the app launcher", errno);
  }
  if (::pipe2(output, O_CLOEXEC) != 0) {
    int e = errno;
    ::close(sockets[0]);
    ::close(sockets[1]);
    return ErrnoError("pipe for the app's output", e);
  }
  pid_t daemon = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) LauncherMain(host, setup, sockets[1], output[1], output[0], daemon);
  int fork_errno = errno;
  ::close(sockets[1]);
  ::close(output[1]);
  if (pid < 0) {
    ::close(sockets[0]);
    ::close(output[0]);
    return ErrnoError("cannot fork the app launcher", fork_errno);
  }
  return std::unique_ptr<AppLauncher>(
      std::make_unique<RealAppLauncher>(pid, sockets[0], output[0], setup.stop_timeout));
}

RealAppLauncher::~RealAppLauncher() {
  ::close(socket_);  // EOF: the launcher stops the app and exits
  if (output_ >= 0) ::close(output_);
  auto deadline = std::chrono::steady_clock::now() + stop_timeout_ + std::chrono::seconds(5);
  while (::waitpid(pid_, nullptr, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Status RealAppLauncher::AwaitReady(std::chrono::milliseconds timeout) {
  SKYDB_ASSIGN_OR_RETURN(std::optional<AppReport> first, Next(timeout));
  if (!first)
    return Error::Unavailable("the app launcher did not answer within " +
                              std::to_string(timeout.count()) + " ms");
  if (first->kind == AppReport::Kind::kLauncherFailed) {
    return Error::Permission("the app launcher could not become the app's user: " + first->text);
  }
  if (first->kind != AppReport::Kind::kLauncherReady) {
    return Error{ErrorCode::kInternal, "the app launcher's first report was not launcher-ready"};
  }
  return Ok();
}

Status RealAppLauncher::Send(const AppRequest& request) {
  MutexLock lock(send_mu_);
  if (!SendAll(socket_, EncodeAppFrame(RequestFields(request)))) {
    return ErrnoError("the app launcher (pid " + std::to_string(pid_) + ") is gone", errno);
  }
  return Ok();
}

Result<std::optional<AppReport>> RealAppLauncher::Next(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    AppFields fields;
    auto next = decoder_.Pop(fields);
    if (next == AppFrameDecoder::Next::kMessage) {
      SKYDB_ASSIGN_OR_RETURN(AppReport report, ParseReport(fields));
      return std::optional<AppReport>(std::move(report));
    }
    if (next == AppFrameDecoder::Next::kMalformed) {
      return Error{ErrorCode::kInternal, "the app launcher sent a malformed message"};
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::optional<AppReport>();
    struct pollfd pfd = {socket_, POLLIN, 0};
    int n = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (n <= 0) continue;
    char buf[4096];
    ssize_t got = ::read(socket_, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return Error::Unavailable("the app launcher (pid " + std::to_string(pid_) + ") exited");
    }
    decoder_.Feed(std::string_view(buf, static_cast<size_t>(got)));
  }
}

std::unique_ptr<AppLauncherForker> NewRealAppLauncherForker(HostOps& host) {
  return std::make_unique<RealAppLauncherForker>(host);
}

}  // namespace skydb
