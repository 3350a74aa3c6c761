// The stdio bridge to a daemon's /mcp (see mcp_bridge.h): stdin lines POSTed one at a time
// on the main thread, the session's event stream followed on a second one; both write whole
// lines to stdout under one mutex.
#include "cli/mcp_bridge.h"

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <limits>
#include <mutex>
#include <string>
#include <thread>

#include "base/ascii.h"
#include "net/connection.h"
#include "net/http_client.h"

namespace statewatch::cli {
namespace {
namespace json = boost::json;
using SteadyClock = std::chrono::steady_clock;

constexpr int kNoTimeoutMs = std::numeric_limits<int>::max();  // a waiting sessions_send
constexpr int64_t kMaxBackoffMs = 5000;

std::string TrimLine(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// Each complete SSE event of `*buffer` (up to a blank line): its data lines joined; the rest
// stays in *buffer. Events without data (priming, comments) are skipped.
std::vector<std::string> TakeEvents(std::string* buffer) {
  std::vector<std::string> out;
  for (;;) {
    std::size_t end = buffer->find("\n\n");
    if (end == std::string::npos) return out;
    std::string event = buffer->substr(0, end);
    buffer->erase(0, end + 2);
    std::string data;
    std::size_t start = 0;
    while (start <= event.size()) {
      std::size_t nl = event.find('\n', start);
      if (nl == std::string::npos) nl = event.size();
      std::string_view line(event.data() + start, nl - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.substr(0, 5) == "data:") {
        line.remove_prefix(5);
        if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
        if (!data.empty()) data += '\n';
        data += line;
      }
      start = nl + 1;
    }
    if (!data.empty()) out.push_back(std::move(data));
  }
}

class Bridge {
 public:
  explicit Bridge(Command& c) : c_(c) {}

  int Run() {
    std::string line;
    while (std::getline(c_.in, line)) {
      line = TrimLine(std::move(line));
      if (line.find_first_not_of(ascii::kSpace) == std::string::npos) continue;
      Forward(line);
    }
    stop_ = true;
    if (stream_.joinable()) stream_.join();
    std::string id = SessionId();
    if (!id.empty()) {  // the end of stdin ends the session
      auto gone = net::HttpRequest(c_.global.server, "DELETE", "/mcp", "", Options(5000, id));
      if (!gone.ok()) Log("could not delete the MCP session: " + gone.status().message());
    }
    return kExitOk;
  }

 private:
  net::HttpRequestOptions Options(int timeout_ms, const std::string& session_id) const {
    net::HttpRequestOptions o;
    o.token = c_.global.token;
    o.timeout_ms = timeout_ms;
    o.tls = {c_.global.ca_file, c_.global.client_cert, c_.global.client_key};
    o.headers.emplace_back("Accept", "application/json, text/event-stream");
    if (!session_id.empty()) o.headers.emplace_back("Mcp-Session-Id", session_id);
    std::lock_guard<std::mutex> lock(mu_);
    if (!version_.empty()) o.headers.emplace_back("MCP-Protocol-Version", version_);
    if (auto key = c_.args.Get("session-key")) o.headers.emplace_back("X-Session-Key", *key);
    if (auto agent = c_.args.Get("agent-id")) o.headers.emplace_back("X-Agent-Id", *agent);
    return o;
  }

  std::string SessionId() const {
    std::lock_guard<std::mutex> lock(mu_);
    return session_id_;
  }

  void Emit(std::string_view line) {
    std::lock_guard<std::mutex> lock(out_mu_);
    c_.out << line << '\n';
    c_.out.flush();
  }

  void Log(const std::string& message) {
    std::lock_guard<std::mutex> lock(out_mu_);
    c_.err << "statewatch: mcp: " << message << '\n';
    c_.err.flush();
  }

  void EmitError(const json::value& id, std::string message) {
    Emit(json::serialize(json::object{
        {"jsonrpc", "2.0"},
        {"id", id},
        {"error", json::object{{"code", -32000}, {"message", std::move(message)}}}}));
  }

  void Forward(const std::string& line) {
    boost::system::error_code ec;
    json::value message = json::parse(line, ec);
    if (ec || !message.is_object()) {
      Log("stdin: not a JSON-RPC message: " + line.substr(0, 200));
      Emit(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: a line of stdin is not a JSON object"}})");
      return;
    }
    const json::object& o = message.as_object();
    const json::value* id = o.if_contains("id");
    const json::value* method = o.if_contains("method");
    bool request = id && method;
    bool initialize = request && method->is_string() && method->as_string() == "initialize";
    std::string session = initialize ? "" : SessionId();
    auto answer = net::HttpRequest(c_.global.server, "POST", "/mcp", line,
                                   Options(kNoTimeoutMs, session));
    if (!answer.ok()) {
      Log("daemon at " + c_.global.server + ": " + answer.status().message());
      if (request) EmitError(*id, "statewatch mcp: " + answer.status().message());
      return;
    }
    if (answer->status == 202) return;
    if (answer->status < 200 || answer->status > 299) return Refused(*answer, request ? id : nullptr);
    std::string type = ascii::AsciiToLower(answer->Header("Content-Type"));
    if (type.rfind("text/event-stream", 0) == 0) {
      std::string events = answer->body + "\n\n";
      for (const std::string& data : TakeEvents(&events)) Emit(data);
    } else {
      Emit(TrimLine(answer->body));
    }
    if (initialize && answer->status == 200) Initialized(*answer);
  }

  void Refused(const net::HttpAnswer& answer, const json::value* id) {
    std::string why = "HTTP " + std::to_string(answer.status);
    boost::system::error_code ec;
    json::value body = json::parse(answer.body, ec);
    if (!ec && body.is_object()) {
      if (const json::value* e = body.as_object().if_contains("error"); e && e->is_object()) {
        if (const json::value* m = e->as_object().if_contains("message"); m && m->is_string()) {
          why += ": " + std::string(m->as_string());
        }
      }
    }
    Log(why);
    if (id) EmitError(*id, why);
  }

  void Initialized(const net::HttpAnswer& answer) {
    std::string version;
    boost::system::error_code ec;
    json::value body = json::parse(answer.body, ec);
    if (!ec && body.is_object()) {
      if (const json::value* r = body.as_object().if_contains("result"); r && r->is_object()) {
        if (const json::value* v = r->as_object().if_contains("protocolVersion");
            v && v->is_string()) {
          version = v->as_string();
        }
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      session_id_ = answer.Header("Mcp-Session-Id");
      version_ = version;
    }
    if (!stream_.joinable() && !SessionId().empty()) stream_ = std::thread([this] { Follow(); });
  }

  // The event-stream thread: follows GET /mcp until stdin ends, reconnecting.
  void Follow() {
    int64_t backoff_ms = 100;
    while (!stop_) {
      Status s = FollowOnce();
      if (stop_) return;
      if (s.IsNotFound()) {
        Log("the MCP session is gone (" + s.message() + "): no more notifications");
        return;
      }
      Log("event stream: " + s.message() + "; reconnecting in " + std::to_string(backoff_ms) +
          " ms");
      auto until = SteadyClock::now() + std::chrono::milliseconds(backoff_ms);
      while (!stop_ && SteadyClock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      backoff_ms = std::min(backoff_ms * 2, kMaxBackoffMs);
    }
  }

  Status FollowOnce() {
    auto endpoint = net::ParseBaseUrl(c_.global.server);
    if (!endpoint.ok()) return endpoint.status();
    net::TlsClientOptions tls{c_.global.ca_file, c_.global.client_cert, c_.global.client_key};
    auto conn = net::Connection::Open(*endpoint, tls, SteadyClock::now() + std::chrono::seconds(10));
    if (!conn.ok()) return conn.status();
    std::string request = "GET " + endpoint->prefix + "/mcp HTTP/1.1\r\nHost: " + endpoint->host +
                          ":" + endpoint->port + "\r\nAccept: text/event-stream\r\n";
    for (const auto& [name, value] : Options(0, SessionId()).headers) {
      if (name != "Accept") request += name + ": " + value + "\r\n";
    }
    if (!c_.global.token.empty()) request += "Authorization: Bearer " + c_.global.token + "\r\n";
    request += "\r\n";
    SW_RETURN_IF_ERROR((*conn)->SendAll(request, SteadyClock::now() + std::chrono::seconds(10),
                                        "sending GET /mcp"));
    return ReadStream(**conn);
  }

  // Reads the answer's header, then its (chunked) body, emitting each event's data.
  Status ReadStream(net::Connection& conn) {
    std::string raw, events;
    bool in_body = false, chunked = false;
    while (!stop_) {
      auto got = conn.ReceiveSome(&raw, SteadyClock::now() + std::chrono::milliseconds(200),
                                  "reading the event stream");
      if (!got.ok()) return got.status();
      if (*got == net::Connection::Received::kClosed) return Status::IOError("the daemon closed it");
      if (!in_body) {
        std::size_t end = raw.find("\r\n\r\n");
        if (end == std::string::npos) continue;
        std::string head = ascii::AsciiToLower(raw.substr(0, end));
        int status = head.size() > 12 ? std::atoi(head.c_str() + 9) : 0;
        if (status == 404) return Status::NotFound("GET /mcp answered 404");
        if (status != 200) {
          return Status::IOError("GET /mcp answered " + std::to_string(status) + ": " +
                                 raw.substr(end + 4, 200));
        }
        chunked = head.find("transfer-encoding: chunked") != std::string::npos;
        raw.erase(0, end + 4);
        in_body = true;
      }
      if (!chunked) {
        events += raw;
        raw.clear();
      } else if (!Dechunk(&raw, &events)) {
        return Status::IOError("the daemon ended the stream");
      }
      for (const std::string& data : TakeEvents(&events)) Emit(data);
    }
    return Status::OK();
  }

  // Moves the complete chunks of *raw into *out; false at the last (empty) chunk.
  static bool Dechunk(std::string* raw, std::string* out) {
    for (;;) {
      std::size_t eol = raw->find("\r\n");
      if (eol == std::string::npos) return true;
      std::size_t size = std::strtoul(raw->c_str(), nullptr, 16);
      if (size == 0) return false;
      if (raw->size() < eol + 2 + size + 2) return true;
      out->append(*raw, eol + 2, size);
      raw->erase(0, eol + 2 + size + 2);
    }
  }

  Command& c_;
  mutable std::mutex mu_;  // session_id_, version_
  std::string session_id_;
  std::string version_;
  std::mutex out_mu_;  // stdout and stderr lines
  std::atomic<bool> stop_{false};
  std::thread stream_;
};

}  // namespace

int RunMcp(Command& c) {
  return UsageError(c, "'mcp' bridges stdio to a running daemon's /mcp: give --server URL (or "
                       "set STATEWATCH_SERVER)");
}

int RemoteMcp(Command& c) { return Bridge(c).Run(); }

}  // namespace statewatch::cli
