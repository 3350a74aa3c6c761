// One byte stream on a POSIX socket, plain or with TLS (OpenSSL directly on the socket),
// shared by the HTTP client (net/http_client.h) and the WebSocket client (net/websocket.h).
// Beast-free.
//
//   auto endpoint = net::ParseBaseUrl("https://127.0.0.1:8443");
//   auto conn = net::Connection::Open(*endpoint, {"ca.pem"}, deadline);
//   (*conn)->SendAll(request, deadline, "sending the request");
//   std::string in;
//   auto got = (*conn)->ReceiveSome(&in, deadline, "reading the answer");
//
// TLS: the server's certificate is verified against TlsClientOptions::ca_file, else the
// system store, and its name against the URL's host (SNI sent; an IP address is matched
// against the certificate's IP entries); a client certificate is presented when given. A
// failed verification is an IOError naming OpenSSL's verification error.
//
// A poller must not wait on fd() while Pending() is not zero: those bytes were already
// read off the socket and decrypted, and no more may come. ReceiveSome takes everything
// OpenSSL holds, so Pending() is zero after it.
//
// Not thread-safe: one thread uses a connection.
#ifndef STATEWATCH_NET_CONNECTION_H_
#define STATEWATCH_NET_CONNECTION_H_

#include <chrono>
#include <sys/socket.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "net/tls.h"
#include "statewatch/status.h"

struct ssl_st;  // OpenSSL's SSL

namespace statewatch::net {

// A parsed base URL: http(s)://HOST[:PORT][/PREFIX].
struct Endpoint {
  std::string host;
  std::string port = "80";  // 443 for https://
  std::string prefix;       // a path the server is mounted under, without the trailing '/'
  bool tls = false;         // https://
};

// InvalidArgument (naming --server: the CLI is where a user types the URL) for anything
// that is not http(s)://HOST[:PORT][/PREFIX]; [v6] hosts are accepted.
Result<Endpoint> ParseBaseUrl(const std::string& text);

class Connection {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Received { kData, kTimeout, kClosed };

  // Connects to `endpoint` without blocking past `deadline` (a host that drops SYNs costs
  // the caller its timeout, not the kernel's minutes of retries) and, for an https://
  // endpoint, runs the handshake with `tls`. IOError when it cannot resolve, connect or
  // complete or verify the handshake; InvalidArgument for a TLS file that cannot be used.
  //
  // With `check`, every resolved address is handed to it before a connect is tried: an
  // address it refuses is skipped (its message becomes the reason when no address is left),
  // so the caller decides on the address actually connected to, not on the name (an
  // outgoing webhook's private-network rule, webhooks/url_policy.h).
  using AddressCheck = std::function<Status(const sockaddr* address, socklen_t length)>;
  static Result<std::unique_ptr<Connection>> Open(const Endpoint& endpoint,
                                                  const TlsClientOptions& tls,
                                                  Clock::time_point deadline,
                                                  const AddressCheck* check = nullptr);
  // A plain socket connected elsewhere (a listener's); closed on destruction if `owns_fd`.
  Connection(int fd, bool owns_fd) : fd_(fd), owns_fd_(owns_fd) {}
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  bool tls() const { return ssl_ != nullptr; }
  // Decrypted bytes OpenSSL holds that were not handed out yet (0 without TLS).
  std::size_t Pending() const;
  // Hands a plain connection's descriptor over (the caller closes it); -1 with TLS.
  int Release();

  // Sends all of `bytes`, waiting at most until `deadline` whenever the socket is full.
  // IOError "<doing>: <why>".
  Status SendAll(std::string_view bytes, Clock::time_point deadline, const char* doing);
  // Appends what arrives to *out, waiting until `deadline` for the first byte (one look
  // without waiting when it has passed): kData when something was appended, kTimeout when
  // nothing came, kClosed when the peer closed its side. IOError "<doing>: <why>".
  Result<Received> ReceiveSome(std::string* out, Clock::time_point deadline, const char* doing);

 private:
  Connection() = default;
  Status Connect(const Endpoint& endpoint, Clock::time_point deadline,
                 const AddressCheck* check);
  Status StartTls(const Endpoint& endpoint, const TlsClientOptions& options,
                  Clock::time_point deadline);

  int fd_ = -1;
  bool owns_fd_ = true;
  SslCtxPtr ctx_;          // with TLS
  ssl_st* ssl_ = nullptr;  // with TLS
};

}  // namespace statewatch::net

#endif  // STATEWATCH_NET_CONNECTION_H_
