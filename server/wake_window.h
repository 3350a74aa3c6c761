// WakeWindow: the 20 s wake window of one watcher's wake feed at a node's own port
// (docs/cluster-internals.md, "Wakes and deliveries through a node", A4). Each partition's
// owner already merges its wakes of a watcher into at most one per window; a watcher whose
// targets span k partitions would still get up to k wakes in one window through a node. The
// node holding the client's WebSocket (the relay, server/stream_relay.h) therefore windows the
// wakes it relays once more: the first wake goes out at once; a wake within `window_ms` of the
// last one sent is held, and the newest held wake goes out when the window ends — one wake per
// window per watcher, and a held wake is never dropped (a wake costs latency, never a notice).
//
// Pure: the caller gives the time (steady milliseconds), so tests drive it with a manual
// clock. Not thread-safe: one relay thread owns it.
#ifndef STATEWATCH_SERVER_WAKE_WINDOW_H_
#define STATEWATCH_SERVER_WAKE_WINDOW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace statewatch::server {

class WakeWindow {
 public:
  // `window_ms` <= 0: no window (every wake goes out as it comes).
  explicit WakeWindow(int64_t window_ms) : window_ms_(window_ms) {}

  // A wake arrived at `now_ms`: returns it when it goes out now; otherwise it is held
  // (replacing an older held wake: the newest says the most) until Due.
  std::optional<std::string> Offer(std::string wake, int64_t now_ms) {
    if (window_ms_ <= 0 || !last_sent_ms_ || now_ms - *last_sent_ms_ >= window_ms_) {
      last_sent_ms_ = now_ms;
      held_.reset();
      return wake;
    }
    held_ = std::move(wake);
    return std::nullopt;
  }

  // The held wake, when its window has ended by `now_ms`; it then counts as sent now.
  std::optional<std::string> Due(int64_t now_ms) {
    if (!held_ || now_ms - *last_sent_ms_ < window_ms_) return std::nullopt;
    last_sent_ms_ = now_ms;
    std::optional<std::string> out = std::move(held_);
    held_.reset();
    return out;
  }

  // When a held wake is due (steady ms), if one is held.
  std::optional<int64_t> NextDueMs() const {
    if (!held_) return std::nullopt;
    return *last_sent_ms_ + window_ms_;
  }

 private:
  const int64_t window_ms_;
  std::optional<int64_t> last_sent_ms_;
  std::optional<std::string> held_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_WAKE_WINDOW_H_
