// A minimal HTTP/1.1 server on a loopback TCP address, one request per connection, served one
// at a time on the server's own thread: enough for the example, not for the Internet.
// Thread-safety: Start and Stop from one thread; the handler runs on the server's thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>

namespace app {

struct Request {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // names lower-cased
};

struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;
};

inline Response Reply(int status, std::string body) {
  Response response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

class HttpServer {
 public:
  using Handler = std::function<Response(const Request&)>;
  ~HttpServer() { Stop(); }

  // "127.0.0.1:8080". False (and `error`) when the address is bad or taken.
  bool Start(const std::string& listen, Handler handler, std::string& error);
  void Stop();

 private:
  void Serve();
  void ServeOne(int fd);

  Handler handler_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace app
