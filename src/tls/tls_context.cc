#include "tls/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <utility>

namespace skydb {
namespace {

// OpenSSL's reason for the last failure ("no start line"), and the queue emptied.
std::string OpenSslReason() {
  unsigned long code = ERR_peek_last_error();
  std::string reason = code == 0                                  ? "unknown error"
                       : ERR_reason_error_string(code) != nullptr ? ERR_reason_error_string(code)
                                                                  : std::to_string(code);
  ERR_clear_error();
  return reason;
}

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using Bio = std::unique_ptr<BIO, BioFree>;

Bio MemoryBio(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// A key protected by a passphrase is refused instead of prompting on the terminal.
int NoPassphrase(char*, int, int, void*) { return 0; }

std::string Printed(const ASN1_TIME* time) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || ASN1_TIME_print(bio.get(), time) != 1) return "?";
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string SubjectOf(X509* cert) {
  char line[256];
  X509_NAME_oneline(X509_get_subject_name(cert), line, sizeof line);
  return line;
}

}  // namespace

struct TlsContext::Material {
  X509* cert = nullptr;
  STACK_OF(X509) * chain = nullptr;
  EVP_PKEY* key = nullptr;
  X509_STORE* ca_store = nullptr;
  STACK_OF(X509_NAME) * ca_names = nullptr;
  int verify_mode = SSL_VERIFY_NONE;
  std::string description;

  Material() = default;
  Material(const Material&) = delete;
  Material& operator=(const Material&) = delete;
  ~Material() {
    X509_free(cert);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
    X509_STORE_free(ca_store);
    sk_X509_NAME_pop_free(ca_names, X509_NAME_free);
  }
};

namespace {

Status LoadCertificate(TlsContext::Material* m, const std::string& path, const std::string& pem);

}  // namespace

TlsContext::TlsContext() : ctx_(SSL_CTX_new(TLS_server_method())) {
  if (ctx_ == nullptr) return;
  Attach(ctx_);
  // The store's connections write as send(2) does: part of a buffer that may move between calls.
  SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // A peer that closes without close_notify ends the stream like a socket's EOF.
  SSL_CTX_set_options(ctx_, SSL_OP_IGNORE_UNEXPECTED_EOF);
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

void TlsContext::Attach(ssl_ctx_st* ctx) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_TICKET);
  // No resumption: every connection's handshake checks the certificate rules current then.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_cert_cb(ctx, &TlsContext::OnCertificate, this);
}

ssl_st* TlsContext::NewServerSsl(int fd) {
  if (ctx_ == nullptr) return nullptr;
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return nullptr;
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return ssl;
}

std::shared_ptr<const TlsContext::Material> TlsContext::Current() const {
  MutexLock lock(mu_);
  return current_;
}

bool TlsContext::loaded() const { return Current() != nullptr; }

std::string TlsContext::Describe() const {
  auto m = Current();
  return m ? m->description : "no certificate loaded";
}

int TlsContext::OnCertificate(ssl_st* ssl, void* self) {
  std::shared_ptr<const Material> m = static_cast<TlsContext*>(self)->Current();
  if (!m) return 0;  // nothing loaded: the handshake fails
  if (SSL_use_cert_and_key(ssl, m->cert, m->key, m->chain, 1) != 1) return 0;
  SSL_set_verify(ssl, m->verify_mode, nullptr);
  if (m->ca_store != nullptr) SSL_set1_verify_cert_store(ssl, m->ca_store);
  if (m->ca_names != nullptr) SSL_set_client_CA_list(ssl, SSL_dup_CA_list(m->ca_names));
  return 1;
}

Status TlsContext::Reload(const TlsConfig& files, const FileSystem& fs) {
  auto m = std::make_shared<Material>();
  auto cert_pem = fs.ReadFile(files.cert_file);
  if (!cert_pem.ok()) {
    return Error::InvalidArgument("tls.cert_file " + files.cert_file + ": " +
                                  cert_pem.error().message);
  }
  SKYDB_RETURN_IF_ERROR(LoadCertificate(m.get(), files.cert_file, *cert_pem));
  auto key_pem = fs.ReadFile(files.key_file);
  if (!key_pem.ok()) {
    return Error::InvalidArgument("tls.key_file " + files.key_file + ": " +
                                  key_pem.error().message);
  }
  Bio key_bio = MemoryBio(*key_pem);
  m->key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassphrase, nullptr);
  if (m->key == nullptr) {
    return Error::InvalidArgument("tls.key_file " + files.key_file + ": " + OpenSslReason() +
                                  " (a PEM private key without a passphrase is needed)");
  }
  if (X509_check_private_key(m->cert, m->key) != 1) {
    ERR_clear_error();
    return Error::InvalidArgument("tls.key_file " + files.key_file +
                                  " is not the key of tls.cert_file " + files.cert_file);
  }
  if (files.client_certs != TlsClientCerts::kNone) {
    auto ca_pem = fs.ReadFile(files.ca_file);
    if (!ca_pem.ok()) {
      return Error::InvalidArgument("tls.ca_file " + files.ca_file + ": " + ca_pem.error().message);
    }
    m->ca_store = X509_STORE_new();
    m->ca_names = sk_X509_NAME_new_null();
    Bio ca_bio = MemoryBio(*ca_pem);
    int count = 0;
    while (X509* ca = PEM_read_bio_X509(ca_bio.get(), nullptr, NoPassphrase, nullptr)) {
      X509_STORE_add_cert(m->ca_store, ca);
      sk_X509_NAME_push(m->ca_names, X509_NAME_dup(X509_get_subject_name(ca)));
      X509_free(ca);
      ++count;
    }
    ERR_clear_error();
    if (count == 0) {
      return Error::InvalidArgument("tls.ca_file " + files.ca_file + " holds no PEM certificate");
    }
    m->verify_mode = files.client_certs == TlsClientCerts::kRequired
                         ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                         : SSL_VERIFY_PEER;
  }
  m->description =
      SubjectOf(m->cert) + ", not after " + Printed(X509_get0_notAfter(m->cert)) +
      (files.client_certs == TlsClientCerts::kRequired   ? ", client certificates required"
       : files.client_certs == TlsClientCerts::kOptional ? ", client certificates checked when sent"
                                                         : "");
  MutexLock lock(mu_);
  current_ = std::move(m);
  return Ok();
}

namespace {

Status LoadCertificate(TlsContext::Material* m, const std::string& path, const std::string& pem) {
  Bio bio = MemoryBio(pem);
  m->cert = PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr);
  if (m->cert == nullptr) {
    return Error::InvalidArgument("tls.cert_file " + path + ": " + OpenSslReason() +
                                  " (a PEM certificate is needed)");
  }
  m->chain = sk_X509_new_null();
  while (X509* next = PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr)) {
    sk_X509_push(m->chain, next);
  }
  ERR_clear_error();  // the end of the file reads as "no start line"
  return Ok();
}

}  // namespace

}  // namespace skydb
