#include "daemon/child_mode.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/json_text.h"
#include "skydb/app_env.h"

namespace skydb::daemon {

Status CheckReadyFd(int fd) {
  int flags = ::fcntl(fd, F_GETFD);
  if (fd < 0 || flags < 0) {
    return Error::InvalidArgument("--ready-fd " + std::to_string(fd) +
                                  " is not an open descriptor: the parent must open it (a pipe) "
                                  "and pass it to skydb");
  }
  if (fd <= STDERR_FILENO) {
    return Error::InvalidArgument("--ready-fd " + std::to_string(fd) +
                                  " is stdin, stdout or stderr: pass a descriptor of its own "
                                  "(3 or above)");
  }
  (void)::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  return Ok();
}

std::string ReadyLine(const Config& config, const ReadyInfo& info) {
  nlohmann::ordered_json line;
  const std::string* url = info.environment.Find("DATABASE_URL");
  line["database_url"] = url != nullptr ? nlohmann::ordered_json(*url) : nullptr;
  line["store_socket"] = JsonBytes<nlohmann::ordered_json>(info.store_socket);
  if (!info.http_socket.empty()) {
    line["http"] = JsonBytes<nlohmann::ordered_json>("unix:" + info.http_socket);
  } else if (info.http_port > 0) {
    line["http"] = "http://" + config.http.bind + ":" + std::to_string(info.http_port);
  } else {
    line["http"] = nullptr;
  }
  line["pid"] = info.pid;
  return JsonText(line, -1) + "\n";
}

void WriteReadyLine(int fd, const std::string& line) {
  // A parent that closed its end would raise SIGPIPE: held on this thread, then discarded.
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      spdlog::warn("--ready-fd {}: the ready line could not be written ({}); serving anyway", fd,
                   std::strerror(errno));
      break;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  struct timespec zero {};
  while (::sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace skydb::daemon
