#include "tls/tls_stream.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace skydb {

std::unique_ptr<TlsStream> TlsStream::Accept(TlsContext& context, int fd) {
  SSL* ssl = context.NewServerSsl(fd);
  if (ssl == nullptr) return nullptr;
  return std::unique_ptr<TlsStream>(new TlsStream(ssl));
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

ssize_t TlsStream::Read(char* buffer, size_t size) {
  ERR_clear_error();
  int n = SSL_read(ssl_, buffer, static_cast<int>(std::min<size_t>(size, INT_MAX)));
  if (n > 0) {
    wants_writable_ = false;
    return n;
  }
  return Failed(n);
}

ssize_t TlsStream::Write(const char* data, size_t size) {
  ERR_clear_error();
  int n = SSL_write(ssl_, data, static_cast<int>(std::min<size_t>(size, INT_MAX)));
  if (n > 0) {
    wants_writable_ = false;
    return n;
  }
  return Failed(n);
}

ssize_t TlsStream::Failed(int ret) {
  int saved = errno;
  switch (SSL_get_error(ssl_, ret)) {
    case SSL_ERROR_WANT_READ:
      wants_writable_ = false;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_WANT_WRITE:
      wants_writable_ = true;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_ZERO_RETURN:
      return 0;
    case SSL_ERROR_SYSCALL:
      if (ERR_peek_error() == 0 && saved == 0) return 0;  // the socket ended
      errno = saved == 0 ? EPROTO : saved;
      error_ = saved == 0 ? "TLS failed" : "TLS failed in the socket";
      return -1;
    default: {
      unsigned long code = ERR_get_error();
      const char* reason = code != 0 ? ERR_reason_error_string(code) : nullptr;
      error_ = reason != nullptr ? reason : "TLS failed";
      ERR_clear_error();
      errno = EPROTO;
      return -1;
    }
  }
}

bool TlsStream::Buffered() const { return SSL_pending(ssl_) > 0; }

bool TlsStream::handshake_done() const { return SSL_is_init_finished(ssl_) == 1; }

void TlsStream::Shutdown() {
  if (shut_down_ || !handshake_done()) return;
  shut_down_ = true;
  ERR_clear_error();
  (void)SSL_shutdown(ssl_);
  ERR_clear_error();
}

}  // namespace skydb
