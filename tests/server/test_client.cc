#include "test_client.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace statewatch::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

// Runs one asynchronous operation on `ioc` for at most `timeout`; on timeout the socket is
// closed and the operation's error is operation_aborted.
template <typename Socket, typename Start>
beast::error_code RunFor(asio::io_context& ioc, Socket& socket, std::chrono::milliseconds timeout,
                         Start start) {
  std::optional<beast::error_code> result;
  start([&](beast::error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run_for(timeout);
  if (!result) {
    beast::error_code ignored;
    socket.close(ignored);
    ioc.restart();
    ioc.run();
    if (!result) result = asio::error::timed_out;
  }
  return *result;
}

HttpResult Failed(std::string error) {
  HttpResult r;
  r.error = std::move(error);
  return r;
}

tcp::endpoint Loopback(uint16_t port) { return {asio::ip::make_address("127.0.0.1"), port}; }

HttpResult FromResponse(const http::response<http::string_body>& res) {
  HttpResult r;
  r.ok = true;
  r.status = static_cast<int>(res.result_int());
  r.body = res.body();
  r.keep_alive = res.keep_alive();
  for (const auto& field : res) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(field.value());
  }
  return r;
}

}  // namespace

boost::json::value HttpResult::json() const {
  std::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  return ec ? boost::json::value() : v;
}

namespace {

// The string `field` of the error object in an error answer's body, or "".
std::string ErrorField(const boost::json::value& body, std::string_view field) {
  if (!body.is_object()) return "";
  const auto* e = body.as_object().if_contains("error");
  if (!e || !e->is_object()) return "";
  const auto* v = e->as_object().if_contains(field);
  return v && v->is_string() ? std::string(v->as_string()) : "";
}

}  // namespace

std::string HttpResult::error_code() const { return ErrorField(json(), "code"); }

std::string HttpResult::error_message() const { return ErrorField(json(), "message"); }

// ---- HttpClient ------------------------------------------------------------------------------

struct HttpClient::Impl {
  explicit Impl(uint16_t port) : port(port), socket(ioc) {}
  uint16_t port;
  asio::io_context ioc;
  tcp::socket socket;
  beast::flat_buffer buffer;
  bool open = false;
  int connects = 0;

  beast::error_code Connect() {
    beast::error_code ignored;
    socket.close(ignored);
    socket = tcp::socket(ioc);
    buffer.clear();
    auto ec = RunFor(ioc, socket, kWait,
                     [&](auto handler) { socket.async_connect(Loopback(port), handler); });
    open = !ec;
    if (open) ++connects;
    return ec;
  }

  HttpResult Once(http::request<http::string_body>& req) {
    HttpResult r;
    auto ec =
        RunFor(ioc, socket, kWait, [&](auto handler) { http::async_write(socket, req, handler); });
    if (ec) {
      r.error = "write: " + ec.message();
      open = false;
      return r;
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    ec = RunFor(ioc, socket, kWait,
                [&](auto handler) { http::async_read(socket, buffer, parser, handler); });
    if (ec) {
      r.error = "read: " + ec.message();
      open = false;
      return r;
    }
    r = FromResponse(parser.get());
    if (!r.keep_alive) open = false;
    return r;
  }
};

HttpClient::HttpClient(uint16_t port) : impl_(std::make_unique<Impl>(port)) {}
HttpClient::~HttpClient() = default;
int HttpClient::connects() const { return impl_->connects; }

HttpResult HttpClient::Request(const std::string& method, const std::string& target,
                               const std::string& body, const Headers& headers) {
  http::request<http::string_body> req;
  req.method_string(method);
  req.target(target);
  req.version(11);
  req.set(http::field::host, "127.0.0.1");
  req.keep_alive(true);
  // The daemon takes bodies only as JSON (server/request_guard.h); a test that means to
  // send another type says so in `headers`.
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  for (const auto& [name, value] : headers) req.set(name, value);
  req.body() = body;
  if (!body.empty() || method == "POST" || method == "PUT") req.prepare_payload();
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!impl_->open) {
      auto ec = impl_->Connect();
      if (ec) return Failed("connect: " + ec.message());
    }
    bool reused = impl_->connects > 0 && attempt == 0;
    HttpResult r = impl_->Once(req);
    if (r.ok || !reused) return r;  // a kept-alive connection the server closed: retry once
  }
  return Failed("request failed twice");
}

// ---- WsClient --------------------------------------------------------------------------------

struct WsClient::Impl {
  asio::io_context ioc;
  websocket::stream<tcp::socket> ws{ioc};
  beast::flat_buffer buffer;
  std::thread reader;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> messages;
  bool closed = false;

  void ReadLoop() {
    for (;;) {
      beast::error_code ec;
      ws.read(buffer, ec);
      std::lock_guard<std::mutex> lock(mu);
      if (ec) {
        closed = true;
        cv.notify_all();
        return;
      }
      messages.push_back(beast::buffers_to_string(buffer.data()));
      buffer.consume(buffer.size());
      cv.notify_all();
    }
  }
};

