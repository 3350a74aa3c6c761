#include "server/watcher_sagas.h"

#include <algorithm>
#include <boost/json.hpp>

#include <mutex>
#include <set>
#include <tuple>
#include <utility>

#include "codecs/json_codec.h"
#include "codecs/json_fields.h"
#include "engine/agent_partition.h"
#include "engine/event_validation.h"
#include "server/handlers.h"
#include "server/internal_call.h"
#include "server/json_body.h"
#include "server/request_guard.h"
#include "server/route_table.h"
#include "server/url.h"
#include "statewatch/request_ids.h"
#include "statewatch/session_key.h"
#include "statewatch/watcher_directory.h"

namespace statewatch::server {
namespace json = boost::json;

namespace {

json::array PartitionArray(const std::vector<uint32_t>& partitions) {
  json::array a;
  for (uint32_t p : partitions) a.emplace_back(p);
  return a;
}

json::object SagaJson(const WatcherSaga& s) {
  return json::object{{"watcher", s.watcher},
                      {"kind", WatcherSagaKindName(s.kind)},
                      {"partitions", PartitionArray(s.partitions)},
                      {"startedAt", s.started_at_ms},
                      {"number", s.number}};
}

// Serialises the routes that remove cursors (clear, saga) in this process: a clear's check of
// the fence, its removal and its raising of the fence are one step as far as another clear of
// the same watcher can tell (a partition's writes all run in its serving owner's process).
std::mutex& RemovalMutex() {
  static std::mutex mu;
  return mu;
}

std::optional<uint64_t> UintField(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr) return std::nullopt;
  if (v->is_uint64()) return v->as_uint64();
  if (v->is_int64() && v->as_int64() >= 0) return static_cast<uint64_t>(v->as_int64());
  return std::nullopt;
}

ApiResponse BadRequest(const std::string& message) {
  return Api::Error(400, "invalid_argument", message);
}

}  // namespace

