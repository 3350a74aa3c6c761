#include "server/partition_router.h"

#include <boost/json.hpp>

#include <algorithm>
#include <future>
#include <map>
#include <utility>
#include <vector>

#include "base/ascii.h"
#include "engine/agent_partition.h"
#include "net/error_envelope.h"
#include "server/internal_call.h"
#include "server/json_body.h"
#include "server/url.h"
#include "statewatch/request_ids.h"
#include "statewatch/session_key.h"

namespace statewatch::server {
namespace json = boost::json;
net::ListenerAnswer JsonErrorAnswer(int status, const std::string& code,
                                    const std::string& message) {
  return {status,
          json::serialize(json::object{{"error", json::object{{"code", code}, {"message", message}}}})};
}

Result<std::optional<uint32_t>> OnePartitionOfBatch(const json::value& body,
                                                    std::string_view label,
                                                    std::string_view key_field,
                                                    std::string_view agent_field,
                                                    uint32_t partitions) {
  const std::vector<const json::value*> items = ItemsOf(body);
  std::optional<uint32_t> first;
  std::size_t first_index = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!items[i]->is_object()) continue;
    const json::object& e = items[i]->as_object();
    auto name = ResolveSession(StringMember(e, key_field), StringMember(e, agent_field));
    if (!name.ok()) continue;  // the owner refuses the item, and with it the batch
    const uint32_t p = engine::PartitionOfAgent(name->agent_id, partitions);
    if (!first) {
      first = p;
      first_index = i;
    } else if (p != *first) {
      const std::string items_are(label);
      return Status::InvalidArgument(
          items_are + "[" + std::to_string(first_index) + "] belongs to partition " +
          std::to_string(*first) + " and " + items_are + "[" + std::to_string(i) +
          "] to partition " + std::to_string(p) + " of " + std::to_string(partitions) +
          ": a batch is atomic only within one partition — send one batch per partition "
          "(nothing was written)");
    }
  }
  return first;
}

Result<net::HttpAnswer> SendOverHttp(const std::string& url, const std::string& method,
                                     const std::string& target, const std::string& body,
                                     const net::HttpRequestOptions& options) {
  return net::HttpRequest(url, method, target, body, options);
}

namespace {

// The request's headers that travel to the owner, Authorization included as the client sent
// it: everything but the framing and the Host (the owner checks the Host it is reached at).
net::HeaderList ForwardedHeaders(const net::ListenerRequest& request) {
  net::HeaderList out;
  for (const auto& [name, value] : request.headers) {
    if (name == "host" || name == "content-length" || name == "connection" ||
        name == "transfer-encoding" || name == "accept" || name == "user-agent" ||
        name == kInternalHeaderLower) {  // never taken from a client
      continue;
    }
    out.emplace_back(name, value);
  }
  return out;
}

// The answer's headers that travel back to the client.
void RelayHeaders(const net::HttpAnswer& from, net::ListenerAnswer* to) {
  for (const auto& [name, value] : from.headers) {
    const std::string lower = ascii::AsciiToLower(name);
    if (lower == "content-type" || lower == "retry-after" || lower.rfind("x-", 0) == 0) {
      to->headers.emplace_back(name, value);
    }
  }
}

// The cluster's 503 codes: the owner refused before anything landed (it is a standby, it is
// switching, or it was fenced out / lost its lease).
bool RefusedBeforeLanding(const net::HttpAnswer& answer) {
  return answer.status == 503 &&
         net::ClusterRefusedBeforeLanding(answer.status, net::ErrorCodeOf(answer.body));
}

// The partition of (key, agent) as the engine resolves it; nullopt with *why for a key it
// would refuse (then any owner can refuse it alike: partition 0's).
std::optional<uint32_t> PartitionOf(std::string_view key, std::string_view agent,
                                    uint32_t partitions) {
  auto name = ResolveSession(key, agent);
  if (!name.ok()) return std::nullopt;
  return engine::PartitionOfAgent(name->agent_id, partitions);
}

// OnePartitionOfBatch of a request's body; a body that is not JSON names no partition.
Result<std::optional<uint32_t>> OnePartitionOfBody(std::string_view body, std::string_view label,
                                                   std::string_view key_field,
                                                   std::string_view agent_field,
                                                   uint32_t partitions) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) return std::optional<uint32_t>();
  return OnePartitionOfBatch(v, label, key_field, agent_field, partitions);
}

