// HttpServer: the listener, HTTP sessions, the timeout sweeper and the wake timer.
#include "server/http_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>

#include "server/transport.h"

namespace statewatch::server {

using namespace transport;  // NOLINT: the Beast aliases of transport.h

namespace {

constexpr std::size_t kHeaderLimit = 16 * 1024;
constexpr std::size_t kReadChunk = 8 * 1024;
constexpr int64_t kLingerMs = 1000;  // how long a closing connection drains the client's data

class HttpSession : public Connection, public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(ServerContext& ctx, tcp::socket socket) : ctx_(ctx), stream_(std::move(socket)) {
    beast::error_code ignored;  // answers are one write each: never wait for an ACK (Nagle)
    stream_.socket().set_option(tcp::no_delay(true), ignored);
  }

  void Start() {
    ctx_.Add(shared_from_this());
    ctx_.metrics.ConnectionOpened();
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->WaitForRequest(); });
  }

  void Shutdown() override {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      // Busy connections finish their request and close after answering (ctx.stopping).
      if (self->phase_ == Phase::kIdle) self->Cancel();
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

 private:
  enum class Phase { kIdle, kReading, kHandling, kParked, kWriting, kLingering, kClosed };

  void SetDeadline(int64_t from_now_ms) { deadline_ms.store(SteadyNowMs() + from_now_ms); }
  void ClearDeadline() { deadline_ms.store(kNoDeadline); }
  void Cancel() {
    beast::error_code ignored;
    stream_.socket().cancel(ignored);
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
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->buffer_.commit(n);
                              if (ec || n == 0) return self->Close();
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

  void OnHeader() {
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
    auto it = req.find(field);
    if (it == req.end()) return {};
    return std::string_view(it->value().data(), it->value().size());
  }

  void Upgrade(http::request<http::string_body> req, const ApiRequest& api) {
    auto accepted = ctx_.api.AcceptStream(api);
    if (auto* error = std::get_if<ApiResponse>(&accepted)) return ReplyAndClose(std::move(*error));
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
    res_.body() = std::move(r.body);
    res_.keep_alive(keep_alive);
    res_.prepare_payload();
    phase_ = Phase::kWriting;
    SetDeadline(ctx_.options.read_timeout_ms);  // a client that never reads its answer
    http::async_write(
        stream_, res_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnWrite(ec); });
  }

  void ReplyAndClose(ApiResponse r) { Reply(std::move(r), /*keep_alive=*/false); }

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
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  std::unique_ptr<http::response<http::empty_body>> continue_;  // while a 100 is written
  unsigned version_ = 11;
  Phase phase_ = Phase::kIdle;
  bool timed_out_ = false;
  bool keep_alive_ = true;
  // While parked (a waiting sessions_send):
  std::string run_id_;
  bool parked_read_pending_ = false;
  std::optional<ApiResponse> parked_answer_;  // arrived while the read was pending
};

int ThreadCount(const ServerOptions& options) {
  if (options.threads > 0) return options.threads;
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(2, 2 * cores);
}

Status WritePortFile(const std::string& path, uint16_t port) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out) return Status::IOError("cannot write the port file " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IOError("cannot rename " + tmp + " to " + path);
  }
  return Status::OK();
}

}  // namespace

// One io_context per thread, each run by exactly one thread: a connection lives on one
// context, so its handlers never run concurrently (no strands), and the contexts share no
// scheduler lock — the shared-scheduler alternative spent a measurable share of each request
// on cross-thread wake-ups. The cost: a handler blocked in a durable write (one fsync) delays
// the other connections of its context, which is why there are more contexts than cores.
struct HttpServer::Impl {
  Impl(Engine* engine, Api* api, Metrics* metrics, const ServerOptions& options)
      : contexts(MakeContexts(ThreadCount(options))),
        ctx(*contexts[0], *engine, *api, *metrics, options),
        control(contexts[0]->get_executor()),
        acceptor(control),
        sweep_timer(control),
        wake_timer(control),
        deadline_timer(control),
        grace_timer(control) {
    for (auto& c : contexts) guards.emplace_back(c->get_executor());
  }

  static std::vector<std::unique_ptr<asio::io_context>> MakeContexts(int n) {
    std::vector<std::unique_ptr<asio::io_context>> out;
    for (int i = 0; i < n; ++i) out.push_back(std::make_unique<asio::io_context>(1));
    return out;
  }

