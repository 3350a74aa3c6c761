// TLS contexts on OpenSSL for the daemon's listener (server/http_server.cc wraps one in an
// Asio SSL context) and for the plain-socket clients (net/connection.h: the HTTP client and
// the WebSocket client). Beast-free.
//
//   auto ctx = net::MakeTlsServerContext({"cert.pem", "key.pem", "clients-ca.pem"});
//   if (!ctx.ok()) ...  // names the file that could not be used, and why
//
// Every error names the file and OpenSSL's reason; nothing secret (no key material) is
// ever part of a message.
#ifndef STATEWATCH_NET_TLS_H_
#define STATEWATCH_NET_TLS_H_

#include <memory>
#include <string>

#include "statewatch/status.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace statewatch::net {

struct SslCtxFree {
  void operator()(ssl_ctx_st* ctx) const;
};
using SslCtxPtr = std::unique_ptr<ssl_ctx_st, SslCtxFree>;

// The daemon's certificate chain and key (PEM files) and, for mutual TLS, the CA whose
// certificates clients must present (empty: clients are not asked for one).
struct TlsServerFiles {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
};

// A server context: TLS 1.2 or later, the chain and key loaded and checked against each
// other; with client_ca_file, a client without a certificate signed by that CA fails the
// handshake (verify peer, fail if no peer certificate). InvalidArgument naming the file
// when one cannot be read, holds no PEM certificate or key, or the key does not match.
Result<SslCtxPtr> MakeTlsServerContext(const TlsServerFiles& files);

// What a client trusts and presents. An empty ca_file trusts the system store
// (/etc/ssl/certs); cert_file and key_file (both or neither) are its own certificate for
// a daemon that asks for one (mutual TLS).
struct TlsClientOptions {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

// A client context: TLS 1.2 or later, the server's certificate verified against ca_file
// (else the system store). The host name is checked per connection (SSL_set1_host).
// InvalidArgument naming the file when one cannot be used.
Result<SslCtxPtr> MakeTlsClientContext(const TlsClientOptions& options);

// OpenSSL's queued errors as one line ("" when none), and the queue cleared.
std::string TakeTlsErrors();

}  // namespace statewatch::net

#endif  // STATEWATCH_NET_TLS_H_