net::ListenerAnswer CrossPartitionAnswer(const Status& refused) {
  return JsonErrorAnswer(400, "cross_partition_batch", refused.message());
}

// The id of `POST /v1/deliveries/{id}/ack`, or nullopt for another path or an id that is not
// a positive integer (which any partition refuses alike).
std::optional<uint64_t> DeliveryIdOf(std::string_view path) {
  constexpr std::string_view kPrefix = "/v1/deliveries/";
  constexpr std::string_view kSuffix = "/ack";
  if (!path.starts_with(kPrefix) || !path.ends_with(kSuffix)) return std::nullopt;
  auto id = ascii::ParseDecimal(
      path.substr(kPrefix.size(), path.size() - kPrefix.size() - kSuffix.size()));
  if (!id || *id == 0) return std::nullopt;
  return id;
}

// A fan-out asks each partition once: one that is failing over is reported missing (A5).
constexpr std::chrono::milliseconds kNoRetry{0};

enum class Kind { kOne, kAny, kNotices, kVersions, kProbe, kExplicit, kRefuse };

}  // namespace

struct PartitionRouter::Target {
  Kind kind = Kind::kOne;
  uint32_t partition = 0;
  bool derived = false;  // the partition comes from a session the request names
  bool tool = false;
  net::ListenerAnswer refusal;
};

PartitionRouter::PartitionRouter(PartitionRouterOptions options) : options_(std::move(options)) {}

