#include "server/partition_router.h"

#include <openssl/evp.h>

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
#include "server/url.h"
#include "statewatch/session_key.h"
#include "tools/session_tools.h"
#include "tools/sessions_list_window.h"

namespace statewatch::server {
namespace json = boost::json;
net::ListenerAnswer JsonErrorAnswer(int status, const std::string& code,
                                    const std::string& message) {
  return {status,
          json::serialize(json::object{{"error", json::object{{"code", code}, {"message", message}}}})};
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

std::optional<json::object> ObjectBody(const std::string& body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.as_object());
}

std::string StringField(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

// A fan-out asks each partition once: one that is failing over is reported missing (A5).
constexpr std::chrono::milliseconds kNoRetry{0};

// ---- reads across partitions (sessions_list, session_status, sessions_history) ----------------

constexpr char kCallerContextTarget[] = "/v1/internal/caller-context";

std::string Base64Url(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

std::optional<std::string> FromBase64Url(std::string_view text) {
  if (text.empty() || text.size() > 4096) return std::nullopt;
  std::string in(text);
  for (char& c : in) {
    if (c == '-') c = '+';
    else if (c == '_') c = '/';
    else if (!std::isalnum(static_cast<unsigned char>(c))) return std::nullopt;
  }
  const std::size_t pad = (4 - in.size() % 4) % 4;
  if (pad == 3) return std::nullopt;
  in.append(pad, '=');
  std::string out(in.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

// A page's nextCursor: the last row's sort key and the offset of the row after it.
std::string EncodeCursor(const tools::ListSortKey& last, int64_t next_offset) {
  return Base64Url(json::serialize(json::object{{"v", 1},
                                                {"u", last.updated_at},
                                                {"k", last.key},
                                                {"a", last.agent_id},
                                                {"o", next_offset}}));
}

struct Cursor {
  tools::ListSortKey after;
  int64_t offset = 0;
};

std::optional<Cursor> DecodeCursor(const json::value& token) {
  if (!token.is_string()) return std::nullopt;
  auto text = FromBase64Url(token.as_string());
  if (!text) return std::nullopt;
  auto o = ObjectBody(*text);
  if (!o) return std::nullopt;
  const json::value* v = o->if_contains("v");
  const json::value* u = o->if_contains("u");
  const json::value* k = o->if_contains("k");
  const json::value* a = o->if_contains("a");
  const json::value* off = o->if_contains("o");
  if (v == nullptr || !v->is_int64() || v->as_int64() != 1 || u == nullptr || !u->is_int64() ||
      k == nullptr || !k->is_string() || k->as_string().empty() || a == nullptr ||
      !a->is_string() || off == nullptr || !off->is_int64() || off->as_int64() < 0) {
    return std::nullopt;
  }
  return Cursor{{u->as_int64(), std::string(k->as_string()), std::string(a->as_string())},
                off->as_int64()};
}

// A positive integer parameter as sessions_list reads it, else `fallback` (a bad value is
// refused by the partitions with sessions_list's own message).
int64_t IntParam(const json::object& params, std::string_view name, int64_t fallback) {
  const json::value* v = params.if_contains(name);
  if (v == nullptr || v->is_null()) return fallback;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<int64_t>(std::min<uint64_t>(v->as_uint64(), INT64_MAX));
  if (v->is_double() && v->as_double() >= 0 && v->as_double() < 9e15) {
    return static_cast<int64_t>(v->as_double());
  }
  return fallback;
}

net::ListenerAnswer BadCursor(const std::string& message) {
  return JsonErrorAnswer(400, "invalid_parameter", message);
}

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
    // Reads across partitions (§15.9): only with a secret to sign the internal calls, only
    // when more than one partition, and never with ?partition= (that names one engine).
    const bool across = home && P > 1 && !options_.secret.empty() && method == "POST" &&
                        !named && !malformed;
    if (across && path == "/v1/tools/sessions_list") return ListAcross(request, *home);
    if (across && (path == "/v1/tools/session_status" || path == "/v1/tools/sessions_history")) {
      auto body = ObjectBody(request.body.empty() ? "{}" : request.body);
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
      if (auto body = ObjectBody(request.body)) agent = StringField(*body, "agentId");
    }
    one(key ? PartitionOf(*key, agent, P) : std::nullopt);
  } else if (path == "/v1/watches" && method == "POST") {
    auto body = ObjectBody(request.body);
    one(body ? PartitionOf(StringField(*body, "target"), StringField(*body, "targetAgentId"), P)
             : std::nullopt);
  } else if (path == "/v1/cursors") {
    one(PartitionOf(QueryParam(query, "target").value_or(""),
                    QueryParam(query, "targetAgentId").value_or(""), P));
  } else if (path == "/v1/upstream-links" && method == "POST") {
    auto body = ObjectBody(request.body);
    one(body ? PartitionOf(StringField(*body, "sessionKey"), StringField(*body, "agentId"), P)
             : std::nullopt);
  } else if (path == "/v1/events" && method == "POST") {
    boost::system::error_code ec;
    json::value v = json::parse(request.body, ec);
    std::vector<const json::value*> events;
    if (!ec && v.is_array()) {
      for (const json::value& e : v.as_array()) events.push_back(&e);
    } else if (!ec) {
      events.push_back(&v);
    }
    std::optional<uint32_t> first;
    std::size_t first_index = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (!events[i]->is_object()) continue;
      const json::object& e = events[i]->as_object();
      auto p = PartitionOf(StringField(e, "sessionKey"), StringField(e, "agentId"), P);
      if (!p) continue;  // the owner refuses the event, and with it the batch
      if (!first) {
        first = p;
        first_index = i;
      } else if (*p != *first) {
        return JsonErrorAnswer(400, "cross_partition_batch",
                     "events[" + std::to_string(first_index) + "] belongs to partition " +
                         std::to_string(*first) + " and events[" + std::to_string(i) +
                         "] to partition " + std::to_string(*p) + " of " + std::to_string(P) +
                         ": a batch is atomic only within one partition — send one batch per "
                         "partition (nothing was written)");
      }
    }
    one(first);
  } else if (path == "/v1/versions" && method == "POST") {
    t.kind = Kind::kVersions;
  } else if (path == "/v1/notices" || (path == "/v1/notices/drain" && method == "POST")) {
    t.kind = Kind::kNotices;
  } else if (path.rfind("/v1/runs/", 0) == 0 || path.rfind("/v1/deliveries/", 0) == 0) {
    if (path == "/v1/deliveries") {
      t.kind = Kind::kRefuse;
    } else {
      t.kind = Kind::kProbe;
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
    std::optional<OwnerAddress> owner = options_.owner(partition, attempt > 0);
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
  } else if (auto body = ObjectBody(request.body)) {
    watcher = StringField(*body, "watcher");
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

net::ListenerAnswer PartitionRouter::Notices(const net::ListenerRequest& request) const {
  const std::vector<uint32_t> asked = NoticePartitions(request);
  std::vector<std::future<net::ListenerAnswer>> answers;
  for (uint32_t p : asked) {
    answers.push_back(std::async(std::launch::async, [this, p, &request] {
      return ToPartition(p, request, request.body, options_.fanout_timeout, kNoRetry);
    }));
  }
  json::array notices;
  json::array missing;
  std::string owners;  // "p=node,…" of the partitions that answered
  for (std::size_t i = 0; i < asked.size(); ++i) {
    const uint32_t p = asked[i];
    net::ListenerAnswer a = answers[i].get();
    for (const auto& [name, value] : a.headers) {
      if (name == "X-Statewatch-Owner" && a.status == 200) {
        owners += (owners.empty() ? "" : ",") + std::to_string(p) + "=" + value;
      }
    }
    if (a.status >= 400 && a.status < 500) return a;  // a bad request: every partition says so
    auto body = a.status == 200 ? ObjectBody(a.body) : std::nullopt;
    const json::value* list = body ? body->if_contains("notices") : nullptr;
    if (list == nullptr || !list->is_array()) {
      missing.emplace_back(p);
      continue;
    }
    for (const json::value& n : list->as_array()) notices.push_back(n);
  }
  json::object out{{"notices", std::move(notices)}};
  if (!missing.empty()) {
    out["incomplete"] = true;
    out["missingPartitions"] = std::move(missing);
  }
  net::ListenerAnswer answer(200, json::serialize(out));
  answer.headers.emplace_back("X-Statewatch-Owners", owners);
  return answer;
}

net::ListenerAnswer PartitionRouter::Versions(const net::ListenerRequest& request) const {
  const uint32_t P = options_.partitions;
  auto body = ObjectBody(request.body);
  const json::value* keys = body ? body->if_contains("sessions") : nullptr;
  if (keys == nullptr || !keys->is_array() || keys->as_array().empty()) {
    // The owner refuses it as a single node would.
    return ToPartition(0, request, request.body, options_.request_timeout, options_.retry_for);
  }
  const std::string agent = StringField(*body, "agentId");
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
    auto answer = ObjectBody(a.body);
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

net::ListenerAnswer PartitionRouter::CallerContext(uint32_t home,
                                                   const net::ListenerRequest& request,
                                                   const std::string& tool) const {
  const std::string target = kCallerContextTarget;
  return ToPartition(home, request, json::serialize(json::object{{"tool", tool}}),
                     options_.request_timeout, options_.retry_for, &target);
}

net::ListenerAnswer PartitionRouter::RemoteRead(const net::ListenerRequest& request,
                                                const std::string& tool, uint32_t home,
                                                uint32_t partition) const {
  net::ListenerAnswer context = CallerContext(home, request, tool);
  if (context.status != 200) return context;  // the caller's own refusal (policy, caller)
  auto ctx = ObjectBody(context.body);
  auto params = ObjectBody(request.body.empty() ? "{}" : request.body);
  if (!ctx || !params) {
    return JsonErrorAnswer(502, "bad_gateway", "partition " + std::to_string(home) +
                                                   " answered the caller context with " +
                                                   context.body.substr(0, 200));
  }
  json::object inner{{"caller", (*ctx)["caller"]}, {"context", *ctx}, {"params", *params}};
  const std::string target = "/v1/internal/tools/" + tool;
  return ToPartition(partition, request, json::serialize(inner), options_.request_timeout,
                     options_.retry_for, &target);
}

net::ListenerAnswer PartitionRouter::ListAcross(const net::ListenerRequest& request,
                                                uint32_t home) const {
  const uint32_t P = options_.partitions;
  auto body = ObjectBody(request.body.empty() ? "{}" : request.body);
  if (!body) {  // refused by the caller's partition as by a single node
    return ToPartition(home, request, request.body, options_.request_timeout, options_.retry_for);
  }
  json::object params = std::move(*body);
  std::optional<Cursor> cursor;
  if (const json::value* token = params.if_contains("cursor")) {
    cursor = DecodeCursor(*token);
    if (!cursor) {
      return BadCursor("cursor must be the nextCursor of an earlier sessions_list page (got " +
                       json::serialize(*token).substr(0, 120) + ")");
    }
    if (params.contains("offset")) {
      return BadCursor("cursor and offset cannot both be given: the cursor continues after "
                       "the row it names (drop offset)");
    }
    params.erase("cursor");
  }
  net::ListenerAnswer context = CallerContext(home, request, "sessions_list");
  if (context.status != 200) return context;
  auto ctx = ObjectBody(context.body);
  if (!ctx) {
    return JsonErrorAnswer(502, "bad_gateway", "partition " + std::to_string(home) +
                                                   " answered the caller context with " +
                                                   context.body.substr(0, 200));
  }
  const int64_t limit = std::clamp<int64_t>(IntParam(params, "limit", tools::kDefaultListLimit), 1,
                                            tools::kMaxListLimit);
  const int64_t offset = cursor ? 0 : std::clamp<int64_t>(IntParam(params, "offset", 0), 0,
                                                         int64_t{1} << 40);
  json::object window{{"take", offset + limit}};
  if (cursor) {
    window["after"] = json::object{{"updatedAt", cursor->after.updated_at},
                                   {"key", cursor->after.key},
                                   {"agentId", cursor->after.agent_id}};
  }
  const std::string inner = json::serialize(json::object{
      {"caller", (*ctx)["caller"]}, {"context", *ctx}, {"params", params}, {"window", window}});
  const std::string target = "/v1/internal/tools/sessions_list";
  std::vector<std::future<net::ListenerAnswer>> answers;
  for (uint32_t p = 0; p < P; ++p) {
    answers.push_back(std::async(std::launch::async, [this, p, &request, &inner, &target] {
      return ToPartition(p, request, inner, options_.request_timeout, options_.retry_for, &target);
    }));
  }
  std::vector<net::ListenerAnswer> got;
  for (auto& a : answers) got.push_back(a.get());
  std::vector<json::object> rows;
  std::map<std::pair<std::string, std::string>, json::array> children;
  int64_t total = 0;
  json::object first;
  for (uint32_t p = 0; p < P; ++p) {
    const net::ListenerAnswer& a = got[p];
    if (a.status >= 400 && a.status < 500) return a;  // bad parameters: every partition says so
  }
  for (uint32_t p = 0; p < P; ++p) {
    net::ListenerAnswer& a = got[p];
    auto window_answer = a.status == 200 ? ObjectBody(a.body) : std::nullopt;
    const json::value* list = window_answer ? window_answer->if_contains("rows") : nullptr;
    const json::value* kept = window_answer ? window_answer->if_contains("kept") : nullptr;
    const json::value* links = window_answer ? window_answer->if_contains("childLinks") : nullptr;
    if (list == nullptr || !list->is_array() || kept == nullptr || !kept->is_number() ||
        links == nullptr || !links->is_array()) {
      net::ListenerAnswer out = JsonErrorAnswer(
          503, "unavailable",
          "sessions_list needs every partition and partition " + std::to_string(p) +
              " did not answer its part (" + std::to_string(a.status) + " " +
              a.body.substr(0, 200) + "); retry");
      out.headers.emplace_back("Retry-After", "1");
      return out;
    }
    total += kept->to_number<int64_t>();
    for (const json::value& row : list->as_array()) {
      if (row.is_object()) rows.push_back(row.as_object());
    }
    for (const json::value& link : links->as_array()) {
      if (!link.is_array() || link.as_array().size() != 3) continue;
      const json::array& l = link.as_array();
      if (!l[0].is_string() || !l[1].is_string()) continue;
      children[{std::string(l[0].as_string()), std::string(l[1].as_string())}].push_back(l[2]);
    }
    if (p == 0) first = std::move(*window_answer);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const json::object& a, const json::object& b) {
    return tools::ListsBefore(tools::ListSortKeyOf(a), tools::ListSortKeyOf(b));
  });
  const std::size_t begin = std::min<std::size_t>(rows.size(), static_cast<std::size_t>(offset));
  const std::size_t end = std::min<std::size_t>(rows.size(), begin + static_cast<std::size_t>(limit));
  json::array sessions;
  for (std::size_t i = begin; i < end; ++i) {
    json::object& row = rows[i];
    // A child may live in another partition (another agent): the links of every partition.
    row.erase("childSessions");
    auto kids = children.find({tools::ListSortKeyOf(row).agent_id, tools::ListSortKeyOf(row).key});
    if (kids != children.end()) row["childSessions"] = kids->second;
    sessions.emplace_back(std::move(row));
  }
  const int64_t base = cursor ? cursor->offset : offset;
  const bool more = static_cast<int64_t>(end) < total;
  json::object out;
  out["count"] = sessions.size();
  out["sessions"] = std::move(sessions);
  out["hasMore"] = more;
  if (more) out["nextOffset"] = base + static_cast<int64_t>(end - begin);
  out["limitApplied"] = first.contains("limitApplied") ? first["limitApplied"] : json::value(limit);
  if (first.contains("visibility")) out["visibility"] = first["visibility"];
  Status fit = tools::FitListBudget(&out, base);
  if (!fit.ok()) return JsonErrorAnswer(500, "internal", fit.message());
  const json::array& page = out["sessions"].as_array();
  if (out["hasMore"].as_bool() && !page.empty()) {
    out["nextCursor"] = EncodeCursor(tools::ListSortKeyOf(page.back().as_object()),
                                     base + static_cast<int64_t>(page.size()));
  }
  net::ListenerAnswer answer(200, json::serialize(out) + "\n");
  answer.headers.emplace_back("Content-Type", "application/json");
  return answer;
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