  asio::io_context& NextContext() { return *contexts[next_context++ % contexts.size()]; }

  void Accept() {
    acceptor.async_accept(NextContext(), [this](beast::error_code ec, tcp::socket s) {
      if (ec) {
        if (!ctx.stopping.load()) spdlog::warn("accept failed: {}", ec.message());
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      } else {
        std::make_shared<HttpSession>(ctx, std::move(s))->Start();
      }
      if (!ctx.stopping.load()) Accept();
    });
  }

  int64_t SweepIntervalMs() const {
    if (ctx.stopping.load()) return 10;  // notice the last connection closing promptly
    int64_t shortest = std::min(ctx.options.read_timeout_ms, ctx.options.idle_timeout_ms);
    return std::clamp<int64_t>(shortest / 4, 10, 250);
  }

  // Expires overdue connections; after a shutdown, ends the grace period early once every
  // connection is gone.
  void Sweep() {
    int64_t now = SteadyNowMs();
    std::vector<std::shared_ptr<Connection>> due;
    bool empty;
    {
      std::lock_guard<std::mutex> lock(ctx.mu);
      for (auto& [raw, weak] : ctx.connections) {
        if (raw->deadline_ms.load() > now) continue;
        if (auto c = weak.lock()) due.push_back(std::move(c));
      }
      empty = ctx.connections.empty();
    }
    for (auto& c : due) c->Expire();
    if (ctx.stopping.load() && empty) {
      grace_timer.cancel();
      guards.clear();  // every context ends its run() once its last handler is done
      return;
    }
    sweep_timer.expires_after(std::chrono::milliseconds(SweepIntervalMs()));
    sweep_timer.async_wait([this](beast::error_code ec) {
      if (!ec) Sweep();
    });
  }

  // Runs on `control`. Arms the wake timer for the engine's next merged wake, unless it is
  // already armed for that time or earlier.
  void ArmWakeTimer() {
    if (ctx.stopping.load()) return;
    std::optional<int64_t> next = ctx.engine.NextWakeDueMs();
    if (!next) return;
    if (wake_armed_for && *wake_armed_for <= *next) return;
    wake_armed_for = *next;
    int64_t delay = std::max<int64_t>(0, *next - ctx.engine.clock().NowMs());
    wake_timer.expires_after(std::chrono::milliseconds(delay));
    wake_timer.async_wait([this](beast::error_code ec) {
      if (ec) return;  // re-armed earlier, or shutting down
      wake_armed_for.reset();
      ctx.engine.RunDueWakes();
      ArmWakeTimer();
    });
  }

  // Runs on `control`. Arms the timer that times out waiting sessions_send calls at the
  // messaging's next deadline (the same pattern as the wake timer).
  void ArmDeadlineTimer() {
    if (ctx.stopping.load()) return;
    std::optional<int64_t> next = ctx.api.NextRunDeadlineMs();
    if (!next) return;
    if (deadline_armed_for && *deadline_armed_for <= *next) return;
    deadline_armed_for = *next;
    int64_t delay = std::max<int64_t>(0, *next - ctx.engine.clock().NowMs());
    deadline_timer.expires_after(std::chrono::milliseconds(delay));
    deadline_timer.async_wait([this](beast::error_code ec) {
      if (ec) return;  // re-armed earlier, or shutting down
      deadline_armed_for.reset();
      ctx.api.ExpireDueRuns();
      ArmDeadlineTimer();
      ArmWakeTimer();  // a timeout may enqueue deliveries and open notices
    });
  }

  void BeginShutdown() {
    if (ctx.stopping.exchange(true)) return;
    spdlog::info("event=shutdown_begin in_flight=finishing");
    beast::error_code ignored;
    acceptor.close(ignored);
    if (signals) signals->cancel(ignored);
    wake_timer.cancel();
    deadline_timer.cancel();
    std::vector<std::shared_ptr<Connection>> live;
    {
      std::lock_guard<std::mutex> lock(ctx.mu);
      for (auto& [raw, weak] : ctx.connections) {
        if (auto c = weak.lock()) live.push_back(std::move(c));
      }
    }
    for (auto& c : live) c->Shutdown();
    grace_timer.expires_after(std::chrono::milliseconds(ctx.options.shutdown_grace_ms));
    grace_timer.async_wait([this](beast::error_code ec) {
      if (ec) return;
      spdlog::warn("event=shutdown_forced reason=grace_period_over");
      for (auto& c : contexts) c->stop();
    });
    sweep_timer.cancel();  // its handler sees operation_aborted and does not re-arm
    Sweep();
  }

