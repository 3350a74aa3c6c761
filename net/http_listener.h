// HttpListener: a small blocking HTTP/1.1 server for a node's own port in cluster mode
// (server/cluster_node.h) — a handful of JSON routes at a few requests a second, where the
// daemon's Beast server (server/http_server.h) would need an engine it does not have.
// One thread accepts; each connection gets a thread of its own (at most
// `max_connections` at once; beyond that the connection gets 503 at once), reads one
// request (headers up to 16 KiB, a Content-Length body up to `max_body` bytes, within 5 s),
// answers it with Connection: close and closes. A HEAD request's answer is its header only
// (the handler answers it as it would GET: see ListenerRequest::method).
//
// Thread-safe: the handler runs concurrently on connection threads.
#ifndef STATEWATCH_NET_HTTP_LISTENER_H_
#define STATEWATCH_NET_HTTP_LISTENER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "statewatch/status.h"

namespace statewatch::net {

struct ListenerRequest {
  std::string method;
  std::string target;
  std::string body;
  std::string authorization;  // the Authorization header's value, "" when absent
  // Every header as received, names lower-cased, in order.
  std::vector<std::pair<std::string, std::string>> headers;
  // The value of header `lower_name`, "" when absent.
  std::string Header(std::string_view lower_name) const;
};

struct ListenerAnswer {
  ListenerAnswer() = default;
  ListenerAnswer(int status, std::string body) : status(status), body(std::move(body)) {}

  int status = 200;
  std::string body;  // JSON; a newline is added when it does not end with one
  // Sent after Content-Type (added unless given here); no framing headers.
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, nothing is written: the connection's socket is handed to it instead (a
  // protocol upgrade), and closed when it returns.
  std::function<void(int fd)> take_socket;
};

struct ListenerLimits {
  int max_connections = 16;        // beyond: 503 at once
  std::size_t max_body = 64 * 1024;  // beyond: 413
};

using ListenerHandler = std::function<ListenerAnswer(const ListenerRequest&)>;

class HttpListener {
 public:
  // Binds host:port (0: a free port). IOError naming the address when it cannot.
  static Result<std::unique_ptr<HttpListener>> Bind(const std::string& host, uint16_t port,
                                                    ListenerHandler handler,
                                                    ListenerLimits limits = {});
  ~HttpListener();

  uint16_t port() const { return port_; }
  // Stops accepting and waits for the connections' threads to finish their request.
  void Stop();

 private:
  HttpListener(int fd, uint16_t port, ListenerHandler handler, ListenerLimits limits);
  void Accept();
  void Serve(int fd);

  int fd_;
  const uint16_t port_;
  const ListenerHandler handler_;
  const ListenerLimits limits_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable idle_;
  int active_ = 0;
  std::thread acceptor_;
};

}  // namespace statewatch::net

#endif  // STATEWATCH_NET_HTTP_LISTENER_H_
