// The node's own port: /healthz, /readyz, /v1/cluster/*, the WebSocket feeds relayed, and
// every other request handed to the partition router.

#include "server/cluster_node.h"

#include <boost/json.hpp>

#include <utility>

#include "control/operator.h"
#include "server/access_control.h"
#include "server/request_guard.h"
#include "server/route_table.h"
#include "server/url.h"
#include "server/stream_relay.h"

namespace statewatch::server {
namespace json = boost::json;

// Ready when the node holds its lease, has read the assignments, and owns — as a serving
// owner whose engine takes writes — every partition an assignment names it the owner of
// under its current lease. A partition it stands by for, or is handing over, does not count.
net::ListenerAnswer ClusterNode::Readiness() {
  json::object checks;
  std::string not_ready;
  auto fail = [&](const std::string& check, const std::string& why) {
    checks[check] = why;
    not_ready += (not_ready.empty() ? "" : "; ") + check + " " + why;
  };
  const control::LeaseHealth health = keeper_->health();
  checks["lease"] = control::LeaseHealthName(health);
  if (health != control::LeaseHealth::kHeld) fail("lease", control::LeaseHealthName(health));
  std::vector<uint32_t> should_own;
  bool read = false;
  {
    std::lock_guard lock(ready_mu_);
    should_own = should_own_;
    read = assignments_read_;
  }
  if (!read) fail("assignments", "not read from etcd yet");
  json::object partitions;
  {
    std::lock_guard lock(slots_mu_);  // a slot in the map is not being closed
    for (uint32_t p : should_own) {
      std::string state = "owned";
      auto it = slots_.find(p);
      Daemon* owner = it == slots_.end() || it->second->finished ? nullptr
                                                                 : it->second->daemon->owner();
      if (owner == nullptr) {
        state = "not owned yet (no serving owner slot)";
      } else if (auto stats = owner->engine().Stats(); !stats.ok()) {
        state = "storage unknown: " + stats.status().ToString();
      } else if (!stats->write_error.empty()) {
        state = "writes refused: " + stats->write_error;
      }
      partitions[std::to_string(p)] = state;
      if (state != "owned") fail("partition " + std::to_string(p), state);
    }
  }
  checks["partitions"] = std::move(partitions);
  json::object body{{"status", not_ready.empty() ? "ready" : "not_ready"},
                    {"node", options_.node_id},
                    {"checks", std::move(checks)}};
  if (not_ready.empty()) return {200, json::serialize(body)};
  body["error"] = json::object{{"code", "not_ready"}, {"message", "not ready: " + not_ready}};
  return {503, json::serialize(body)};
}

namespace {

// How the node's port answers a refused token: as a daemon would (401 with WWW-Authenticate).
net::ListenerAnswer RefusalAnswer(const Refusal& refused) {
  net::ListenerAnswer a = JsonErrorAnswer(refused.status, refused.code, refused.message);
  if (refused.status == 401) a.headers.emplace_back("WWW-Authenticate", "Bearer");
  return a;
}

}  // namespace

net::ListenerAnswer ClusterNode::Handle(const net::ListenerRequest& r) {
  const std::string path = r.target.substr(0, r.target.find('?'));
  // HEAD is GET without the body (the listener leaves it out).
  const std::string method = r.method == "HEAD" ? "GET" : r.method;
  // The node's own routes: /healthz and /readyz public, /v1/cluster/* admin. Any other
  // route goes to the partition's owner with the client's Authorization as sent: a known
  // token here, the route's scope there (its route table).
  const bool is_public = path == "/healthz" || path == "/readyz";
  if (!is_public) {
    const bool own = path.rfind("/v1/cluster/", 0) == 0;
    std::optional<Refusal> refused;
    if (own) {
      refused = access_->Check(r.authorization, auth::Scope::kAdmin, method, path);
    } else if (auto grant = access_->Authenticate(r.authorization);
               std::holds_alternative<Refusal>(grant)) {
      refused = std::get<Refusal>(std::move(grant));
    }
    if (refused) return RefusalAnswer(*refused);
  }
  if (path == "/readyz" && method == "GET") return Readiness();
  if (path == "/healthz" && method == "GET") {
    const control::LeaseHealth health = keeper_->health();
    return {200, json::serialize(json::object{
                     {"status", health == control::LeaseHealth::kHeld ? "ok" : "degraded"},
                     {"node", options_.node_id},
                     {"lease", control::LeaseHealthName(health)},
                     {"controller", controller_->leading()}})};
  }
  if (path == "/v1/cluster/status" && method == "GET") {
    auto view = control::ReadClusterView(*etcd_, keys_);
    if (!view.ok()) return JsonErrorAnswer(503, "unavailable", view.status().message());
    return {200, control::ClusterStatusJson(*view, options_.cluster)};
  }
  if ((path == "/v1/cluster/move" || path == "/v1/cluster/drain") && r.method == "POST") {
    boost::system::error_code ec;
    json::value body = json::parse(r.body, ec);
    if (ec || !body.is_object()) return JsonErrorAnswer(400, "invalid_json", "the body is not a JSON object");
    const json::object& o = body.as_object();
    control::WaitOptions wait;
    wait.cancel = &stop_;
    std::optional<Result<std::string>> answer;
    if (path == "/v1/cluster/move") {
      const json::value* p = o.if_contains("partition");
      const json::value* to = o.if_contains("to");
      if (p == nullptr || !p->is_int64() || p->as_int64() < 0 || to == nullptr ||
          !to->is_string()) {
        return JsonErrorAnswer(400, "invalid_argument",
                         "POST /v1/cluster/move needs {\"partition\": p, \"to\": \"NODE\"}");
      }
      answer = control::RequestMove(*etcd_, keys_, static_cast<uint32_t>(p->as_int64()),
                                  std::string(to->as_string()), wait);
    } else {
      const json::value* node = o.if_contains("node");
      if (node == nullptr || !node->is_string()) {
        return JsonErrorAnswer(400, "invalid_argument", "POST /v1/cluster/drain needs {\"node\": \"NODE\"}");
      }
      wait.timeout = std::chrono::milliseconds(120000);
      answer = control::RequestDrain(*etcd_, keys_, std::string(node->as_string()), wait);
    }
    if (answer->ok()) return {200, **answer};
    const Status s = answer->status();
    if (s.IsInvalidArgument()) return JsonErrorAnswer(400, "invalid_argument", s.message());
    if (s.IsNotFound()) return JsonErrorAnswer(404, "not_found", s.message());
    return JsonErrorAnswer(504, "timeout", s.message());
  }
  if (is_public || path.rfind("/v1/cluster/", 0) == 0) {
    return JsonErrorAnswer(405, "method_not_allowed", r.method + " " + path + " is not served here");
  }
  if ((path == "/v1/wakes" || path == "/v1/deliveries") && IsWebSocketUpgrade(r)) {
    net::ListenerAnswer upgrade;
    upgrade.take_socket = [this, r](int fd) {
      StreamRelayOptions o;
      o.partitions = options_.partitions;
      o.owner = [this](uint32_t p, bool refresh) { return OwnerOf(p, refresh); };
      // The client's own token upstream: the owner checks its scope (read, for a feed).
      o.token = std::string(BearerToken(r.authorization));
      o.stop = &stop_;
      o.wake_window_ms = options_.server.wake_window_ms;
      o.now_ms = [] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
      };
      RelayStream(fd, r, o);
    };
    return upgrade;
  }
  // Any other route: the partition's owner answers it. A HEAD is asked as GET (routing
  // rules name GET, and an owner's HEAD answer announces a body it does not send, which the
  // forwarding client would read as a lost answer); the listener leaves the body out.
  if (r.method == "HEAD") {
    net::ListenerRequest get = r;
    get.method = "GET";
    return router_->Route(get);
  }
  // The watcher directory first lists where a watch's cursor goes; a reset or deletion of a
  // watcher runs as a saga at its home partition (server/watcher_sagas.h). The saga is
  // journaled and driven across the partitions before the home answers, so the route's scope
  // is checked here first, as the home would check it: a token the home refuses must not
  // clear the watcher's cursors at the other partitions.
  if (std::string watcher, kind; watchers_->IsRemoval(r, &watcher, &kind)) {
    const RouteLookup route =
        MatchRoute(method, path, SplitTarget(r.target).query, RouteScope::kCluster);
    if (route.route) {
      if (auto refused =
              access_->Check(r.authorization, Routes()[*route.route].scope, method, path)) {
        return RefusalAnswer(*refused);
      }
    }
  }
  if (auto refused = watchers_->BeforeForward(r)) return *refused;
  return watchers_->Remove(r, [&] { return router_->Route(r); });
}
}  // namespace statewatch::server
