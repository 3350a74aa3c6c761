// A blocking HTTP/1.1 client on plain POSIX sockets: one request per connection
// (Connection: close), no Beast (cheap to compile, usable from any library). It serves the
// CLI's --server verbs (cli/remote.h) and the control plane's etcd client
// (control/etcd_client.h).
//
// TLS: an https:// URL is spoken over OpenSSL directly on the socket (net/connection.h,
// shared with the WebSocket client). The server's certificate is verified against
// HttpRequestOptions::tls.ca_file, else the system store (/etc/ssl/certs), and its name
// against the URL's host (SNI sent; an IP address is matched against the certificate's IP
// entries); a client certificate is presented when given (mutual TLS). A failed
// verification is an IOError naming OpenSSL's verification error.
//
// An answer is read until the server closes the connection; its body is then taken by
// Content-Length, decoded from Transfer-Encoding: chunked, or is everything after the
// header block when neither is given.
//
// Thread-safe: no shared state; every call opens and closes its own socket.
#ifndef STATEWATCH_NET_HTTP_CLIENT_H_
#define STATEWATCH_NET_HTTP_CLIENT_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/tls.h"
#include "statewatch/status.h"

namespace statewatch::net {

// Header (name, value) pairs in the order sent or received.
using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpAnswer {
  int status = 0;
  std::string body;  // decoded (no chunk framing)
  HeaderList headers;  // as received, framing headers included
  // The value of header `name` (case-insensitive), "" when absent.
  std::string Header(std::string_view name) const;
};

// What one request carries beyond method, target and body.
struct HttpRequestOptions {
  std::string token;        // sent as "Authorization: Bearer <token>" when not empty
  int timeout_ms = 30000;   // the whole exchange, connect included
  HeaderList headers;       // sent as given (no Host, Content-Length or Connection)
  // Set to true once the request's bytes were handed to the socket: a failure after that
  // leaves the outcome unknown; before it (connect refused, timed out) nothing was sent.
  bool* sent = nullptr;
  // For https:// URLs: the CA to trust (else the system store) and a client certificate.
  TlsClientOptions tls;
};

// One HTTP/1.1 request to `base_url` + `target`, waiting at most `timeout_ms` for the whole
// exchange, connect included. `base_url` is http://HOST[:PORT][/PREFIX] (port 80 by
// default), or https://… (port 443 by default; TLS, see above); a PREFIX is put before
// `target`. A non-empty `token` is sent as
// "Authorization: Bearer <token>"; a body (or any POST/PUT) as application/json.
// IOError when the server cannot be reached or answers garbage (a malformed chunked body
// included, naming what was wrong; a TLS handshake or verification that failed);
// InvalidArgument for a URL that is not http(s)://HOST[:PORT] or a TLS file that cannot be
// used.
Result<HttpAnswer> HttpRequest(const std::string& base_url, std::string_view method,
                               const std::string& target, const std::string& body,
                               const std::string& token, int timeout_ms = 30000);
Result<HttpAnswer> HttpRequest(const std::string& base_url, std::string_view method,
                               const std::string& target, const std::string& body,
                               const HttpRequestOptions& options);

// A TCP connection to `base_url`'s host and port, for protocols beyond one request (the
// WebSocket client of net/websocket.h): the connected descriptor (the caller closes it), the
// Host header's value and the URL's path prefix. Errors as HttpRequest's connect; an
// https:// URL is InvalidArgument (a node's relays speak plain HTTP to the slots).
struct Connected {
  int fd = -1;
  std::string host;    // HOST:PORT
  std::string prefix;  // "" or "/path"
};
Result<Connected> ConnectTo(const std::string& base_url, int timeout_ms);

// The answer in `raw` (status line, headers, body as received, up to the server's close).
// Header names are matched case-insensitively. IOError when it is not HTTP/1.x, when a
// Content-Length body is cut short, or when a chunked body is malformed.
Result<HttpAnswer> ParseHttpAnswer(const std::string& raw);

}  // namespace statewatch::net

#endif  // STATEWATCH_NET_HTTP_CLIENT_H_