ApiResponse AnswerWatcherRoute(Engine& engine, const ApiRequest& request) {
  const std::string_view path = SplitTarget(request.target).path;
  if (path.substr(0, kWatcherRoutesPrefix.size()) != kWatcherRoutesPrefix) {
    return Api::Error(404, "not_found", "no internal route " + std::string(path));
  }
  const std::string_view route = path.substr(kWatcherRoutesPrefix.size());
  const std::string_view method = request.method;
  WatcherDirectory directory(engine);
  if (route == "partitions" && method == "GET") {
    auto watcher = QueryParam(SplitTarget(request.target).query, "watcher");
    auto listing = directory.Lookup(watcher.value_or(""));
    if (!listing.ok()) return StatusResponse(listing.status());
    return JsonResponse(200, json::object{{"watcher", listing->watcher},
                                          {"partitions", PartitionArray(listing->partitions)},
                                          {"version", listing->version}});
  }
  if (route == "sagas" && method == "GET") {
    auto sagas = directory.Sagas();
    if (!sagas.ok()) return StatusResponse(sagas.status());
    json::array out;
    for (const WatcherSaga& s : *sagas) {
      auto listing = directory.Lookup(s.watcher);
      if (!listing.ok()) return StatusResponse(listing.status());
      json::object o = SagaJson(s);
      o["version"] = listing->version;
      out.push_back(std::move(o));
    }
    return JsonResponse(200, json::object{{"sagas", std::move(out)}});
  }
  if (method != "POST") {
    return Api::Error(404, "not_found",
                      "no internal route " + std::string(method) + " " + std::string(route));
  }
  auto body = JsonObjectOf(request.body);
  if (!body) return BadRequest("the body is not a JSON object");
  const std::string watcher = StringMember(*body, "watcher");
  if (route == "register") {
    auto p = UintField(*body, "partition");
    if (!p || *p > UINT32_MAX) return BadRequest("register needs {\"watcher\", \"partition\"}");
    // A watch after a pending removal must not be undone by it: the node drives the saga
    // first (server/watcher_sagas.h), then registers again.
    auto pending = directory.SagaOf(watcher);
    if (!pending.ok()) return StatusResponse(pending.status());
    if (pending->has_value()) {
      const WatcherSaga& s = **pending;
      auto listing = directory.Lookup(s.watcher);
      if (!listing.ok()) return StatusResponse(listing.status());
      json::object o{{"error", json::object{{"code", "saga_pending"},
                                            {"message", WatcherSagaPendingMessage(s)}}},
                     {"saga", SagaJson(s)},
                     {"version", listing->version}};
      return JsonResponse(409, o);
    }
    auto listing = directory.Register(watcher, static_cast<uint32_t>(*p));
    if (!listing.ok()) return StatusResponse(listing.status());
    return JsonResponse(200, json::object{{"watcher", listing->watcher},
                                          {"partitions", PartitionArray(listing->partitions)},
                                          {"version", listing->version}});
  }
  if (route == "clear") {
    // {"watcher", "saga": number}. A clear of a saga this partition already applied comes
    // late (a second driver's, a retry) and removes nothing: since then the saga may have
    // confirmed here and a watch of the watcher been acknowledged, which must stay.
    const uint64_t number = UintField(*body, "saga").value_or(0);
    std::lock_guard<std::mutex> lock(RemovalMutex());
    if (number > 0) {
      auto fence = directory.ClearedThrough(watcher);
      if (!fence.ok()) return StatusResponse(fence.status());
      if (*fence >= number) {
        return JsonResponse(200, json::object{{"cleared", true}, {"late", true}});
      }
    }
    if (Status s = engine.ResetWatcher(watcher); !s.ok()) return StatusResponse(s);
    // Removal first, fence second: a crash between them leaves the fence low, and the
    // clear's retry removes again — nothing registered here meanwhile (the saga is pending).
    if (number > 0) {
      if (Status s = directory.MarkCleared(watcher, number); !s.ok()) return StatusResponse(s);
    }
    return JsonResponse(200, json::object{{"cleared", true}});
  }
  if (route == "saga") {
    const std::string kind = StringMember(*body, "kind");
    auto home = UintField(*body, "home");
    if ((kind != "reset" && kind != "delete") || !home || *home > UINT32_MAX) {
      return BadRequest("saga needs {\"watcher\", \"kind\": \"reset\"|\"delete\", \"home\"}");
    }
    std::lock_guard<std::mutex> lock(RemovalMutex());
    // A retried removal under the X-Request-Id of one the home already applied is answered
    // from its record there and removes nothing again: its saga (done, or still journaled
    // and driven) must not run a second time over watches acknowledged since.
    const std::string request_id = StringMember(*body, "requestId");
    if (!request_id.empty()) {
      auto record = RequestIds(engine).Get(request_id);
      if (!record.ok()) return StatusResponse(record.status());
      if (record->has_value() && engine.clock().NowMs() - (*record)->created_at_ms <
                                     RequestIds::kDefaultTtlMs) {
        return JsonResponse(200, json::object{{"replayed", true}});
      }
    }
    // The home's cursors go now, before the saga is journaled with the home fenced at its
    // number: no later copy of the saga's clear can reach a watch made at the home after
    // the removal was answered (a watch there registers nothing that a saga would wait for).
    if (Status s = engine.ResetWatcher(watcher); !s.ok()) return StatusResponse(s);
    auto saga = directory.BeginSaga(
        watcher, kind == "delete" ? WatcherSagaKind::kDelete : WatcherSagaKind::kReset,
        static_cast<uint32_t>(*home));
    if (!saga.ok()) return StatusResponse(saga.status());
    auto listing = directory.Lookup(watcher);
    if (!listing.ok()) return StatusResponse(listing.status());
    return JsonResponse(200, json::object{{"saga", SagaJson(*saga)}, {"version", listing->version}});
  }
  if (route == "confirm") {
    auto p = UintField(*body, "partition");
    auto version = UintField(*body, "version");
    if (!p || *p > UINT32_MAX || !version) {
      return BadRequest("confirm needs {\"watcher\", \"partition\", \"version\"}");
    }
    auto saga = directory.Confirm(watcher, static_cast<uint32_t>(*p), *version);
    if (!saga.ok()) return StatusResponse(saga.status());
    return JsonResponse(200, json::object{{"saga", SagaJson(*saga)}});
  }
  return Api::Error(404, "not_found", "no internal route POST " + std::string(route));
}

