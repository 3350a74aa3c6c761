// WakeStream: one WebSocket client of GET /v1/wakes or GET /v1/deliveries.
#include <spdlog/spdlog.h>

#include <deque>
#include <unordered_set>

#include "server/transport.h"

namespace statewatch::server::transport {
namespace {

class WakeStream : public Connection, public std::enable_shared_from_this<WakeStream> {
 public:
  WakeStream(ServerContext& ctx, beast::tcp_stream stream, StreamTarget target)
      : ctx_(ctx),
        ws_(std::move(stream)),
        deliveries_(target.kind == StreamTarget::Kind::kDeliveries),
        watcher_(std::move(target.filter)) {}

  ~WakeStream() override {
    // Also here, not only in Finish(): a hard stop destroys streams that never finished.
    Unsubscribe();
  }

  void Start(http::request<http::string_body> request) {
    auto self = shared_from_this();
    ctx_.Add(self);
    ctx_.metrics.WsClientOpened();
    // Subscribe before the handshake answer goes out: a client holding its 101 answer must
    // not miss a wake recorded right after. Wakes queue until the handshake is done.
    std::weak_ptr<WakeStream> weak = self;
    if (deliveries_) {
      SubscribeDeliveries(weak);
    } else {
      subscription_ = ctx_.engine.SubscribeWakes(
          [weak](const Wake& wake) {
            if (auto s = weak.lock()) s->Enqueue(Api::WakeMessage(wake));
          },
          watcher_);
    }
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& res) { res.set(http::field::server, "statewatch"); }));
    request_ = std::move(request);
    ws_.async_accept(request_, [self](beast::error_code ec) { self->OnAccept(ec); });
  }

  void Shutdown() override {
    asio::post(ws_.get_executor(), [self = shared_from_this()] { self->BeginClose(); });
  }

  void Expire() override {}  // the WebSocket stream keeps its own idle pings and timeouts

 private:
  // Live deliveries first, then the unacknowledged ones replayed (this runs on the stream's
  // executor, so the live ones posted meanwhile queue behind the replay); ids already sent
  // are skipped either way, so a delivery is offered once per connection.
  void SubscribeDeliveries(const std::weak_ptr<WakeStream>& weak) {
    subscription_ = ctx_.api.SubscribeDeliveries(watcher_, [weak](uint64_t id, std::string m) {
      if (auto s = weak.lock()) s->Enqueue(std::move(m), id);
    });
    auto pending = ctx_.api.PendingDeliveries(watcher_);
    if (!pending.ok()) {
      spdlog::warn("deliveries: cannot replay pending deliveries: {}", pending.status().ToString());
      return;
    }
    for (auto& [id, message] : *pending) Push(std::move(message), id);
  }

  void Unsubscribe() {
    if (subscription_ == 0) return;
    if (deliveries_) {
      ctx_.api.UnsubscribeDeliveries(subscription_);
    } else {
      ctx_.engine.UnsubscribeWakes(subscription_);
    }
    subscription_ = 0;
  }

  // Called on the engine's (or publisher's) thread: only hands the message over.
  void Enqueue(std::string message, uint64_t delivery_id = 0) {
    asio::post(ws_.get_executor(),
               [self = shared_from_this(), m = std::move(message), delivery_id]() mutable {
                 self->Push(std::move(m), delivery_id);
               });
  }

  void Push(std::string message, uint64_t delivery_id = 0) {
    if (finished_ || closing_) return;
    if (delivery_id != 0 && !sent_ids_.insert(delivery_id).second) return;
    if (queue_.size() >= ctx_.options.ws_queue_limit) {
      spdlog::warn("wakes: dropping a WebSocket client that fell {} messages behind",
                   queue_.size());
      ctx_.metrics.AddWsDropped();
      queue_.clear();
      BeginClose(websocket::close_code::policy_error);
      return;
    }
    ctx_.metrics.AddWsMessage();
    queue_.push_back(std::move(message));
    if (accepted_ && !writing_) Write();
  }

  void OnAccept(beast::error_code ec) {
    if (ec) {
      spdlog::debug("wakes: handshake failed: {}", ec.message());
      return Finish();
    }
    accepted_ = true;
    spdlog::debug("wakes: client connected watcher={}", watcher_.empty() ? "*" : watcher_);
    Read();
    if (!queue_.empty()) Write();
    if (ctx_.stopping.load()) BeginClose();
  }

  void Write() {
    writing_ = true;
    ws_.text(true);
    ws_.async_write(
        asio::buffer(queue_.front()),
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnWrite(ec); });
  }

  void OnWrite(beast::error_code ec) {
    writing_ = false;
    if (ec) return Finish();
    queue_.pop_front();
    if (!queue_.empty()) return Write();
    if (closing_) SendClose();
  }

  // Client messages carry nothing; reading keeps control frames (ping, close) flowing.
  void Read() {
    ws_.async_read(read_buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->Finish();
      self->read_buffer_.consume(self->read_buffer_.size());
      self->Read();
    });
  }

  void BeginClose(websocket::close_code code = websocket::close_code::going_away) {
    if (closing_ || finished_) return;
    closing_ = true;
    close_code_ = code;
    if (!accepted_) return;  // OnAccept sees ctx.stopping
    if (!writing_) SendClose();
  }

  void SendClose() {
    ws_.async_close(close_code_, [self = shared_from_this()](beast::error_code) {
      // The pending read completes with `closed` and finishes the stream.
    });
  }

  void Finish() {
    if (finished_) return;
    finished_ = true;
    Unsubscribe();
    ctx_.Remove(this);
    ctx_.metrics.WsClientClosed();
  }

  ServerContext& ctx_;
  websocket::stream<beast::tcp_stream> ws_;
  const bool deliveries_;  // a delivery feed (else a wake stream)
  std::string watcher_;    // the watcher filter, or the agent filter of a delivery feed
  std::unordered_set<uint64_t> sent_ids_;  // deliveries offered on this connection
  http::request<http::string_body> request_;
  beast::flat_buffer read_buffer_;
  std::deque<std::string> queue_;
  uint64_t subscription_ = 0;
  bool accepted_ = false;
  bool writing_ = false;
  bool closing_ = false;
  bool finished_ = false;
  websocket::close_code close_code_ = websocket::close_code::going_away;
};

}  // namespace

void StartStream(ServerContext& ctx, beast::tcp_stream stream,
                 http::request<http::string_body> request, StreamTarget target) {
  std::make_shared<WakeStream>(ctx, std::move(stream), std::move(target))
      ->Start(std::move(request));
}

}  // namespace statewatch::server::transport
