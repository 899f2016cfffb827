// A minimal blocking RESP2 client for integration tests (it reads RESP3's null, map and push
// too): one connection over a unix socket, one command at a time, every read and write bounded
// by a timeout.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "skydb/result.h"

namespace skydb::testing {

struct RespReply {
  enum class Type { kSimple, kError, kInteger, kBulk, kNull, kArray };
  Type type = Type::kNull;
  std::string text;  // simple string, error text or bulk payload
  long long integer = 0;
  std::vector<RespReply> elements;
  bool push = false;  // a RESP3 push ('>'), read as an array

  bool IsOk() const { return type == Type::kSimple && text == "OK"; }
};

class RespClient {
 public:
  static Result<RespClient> Connect(const std::string& socket_path,
                                    std::chrono::milliseconds timeout);
  RespClient(RespClient&& other) noexcept;
  RespClient& operator=(RespClient&& other) noexcept;
  RespClient(const RespClient&) = delete;
  RespClient& operator=(const RespClient&) = delete;
  ~RespClient();

  // Sends `args` as one command and reads its reply. An Error means the connection failed
  // (closed, timed out, malformed reply); the client is unusable afterwards.
  Result<RespReply> Command(const std::vector<std::string>& args);
  // Reads the next reply without sending anything (a pub/sub message), bounded by the timeout.
  Result<RespReply> Next() { return ReadReply(0); }
  // Sends every command at once (pipelined), then reads their replies in order.
  Result<std::vector<RespReply>> Pipeline(const std::vector<std::vector<std::string>>& commands);

 private:
  explicit RespClient(int fd) : fd_(fd) {}
  Status Send(const std::vector<std::vector<std::string>>& commands);
  Status Fill();
  Result<std::string> ReadLine();
  Result<RespReply> ReadReply(int depth);

  int fd_ = -1;
  std::string buffer_;
  size_t pos_ = 0;
};

}  // namespace skydb::testing