namespace {

// Owns the inner gate for ServerOptions::gate.
class OwningWatcherGate final : public RequestGate {
 public:
  explicit OwningWatcherGate(std::shared_ptr<RequestGate> inner)
      : inner_(std::move(inner)), gate_(inner_.get()) {}
  std::optional<ApiResponse> Intercept(const HandlerContext& ctx, const ApiRequest& request,
                                       std::string_view path, const RouteLookup& found) override {
    return gate_.Intercept(ctx, request, path, found);
  }
  ApiResponse AnswerClusterRoute(ClusterRoute route, const HandlerContext& ctx,
                                 const ApiRequest& request) override {
    return gate_.AnswerClusterRoute(route, ctx, request);
  }

 private:
  std::shared_ptr<RequestGate> inner_;
  WatcherDirectoryGate gate_;
};

}  // namespace

std::optional<ApiResponse> WatcherDirectoryGate::Intercept(const HandlerContext& ctx,
                                                           const ApiRequest& request,
                                                           std::string_view path,
                                                           const RouteLookup& found) {
  if (path.substr(0, kWatcherRoutesPrefix.size()) != kWatcherRoutesPrefix) {
    return inner_->Intercept(ctx, request, path, found);
  }
  // Answered where a write would be: the owner, serving under its lease.
  static const RouteLookup kWrite = MatchRoute("POST", "/v1/watches", "", RouteScope::kCluster);
  if (auto refused = inner_->Intercept(ctx, request, "/v1/watches", kWrite)) return refused;
  if (!ctx.options.cluster_secret.empty()) {
    const std::string_view header =
        request.header ? request.header(kInternalHeaderLower) : std::string_view();
    if (Status s = CheckInternal(ctx.options.cluster_secret, request.method, request.target,
                                 request.body, header);
        !s.ok()) {
      return Api::Error(403, "forbidden", std::string(path) + ": " + s.message());
    }
  } else if (!ctx.options.token.empty() &&
             BearerToken(request.authorization) != ctx.options.token) {
    return Api::Error(403, "internal_only",
                      std::string(path) + " is a cluster-internal route: it needs the daemon's "
                      "own token");
  }
  return AnswerWatcherRoute(ctx.engine, request);
}

std::shared_ptr<RequestGate> WithWatcherDirectory(std::shared_ptr<RequestGate> inner) {
  return std::make_shared<OwningWatcherGate>(std::move(inner));
}

// ---- the node's side ------------------------------------------------------------------------

WatcherCoordinator::WatcherCoordinator(WatcherCoordinatorOptions options)
    : options_(std::move(options)) {}

std::optional<uint32_t> WatcherCoordinator::HomeOf(const std::string& watcher) const {
  auto parsed = ParseSessionKey(watcher);
  if (!parsed.ok() || !parsed->agent_scoped) return std::nullopt;
  return engine::PartitionOfAgent(parsed->agent_id, options_.partitions);
}

