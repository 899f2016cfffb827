// A minimal Redis-protocol (RESP2) client over skydb's unix socket: enough for GET and SET.
// Thread-safety: one connection, one thread. Failure: nullopt/false with `error()` set.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace app {

class RespClient {
 public:
  RespClient() = default;
  ~RespClient();
  RespClient(const RespClient&) = delete;
  RespClient& operator=(const RespClient&) = delete;

  bool Connect(const std::string& socket_path);
  // The value, or nullopt for a missing key (error() empty) or a failure (error() set).
  std::optional<std::string> Get(const std::string& key);
  bool Set(const std::string& key, const std::string& value, int ttl_seconds);
  const std::string& error() const { return error_; }

 private:
  struct Reply {
    char type = 0;  // '+', '-', ':', '$' (bulk; nil when `nil`)
    std::string text;
    bool nil = false;
  };
  std::optional<Reply> Call(const std::vector<std::string>& args);
  bool ReadLine(std::string& line);
  bool ReadExactly(size_t n, std::string& out);
  bool Fail(const std::string& what);

  int fd_ = -1;
  std::string buffer_;  // bytes read but not consumed
  std::string error_;
};

}  // namespace app