net::ListenerAnswer PartitionRouter::Route(const net::ListenerRequest& request) const {
  const uint32_t P = options_.partitions;
  const auto [path, query] = SplitTarget(request.target);
  const std::string& method = request.method;
  const std::string header_agent = request.Header("x-agent-id");

  // ?partition=p names a partition explicitly, on any route.
  bool malformed = false;
  std::optional<std::string> named = QueryParam(query, "partition", &malformed);
  std::optional<uint32_t> explicit_partition;
  if (named || malformed) {
    char* end = nullptr;
    const unsigned long p = named ? std::strtoul(named->c_str(), &end, 10) : 0;
    if (malformed || !named || named->empty() || *end != '\0' || p >= P) {
      return JsonErrorAnswer(421, "misdirected",
                   "partition \"" + named.value_or("") + "\" does not exist: this cluster has " +
                       std::to_string(P) + " partitions, 0.." + std::to_string(P - 1));
    }
    explicit_partition = static_cast<uint32_t>(p);
  }

  Target t;
  auto one = [&](std::optional<uint32_t> p) {
    t.kind = Kind::kOne;
    t.partition = p.value_or(0);  // a key the engine refuses: any owner refuses it alike
    t.derived = p.has_value();
  };
  constexpr std::string_view kSessions = "/v1/sessions/";
  constexpr std::string_view kLinks = "/v1/upstream-links/";
  if (IsInternalPath(path)) {
    return JsonErrorAnswer(403, "forbidden",
                           method + " " + std::string(path) + " is answered only between a "
                           "cluster's own processes (X-Statewatch-Internal), never for a client");
  }
  if (path.rfind("/v1/tools/", 0) == 0) {
    const std::optional<uint32_t> home =
        PartitionOf(request.Header("x-session-key"), header_agent, P);
    one(home);
    t.tool = true;
    // Reads across partitions (docs/cluster-internals.md, "Reads across partitions"): only
    // with a secret to sign the internal calls, only when more than one partition, and
    // never with ?partition= (that names one engine).
    const bool across = home && P > 1 && !options_.secret.empty() && method == "POST" &&
                        !named && !malformed;
    if (across && path == "/v1/tools/sessions_list") return ListAcross(request, *home);
    if (across && path == "/v1/tools/sessions_send") {
      auto body = JsonObjectOf(request.body);
      if (body && body->contains("label") && !body->contains("sessionKey")) {
        auto p = PartitionOf("main", StringMember(*body, "agentId"), P);
        if (p && *p != *home && !StringMember(*body, "agentId").empty()) {
          return SendByLabel(request, *home, *p);
        }
      }
      const std::string key(ascii::Trim(body ? StringMember(*body, "sessionKey") : ""));
      if (!key.empty() && key != "current" && !ascii::StartsWithIgnoreCase(key, "agent:")) {
        return SendBySessionId(request, *home);  // a bare key or a session id
      }
    }
    if (across && (path == "/v1/tools/session_status" || path == "/v1/tools/sessions_history")) {
      auto body = JsonObjectOf(request.body.empty() ? "{}" : request.body);
      const json::value* key = body ? body->if_contains("sessionKey") : nullptr;
      auto caller = ResolveSession(request.Header("x-session-key"), header_agent);
      if (key != nullptr && key->is_string() && caller.ok()) {
        std::string_view k = key->as_string();
        while (!k.empty() && (k.front() == ' ' || k.front() == '\t')) k.remove_prefix(1);
        while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.remove_suffix(1);
        auto named_session = ResolveSession(k, "", caller->agent_id);
        if (!k.empty() && k != "current" && named_session.ok()) {
          const uint32_t p = engine::PartitionOfAgent(named_session->agent_id, P);
          if (p != *home) {
            return RemoteRead(request, std::string(path.substr(10)), *home, p);
          }
          // Not an agent-scoped key: a bare key of the caller's agent, or a session id, which
          // a single node looks up among all its sessions.
          if (!ascii::StartsWithIgnoreCase(k, "agent:")) {
            return ReadAnywhere(request, std::string(path.substr(10)), *home);
          }
        }
      }
    }
  } else if (path.rfind(kSessions, 0) == 0 || (path.rfind(kLinks, 0) == 0 && method == "DELETE")) {
    const std::string_view rest = path.substr(path.rfind(kSessions, 0) == 0 ? kSessions.size()
                                                                            : kLinks.size());
    auto key = PercentDecode(rest.substr(0, rest.find('/')), false);
    std::string agent = QueryParam(query, "agentId").value_or("");
    if (agent.empty()) agent = header_agent;
    if (agent.empty()) {
      if (auto body = JsonObjectOf(request.body)) agent = StringMember(*body, "agentId");
    }
    one(key ? PartitionOf(*key, agent, P) : std::nullopt);
  } else if ((path == "/v1/watches" || path == "/v1/watches/remove") && method == "POST") {
    // One watch or an array of them, routed by target: an array is atomic within a partition.
    auto first = OnePartitionOfBody(request.body, "watches", "target", "targetAgentId", P);
    if (!first.ok()) return CrossPartitionAnswer(first.status());
    one(*first);
  } else if (path == "/v1/cursors") {
    one(PartitionOf(QueryParam(query, "target").value_or(""),
                    QueryParam(query, "targetAgentId").value_or(""), P));
  } else if (path == "/v1/upstream-links" && method == "POST") {
    auto body = JsonObjectOf(request.body);
    one(body ? PartitionOf(StringMember(*body, "sessionKey"), StringMember(*body, "agentId"), P)
             : std::nullopt);
  } else if (path == "/v1/events" && method == "POST") {
    auto first = OnePartitionOfBody(request.body, "events", "sessionKey", "agentId", P);
    if (!first.ok()) return CrossPartitionAnswer(first.status());
    one(*first);
  } else if (path == "/v1/versions" && method == "POST") {
    t.kind = Kind::kVersions;
  } else if (path == "/v1/notices" || (path == "/v1/notices/drain" && method == "POST")) {
    t.kind = Kind::kNotices;
  } else if (auto delivery = DeliveryIdOf(path)) {
    // A delivery id names its partition (n * P + p, engine/group_write.h): probing would ack
    // another partition's delivery of the same number, made before ids were numbered so.
    t.kind = Kind::kOne;
    t.partition = static_cast<uint32_t>(*delivery % P);
  } else if (path.rfind("/v1/runs/", 0) == 0 || path.rfind("/v1/deliveries/", 0) == 0) {
    if (path == "/v1/deliveries") {
      t.kind = Kind::kRefuse;
    } else {
      t.kind = Kind::kProbe;  // run ids are UUIDs: the one partition that knows it answers
    }
  } else if (path == "/v1/wakes") {
    t.kind = Kind::kRefuse;
  } else if ((path == "/v1/openapi.json" || path == "/v1/clock") && method == "GET") {
    t.kind = Kind::kAny;
  } else {
    t.kind = Kind::kExplicit;
  }

  if (explicit_partition) {
    if (t.kind == Kind::kOne && t.derived && t.partition != *explicit_partition) {
      return JsonErrorAnswer(421, "misdirected",
                   "the request names partition " + std::to_string(*explicit_partition) +
                       " but its session belongs to partition " + std::to_string(t.partition) +
                       " of " + std::to_string(P));
    }
    if (t.kind != Kind::kRefuse) {
      t.kind = Kind::kOne;
      t.partition = *explicit_partition;
    }
  }
  const auto timeout = t.tool ? options_.tool_timeout : options_.request_timeout;
  switch (t.kind) {
    case Kind::kOne:
      return ToPartition(t.partition, request, request.body, timeout, options_.retry_for);
    case Kind::kAny:
      return ToPartition(0, request, request.body, timeout, options_.retry_for);
    case Kind::kNotices:
      return Notices(request);
    case Kind::kVersions:
      return Versions(request);
    case Kind::kProbe:
      return Probe(request);
    case Kind::kExplicit:
      return JsonErrorAnswer(400, "partition_required",
                   method + " " + std::string(path) + " acts on one partition's engine: name it "
                   "with ?partition=p (0.." + std::to_string(P - 1) + ")");
    case Kind::kRefuse:
      break;
  }
  std::string owners;
  for (uint32_t p = 0; p < P; ++p) {
    auto o = options_.owner(p, false);
    owners += (p ? ", " : "") + std::to_string(p) + ": " + (o ? o->url : "none");
  }
  return JsonErrorAnswer(426, "upgrade_required",
               method + " " + std::string(path) + " is a WebSocket feed: ask for an upgrade (the "
               "node relays every partition's feed), or connect to a partition's slot (" +
               owners + ")");
}