Result<json::object> WatcherCoordinator::Call(uint32_t partition, const std::string& method,
                                              const std::string& target,
                                              const std::string& body) const {
  net::HttpRequestOptions call;
  call.timeout_ms = static_cast<int>(options_.request_timeout.count());
  call.token = options_.token;
  std::string why = "it has no owner";
  const int64_t attempts =
      std::max<int64_t>(1, options_.retry_for / options_.retry_wait + 1);
  for (int64_t attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0) options_.sleep(options_.retry_wait);
    std::optional<OwnerAddress> owner = OwnerForAttempt(options_.owner, partition, attempt);
    if (!owner) continue;
    // Every internal route is idempotent: a lost answer is simply asked again.
    net::HttpRequestOptions signed_call = call;
    if (!options_.secret.empty()) {
      SignInternal(options_.secret, method, target, body, &signed_call.headers);
    }
    auto answer = options_.send(owner->url, method, target, body, signed_call);
    if (!answer.ok()) {
      why = owner->node + " at " + owner->url + " could not be reached (" +
            answer.status().message() + ")";
      continue;
    }
    // 503: failing over; 404: a standby, which has no such route, still named owner.
    if (answer->status == 503 || answer->status == 404) {
      why = owner->node + " answered 503 " + answer->body.substr(0, 200);
      continue;
    }
    auto object = JsonObjectOf(answer->body);
    if (answer->status == 200 && object) return std::move(*object);
    if (answer->status == 409 && object) return std::move(*object);  // saga_pending
    return Status::FailedPrecondition("partition " + std::to_string(partition) + "'s owner " +
                                      owner->node + " answered " + method + " " + target +
                                      " with " + std::to_string(answer->status) + " " +
                                      answer->body.substr(0, 200));
  }
  return Status::Busy("partition " + std::to_string(partition) +
                             " has no serving owner for " + method + " " + target + ": " + why);
}

Status WatcherCoordinator::Register(const std::string& watcher, uint32_t home,
                                    uint32_t partition) const {
  const std::string body =
      json::serialize(json::object{{"watcher", watcher}, {"partition", partition}});
  // Twice at most: a pending removal of the watcher is finished first, then the watch counts.
  for (int round = 0; round < 2; ++round) {
    auto answer = Call(home, "POST", "/v1/internal/watchers/register", body);
    if (!answer.ok()) return answer.status();
    const json::value* saga = answer->if_contains("saga");
    if (saga == nullptr || !saga->is_object()) return Status::OK();
    SW_RETURN_IF_ERROR(Drive(home, saga->as_object(), UintField(*answer, "version").value_or(0)));
  }
  return Status::Busy("a removal of " + watcher + " is still pending at partition " +
                             std::to_string(home));
}

std::optional<net::ListenerAnswer> WatcherCoordinator::BeforeForward(
    const net::ListenerRequest& request) const {
  const auto [path, query] = SplitTarget(request.target);
  if (request.method != "POST" || (path != "/v1/watches" && path != "/v1/events")) {
    return std::nullopt;
  }
  // (watcher, its home, the cursor's partition) to register, each once.
  std::set<std::tuple<std::string, uint32_t, uint32_t>> pairs;
  auto add = [&](const std::string& watcher, std::string_view target, std::string_view agent) {
    std::optional<uint32_t> home = HomeOf(watcher);
    auto name = ResolveSession(target, agent);
    if (!home || !name.ok()) return;  // the owner refuses it, or no cursor follows
    pairs.emplace(watcher, *home,
                  engine::PartitionOfAgent(name->agent_id, options_.partitions));
  };
  boost::system::error_code ec;
  json::value v = json::parse(request.body, ec);
  if (ec) return std::nullopt;
  // A body the owner will refuse lists nothing: a refused request writes nothing anywhere.
  if (path == "/v1/watches") {
    // One watch, or an array registered atomically (Engine::WatchMany): a watch the owner
    // refuses (watched: false), or an array with one such item, lists nothing.
    std::vector<WatchSpec> watches;
    for (const json::value* item : ItemsOf(v)) {
      auto spec = WatchSpecFromJson(*item);
      if (!spec.ok() || !engine::ResolveWatchPair(spec->watcher_key, spec->target).ok()) {
        return std::nullopt;
      }
      watches.push_back(std::move(*spec));
    }
    for (const WatchSpec& w : watches) {
      add(w.watcher_key, w.target.session_key, w.target.agent_id);
    }
  } else {
    const std::vector<const json::value*> events = ItemsOf(v);
    const bool lists = std::any_of(events.begin(), events.end(), [](const json::value* e) {
      return e->is_object() && e->as_object().contains("watchers");
    });
    if (!lists) return std::nullopt;
    for (const json::value* e : events) {
      if (!tools::EventInputFromJson(*e).ok()) return std::nullopt;  // the batch is refused
    }
    for (const json::value* e : events) {
      if (!e->is_object()) continue;
      const json::value* watchers = e->as_object().if_contains("watchers");
      if (watchers == nullptr || !watchers->is_array()) continue;
      for (const json::value& w : watchers->as_array()) {
        if (!w.is_string()) continue;
        add(std::string(w.as_string()), StringMember(e->as_object(), "sessionKey"),
            StringMember(e->as_object(), "agentId"));
      }
    }
  }
  // An array whose items span partitions is refused whole by the router (the
  // cross_partition_batch answer), so it lists nothing either.
  const bool watches = path == "/v1/watches";
  if (!OnePartitionOfBatch(v, watches ? "watches" : "events", watches ? "target" : "sessionKey",
                           watches ? "targetAgentId" : "agentId", options_.partitions)
           .ok()) {
    return std::nullopt;
  }
  for (const auto& [watcher, home, partition] : pairs) {
    if (Status s = Register(watcher, home, partition); !s.ok()) {
      net::ListenerAnswer refused = JsonErrorAnswer(
          503, "unavailable",
          "the watcher directory of " + watcher + " (partition " + std::to_string(home) +
              ") could not list partition " + std::to_string(partition) + ": " + s.message() +
              "; nothing was written");
      refused.headers.emplace_back("Retry-After", "1");
      return refused;
    }
  }
  return std::nullopt;
}

