// The --server forms of the verbs: one small function per verb that maps its options onto a
// route of docs/http-api.md, sent with the blocking HTTP/1.1 client of net/http_client.h
// (no Beast: the CLI stays cheap to compile).
#include "cli/remote.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "cli/event_options.h"
#include "cli/verbs.h"
#include "codecs/json_codec.h"
#include "net/error_envelope.h"
#include "server/url.h"
#include "statewatch/request_ids.h"

namespace statewatch::cli {
namespace json = boost::json;

std::string ErrorMessage(const HttpAnswer& a) {
  if (auto message = net::ErrorField(a.body, "message")) return *message;
  std::string body = a.body;
  while (!body.empty() && body.back() == '\n') body.pop_back();
  return "HTTP " + std::to_string(a.status) + ": " + body;
}

namespace {

// One request, failing over between the --server URLs: a request that did not land (the
// daemon could not be reached, or answered 503 standby / switching / partition_moved /
// unavailable / shutting_down / too_many_connections: net/error_envelope.h) goes to the next
// URL, twice round the list. A mutating request carries one X-Request-Id, generated here and
// sent unchanged on every attempt, so one whose answer was lost (the connection broke after
// sending, or 502 answer_lost) is repeated too: the daemon applies it at most once and a
// repeat gets the first answer. 409 request_in_progress (the first attempt is still running
// at the owner) is asked again after a pause. The last failure is returned as it is (an
// answer, or the IOError naming the URL).
Result<HttpAnswer> Exchange(Command& c, std::string_view method, const std::string& target,
                            const std::string& body, int timeout_ms = 30000) {
  const std::vector<std::string> urls =
      c.global.servers.empty() ? std::vector<std::string>{c.global.server} : c.global.servers;
  const std::size_t attempts = 2 * urls.size();
  const bool mutating = method != "GET" && method != "HEAD";
  const std::string request_id = mutating ? NewRequestId() : "";
  Result<HttpAnswer> last = Status::IOError("no --server URL");
  for (std::size_t i = 0; i < attempts; ++i) {
    const std::string& url = urls[i % urls.size()];
    bool sent = false;
    net::HttpRequestOptions o;
    o.token = c.global.token;
    o.timeout_ms = timeout_ms;
    o.sent = &sent;
    o.tls = {c.global.ca_file, c.global.client_cert, c.global.client_key};
    if (mutating) o.headers.emplace_back("X-Request-Id", request_id);
    auto answer = HttpRequest(url, method, target, body, o);
    if (!answer.ok()) {
      if (answer.status().IsInvalidArgument()) return answer.status();
      last = Status::IOError("daemon at " + url + ": " + answer.status().message());
      continue;  // not sent, or sent under the request id: either may go again
    }
    const std::string code = answer->status >= 409 ? net::ErrorCodeOf(answer->body) : "";
    const bool not_landed = net::RefusedBeforeLanding(answer->status, code);
    const bool lost = answer->status == 502 && code == "answer_lost";
    const bool running = answer->status == 409 && code == "request_in_progress";
    last = std::move(answer);
    if (running) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (not_landed || (mutating && (lost || running))) continue;
    if (lost && method == "GET") continue;
    return last;
  }
  return last;
}

// Sends one request; on a 2xx answer returns its body parsed as JSON. Everything else is
// printed as a runtime error (the daemon's message, as a local run prints it).
std::optional<json::value> Call(Command& c, std::string_view method, const std::string& target,
                                const std::string& body, int* exit_code) {
  auto answer = Exchange(c, method, target, body);
  if (!answer.ok()) {
    *exit_code = RuntimeError(c, answer.status());
    return std::nullopt;
  }
  if (answer->status < 200 || answer->status > 299) {
    c.err << "statewatch: " << ErrorMessage(*answer) << '\n';
    *exit_code = kExitRuntimeError;
    return std::nullopt;
  }
  std::error_code ec;
  json::value v = json::parse(answer->body, ec);
  if (ec) {
    *exit_code =
        RuntimeError(c, Status::IOError("the daemon's answer is not JSON: " + ec.message()));
    return std::nullopt;
  }
  return v;
}

// The common shape: one request, print its JSON answer.
int Forward(Command& c, std::string_view method, const std::string& target,
            const std::string& body = "") {
  int code = kExitOk;
  auto v = Call(c, method, target, body, &code);
  if (!v) return code;
  return PrintJson(c, *v);
}

std::string Enc(const std::string& s) { return server::PercentEncode(s); }

std::string Opt(const Command& c, std::string_view name) { return c.args.Get(name).value_or(""); }

// "?agentId=A" when the option is given.
std::string AgentQuery(const Command& c, std::string_view option, const char* param = "agentId",
                       char lead = '?') {
  std::string agent = Opt(c, option);
  return agent.empty() ? "" : std::string(1, lead) + param + "=" + Enc(agent);
}

}  // namespace

int RemoteRecord(Command& c) {
  std::string body;
  bool batch = c.args.Has("batch");
  if (batch) {
    for (const std::string& name : EventOptionNames()) {
      if (c.args.Has(name)) return UsageError(c, "--batch cannot be combined with --" + name);
    }
    auto inputs = ReadBatchInputs(c);
    if (!inputs.ok()) return RuntimeError(c, inputs.status());
    json::array events;
    for (const EventInput& in : *inputs) events.emplace_back(tools::EventInputToJson(in));
    if (events.empty()) return PrintJson(c, json::array());
    body = json::serialize(events);
  } else {
    auto input = EventInputFromOptions(c.args);
    if (!input.ok()) return UsageError(c, input.status().message());
    body = json::serialize(tools::EventInputToJson(*input));
  }
  int code = kExitOk;
  auto v = Call(c, "POST", "/v1/events", body, &code);
  if (!v) return code;
  const json::value* events = v->is_object() ? v->as_object().if_contains("events") : nullptr;
  if (events == nullptr || !events->is_array()) {
    return RuntimeError(c, Status::IOError("the daemon's answer has no events array"));
  }
  if (batch) return PrintJson(c, *events);
  if (events->as_array().empty()) return RuntimeError(c, Status::IOError("no event came back"));
  return PrintJson(c, events->as_array()[0]);
}

int RemoteStatus(Command& c) {
  std::string query = AgentQuery(c, "agent");
  auto add = [&](const char* param, std::string_view option) {
    if (!c.args.Has(option)) return;
    query += (query.empty() ? "?" : "&") + std::string(param) + "=" + Enc(Opt(c, option));
  };
  add("changesSince", "changes-since");
  add("limit", "limit");
  if (auto limit = c.args.Get("limit"); limit && !ParseIntOption("limit", *limit).ok()) {
    return UsageError(c, ParseIntOption("limit", *limit).status().message());
  }
  return Forward(c, "GET", "/v1/sessions/" + Enc(Opt(c, "session")) + "/state" + query);
}

int RemoteVersions(Command& c) {
  json::array keys;
  for (const std::string& key : c.args.GetAll("session")) keys.emplace_back(key);
  json::object body{{"sessions", std::move(keys)}};
  if (c.args.Has("agent")) body["agentId"] = Opt(c, "agent");
  return Forward(c, "POST", "/v1/versions", json::serialize(body));
}

int RemoteDeleteSession(Command& c) {
  return Forward(c, "DELETE", "/v1/sessions/" + Enc(Opt(c, "session")) + AgentQuery(c, "agent"));
}

namespace {

// The body of POST /v1/watches and /v1/watches/remove for --watcher and each --target: one
// watch as an object; several as an array, one atomic request.
std::string WatchesBody(Command& c) {
  json::array watches;
  for (const std::string& target : c.args.GetAll("target")) {
    json::object w{{"watcher", Opt(c, "watcher")}, {"target", target}};
    if (c.args.Has("target-agent")) w["targetAgentId"] = Opt(c, "target-agent");
    watches.push_back(std::move(w));
  }
  return json::serialize(watches.size() == 1 ? std::move(watches[0]) : json::value(watches));
}

}  // namespace

int RemoteWatch(Command& c) { return Forward(c, "POST", "/v1/watches", WatchesBody(c)); }

int RemoteUnwatch(Command& c) {
  return Forward(c, "POST", "/v1/watches/remove", WatchesBody(c));
}

int RemoteNotices(Command& c) {
  return Forward(c, "GET", "/v1/notices?watcher=" + Enc(Opt(c, "watcher")));
}

int RemoteDrain(Command& c) {
  return Forward(c, "POST", "/v1/notices/drain",
                 json::serialize(json::object{{"watcher", Opt(c, "watcher")}}));
}

int RemoteCursor(Command& c) {
  return Forward(c, "GET",
                 "/v1/cursors?watcher=" + Enc(Opt(c, "watcher")) + "&target=" +
                     Enc(Opt(c, "target")) + AgentQuery(c, "target-agent", "targetAgentId", '&'));
}

int RemoteResetWatcher(Command& c) {
  return Forward(c, "POST", "/v1/sessions/" + Enc(Opt(c, "watcher")) + "/reset");
}

int RemoteSweep(Command& c) { return Forward(c, "POST", "/v1/sweep"); }
int RemotePrune(Command& c) { return Forward(c, "POST", "/v1/prune"); }
int RemoteStats(Command& c) { return Forward(c, "GET", "/v1/stats"); }
int RemoteRebuild(Command& c) { return Forward(c, "POST", "/v1/rebuild"); }

int RemoteVerify(Command& c) {
  int code = kExitOk;
  auto v = Call(c, "GET", "/v1/verify", "", &code);
  if (!v) return code;
  PrintJson(c, *v);
  const json::value* ok = v->is_object() ? v->as_object().if_contains("ok") : nullptr;
  if (ok != nullptr && ok->is_bool() && ok->as_bool()) return kExitOk;
  c.err << "statewatch: verify: the live projections differ from the rebuilt ones\n";
  return kExitRuntimeError;
}

int RemoteBackup(Command& c) {
  return Forward(c, "POST", "/v1/backup", json::serialize(json::object{{"to", Opt(c, "to")}}));
}

int RemoteExport(Command& c) {
  auto answer = Exchange(c, "GET", "/v1/export", "", /*timeout_ms=*/600000);
  if (!answer.ok()) return RuntimeError(c, answer.status());
  if (answer->status != 200) {
    c.err << "statewatch: " << ErrorMessage(*answer) << '\n';
    return kExitRuntimeError;
  }
  c.out << answer->body;
  c.out.flush();
  return kExitOk;
}

int RemoteUpstreamList(Command& c) { return Forward(c, "GET", "/v1/upstream-links"); }

int RemoteUpstreamAdd(Command& c) {
  json::object body{{"sessionKey", Opt(c, "session")},
                    {"catalogId", Opt(c, "catalog")},
                    {"hostId", Opt(c, "host")},
                    {"threadId", Opt(c, "thread")},
                    {"upstreamKind", c.args.Get("kind").value_or("jsonl")},
                    {"upstreamRef", json::object{{"path", Opt(c, "path")}}}};
  if (c.args.Has("agent")) body["agentId"] = Opt(c, "agent");
  if (auto marker = c.args.Get("marker")) {
    auto n = ParseIntOption("marker", *marker);
    if (!n.ok()) return UsageError(c, n.status().message());
    body["marker"] = *n;
  }
  return Forward(c, "POST", "/v1/upstream-links", json::serialize(body));
}

int RemoteUpstreamRemove(Command& c) {
  return Forward(c, "DELETE",
                 "/v1/upstream-links/" + Enc(Opt(c, "session")) + AgentQuery(c, "agent"));
}

}  // namespace statewatch::cli
