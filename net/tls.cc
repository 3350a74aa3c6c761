// OpenSSL contexts for the daemon and the HTTP client (net/tls.h).
#include "net/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace statewatch::net {

void SslCtxFree::operator()(ssl_ctx_st* ctx) const { SSL_CTX_free(ctx); }

std::string TakeTlsErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    const char* lib = ERR_lib_error_string(e);
    if (!out.empty()) out += "; ";
    out += reason != nullptr ? reason : "error " + std::to_string(e);
    if (lib != nullptr) out += std::string(" (") + lib + ")";
  }
  return out;
}

namespace {

// The file is readable: a missing or unreadable file is named with errno's reason, which
// OpenSSL's own message ("system lib") does not give.
Status Readable(const char* what, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Status::InvalidArgument(std::string("cannot read the ") + what + " \"" + path +
                                   "\": " + std::strerror(errno));
  }
  std::fclose(f);
  return Status::OK();
}

Status Failed(const char* what, const std::string& path) {
  std::string why = TakeTlsErrors();
  return Status::InvalidArgument(std::string("the ") + what + " \"" + path +
                                 "\" cannot be used: " + (why.empty() ? "unknown error" : why));
}

Status LoadOwnCertificate(SSL_CTX* ctx, const std::string& cert, const std::string& key,
                          const char* cert_what, const char* key_what) {
  SW_RETURN_IF_ERROR(Readable(cert_what, cert));
  SW_RETURN_IF_ERROR(Readable(key_what, key));
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1) return Failed(cert_what, cert);
  if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    std::string why = TakeTlsErrors();
    if (why.find("values mismatch") != std::string::npos) {
      return Status::InvalidArgument(std::string("the ") + key_what + " \"" + key +
                                     "\" does not match the certificate \"" + cert + "\"");
    }
    return Status::InvalidArgument(std::string("the ") + key_what + " \"" + key +
                                   "\" cannot be used: " + why);
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    TakeTlsErrors();
    return Status::InvalidArgument(std::string("the ") + key_what + " \"" + key +
                                   "\" does not match the certificate \"" + cert + "\"");
  }
  return Status::OK();
}

}  // namespace

Result<SslCtxPtr> MakeTlsServerContext(const TlsServerFiles& files) {
  ERR_clear_error();
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return Status::IOError("cannot create a TLS context: " + TakeTlsErrors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                     SSL_OP_CIPHER_SERVER_PREFERENCE);
  SW_RETURN_IF_ERROR(LoadOwnCertificate(ctx.get(), files.cert_file, files.key_file,
                                        "TLS certificate file (--tls-cert)",
                                        "TLS key file (--tls-key)"));
  if (!files.client_ca_file.empty()) {
    const char* what = "client CA file (--tls-client-ca)";
    SW_RETURN_IF_ERROR(Readable(what, files.client_ca_file));
    if (SSL_CTX_load_verify_locations(ctx.get(), files.client_ca_file.c_str(), nullptr) != 1) {
      return Failed(what, files.client_ca_file);
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca_file.c_str());
    if (names == nullptr) return Failed(what, files.client_ca_file);
    SSL_CTX_set_client_CA_list(ctx.get(), names);  // takes ownership
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    // Session resumption across contexts (after a reload) needs an id context.
    static const unsigned char kSessionId[] = "statewatch";
    SSL_CTX_set_session_id_context(ctx.get(), kSessionId, sizeof(kSessionId) - 1);
  }
  return ctx;
}

Result<SslCtxPtr> MakeTlsClientContext(const TlsClientOptions& options) {
  ERR_clear_error();
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return Status::IOError("cannot create a TLS context: " + TakeTlsErrors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  // A server that closes after its (length-delimited) answer without close_notify is not
  // an error: the answer's own framing detects a cut.
  SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (!options.ca_file.empty()) {
    SW_RETURN_IF_ERROR(Readable("CA file (--ca-file)", options.ca_file));
    if (SSL_CTX_load_verify_locations(ctx.get(), options.ca_file.c_str(), nullptr) != 1) {
      return Failed("CA file (--ca-file)", options.ca_file);
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
    return Status::IOError("cannot load the system's trusted certificates: " + TakeTlsErrors());
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return Status::InvalidArgument("--client-cert and --client-key go together (got only " +
                                   std::string(options.cert_file.empty() ? "--client-key"
                                                                         : "--client-cert") +
                                   ")");
  }
  if (!options.cert_file.empty()) {
    SW_RETURN_IF_ERROR(LoadOwnCertificate(ctx.get(), options.cert_file, options.key_file,
                                          "client certificate file (--client-cert)",
                                          "client key file (--client-key)"));
  }
  return ctx;
}

}  // namespace statewatch::net
