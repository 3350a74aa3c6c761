// WebSocket (RFC 6455) on plain sockets, just enough for a node's own port to relay the
// daemon's feeds (server/stream_relay.h): the server side of an upgrade the HttpListener
// read, the client side towards a slot, text messages both ways, pings answered, close.
// No extensions, no compression, messages up to 1 MiB.
//
// Not thread-safe: one thread uses a connection (the relay polls it and writes to it from the
// same thread).
#ifndef STATEWATCH_NET_WEBSOCKET_H_
#define STATEWATCH_NET_WEBSOCKET_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

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
  // (naming the status line).
  static Result<std::unique_ptr<WebSocket>> Connect(const std::string& base_url,
                                                    const std::string& target,
                                                    const HeaderList& headers, int timeout_ms);
  ~WebSocket();
  WebSocket(const WebSocket&) = delete;
  WebSocket& operator=(const WebSocket&) = delete;

  int fd() const { return fd_; }
  // One text message (a single frame; masked from the client side).
  Status SendText(std::string_view text);
  // Reads what has arrived, waiting up to timeout_ms for more: the next complete text
  // message, or nullopt when none is complete yet. Pings are answered on the way. IOError
  // once the peer closed the connection (a close frame, EOF or an error).
  Result<std::optional<std::string>> Receive(int timeout_ms);
  // Sends a close frame (best effort); the descriptor stays open until destruction.
  void Close();

 private:
  WebSocket(int fd, bool owns_fd, bool client) : fd_(fd), owns_fd_(owns_fd), client_(client) {}
  Status SendFrame(unsigned char opcode, std::string_view payload);
  // One complete frame from buffer_, if there is one: consumes it.
  std::optional<std::pair<unsigned char, std::string>> TakeFrame(Status* error);

  int fd_;
  bool owns_fd_;
  bool client_;
  bool closed_ = false;
  std::string buffer_;   // bytes read, not yet a whole frame
  std::string message_;  // a fragmented message's text so far
};

}  // namespace statewatch::net

#endif  // STATEWATCH_NET_WEBSOCKET_H_