std::optional<std::vector<uint32_t>> WatcherCoordinator::NoticePartitions(
    const std::string& watcher) const {
  std::optional<uint32_t> home = HomeOf(watcher);
  if (!home) return std::nullopt;
  // One try: a home failing over costs a fan-out to every partition, not a wait.
  WatcherCoordinatorOptions once = options_;
  once.retry_for = std::chrono::milliseconds(0);
  WatcherCoordinator single(std::move(once));
  auto answer = single.Call(*home, "GET",
                            "/v1/internal/watchers/partitions?watcher=" + PercentEncode(watcher),
                            "");
  if (!answer.ok()) return std::nullopt;
  const json::value* listed = answer->if_contains("partitions");
  if (listed == nullptr || !listed->is_array()) return std::nullopt;
  std::vector<uint32_t> out{*home};
  for (const json::value& p : listed->as_array()) {
    if (p.is_int64() && p.as_int64() >= 0 && p.as_int64() < options_.partitions) {
      out.push_back(static_cast<uint32_t>(p.as_int64()));
    } else if (p.is_uint64() && p.as_uint64() < options_.partitions) {
      out.push_back(static_cast<uint32_t>(p.as_uint64()));
    }
  }
  return out;
}

bool WatcherCoordinator::IsRemoval(const net::ListenerRequest& request, std::string* watcher,
                                   std::string* kind) const {
  const auto [path, query] = SplitTarget(request.target);
  constexpr std::string_view kSessions = "/v1/sessions/";
  if (path.substr(0, kSessions.size()) != kSessions) return false;
  const std::string_view rest = path.substr(kSessions.size());
  const std::size_t slash = rest.find('/');
  if (request.method == "POST" && slash != std::string_view::npos &&
      rest.substr(slash) == "/reset") {
    *kind = "reset";
  } else if (request.method == "DELETE" && slash == std::string_view::npos) {
    *kind = "delete";
  } else {
    return false;
  }
  auto key = PercentDecode(rest.substr(0, slash), false);
  if (!key) return false;
  std::string agent = QueryParam(query, "agentId").value_or("");
  if (agent.empty()) agent = request.Header("x-agent-id");
  if (agent.empty()) {
    if (auto body = JsonObjectOf(request.body)) agent = StringMember(*body, "agentId");
  }
  auto name = ResolveSession(*key, agent);
  if (!name.ok()) return false;  // the owner refuses it; nothing to remove
  *watcher = name->session_key;
  return HomeOf(*watcher).has_value();
}