std::optional<OwnerAddress> OwnerForAttempt(const OwnerLookup& owner, uint32_t partition,
                                            int64_t attempt) {
  std::optional<OwnerAddress> found = owner(partition, attempt > 0);
  if (!found && attempt == 0) found = owner(partition, true);
  return found;
}

net::ListenerAnswer PartitionRouter::ToPartition(uint32_t partition,
                                                 const net::ListenerRequest& request,
                                                 const std::string& body,
                                                 std::chrono::milliseconds timeout,
                                                 std::chrono::milliseconds retry_for,
                                                 const std::string* internal_target) const {
  net::HttpRequestOptions call;
  call.timeout_ms = static_cast<int>(timeout.count());
  call.headers = ForwardedHeaders(request);
  const std::string& method = internal_target != nullptr ? std::string("POST") : request.method;
  const std::string& target = internal_target != nullptr ? *internal_target : request.target;
  if (internal_target != nullptr) {
    SignInternal(options_.secret, method, target, body, &call.headers);
  }
  bool sent = false;
  call.sent = &sent;
  std::string why = "it has no owner";
  const int64_t attempts = std::max<int64_t>(1, retry_for / options_.retry_wait + 1);
  for (int64_t attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0) options_.sleep(options_.retry_wait);
    std::optional<OwnerAddress> owner = OwnerForAttempt(options_.owner, partition, attempt);
    if (!owner) continue;
    sent = false;
    auto answer = options_.send(owner->url, method, target, body, call);
    if (!answer.ok() && sent) {
      return JsonErrorAnswer(502, "answer_lost",
                   "partition " + std::to_string(partition) + "'s owner " + owner->node + " at " +
                       owner->url + " received the request but its answer was lost (" +
                       answer.status().message() +
                       "): the outcome is unknown — retry with the same dedupeKey");
    }
    if (!answer.ok()) {
      why = "its owner " + owner->node + " at " + owner->url + " could not be reached (" +
            answer.status().message() + ")";
      continue;
    }
    if (RefusedBeforeLanding(*answer)) {
      why = "its owner " + owner->node + " refused: " + answer->body.substr(0, 300);
      continue;
    }
    net::ListenerAnswer out(answer->status, std::move(answer->body));
    RelayHeaders(*answer, &out);
    out.headers.emplace_back("X-Statewatch-Partition", std::to_string(partition));
    out.headers.emplace_back("X-Statewatch-Owner", owner->node);
    return out;
  }
  net::ListenerAnswer out = JsonErrorAnswer(
      503, "unavailable",
      "partition " + std::to_string(partition) + " has no serving owner after " +
          std::to_string(retry_for.count()) + " ms: " + why + "; nothing was written");
  out.headers.emplace_back("Retry-After", "1");
  return out;
}

