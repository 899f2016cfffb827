// Reads a pipe on its own thread and hands it, line by line, to a sink: a child's stderr (the
// postmaster's, src/os/child_process.cc) or the app's output (src/daemon/app_runner.cc).
//
// Thread-safety: the sink is called on the reader thread and must be thread-safe (spdlog is);
// WaitClosed and Stop from any one other thread.
// Ownership: takes the descriptor and closes it when the pipe reaches EOF or Stop() is called;
// the destructor stops the reader (after draining what is already buffered).
// Failure: none reported; a read error ends the stream like EOF (EAGAIN is not an error: the
// descriptor may be non-blocking and shared with another reader).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "skydb/mutex.h"

namespace skydb {

class LineReader {
 public:
  using Sink = std::function<void(std::string_view line)>;

  LineReader(int fd, Sink sink);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // True once every writer closed the pipe (EOF was read) within `timeout`.
  bool WaitClosed(std::chrono::milliseconds timeout);
  // Stops reading (a last partial line is still handed over); idempotent.
  void Stop();

 private:
  void Loop();
  void EmitLines(std::string& pending);

  int fd_;
  Sink sink_;
  int wake_read_ = -1;
  int wake_write_ = -1;
  Mutex mu_;
  CondVar closed_cv_;
  bool closed_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace skydb
