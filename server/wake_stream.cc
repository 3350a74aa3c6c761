// WakeStream: one WebSocket client of GET /v1/wakes or GET /v1/deliveries.
//
// Memory per stream is bounded: a client may send messages of at most ws_message_limit
// bytes (Beast's default of 16 MiB let each connection pin that much; beyond the limit the
// stream closes with 1009); the kernel send buffer is fixed; and a client that does not
// read is disconnected once its queue passes ws_queue_limit messages or ws_queue_bytes
// while its send queue is full (or 16 times the bound regardless). It reconnects and
// re-syncs: deliveries are offered again, notices are peeked. The unacknowledged
// deliveries replayed on connect do not count against that bound: they move into the
// queue only as the client reads.
#include <linux/sockios.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>

#include <deque>
#include <unordered_set>
#include <utility>

#include "server/transport.h"

namespace statewatch::server::transport {
namespace {

// The kernel send buffer of a stream: fixed (no autotuning), so a stalled client pins at
// most this much kernel memory, and "its send queue is full" means the same on every
// machine.
constexpr int kSendBufferBytes = 256 * 1024;
// Unacknowledged bytes in the kernel send queue from which a client over its queue bound
// counts as not reading (a client that reads keeps this near zero on loopback).
constexpr int kStalledSendQueueBytes = 64 * 1024;
// Over this multiple of the queue bound a client is dropped whatever the send queue says.
constexpr std::size_t kHardBoundFactor = 16;

class WakeStream : public Connection, public std::enable_shared_from_this<WakeStream> {
 public:
  WakeStream(ServerContext& ctx, Stream stream, StreamTarget target)
      : ctx_(ctx),
        ws_(std::move(stream)),
        deliveries_(target.kind == StreamTarget::Kind::kDeliveries),
        watcher_(std::move(target.filter)) {}

  ~WakeStream() override {
    // Also here, not only in Finish(): a hard stop destroys streams that never finished.
    // (Nothing of ctx_ is touched: at a hard stop it is gone before the handlers are.)
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
    ws_.read_message_max(ctx_.options.ws_message_limit);
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().set_option(
        asio::socket_base::send_buffer_size(kSendBufferBytes), ignored);
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
  void Evict(std::function<void(bool)> then) override {  // a stream is never idle: kept
    if (then) asio::post(ws_.get_executor(), [then = std::move(then)] { then(false); });
  }

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
    replay_.assign(std::make_move_iterator(pending->begin()),
                   std::make_move_iterator(pending->end()));
    Refill();
  }

  // Moves replayed deliveries into the queue while it has room (half the bounds), so that
  // a long backlog flows at the client's pace instead of counting as falling behind.
  void Refill() {
    while (!replay_.empty() && queue_.size() < ctx_.options.ws_queue_limit / 2 &&
           queued_bytes_ < ctx_.options.ws_queue_bytes / 2) {
      auto [id, message] = std::move(replay_.front());
      replay_.pop_front();
      Push(std::move(message), id);
    }
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
    // Over the bound: a burst (thousands of wakes from one fan-out) queues faster than our
    // own writes complete even for a client that reads, so the client is dropped only when
    // the kernel's send queue shows it has stopped reading, or far over the bound.
    if (!queue_.empty() && OverBound(message.size(), 1) &&
        (OverBound(message.size(), kHardBoundFactor) || UnsentBytes() >= kStalledSendQueueBytes)) {
      return DropSlowClient();
    }
    ctx_.metrics.AddWsMessage();
    queued_bytes_ += message.size();
    queue_.push_back(std::move(message));
    if (accepted_ && !writing_) Write();
  }

  bool OverBound(std::size_t incoming, std::size_t factor) const {
    return queue_.size() >= ctx_.options.ws_queue_limit * factor ||
           queued_bytes_ + incoming > ctx_.options.ws_queue_bytes * factor;
  }

  // Bytes written to the socket and not yet acknowledged by the client (SIOCOUTQ).
  int UnsentBytes() {
    int n = 0;
    int fd = beast::get_lowest_layer(ws_).socket().native_handle();
    if (ioctl(fd, SIOCOUTQ, &n) != 0) return 0;
    return n;
  }

  // The client does not read: its queue would grow without bound. A close frame would queue
  // behind the stuck write, so the socket is closed at once; the pending operations then
  // complete with errors and Finish() the stream.
  void DropSlowClient() {
    if (uint64_t n = ctx_.slow_clients.Count(SteadyNowMs())) {
      spdlog::warn(
          "event=ws_client_dropped reason=not_reading queued_messages={} queued_bytes={} "
          "count={}",
          queue_.size(), queued_bytes_, n);
    }
    ctx_.metrics.AddWsDropped();
    queue_.clear();
    queued_bytes_ = 0;
    replay_.clear();
    closing_ = dropped_ = true;
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws_).socket().close(ignored);
    if (!accepted_) return;  // the handshake completes with an error and finishes
    if (!writing_) Finish();
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
    if (ec || dropped_) return Finish();
    queued_bytes_ -= queue_.front().size();
    queue_.pop_front();
    Refill();
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
    ctx_.ReleaseStream();
    ctx_.metrics.WsClientClosed();
  }

  ServerContext& ctx_;
  websocket::stream<Stream> ws_;
  const bool deliveries_;  // a delivery feed (else a wake stream)
  std::string watcher_;    // the watcher filter, or the agent filter of a delivery feed
  std::unordered_set<uint64_t> sent_ids_;  // deliveries offered on this connection
  http::request<http::string_body> request_;
  beast::flat_buffer read_buffer_;
  std::deque<std::string> queue_;
  std::size_t queued_bytes_ = 0;
  std::deque<std::pair<uint64_t, std::string>> replay_;  // deliveries still to offer
  uint64_t subscription_ = 0;
  bool accepted_ = false;
  bool writing_ = false;
  bool closing_ = false;
  bool dropped_ = false;  // DropSlowClient closed the socket
  bool finished_ = false;
  websocket::close_code close_code_ = websocket::close_code::going_away;
};

}  // namespace

void StartStream(ServerContext& ctx, Stream stream,
                 http::request<http::string_body> request, StreamTarget target) {
  std::make_shared<WakeStream>(ctx, std::move(stream), std::move(target))
      ->Start(std::move(request));
}

}  // namespace statewatch::server::transport
