// One server-side TLS connection over a non-blocking socket, read and written as the socket
// itself would be: Read and Write return what read(2) and send(2) return (bytes; 0 at the
// peer's end of stream; -1 with errno EAGAIN when the socket must become readable, or writable
// when WantsWritable(), first; -1 with errno EPROTO when TLS failed, error() saying why). The
// handshake runs inside the first reads and writes, so a connection needs no state of its own
// for it. A client that speaks plain RESP to it fails the handshake: EPROTO.
//
// Thread-safety: one thread at a time (the connection's loop). Ownership: owns its SSL; the
// socket stays the caller's to close.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "tls/tls_context.h"

namespace skydb {

class TlsStream {
 public:
  // nullptr when OpenSSL cannot make the connection's state (out of memory).
  static std::unique_ptr<TlsStream> Accept(TlsContext& context, int fd);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  ssize_t Read(char* buffer, size_t size);
  ssize_t Write(const char* data, size_t size);
  // The last Read or Write stopped until the socket takes bytes (EPOLLOUT, even when reading).
  bool WantsWritable() const { return wants_writable_; }
  // Decrypted bytes wait inside the stream: epoll will not say so; read them now.
  bool Buffered() const;
  bool handshake_done() const;
  const std::string& error() const { return error_; }
  // close_notify, once, best effort, never waiting.
  void Shutdown();

 private:
  explicit TlsStream(ssl_st* ssl) : ssl_(ssl) {}
  ssize_t Failed(int ret);

  ssl_st* ssl_;
  bool wants_writable_ = false;
  bool shut_down_ = false;
  std::string error_;
};

}  // namespace skydb