  std::vector<std::unique_ptr<asio::io_context>> contexts;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  std::size_t next_context = 0;  // used by the acceptor only (on control)
  ServerContext ctx;
  asio::io_context::executor_type control;  // contexts[0]: acceptor, timers, signals
  tcp::acceptor acceptor;
  asio::steady_timer sweep_timer;
  asio::steady_timer wake_timer;
  asio::steady_timer deadline_timer;
  asio::steady_timer grace_timer;
  std::optional<int64_t> wake_armed_for;      // guarded by `control`
  std::optional<int64_t> deadline_armed_for;  // guarded by `control`
  std::optional<asio::signal_set> signals;
  uint64_t wake_counter = 0;
  uint16_t port = 0;
};

Result<std::unique_ptr<HttpServer>> HttpServer::Bind(Engine* engine, Api* api, Metrics* metrics,
                                                     const ServerOptions& options) {
  auto impl = std::make_unique<Impl>(engine, api, metrics, options);
  try {
    beast::error_code ec;
    auto address = asio::ip::make_address(options.host, ec);
    if (ec)
      return Status::InvalidArgument("cannot listen on \"" + options.host + "\": " + ec.message());
    tcp::endpoint endpoint(address, options.port);
    impl->acceptor.open(endpoint.protocol());
    impl->acceptor.set_option(asio::socket_base::reuse_address(true));
    impl->acceptor.bind(endpoint, ec);
    if (ec) {
      return Status::IOError("cannot bind " + options.host + ":" + std::to_string(options.port) +
                             ": " + ec.message());
    }
    impl->acceptor.listen(asio::socket_base::max_listen_connections);
    impl->port = impl->acceptor.local_endpoint().port();
  } catch (const std::exception& e) {
    return Status::IOError(std::string("cannot listen: ") + e.what());
  }
  if (!options.port_file.empty()) SW_RETURN_IF_ERROR(WritePortFile(options.port_file, impl->port));
  Impl* raw = impl.get();
  raw->wake_counter = engine->SubscribeWakes([metrics](const Wake&) { metrics->AddWakeSent(); });
  if (!options.manual_clock) {
    api->after_write = [raw] {
      asio::post(raw->control, [raw] {
        raw->ArmWakeTimer();
        raw->ArmDeadlineTimer();
      });
    };
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  impl_->ctx.api.after_write = nullptr;
  impl_->ctx.engine.UnsubscribeWakes(impl_->wake_counter);
}

uint16_t HttpServer::port() const { return impl_->port; }

void HttpServer::Run() {
  Impl* impl = impl_.get();
  impl->Accept();
  asio::post(impl->control, [impl] {
    impl->Sweep();
    impl->ArmWakeTimer();  // wakes merged before this start (restart sweep)
    if (!impl->ctx.options.manual_clock) impl->ArmDeadlineTimer();  // sends before a restart
  });
  spdlog::info("event=serving addr={}:{} threads={}", impl->ctx.options.host, impl->port,
               impl->contexts.size());
  std::vector<std::thread> pool;
  for (std::size_t i = 1; i < impl->contexts.size(); ++i) {
    pool.emplace_back([impl, i] { impl->contexts[i]->run(); });
  }
  impl->contexts[0]->run();
  for (std::thread& t : pool) t.join();
  spdlog::info("event=server_stopped");
}

void HttpServer::Shutdown() {
  Impl* impl = impl_.get();
  asio::post(impl->control, [impl] { impl->BeginShutdown(); });
}

void HttpServer::HandleSignals() {
  Impl* impl = impl_.get();
  impl->signals.emplace(impl->control, SIGINT, SIGTERM);
  impl->signals->async_wait([impl](beast::error_code ec, int signal) {
    if (ec) return;
    spdlog::info("event=signal signal={}", signal);
    impl->BeginShutdown();
  });
}

}  // namespace statewatch::server
