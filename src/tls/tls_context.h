// The server side of TLS for skydb's TCP listeners (the store's resp.tls, the HTTP endpoints'
// http.tls): one certificate with its chain and key, and optionally the CAs a client
// certificate must chain to ([tls] in skydb/config.h), loaded from PEM files.
//
// Reload (SIGHUP) swaps the files in without touching a connection: each handshake takes the
// certificate, key and client-certificate rule current when it begins (a certificate callback
// applies them to the connection), so connections already up keep theirs and the next one gets
// the new ones. Files that do not load leave the current ones in place. TLS 1.2 and 1.3 only,
// no renegotiation, no compression.
//
// Thread-safety: every method from any thread; handshakes on many threads at once.
// Ownership: shared by the listeners that use it (std::shared_ptr); an SSL made from it keeps
// what it needs alive by OpenSSL's own reference counts.
// Failure: Load and Reload name the file and OpenSSL's reason ("tls.key_file /x: no start line").
#pragma once

#include <memory>
#include <string>

#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/mutex.h"
#include "skydb/result.h"

struct ssl_ctx_st;  // SSL_CTX
struct ssl_st;      // SSL

namespace skydb {

class TlsContext {
 public:
  TlsContext();  // nothing loaded yet: handshakes fail until Reload succeeds
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Reads (through `fs`) and checks `files`, the key matching the certificate; on success the
  // handshakes from now on use them.
  Status Reload(const TlsConfig& files, const FileSystem& fs);
  bool loaded() const;
  // "CN=db.example, not after 2027-01-01 00:00:00 UTC, client certificates required"
  std::string Describe() const;

  // Configures a context made by someone else (cpp-httplib's SSLServer) as this one's own:
  // protocol versions, options, and the certificate callback that applies the current files.
  void Attach(ssl_ctx_st* ctx);
  // A server-side SSL for an accepted socket `fd` (the caller keeps the fd); nullptr when
  // OpenSSL cannot make one.
  ssl_st* NewServerSsl(int fd);

  struct Material;  // what one load holds (tls_context.cc)

 private:
  static int OnCertificate(ssl_st* ssl, void* self);
  std::shared_ptr<const Material> Current() const;

  ssl_ctx_st* ctx_ = nullptr;  // the store's connections are made from this one
  mutable Mutex mu_;
  std::shared_ptr<const Material> current_ GUARDED_BY(mu_);
};

}  // namespace skydb