std::unique_ptr<WsClient> WsClient::Connect(uint16_t port, const std::string& target,
                                            const Headers& headers, std::string* error) {
  auto impl = std::make_unique<Impl>();
  auto& socket = beast::get_lowest_layer(impl->ws);
  auto ec = RunFor(impl->ioc, socket, kWait,
                   [&](auto handler) { socket.async_connect(Loopback(port), handler); });
  if (ec) {
    if (error) *error = "connect: " + ec.message();
    return nullptr;
  }
  impl->ws.set_option(websocket::stream_base::decorator([headers](websocket::request_type& req) {
    for (const auto& [name, value] : headers) req.set(name, value);
  }));
  websocket::response_type res;
  ec = RunFor(impl->ioc, socket, kWait,
              [&](auto handler) { impl->ws.async_handshake(res, "127.0.0.1", target, handler); });
  if (ec) {
    if (error) *error = std::to_string(res.result_int()) + " " + res.body();
    return nullptr;
  }
  Impl* raw = impl.get();
  // Blocking reads on a dedicated thread: Next() waits on a condition variable, so a
  // timeout never cancels (and breaks) a WebSocket read.
  raw->reader = std::thread([raw] { raw->ReadLoop(); });
  return std::unique_ptr<WsClient>(new WsClient(std::move(impl)));
}

WsClient::WsClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

WsClient::~WsClient() {
  beast::error_code ignored;
  auto& socket = beast::get_lowest_layer(impl_->ws);
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  if (impl_->reader.joinable()) impl_->reader.join();
  socket.close(ignored);
}

std::optional<std::string> WsClient::Next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->cv.wait_for(lock, timeout, [&] { return !impl_->messages.empty() || impl_->closed; });
  if (impl_->messages.empty()) return std::nullopt;
  std::string m = std::move(impl_->messages.front());
  impl_->messages.pop_front();
  return m;
}

bool WsClient::WaitClosed(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->cv.wait_for(lock, timeout, [&] { return impl_->closed; });
}

std::size_t WsClient::Buffered() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->messages.size();
}

// ---- RawConnection ---------------------------------------------------------------------------

struct RawConnection::Impl {
  asio::io_context ioc;
  tcp::socket socket{ioc};
  bool connected = false;
};

RawConnection::RawConnection(uint16_t port, int receive_buffer_bytes)
    : impl_(std::make_unique<Impl>()) {
  beast::error_code ec;
  impl_->socket.open(tcp::v4(), ec);
  if (!ec && receive_buffer_bytes > 0) {
    impl_->socket.set_option(asio::socket_base::receive_buffer_size(receive_buffer_bytes), ec);
  }
  ec = RunFor(impl_->ioc, impl_->socket, kWait,
              [&](auto handler) { impl_->socket.async_connect(Loopback(port), handler); });
  impl_->connected = !ec;
}

RawConnection::~RawConnection() = default;
bool RawConnection::connected() const { return impl_->connected; }

bool RawConnection::Send(const std::string& bytes) {
  auto ec = RunFor(impl_->ioc, impl_->socket, kWait, [&](auto handler) {
    asio::async_write(impl_->socket, asio::buffer(bytes), handler);
  });
  return !ec;
}

std::string RawConnection::ReadUntil(const std::string& marker, std::chrono::milliseconds timeout) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char c;
  while (out.find(marker) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    std::size_t got = 0;
    auto ec = RunFor(impl_->ioc, impl_->socket, left, [&](auto handler) {
      impl_->socket.async_read_some(asio::buffer(&c, 1),
                                    [&, handler](beast::error_code e, std::size_t n) mutable {
                                      got = n;
                                      handler(e);
                                    });
    });
    if (got == 1) out += c;
    if (ec) break;
  }
  return out;
}

std::string RawConnection::ReadUntilClosed(std::chrono::milliseconds timeout, bool* closed) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char chunk[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    std::size_t got = 0;
    auto ec = RunFor(impl_->ioc, impl_->socket, left, [&](auto handler) {
      impl_->socket.async_read_some(asio::buffer(chunk),
                                    [&, handler](beast::error_code e, std::size_t n) mutable {
                                      got = n;
                                      handler(e);
                                    });
    });
    out.append(chunk, got);
    if (ec) {
      if (closed) *closed = ec != asio::error::timed_out && ec != asio::error::operation_aborted;
      return out;
    }
  }
  if (closed) *closed = false;
  return out;
}

std::string RawConnection::Upgrade(const std::string& target, const Headers& headers) {
  std::string request = "GET " + target +
                        " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                        "Sec-WebSocket-Version: 13\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  request += "\r\n";
  if (!Send(request)) return "";
  return ReadUntil("\r\n\r\n");
}

HttpResult ParseRawResponse(const std::string& raw) {
  http::response_parser<http::string_body> parser;
  parser.eager(true);
  beast::error_code ec;
  parser.put(asio::buffer(raw), ec);
  if (ec && ec != http::error::need_more) return Failed(ec.message());
  if (!parser.is_done()) {
    parser.put_eof(ec);
    if (!parser.is_done()) return Failed("incomplete response");
  }
  return FromResponse(parser.get());
}

}  // namespace statewatch::testing
