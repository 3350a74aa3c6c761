// WebSocket (RFC 6455) on POSIX sockets, just enough for a node's own port to relay the
// daemon's feeds (server/stream_relay.h) and for the CLI to follow wakes (cli/follow.h): the
// server side of an upgrade the HttpListener read (plain), the client side towards a slot
// (plain ws://) or a daemon (ws:// or, for an https:// URL, wss:// over net/connection.h's
// TLS: the same verification and messages as the HTTP client's), text messages both ways,
// pings answered, close. No extensions, no compression, messages up to 1 MiB.
//
// Not thread-safe: one thread uses a connection (the relay polls it and writes to it from the
// same thread).
#ifndef STATEWATCH_NET_WEBSOCKET_H_
#define STATEWATCH_NET_WEBSOCKET_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "net/connection.h"
#include "net/http_client.h"
#include "statewatch/status.h"

namespace statewatch::net {

class WebSocket {
 public:
  // Server side: answers 101 on `fd` (which stays the caller's to close) for the upgrade
  // whose Sec-WebSocket-Key is `key`. InvalidArgument for an empty key.
  static Result<std::unique_ptr<WebSocket>> Accept(int fd, const std::string& key);
  // Client side: connects to base_url, asks for `target` with `headers` and reads the 101
  // within timeout_ms. IOError when it cannot connect or the server answers anything else
  // (naming the status line). Plain ws:// only: an https:// base_url is InvalidArgument
  // (a node's relay speaks plain HTTP to its slots, see ConnectTo).
  static Result<std::unique_ptr<WebSocket>> Connect(const std::string& base_url,
                                                    const std::string& target,
                                                    const HeaderList& headers, int timeout_ms);
  // The same for http:// or https:// (wss: TLS verified with `tls`, see net/connection.h;
  // a certificate that is not trusted is an IOError naming the verification error).
  static Result<std::unique_ptr<WebSocket>> Connect(const std::string& base_url,
                                                    const std::string& target,
                                                    const HeaderList& headers, int timeout_ms,
                                                    const TlsClientOptions& tls);
  ~WebSocket();
  WebSocket(const WebSocket&) = delete;
  WebSocket& operator=(const WebSocket&) = delete;

  // The descriptor to poll. With TLS, poll only once Receive returned nullopt: it takes
  // every byte OpenSSL already decrypted, so nothing then waits unseen behind the socket.
  int fd() const { return conn_->fd(); }
  // One text message (a single frame; masked from the client side).
  Status SendText(std::string_view text);
  // Reads what has arrived, waiting up to timeout_ms for more: the next complete text
  // message, or nullopt when none is complete yet. Pings are answered on the way. IOError
  // once the peer closed the connection (a close frame, EOF or an error).
  Result<std::optional<std::string>> Receive(int timeout_ms);
  // Sends a close frame (best effort); the descriptor stays open until destruction.
  void Close();

 private:
  WebSocket(std::unique_ptr<Connection> conn, bool client)
      : conn_(std::move(conn)), client_(client) {}
  // The upgrade request and the 101 on conn_.
  Status Handshake(const std::string& base_url, const std::string& host,
                   const std::string& prefix, const std::string& target,
                   const HeaderList& headers, int timeout_ms);
  Status SendFrame(unsigned char opcode, std::string_view payload);
  // One complete frame from buffer_, if there is one: consumes it.
  std::optional<std::pair<unsigned char, std::string>> TakeFrame(Status* error);

  std::unique_ptr<Connection> conn_;
  bool client_;
  bool closed_ = false;
  std::string buffer_;   // bytes read, not yet a whole frame
  std::string message_;  // a fragmented message's text so far
};

}  // namespace statewatch::net

#endif  // STATEWATCH_NET_WEBSOCKET_H_