net::ListenerAnswer WatcherCoordinator::Remove(
    const net::ListenerRequest& request,
    const std::function<net::ListenerAnswer()>& forward) const {
  std::string watcher, kind;
  if (!IsRemoval(request, &watcher, &kind)) return forward();
  const uint32_t home = *HomeOf(watcher);
  json::object saga_body{{"watcher", watcher}, {"kind", kind}, {"home", home}};
  const std::string request_id(request.Header("x-request-id"));
  if (!request_id.empty()) saga_body["requestId"] = request_id;
  auto begun = Call(home, "POST", "/v1/internal/watchers/saga", json::serialize(saga_body));
  if (!begun.ok()) {
    net::ListenerAnswer refused = JsonErrorAnswer(
        503, "unavailable",
        "the " + kind + " of " + watcher + " could not be journaled at its home partition " +
            std::to_string(home) + ": " + begun.status().message() +
            "; no other partition was touched: retry it");
    refused.headers.emplace_back("Retry-After", "1");
    return refused;
  }
  net::ListenerAnswer answer = forward();
  if (const json::value* replayed = begun->if_contains("replayed");
      replayed != nullptr && replayed->is_bool() && replayed->as_bool()) {
    answer.headers.emplace_back("X-Statewatch-Saga", "replayed");
    return answer;
  }
  const json::value* saga = begun->if_contains("saga");
  Status driven = saga != nullptr && saga->is_object()
                      ? Drive(home, saga->as_object(), UintField(*begun, "version").value_or(0))
                      : Status::Corruption("the home answered no saga");
  answer.headers.emplace_back("X-Statewatch-Saga", driven.ok() ? "done" : "pending");
  return answer;
}

Status WatcherCoordinator::Drive(uint32_t home, const json::object& saga, uint64_t version) const {
  const std::string watcher = StringMember(saga, "watcher");
  const json::value* partitions = saga.if_contains("partitions");
  if (partitions == nullptr || !partitions->is_array()) {
    return Status::Corruption("a saga of " + watcher + " without partitions");
  }
  Status first_error;
  const std::string clear = json::serialize(
      json::object{{"watcher", watcher}, {"saga", UintField(saga, "number").value_or(0)}});
  for (const json::value& pv : partitions->as_array()) {
    auto p = pv.is_int64() ? std::optional<int64_t>(pv.as_int64())
                           : pv.is_uint64() ? std::optional<int64_t>(pv.as_uint64())
                                            : std::nullopt;
    if (!p || *p < 0 || *p >= options_.partitions) continue;
    const uint32_t partition = static_cast<uint32_t>(*p);
    auto cleared = Call(partition, "POST", "/v1/internal/watchers/clear", clear);
    if (cleared.ok()) {
      auto confirmed = Call(home, "POST", "/v1/internal/watchers/confirm",
                            json::serialize(json::object{{"watcher", watcher},
                                                         {"partition", partition},
                                                         {"version", version}}));
      if (confirmed.ok()) continue;
      cleared = confirmed.status();
    }
    if (first_error.ok()) first_error = cleared.status();
  }
  return first_error;
}

int WatcherCoordinator::ResumeOnce(const std::function<bool(uint32_t)>& owned) const {
  int finished = 0;
  for (uint32_t p = 0; p < options_.partitions; ++p) {
    if (!owned(p)) continue;
    auto listed = Call(p, "GET", "/v1/internal/watchers/sagas", "");
    if (!listed.ok()) continue;
    const json::value* sagas = listed->if_contains("sagas");
    if (sagas == nullptr || !sagas->is_array()) continue;
    for (const json::value& s : sagas->as_array()) {
      if (!s.is_object()) continue;
      if (Drive(p, s.as_object(), UintField(s.as_object(), "version").value_or(0)).ok()) {
        ++finished;
      }
    }
  }
  return finished;
}

}  // namespace statewatch::server
