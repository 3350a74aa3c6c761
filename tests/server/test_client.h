// Small blocking clients for the end-to-end tests: HTTP/1.1 (keep-alive), WebSocket and raw
// TCP, each over real loopback sockets. Beast stays in test_client.cc, so the tests that use
// these compile fast. Every wait is bounded (default 10 s): a broken server fails a test,
// it never hangs it.
//
// Not thread-safe: one client per thread (WsClient reads on its own thread internally).
#ifndef STATEWATCH_TESTS_SERVER_TEST_CLIENT_H_
#define STATEWATCH_TESTS_SERVER_TEST_CLIENT_H_

#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace statewatch::testing {

using Headers = std::vector<std::pair<std::string, std::string>>;
inline constexpr std::chrono::milliseconds kWait{10000};

struct HttpResult {
  bool ok = false;    // a complete response arrived
  std::string error;  // transport error otherwise
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
  bool keep_alive = false;

  // The body parsed as JSON (null when it is not JSON).
  boost::json::value json() const;
  // error.code / error.message of an error body ("" when absent).
  std::string error_code() const;
  std::string error_message() const;
};

class HttpClient {
 public:
  explicit HttpClient(uint16_t port);
  ~HttpClient();

  // One request on the kept-alive connection (reconnecting when the server closed it). A
  // body goes with Content-Type: application/json unless `headers` sets another.
  HttpResult Request(const std::string& method, const std::string& target,
                     const std::string& body = "", const Headers& headers = {});
  HttpResult Get(const std::string& target, const Headers& headers = {}) {
    return Request("GET", target, "", headers);
  }
  HttpResult Post(const std::string& target, const std::string& body, const Headers& headers = {}) {
    return Request("POST", target, body, headers);
  }
  HttpResult Post(const std::string& target, const boost::json::value& body,
                  const Headers& headers = {}) {
    return Request("POST", target, boost::json::serialize(body), headers);
  }

  // Connections opened so far (keep-alive checks).
  int connects() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

class WsClient {
 public:
  // Opens ws://127.0.0.1:<port><target>; nullptr with *error (the HTTP status when the
  // server refused the upgrade) on failure.
  static std::unique_ptr<WsClient> Connect(uint16_t port, const std::string& target,
                                           const Headers& headers = {},
                                           std::string* error = nullptr);
  ~WsClient();

  // The next text message, waiting at most `timeout`; nullopt on timeout or close.
  std::optional<std::string> Next(std::chrono::milliseconds timeout = kWait);
  // Waits until the server closed the stream; true if it did within `timeout`.
  bool WaitClosed(std::chrono::milliseconds timeout = kWait);
  // Messages received and not yet taken.
  std::size_t Buffered() const;

  struct Impl;

 private:
  explicit WsClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A raw TCP connection for misbehaving clients (partial requests, oversized bodies).
class RawConnection {
 public:
  // `receive_buffer_bytes` > 0 sets SO_RCVBUF before connecting (a client that reads
  // slowly, or not at all, fills a small window soon).
  explicit RawConnection(uint16_t port, int receive_buffer_bytes = 0);
  ~RawConnection();
  bool connected() const;
  // Writes all bytes; false when the server closed the connection first.
  bool Send(const std::string& bytes);
  // Reads until `marker` arrived (or the connection closed, or `timeout`); returns what
  // arrived.
  std::string ReadUntil(const std::string& marker, std::chrono::milliseconds timeout = kWait);
  // Reads until the server closes the connection (or `timeout`); returns what arrived.
  std::string ReadUntilClosed(std::chrono::milliseconds timeout = kWait, bool* closed = nullptr);
  // Sends a WebSocket upgrade request for `target` (with `headers`) and reads the answer's
  // header; returns it (a "101 Switching Protocols" header when accepted). The connection
  // is then a WebSocket that this object never reads unless told to.
  std::string Upgrade(const std::string& target, const Headers& headers = {});

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Parses the first HTTP response in `raw` (status and body); ok=false when there is none.
HttpResult ParseRawResponse(const std::string& raw);

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_SERVER_TEST_CLIENT_H_
