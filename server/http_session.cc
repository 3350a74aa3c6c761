// HttpSession: one HTTP/1.1 connection of the daemon — keep-alive, pipelining, timeouts,
// the request guard, parked sessions_send answers, text/event-stream answers (GET /mcp,
// server/event_stream.h), and the upgrade to a WebSocket stream.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <deque>
#include <functional>
#include <optional>
#include <utility>

#include <boost/beast/core/detect_ssl.hpp>

#include "server/event_stream.h"
#include "server/transport.h"

namespace statewatch::server::transport {
namespace {

constexpr std::size_t kHeaderLimit = 16 * 1024;
constexpr std::size_t kReadChunk = 8 * 1024;
constexpr int64_t kLingerMs = 1000;  // how long a closing connection drains the client's data
// Event-stream frames queued for a client that does not read them, before it is dropped.
constexpr std::size_t kMaxQueuedFrames = 256;

class HttpSession : public Connection, public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(ServerContext& ctx, Stream stream) : ctx_(ctx), stream_(std::move(stream)) {
    beast::error_code ignored;  // answers are one write each: never wait for an ACK (Nagle)
    stream_.socket().set_option(tcp::no_delay(true), ignored);
  }

  void Start() {
    ctx_.Add(shared_from_this());
    ctx_.metrics.ConnectionOpened();
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if (self->stream_.is_tls()) return self->Handshake();
      self->WaitForRequest();
    });
  }

  void Shutdown() override {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      // Busy connections finish their request and close after answering (ctx.stopping).
      if (self->phase_ == Phase::kIdle || self->phase_ == Phase::kHandshake) self->Cancel();
      if (self->phase_ == Phase::kStreaming) self->EndEvents();
      // A parked call could wait for minutes: answer it now; the run goes on.
      if (self->phase_ == Phase::kParked) {
        self->OnParkedAnswer(Api::Error(503, "shutting_down",
                                        "the server is shutting down; the run " + self->run_id_ +
                                            " goes on and its reply is delivered"),
                             /*abandon=*/true);
      }
    });
  }

  void Expire() override {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->deadline_ms.load() > SteadyNowMs()) return;  // re-armed meanwhile
      self->timed_out_ = true;
      self->Cancel();
    });
  }

  void Evict(std::function<void(bool)> then) override {
    asio::post(stream_.get_executor(), [self = shared_from_this(), then = std::move(then)] {
      if (self->phase_ != Phase::kIdle || self->evict_then_) {
        if (then) then(false);
        return;
      }
      // Idle as far as this handler can tell, but the reactor may already have read the
      // first bytes of a request whose completion is queued behind this handler, or the
      // bytes may sit in the socket unread. Cancel the read and let its completion decide:
      // bytes read or waiting mean busy (kept), an aborted empty read with nothing waiting
      // means idle (closed).
      self->evict_then_ = then ? std::move(then) : [](bool) {};
      self->Cancel();
    });
  }

 private:
  enum class Phase {
    kHandshake, kIdle, kReading, kHandling, kParked, kWriting, kStreaming, kLingering, kClosed
  };

  void SetDeadline(int64_t from_now_ms) { deadline_ms.store(SteadyNowMs() + from_now_ms); }
  void ClearDeadline() { deadline_ms.store(kNoDeadline); }
  void Cancel() {
    beast::error_code ignored;
    stream_.socket().cancel(ignored);
  }
  // Bytes the client sent that no read has taken yet (in the socket's receive buffer).
  bool BytesWaiting() {
    beast::error_code ec;
    return stream_.socket().available(ec) > 0 && !ec;
  }

  // Phase 0 (TLS only): the handshake, within the handshake timeout — a client that never
  // finishes it cannot hold the connection. Failures are logged once a second with a count
  // (OpenSSL's reason and the peer's address; never key material). The first bytes are
  // read before: a plain HTTP request (curl http:// to an https:// port) is answered, in
  // plain HTTP, that this port speaks TLS, instead of a closed connection.
  void Handshake() {
    phase_ = Phase::kHandshake;
    SetDeadline(ctx_.options.tls_handshake_timeout_ms);
    beast::async_detect_ssl(stream_.next_layer(), buffer_,
                            [self = shared_from_this()](beast::error_code ec, bool tls) {
                              self->OnDetected(ec, tls);
                            });
  }

  void OnDetected(beast::error_code ec, bool tls) {
    if (ec || timed_out_) return OnHandshake(ec ? ec : asio::error::timed_out);
    if (!tls) return RefusePlainHttp();
    // The bytes detection read go to the handshake. (`used` has a default only because Beast
    // 1.81 checks this overload's handler against the one-argument signature.)
    stream_.tls().async_handshake(
        asio::ssl::stream_base::server, buffer_.cdata(),
        [self = shared_from_this()](beast::error_code ec, std::size_t used = 0) {
          self->buffer_.consume(used);
          self->OnHandshake(ec);
        });
  }

  // 400 in plain HTTP, then close: the client spoke HTTP to a TLS port.
  void RefusePlainHttp() {
    const std::string body =
        Api::Error(400, "tls_required",
                   "this port speaks HTTPS (TLS): send the request to https://, not http://")
            .body;
    auto answer = std::make_shared<std::string>(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
    asio::async_write(stream_.next_layer(), asio::buffer(*answer),
                      [self = shared_from_this(), answer](beast::error_code, std::size_t) {
                        self->Close();
                      });
  }

  void OnHandshake(beast::error_code ec) {
    ClearDeadline();
    if (!ec && !timed_out_) return WaitForRequest();
    if (uint64_t n = ctx_.tls_failures.Count(SteadyNowMs())) {
      beast::error_code ignored;
      auto peer = stream_.socket().remote_endpoint(ignored);
      std::string why = timed_out_ ? "no handshake within " +
                                         std::to_string(ctx_.options.tls_handshake_timeout_ms) +
                                         " ms"
                                   : ec.message();
      spdlog::warn("event=tls_handshake_failed peer={} error=\"{}\" count={}",
                   ignored ? std::string("?") : peer.address().to_string(), why, n);
    }
    Close();
  }

  // Phase 1: wait (idle timeout) for the first byte of the next request.
  void WaitForRequest() {
    if (ctx_.stopping.load()) return Close();
    parser_.emplace();
    parser_->body_limit(ctx_.options.body_limit_bytes);
    parser_->header_limit(kHeaderLimit);
    if (buffer_.size() > 0) return ReadRequest();  // pipelined
    phase_ = Phase::kIdle;
    SetDeadline(ctx_.options.idle_timeout_ms);
    idle_since_ms.store(SteadyNowMs());
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->idle_since_ms.store(kNotIdle);
                              self->buffer_.commit(n);
                              auto evicted = std::exchange(self->evict_then_, nullptr);
                              if (evicted && n == 0 && ec == asio::error::operation_aborted &&
                                  !self->timed_out_ && self->BytesWaiting()) {
                                // The eviction's cancel beat the reactor to bytes the client
                                // had already sent: busy, kept; its request is read now.
                                evicted(false);
                                return self->WaitForRequest();
                              }
                              if (ec || n == 0) {
                                self->Close();
                                if (evicted) evicted(true);
                                return;
                              }
                              if (evicted) evicted(false);  // a request arrived first
                              self->ReadRequest();
                            });
  }

  // Phase 2: the rest of the request, within the read timeout.
  // The header first: a client that sent `Expect: 100-continue` (curl does for bodies over
  // 1 KiB) waits for a 100 answer before it sends the body.
  void ReadRequest() {
    phase_ = Phase::kReading;
    SetDeadline(ctx_.options.read_timeout_ms);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->OnRead(ec);
                              self->OnHeader();
                            });
  }

  // The guard runs on the header alone: a refused body is never read (the connection
  // lingers, draining it, and closes).
  void OnHeader() {
    head_request_ = parser_->get().method() == http::verb::head;
    if (auto refused = ctx_.guard->Check(Head())) {
      return ReplyAndClose(Api::Error(refused->status, refused->code, refused->message));
    }
    if (parser_->is_done()) return OnRead({});  // no body
    auto expect = parser_->get().find(http::field::expect);
    if (expect == parser_->get().end() || !beast::iequals(expect->value(), "100-continue")) {
      return ReadBody();
    }
    continue_ = std::make_unique<http::response<http::empty_body>>(http::status::continue_, 11);
    http::async_write(stream_, *continue_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        self->continue_.reset();
                        if (ec) return self->Close();
                        self->ReadBody();
                      });
  }

  void ReadBody() {
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    ClearDeadline();
    // This request's method (unknown before its start line): the transport's own error
    // answers below must not inherit the previous request's HEAD.
    head_request_ = parser_->get().method() == http::verb::head;
    if (timed_out_) {
      return ReplyAndClose(Api::Error(408, "request_timeout",
                                      "the request did not arrive completely within " +
                                          std::to_string(ctx_.options.read_timeout_ms) + " ms"));
    }
    if (ec == http::error::end_of_stream) return Close();
    if (ec == http::error::body_limit) {
      return ReplyAndClose(Api::Error(
          413, "body_too_large",
          "the request body exceeds " + std::to_string(ctx_.options.body_limit_bytes) + " bytes"));
    }
    if (ec == http::error::header_limit) {
      return ReplyAndClose(
          Api::Error(431, "header_too_large",
                     "the request header exceeds " + std::to_string(kHeaderLimit) + " bytes"));
    }
    if (ec && ec.category() == http::make_error_code(http::error::bad_method).category()) {
      return ReplyAndClose(
          Api::Error(400, "bad_request", "malformed HTTP request: " + ec.message()));
    }
    if (ec) return Close();
    Handle(parser_->release());
  }

  void Handle(http::request<http::string_body> req) {
    phase_ = Phase::kHandling;
    version_ = req.version();
    std::string method(req.method_string());
    ApiRequest api{method,
                   std::string_view(req.target().data(), req.target().size()),
                   req.body(),
                   Header(req, "X-Session-Key"),
                   Header(req, "X-Agent-Id"),
                   Header(req, http::field::authorization)};
    api.header = [&req](std::string_view name) { return Header(req, name); };
    if (websocket::is_upgrade(req)) return Upgrade(std::move(req), api);
    keep_alive_ = req.keep_alive();
    std::weak_ptr<HttpSession> weak = shared_from_this();
    auto executor = stream_.get_executor();
    api.respond = [weak, executor](ApiResponse r) {
      asio::post(executor, [weak, r = std::move(r)]() mutable {
        if (auto self = weak.lock()) self->OnParkedAnswer(std::move(r), /*abandon=*/false);
      });
    };
    ApiResponse response = ctx_.api.Handle(api);
    if (response.parked) return Park(std::move(response.run_id));
    if (response.events && !head_request_) return StartEvents(std::move(response));
    Reply(std::move(response), keep_alive_ && !ctx_.stopping.load());
  }

  // A sessions_send waits for its reply: no deadline (the messaging's own timeout answers),
  // and one read that notices the client going away (then the call is abandoned). The
  // answer may already be queued on this executor; it runs after this returns.
  void Park(std::string run_id) {
    phase_ = Phase::kParked;
    run_id_ = std::move(run_id);
    ClearDeadline();
    parked_read_pending_ = true;
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->OnParkedRead(ec, n);
                            });
  }

  void OnParkedRead(beast::error_code ec, std::size_t n) {
    parked_read_pending_ = false;
    buffer_.commit(n);
    if (parked_answer_) {  // cancelled by the answer: send it
      ApiResponse r = std::move(*parked_answer_);
      parked_answer_.reset();
      return Reply(std::move(r), keep_alive_ && !ctx_.stopping.load());
    }
    if (ec || n == 0) {  // the client went away
      ctx_.api.Abandon(run_id_);
      return Close();
    }
    // A pipelined request: it waits in buffer_ until the parked answer has been written.
  }

  void OnParkedAnswer(ApiResponse r, bool abandon) {
    if (phase_ != Phase::kParked || parked_answer_) return;
    if (abandon) ctx_.api.Abandon(run_id_);
    if (parked_read_pending_) {  // OnParkedRead sends it once the read is cancelled
      parked_answer_ = std::move(r);
      Cancel();
      return;
    }
    Reply(std::move(r), keep_alive_ && !ctx_.stopping.load());
  }

  template <typename Field>
  static std::string_view Header(const http::request<http::string_body>& req, Field field) {
    return OptionalHeader(req, field).value_or(std::string_view());
  }

  template <typename Field>
  static std::optional<std::string_view> OptionalHeader(const http::request<http::string_body>& req,
                                                        Field field) {
    auto it = req.find(field);
    if (it == req.end()) return std::nullopt;
    return std::string_view(it->value().data(), it->value().size());
  }

  RequestHead Head() const {
    const auto& req = parser_->get();
    RequestHead head;
    head.version = req.version();
    head.method = std::string_view(req.method_string().data(), req.method_string().size());
    head.target = std::string_view(req.target().data(), req.target().size());
    head.host = OptionalHeader(req, http::field::host);
    head.origin = OptionalHeader(req, http::field::origin);
    head.content_type = OptionalHeader(req, http::field::content_type);
    auto length = parser_->content_length();
    head.has_body = parser_->chunked() || (length && *length > 0);
    return head;
  }

  void Upgrade(http::request<http::string_body> req, const ApiRequest& api) {
    auto accepted = ctx_.api.AcceptStream(api);
    if (auto* error = std::get_if<ApiResponse>(&accepted)) return ReplyAndClose(std::move(*error));
    if (!ctx_.ReserveStream()) {
      if (uint64_t n = ctx_.stream_refusals.Count(SteadyNowMs())) {
        spdlog::warn("event=stream_refused reason=max_streams max_streams={} count={}",
                     ctx_.options.max_streams, n);
      }
      return ReplyAndClose(Api::Error(503, "too_many_streams",
                                      "this server already holds " +
                                          std::to_string(ctx_.options.max_streams) +
                                          " WebSocket streams (--max-streams); retry later"));
    }
    StreamTarget target = std::get<StreamTarget>(std::move(accepted));
    phase_ = Phase::kClosed;  // the stream owns the socket from here
    ctx_.Remove(this);
    ctx_.metrics.ConnectionClosed();
    StartStream(ctx_, std::move(stream_), std::move(req), std::move(target));
  }

  void Reply(ApiResponse r, bool keep_alive) {
    res_ = {};
    res_.version(version_ == 10 ? 10 : 11);
    res_.result(static_cast<http::status>(r.status));
    res_.set(http::field::content_type, r.content_type);
    if (r.allow != nullptr) res_.set(http::field::allow, r.allow);
    if (r.www_authenticate) res_.set(http::field::www_authenticate, "Bearer");
    for (const auto& [name, value] : r.headers) res_.set(name, value);
    res_.body() = std::move(r.body);
    res_.keep_alive(keep_alive);
    res_.prepare_payload();
    if (head_request_) res_.body().clear();  // HEAD: GET's header, Content-Length too; no body
    phase_ = Phase::kWriting;
    SetDeadline(ctx_.options.read_timeout_ms);  // a client that never reads its answer
    http::async_write(
        stream_, res_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnWrite(ec); });
  }

  void ReplyAndClose(ApiResponse r) {
    // Refused before Api::Handle (which counts the others): too large, timed out, overload.
    // A write is a request whose method was read and is neither GET nor HEAD (the header
    // may be incomplete: a body over the limit is refused as soon as its length is read).
    if (r.status >= 400 && parser_) {
      http::verb method = parser_->get().method();
      if (method != http::verb::unknown && method != http::verb::get &&
          method != http::verb::head) {
        ctx_.metrics.CountRefusedWrite(r.error_code, r.status);
      }
    }
    Reply(std::move(r), /*keep_alive=*/false);
  }

  void OnWrite(beast::error_code ec) {
    ClearDeadline();
    if (ec) return Close();
    if (!res_.keep_alive()) return Linger();
    WaitForRequest();
  }

  // Closing right after an error answer while the client still sends (an oversized body)
  // would reset the connection and lose the answer: half-close, then drain for a while.
  void Linger() {
    phase_ = Phase::kLingering;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    timed_out_ = false;
    SetDeadline(kLingerMs);
    Drain();
  }

  void Drain() {
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              if (ec || n == 0 || self->timed_out_) return self->Close();
                              self->Drain();
                            });
  }

  // ---- a text/event-stream answer (server/event_stream.h) ----------------------------------
  // The header, then one chunk per frame, no deadline (like a WebSocket stream, it holds a
  // --max-streams slot); one pending read notices the client going away.
  void StartEvents(ApiResponse r) {
    if (!ctx_.ReserveStream()) {
      return ReplyAndClose(Api::Error(503, "too_many_streams",
                                      "this server already holds " +
                                          std::to_string(ctx_.options.max_streams) +
                                          " streams (--max-streams); retry later"));
    }
    phase_ = Phase::kStreaming;
    ClearDeadline();
    events_ = std::move(r.events);
    std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                       "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"
                       "Connection: close\r\n";
    for (const auto& [name, value] : r.headers) head += name + ": " + value + "\r\n";
    QueueBytes(head + "\r\n");
    std::weak_ptr<HttpSession> weak = shared_from_this();
    auto executor = stream_.get_executor();
    EventStream::Sink sink;
    sink.write = [weak, executor](std::string frame) {
      asio::post(executor, [weak, frame = std::move(frame)]() mutable {
        if (auto self = weak.lock()) self->QueueFrame(std::move(frame));
      });
    };
    sink.end = [weak, executor] {
      asio::post(executor, [weak] {
        if (auto self = weak.lock()) self->EndEvents();
      });
    };
    events_->Attach(std::move(sink));
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](beast::error_code, std::size_t) {
                              self->EndEvents();  // gone, or talking where it should listen
                            });
  }

  void QueueFrame(std::string frame) {
    if (phase_ != Phase::kStreaming || events_ending_ || frame.empty()) return;
    if (out_.size() >= kMaxQueuedFrames) {
      if (uint64_t n = ctx_.slow_clients.Count(SteadyNowMs())) {
        spdlog::warn("event=slow_client_dropped stream=events queued={} count={}", out_.size(), n);
      }
      return EndEvents();
    }
    char size[20];
    std::snprintf(size, sizeof size, "%zx\r\n", frame.size());
    QueueBytes(size + frame + "\r\n");
  }

  void QueueBytes(std::string bytes) {
    out_.push_back(std::move(bytes));
    if (!writing_) WriteNextFrame();
  }

  void WriteNextFrame() {
    if (out_.empty()) {
      if (events_ending_) Close();
      return;
    }
    writing_ = true;
    asio::async_write(stream_, asio::buffer(out_.front()),
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        self->writing_ = false;
                        self->out_.pop_front();
                        if (ec) {
                          self->out_.clear();
                          self->events_ending_ = true;
                          self->EndEvents();
                          return self->Close();
                        }
                        self->WriteNextFrame();
                      });
  }

  // Ends the stream once: the producer is told, the last chunk goes out, then the close.
  void EndEvents() {
    if (events_) {
      events_->Detach();
      events_.reset();
      ctx_.ReleaseStream();
    }
    if (phase_ != Phase::kStreaming || events_ending_) return;
    events_ending_ = true;
    QueueBytes("0\r\n\r\n");
  }

  void Close() {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kClosed;
    ClearDeadline();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    ctx_.Remove(this);
    ctx_.metrics.ConnectionClosed();
  }

  ServerContext& ctx_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  std::unique_ptr<http::response<http::empty_body>> continue_;  // while a 100 is written
  unsigned version_ = 11;
  Phase phase_ = Phase::kHandshake;
  bool timed_out_ = false;
  bool keep_alive_ = true;
  bool head_request_ = false;  // the request being answered is a HEAD
  // Set while an eviction waits for the cancelled idle read to complete (see Evict).
  std::function<void(bool)> evict_then_;
  // While parked (a waiting sessions_send):
  std::string run_id_;
  bool parked_read_pending_ = false;
  std::optional<ApiResponse> parked_answer_;  // arrived while the read was pending
  // While streaming events:
  std::shared_ptr<EventStream> events_;
  std::deque<std::string> out_;  // bytes to write, the front one being written
  bool writing_ = false;
  bool events_ending_ = false;  // the last chunk is queued: close once written
};

}  // namespace

void StartHttpSession(ServerContext& ctx, tcp::socket socket) {
  auto tls = ctx.Tls();
  Stream stream = tls ? Stream(std::move(socket), std::move(tls)) : Stream(std::move(socket));
  std::make_shared<HttpSession>(ctx, std::move(stream))->Start();
}

}  // namespace statewatch::server::transport
