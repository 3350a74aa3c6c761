// RelayStream: the WebSocket feeds (GET /v1/wakes, GET /v1/deliveries) at a node's own port
// (docs/cluster-internals.md, "One address per node: any node answers any session"). A
// partition's wakes and deliveries come from its owner's slot, so the relay keeps one
// upstream WebSocket per partition — to the owner the directory names, with the client's
// path and query — and sends every message of any of them on to the client, as it came.
//
// An upstream that drops (the owner failed over, moved, or closed) is opened again at the
// owner the directory names after a refresh, at most every 500 ms per partition. Whenever an
// upstream opens — the first time too, since the client may have connected after a wake — a
// wake feed for one watcher (?watcher=W) peeks W's notices at that partition and sends
// {"watcher", "reason": "reconnected", "at"} when some are pending: a wake fired while the
// upstream was not open costs latency, never a notice, and at most one extra wake. A delivery
// feed needs no such step: a slot offers every unacknowledged delivery again on each connect.
// A wake feed of one watcher is windowed once more here (server/wake_window.h): one wake per
// `wake_window_ms` across all partitions, the newest held one sent when the window ends.
//
// Runs on the listener's connection thread until the client closes, a write to it fails, or
// `stop` is set (checked every 100 ms). One thread serves the client and all upstreams
// (poll), so a message is relayed as one frame, never interleaved.
#ifndef STATEWATCH_SERVER_STREAM_RELAY_H_
#define STATEWATCH_SERVER_STREAM_RELAY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "net/http_listener.h"
#include "server/partition_router.h"

namespace statewatch::server {

struct StreamRelayOptions {
  uint32_t partitions = 1;
  // As PartitionRouterOptions::owner.
  OwnerLookup owner;
  // Sent upstream as "Authorization: Bearer <token>" when not empty.
  std::string token;
  const std::atomic<bool>* stop = nullptr;
  // The clock of the "reconnected" wake's "at" (the node's system clock).
  std::function<int64_t()> now_ms;
  // A wake feed's window at this node (serve --wake-window-ms); 0: none.
  int64_t wake_window_ms = 0;
};

// True when `request` asks to upgrade to a WebSocket.
bool IsWebSocketUpgrade(const net::ListenerRequest& request);

// Serves the client's upgrade on `fd` (the listener closes it afterwards).
void RelayStream(int fd, const net::ListenerRequest& request, const StreamRelayOptions& options);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_STREAM_RELAY_H_