std::vector<uint32_t> PartitionRouter::NoticePartitions(const net::ListenerRequest& request) const {
  std::vector<uint32_t> all(options_.partitions);
  for (uint32_t p = 0; p < options_.partitions; ++p) all[p] = p;
  if (!options_.watcher_partitions) return all;
  std::string watcher;
  if (request.method == "GET") {
    watcher = QueryParam(SplitTarget(request.target).query, "watcher").value_or("");
  } else if (auto body = JsonObjectOf(request.body)) {
    watcher = StringMember(*body, "watcher");
  }
  std::optional<std::vector<uint32_t>> listed = options_.watcher_partitions(watcher);
  if (!listed) return all;
  std::vector<uint32_t> out;
  for (uint32_t p : *listed) {
    if (p < options_.partitions) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out.empty() ? all : out;  // an unparsable watcher: every owner refuses it alike
}

namespace {

// Whether partition p's drain may have run without its answer reaching the node: the answer
// was lost after the request was sent (502 answer_lost: the owner stalled past the fan-out's
// timeout, or died), or the owner is still running the first one (409 request_in_progress).
bool AnswerMayBeElsewhere(const net::ListenerAnswer& a) {
  if (a.status != 502 && a.status != 409) return false;
  const std::string code = net::ErrorCodeOf(a.body);
  return code == "answer_lost" || code == "request_in_progress";
}

// What partition p's part of a peek or drain failed with, for "partitionErrors": the owner's
// own {"error": {...}} when it sent one, else what came instead.
json::object PartitionError(uint32_t p, const net::ListenerAnswer& a) {
  json::object error;
  if (auto body = JsonObjectOf(a.body)) {
    if (const json::value* e = body->if_contains("error"); e != nullptr && e->is_object()) {
      error = e->as_object();
    }
  }
  if (error.empty()) {
    error["code"] = "bad_gateway";
    error["message"] = "partition " + std::to_string(p) + " answered " + std::to_string(a.status) +
                       (a.status == 200 ? " without a notices list: " : ": ") +
                       a.body.substr(0, 200);
  }
  return json::object{{"partition", p}, {"status", a.status}, {"error", std::move(error)}};
}

}  // namespace

net::ListenerAnswer PartitionRouter::Notices(const net::ListenerRequest& in) const {
  const std::vector<uint32_t> asked = NoticePartitions(in);
  // A drain carries an X-Request-Id to every partition — the client's, else one minted here —
  // so that a partition whose answer did not come back can be asked again under it: the
  // notices it acknowledged exist only in its recorded answer, which the retry replays.
  const bool drain = in.method == "POST";
  net::ListenerRequest request = in;
  std::string minted;
  if (drain && request.Header("x-request-id").empty()) {
    minted = NewRequestId();
    request.headers.emplace_back("x-request-id", minted);
  }
  // Re-asks of one partition: each waits retry_wait and may take fanout_timeout, and all of
  // them together stay within retry_for.
  const int64_t reasks =
      drain ? options_.retry_for / (options_.fanout_timeout + options_.retry_wait) : 0;
  std::vector<std::future<net::ListenerAnswer>> answers;
  for (uint32_t p : asked) {
    answers.push_back(std::async(std::launch::async, [this, p, &request, reasks] {
      net::ListenerAnswer a =
          ToPartition(p, request, request.body, options_.fanout_timeout, kNoRetry);
      for (int64_t i = 0; i < reasks && AnswerMayBeElsewhere(a); ++i) {
        options_.sleep(options_.retry_wait);
        a = ToPartition(p, request, request.body, options_.fanout_timeout, kNoRetry);
      }
      return a;
    }));
  }
  json::array notices;
  json::array missing;
  json::array errors;
  std::string owners;  // "p=node,…" of the partitions that answered
  std::optional<net::ListenerAnswer> first_refusal;
  std::size_t refusals = 0;
  for (std::size_t i = 0; i < asked.size(); ++i) {
    const uint32_t p = asked[i];
    net::ListenerAnswer a = answers[i].get();
    for (const auto& [name, value] : a.headers) {
      if (name == "X-Statewatch-Owner" && a.status == 200) {
        owners += (owners.empty() ? "" : ",") + std::to_string(p) + "=" + value;
      }
    }
    auto body = a.status == 200 ? JsonObjectOf(a.body) : std::nullopt;
    const json::value* list = body ? body->if_contains("notices") : nullptr;
    if (list != nullptr && list->is_array()) {
      for (const json::value& n : list->as_array()) notices.push_back(n);
      continue;
    }
    // A partition's refusal (4xx) is its answer inside the whole, never the whole answer: the
    // other partitions may have acknowledged notices that only this answer can deliver.
    if (a.status >= 400 && a.status < 500) {
      ++refusals;
      if (!first_refusal) first_refusal = a;
    }
    missing.emplace_back(p);
    errors.push_back(PartitionError(p, a));
  }
  // Every partition refused (a malformed watcher, a bad body): nothing was acknowledged
  // anywhere, and the refusal is the answer, as on one node.
  if (first_refusal && refusals == asked.size()) return std::move(*first_refusal);
  json::object out{{"notices", std::move(notices)}};
  if (!missing.empty()) {
    out["incomplete"] = true;
    out["missingPartitions"] = std::move(missing);
    out["partitionErrors"] = std::move(errors);
  }
  net::ListenerAnswer answer(200, json::serialize(out));
  answer.headers.emplace_back("X-Statewatch-Owners", owners);
  // The id to retry an incomplete drain with, when the client sent none.
  if (!minted.empty()) answer.headers.emplace_back("X-Request-Id", minted);
  return answer;
}

net::ListenerAnswer PartitionRouter::Versions(const net::ListenerRequest& request) const {
  const uint32_t P = options_.partitions;
  auto body = JsonObjectOf(request.body);
  const json::value* keys = body ? body->if_contains("sessions") : nullptr;
  if (keys == nullptr || !keys->is_array() || keys->as_array().empty()) {
    // The owner refuses it as a single node would.
    return ToPartition(0, request, request.body, options_.request_timeout, options_.retry_for);
  }
  const std::string agent = StringMember(*body, "agentId");
  // The request's keys by partition, each with its index in the request.
  std::map<uint32_t, std::pair<json::array, std::vector<std::size_t>>> parts;
  const json::array& list = keys->as_array();
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::optional<uint32_t> p;
    if (list[i].is_string()) {
      const std::string key(list[i].as_string());
      auto parsed = ParseSessionKey(key);
      if (parsed.ok()) p = PartitionOf(key, parsed->agent_scoped ? "" : agent, P);
    }
    auto& [sub, index] = parts[p.value_or(0)];
    sub.push_back(list[i]);
    index.push_back(i);
  }
  std::vector<std::pair<uint32_t, std::future<net::ListenerAnswer>>> answers;
  std::map<uint32_t, std::string> bodies;
  for (auto& [p, part] : parts) {
    json::object sub = *body;
    sub["sessions"] = part.first;
    bodies[p] = json::serialize(sub);
  }
  for (const auto& [p, sub] : bodies) {
    answers.emplace_back(p, std::async(std::launch::async, [this, p = p, &sub = sub, &request] {
                           return ToPartition(p, request, sub, options_.fanout_timeout, kNoRetry);
                         }));
  }
  json::array rows(list.size());
  for (auto& [p, future] : answers) {
    net::ListenerAnswer a = future.get();
    if (a.status != 200) return a;
    auto answer = JsonObjectOf(a.body);
    const json::value* got = answer ? answer->if_contains("versions") : nullptr;
    const std::vector<std::size_t>& index = parts[p].second;
    if (got == nullptr || !got->is_array() || got->as_array().size() != index.size()) {
      return JsonErrorAnswer(502, "bad_gateway",
                   "partition " + std::to_string(p) + "'s owner answered versions with " +
                       a.body.substr(0, 200));
    }
    for (std::size_t i = 0; i < index.size(); ++i) rows[index[i]] = got->as_array()[i];
  }
  return {200, json::serialize(json::object{{"versions", std::move(rows)}})};
}
net::ListenerAnswer PartitionRouter::Probe(const net::ListenerRequest& request) const {
  net::ListenerAnswer last;
  for (uint32_t p = 0; p < options_.partitions; ++p) {
    last = ToPartition(p, request, request.body, options_.request_timeout, options_.retry_for);
    if (last.status != 404) return last;
  }
  return last;
}

}  // namespace statewatch::server
