#include "server/stream_relay.h"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <boost/json.hpp>

#include <chrono>
#include <memory>
#include <vector>

#include "base/ascii.h"
#include "net/websocket.h"
#include "server/url.h"
#include "server/wake_window.h"

namespace statewatch::server {
namespace json = boost::json;
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRetryEvery = std::chrono::milliseconds(500);
constexpr int kConnectTimeoutMs = 500;

struct Upstream {
  std::unique_ptr<net::WebSocket> ws;
  Clock::time_point next_try{};
  bool dropped = false;  // it was open once: look the owner up again before reopening
};

// Whether `watcher` has notices pending at the owner `url` (a wake feed's resync).
bool HasPending(const std::string& url, const std::string& watcher, const std::string& token) {
  auto answer = net::HttpRequest(url, "GET", "/v1/notices?watcher=" + PercentEncode(watcher), "",
                                 token, 2000);
  if (!answer.ok() || answer->status != 200) return true;  // unknown: a spare wake is harmless
  boost::system::error_code ec;
  json::value v = json::parse(answer->body, ec);
  const json::value* list = !ec && v.is_object() ? v.as_object().if_contains("notices") : nullptr;
  return list == nullptr || !list->is_array() || !list->as_array().empty();
}

}  // namespace

bool IsWebSocketUpgrade(const net::ListenerRequest& request) {
  return ascii::EqualsIgnoreCase(request.Header("upgrade"), "websocket");
}

void RelayStream(int fd, const net::ListenerRequest& request, const StreamRelayOptions& options) {
  auto client = net::WebSocket::Accept(fd, request.Header("sec-websocket-key"));
  if (!client.ok()) {
    spdlog::info("event=relay_refused error=\"{}\"", client.status().ToString());
    return;
  }
  spdlog::debug("event=relay_accepted target={}", request.target);
  const std::string watcher =
      QueryParam(SplitTarget(request.target).query, "watcher").value_or("");
  const bool wake_feed = SplitTarget(request.target).path == "/v1/wakes" && !watcher.empty();
  net::HeaderList headers;
  if (!options.token.empty()) headers.emplace_back("Authorization", "Bearer " + options.token);
  std::vector<Upstream> up(options.partitions);
  // A wake feed of one watcher gets one wake per window across all partitions (A4).
  WakeWindow window(wake_feed ? options.wake_window_ms : 0);
  auto steady_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               Clock::now().time_since_epoch())
        .count();
  };
  auto relay = [&](std::string message) {
    auto out = window.Offer(std::move(message), steady_ms());
    return out ? (*client)->SendText(*out) : Status::OK();
  };

  while (options.stop == nullptr || !options.stop->load()) {
    const auto now = Clock::now();
    if (auto held = window.Due(steady_ms())) {
      if (!(*client)->SendText(*held).ok()) return;
    }
    for (uint32_t p = 0; p < options.partitions; ++p) {
      Upstream& u = up[p];
      if (u.ws || now < u.next_try) continue;
      u.next_try = now + kRetryEvery;
      auto owner = options.owner(p, u.dropped);
      if (!owner) continue;
      auto ws = net::WebSocket::Connect(owner->url, request.target, headers, kConnectTimeoutMs);
      if (!ws.ok()) {
        spdlog::debug("event=relay_upstream_failed partition={} url={} error=\"{}\"", p,
                     owner->url, ws.status().ToString());
        continue;
      }
      u.ws = std::move(*ws);
      spdlog::debug("event=relay_upstream_open partition={} url={}", p, owner->url);
      if (wake_feed && HasPending(owner->url, watcher, options.token)) {
        json::object wake{{"watcher", watcher}, {"reason", "reconnected"},
                          {"at", options.now_ms ? options.now_ms() : 0}};
        if (!relay(json::serialize(wake)).ok()) return;
      }
    }
    std::vector<pollfd> fds{{(*client)->fd(), POLLIN, 0}};
    std::vector<uint32_t> which;
    for (uint32_t p = 0; p < options.partitions; ++p) {
      if (up[p].ws) {
        fds.push_back({up[p].ws->fd(), POLLIN, 0});
        which.push_back(p);
      }
    }
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    if (fds[0].revents != 0) {
      // The client sends nothing but pings and its close: drain what came.
      for (int i = 0; i < 64; ++i) {  // bounded: a client cannot hold the relay here
        auto got = (*client)->Receive(0);
        if (!got.ok()) {
          spdlog::debug("event=relay_client_gone error=\"{}\"", got.status().ToString());
          return;
        }
        if (!got->has_value()) break;
      }
    }
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Upstream& u = up[which[i - 1]];
      for (int k = 0; k < 1024; ++k) {  // bounded per round: the other partitions get their turn
        auto got = u.ws->Receive(0);
        if (!got.ok()) {
          u.ws.reset();
          u.dropped = true;
          u.next_try = Clock::now() + std::chrono::milliseconds(100);
          break;
        }
        if (!got->has_value()) break;
        if (Status sent = relay(std::move(**got)); !sent.ok()) {
          spdlog::debug("event=relay_client_gone error=\"{}\"", sent.ToString());
          return;
        }
      }
    }
  }
  (*client)->Close();
}

}  // namespace statewatch::server
