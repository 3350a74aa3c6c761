// The --server forms of the verbs: a blocking HTTP/1.1 client on POSIX sockets (no Beast:
// the CLI stays cheap to compile) and one small function per verb that maps its options
// onto a route of docs/http-api.md.
#include "cli/remote.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "cli/event_options.h"
#include "cli/verbs.h"
#include "codecs/json_codec.h"
#include "server/url.h"

namespace statewatch::cli {
namespace json = boost::json;

namespace {

struct Url {
  std::string host;
  std::string port = "80";
  std::string prefix;  // a path the daemon is mounted under, without the trailing '/'
};

Result<Url> ParseUrl(const std::string& text) {
  const std::string scheme = "http://";
  if (text.rfind(scheme, 0) != 0) {
    return Status::InvalidArgument("--server must be http://HOST[:PORT] (got \"" + text + "\")");
  }
  std::string rest = text.substr(scheme.size());
  Url url;
  if (std::size_t slash = rest.find('/'); slash != std::string::npos) {
    url.prefix = rest.substr(slash);
    rest.resize(slash);
    while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
  }
  std::size_t colon = rest.rfind(':');
  if (!rest.empty() && rest[0] == '[') {  // [v6]:port
    std::size_t close = rest.find(']');
    if (close == std::string::npos) return Status::InvalidArgument("--server: unclosed [ in " + text);
    url.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') url.port = rest.substr(close + 2);
  } else if (colon != std::string::npos) {
    url.host = rest.substr(0, colon);
    url.port = rest.substr(colon + 1);
  } else {
    url.host = rest;
  }
  if (url.host.empty() || url.port.empty()) {
    return Status::InvalidArgument("--server must be http://HOST[:PORT] (got \"" + text + "\")");
  }
  return url;
}

// A connected socket, closed on scope exit.
class Socket {
 public:
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Connect(const Url& url) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = ::getaddrinfo(url.host.c_str(), url.port.c_str(), &hints, &found); rc != 0) {
      return Status::IOError("cannot resolve " + url.host + ":" + url.port + ": " +
                             ::gai_strerror(rc));
    }
    std::string why = "no address";
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      fd_ = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd_ >= 0 && ::connect(fd_, a->ai_addr, a->ai_addrlen) == 0) break;
      why = std::strerror(errno);
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
    }
    ::freeaddrinfo(found);
    if (fd_ < 0) return Status::IOError("cannot connect to " + url.host + ":" + url.port + ": " + why);
    return Status::OK();
  }
  Status SendAll(const std::string& bytes) {
    for (std::size_t sent = 0; sent < bytes.size();) {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Status::IOError(std::string("sending the request: ") + std::strerror(errno));
      sent += static_cast<std::size_t>(n);
    }
    return Status::OK();
  }
  // Reads until the peer closes or the deadline passes.
  Status ReadAll(std::string* out, std::chrono::steady_clock::time_point deadline) {
    char buf[16384];
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return Status::IOError("no complete answer before the timeout");
      pollfd p{fd_, POLLIN, 0};
      int ready = ::poll(&p, 1, static_cast<int>(left));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) continue;
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::IOError(std::string("reading the answer: ") + std::strerror(errno));
      if (n == 0) return Status::OK();
      out->append(buf, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_ = -1;
};

Result<HttpAnswer> ParseAnswer(const std::string& raw) {
  std::size_t end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || end == std::string::npos || raw.size() < 12) {
    return Status::IOError("the server's answer is not HTTP (" + std::to_string(raw.size()) +
                           " bytes)");
  }
  HttpAnswer answer;
  answer.status = std::atoi(raw.c_str() + 9);
  answer.body = raw.substr(end + 4);
  return answer;
}

// The error body's message, or the raw body when it is not the JSON error envelope.
std::string ErrorMessage(const HttpAnswer& a) {
  std::error_code ec;
  json::value v = json::parse(a.body, ec);
  if (!ec && v.is_object()) {
    if (const json::value* e = v.as_object().if_contains("error"); e && e->is_object()) {
      if (const json::value* m = e->as_object().if_contains("message"); m && m->is_string()) {
        return std::string(m->as_string());
      }
    }
  }
  std::string body = a.body;
  while (!body.empty() && body.back() == '\n') body.pop_back();
  return "HTTP " + std::to_string(a.status) + ": " + body;
}

// Sends one request; on a 2xx answer returns its body parsed as JSON. Everything else is
// printed as a runtime error (the daemon's message, as a local run prints it).
std::optional<json::value> Call(Command& c, std::string_view method, const std::string& target,
                                const std::string& body, int* exit_code) {
  auto answer = HttpRequest(c.global.server, method, target, body, c.global.token);
  if (!answer.ok()) {
    *exit_code = RuntimeError(c, Status::IOError("daemon at " + c.global.server + ": " +
                                                 answer.status().message()));
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
    *exit_code = RuntimeError(c, Status::IOError("the daemon's answer is not JSON: " + ec.message()));
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

std::string Opt(const Command& c, std::string_view name) {
  return c.args.Get(name).value_or("");
}

// "?agentId=A" when the option is given.
std::string AgentQuery(const Command& c, std::string_view option, const char* param = "agentId",
                       char lead = '?') {
  std::string agent = Opt(c, option);
  return agent.empty() ? "" : std::string(1, lead) + param + "=" + Enc(agent);
}

}  // namespace

Result<HttpAnswer> HttpRequest(const std::string& base_url, std::string_view method,
                               const std::string& target, const std::string& body,
                               const std::string& token, int timeout_ms) {
  auto url = ParseUrl(base_url);
  if (!url.ok()) return url.status();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  Socket socket;
  SW_RETURN_IF_ERROR(socket.Connect(*url));
  std::string request = std::string(method) + " " + url->prefix + target + " HTTP/1.1\r\n";
  request += "Host: " + url->host + ":" + url->port + "\r\n";
  request += "User-Agent: statewatch-cli\r\nAccept: application/json\r\nConnection: close\r\n";
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  if (!body.empty() || method == "POST" || method == "PUT") {
    request += "Content-Type: application/json\r\n";
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n" + body;
  SW_RETURN_IF_ERROR(socket.SendAll(request));
  std::string raw;
  SW_RETURN_IF_ERROR(socket.ReadAll(&raw, deadline));
  return ParseAnswer(raw);
}

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

int RemoteWatch(Command& c) {
  json::object body{{"watcher", Opt(c, "watcher")}, {"target", Opt(c, "target")}};
  if (c.args.Has("target-agent")) body["targetAgentId"] = Opt(c, "target-agent");
  return Forward(c, "POST", "/v1/watches", json::serialize(body));
}

int RemoteNotices(Command& c) {
  return Forward(c, "GET", "/v1/notices?watcher=" + Enc(Opt(c, "watcher")));
}

int RemoteDrain(Command& c) {
  return Forward(c, "POST", "/v1/notices/drain",
                 json::serialize(json::object{{"watcher", Opt(c, "watcher")}}));
}

int RemoteCursor(Command& c) {
  return Forward(c, "GET", "/v1/cursors?watcher=" + Enc(Opt(c, "watcher")) + "&target=" +
                               Enc(Opt(c, "target")) +
                               AgentQuery(c, "target-agent", "targetAgentId", '&'));
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
  auto answer = HttpRequest(c.global.server, "GET", "/v1/export", "", c.global.token,
                            /*timeout_ms=*/600000);
  if (!answer.ok()) {
    return RuntimeError(c, Status::IOError("daemon at " + c.global.server + ": " +
                                           answer.status().message()));
  }
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
