// `watch` (following) and `tail`: see follow.h. The loops poll with short timeouts rather
// than block, so that a signal is noticed within a quarter of a second whatever the daemon
// does, without a self-pipe threaded through the socket code.
#include "cli/follow.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "cli/remote.h"
#include "cli/verbs.h"
#include "net/websocket.h"
#include "server/url.h"

namespace statewatch::cli {
namespace json = boost::json;

namespace {

constexpr int kPollMs = 250;          // how long one Receive waits before checking for a signal
constexpr int kConnectMs = 5000;      // connect + upgrade, or one request
constexpr int kFirstBackoffMs = 100;  // the back-off between reconnection attempts ...
constexpr int kMaxBackoffMs = 5000;   // ... doubles up to this

volatile std::sig_atomic_t stop_requested = 0;
extern "C" void RequestStop(int) { stop_requested = 1; }

// SIGINT and SIGTERM set stop_requested while one follows; the old handlers come back after.
class StopSignals {
 public:
  StopSignals() {
    stop_requested = 0;
    struct sigaction action {};
    action.sa_handler = RequestStop;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  bool stopped() const { return stop_requested != 0; }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// Sleeps `ms`, in slices, unless a signal asks to stop first.
void SleepUnlessStopped(const StopSignals& stop, int ms) {
  for (int slept = 0; slept < ms && !stop.stopped(); slept += 50) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, ms - slept)));
  }
}

// Where the verb talks to: the --server URLs in turn, and the back-off between attempts.
class Daemons {
 public:
  explicit Daemons(const GlobalOptions& g)
      : urls_(g.servers.empty() ? std::vector<std::string>{g.server} : g.servers) {}
  const std::string& url() const { return urls_[at_ % urls_.size()]; }
  std::size_t count() const { return urls_.size(); }
  // After a failed attempt: the next URL, and how long to wait before trying it.
  int Failed() {
    ++at_;
    backoff_ms_ = backoff_ms_ == 0 ? kFirstBackoffMs : std::min(2 * backoff_ms_, kMaxBackoffMs);
    return backoff_ms_;
  }
  void Connected() { backoff_ms_ = 0; }

 private:
  std::vector<std::string> urls_;
  std::size_t at_ = 0;
  int backoff_ms_ = 0;
};

// A WebSocket upgrade the daemon answered with something else than 101 (401, 400, 404): a
// problem of the command, not of the connection.
bool Refused(const Status& s) { return s.message().find(" refused: HTTP/") != std::string::npos; }

// A flag's value: "true" (a bare --flag) or "false". Usage error otherwise.
Result<bool> FlagOption(const Command& c, const char* name) {
  const std::string value = c.args.Get(name).value_or("false");
  if (value == "true" || value == "false") return value == "true";
  return Status::InvalidArgument("--" + std::string(name) + " takes no value (got \"" + value +
                                 "\")");
}

// --count N (N >= 1), or 0 when absent: follow until stopped.
Result<int64_t> CountOption(const Command& c, const char* name) {
  auto value = c.args.Get(name);
  if (!value) return 0;
  auto n = ParseIntOption(name, *value);
  if (!n.ok()) return n.status();
  if (*n < 1) {
    return Status::InvalidArgument("--" + std::string(name) + " must be at least 1 (got " +
                                   *value + ")");
  }
  return *n;
}

void PrintLine(Command& c, std::string_view line) {
  c.out << line << '\n';
  c.out.flush();
}

// --ca-file (or $STATEWATCH_CA_FILE), --client-cert and --client-key, for an https:// daemon.
net::TlsClientOptions TlsOptions(const Command& c) {
  return {c.global.ca_file, c.global.client_cert, c.global.client_key};
}

// What a request to the daemon came to: an answer's JSON, a lost connection (retry
// elsewhere), or a refusal (the verb ends).
struct Reply {
  std::optional<json::value> body;
  Status lost;     // !ok: the daemon could not be reached or did not answer
  Status refused;  // !ok: it answered with an error
};

Reply Ask(const Command& c, const std::string& url, std::string_view method,
          const std::string& target, const std::string& body) {
  net::HttpRequestOptions o;
  o.token = c.global.token;
  o.timeout_ms = kConnectMs;
  o.tls = TlsOptions(c);
  Reply r;
  auto answer = HttpRequest(url, method, target, body, o);
  if (!answer.ok()) {
    r.lost = Status::IOError("daemon at " + url + ": " + answer.status().message());
    return r;
  }
  if (answer->status / 100 != 2) {
    r.refused = Status::InvalidArgument(ErrorMessage(*answer));
    return r;
  }
  std::error_code ec;
  r.body = json::parse(answer->body, ec);
  if (ec) r.refused = Status::IOError("the daemon's answer is not JSON: " + ec.message());
  return r;
}

// Drains the watcher's notices and prints each; the reply says whether that worked.
Reply DrainAndPrint(Command& c, const std::string& url, const std::string& watcher) {
  Reply r = Ask(c, url, "POST", "/v1/notices/drain",
                json::serialize(json::object{{"watcher", watcher}}));
  if (!r.body) return r;
  const json::value* notices = r.body->is_object() ? r.body->as_object().if_contains("notices")
                                                   : nullptr;
  if (notices == nullptr || !notices->is_array()) {
    r.refused = Status::IOError("the daemon's drain answer has no notices array");
    return r;
  }
  for (const json::value& n : notices->as_array()) PrintLine(c, json::serialize(n));
  return r;
}

struct WakeOptions {
  std::string watcher;  // "" = every watcher's wakes
  bool drain = false;
  int64_t count = 0;  // 0 = until stopped
};

// One connection's life: the (re)connection drain, the "following" line on stderr, then
// wakes until the connection is lost
// (returns the reason), the count is reached or a signal stops it (OK, *done set), or a
// refusal (another status, *done set).
Status FollowOneConnection(Command& c, net::WebSocket& ws, const std::string& url,
                           const WakeOptions& o, const StopSignals& stop, int64_t* wakes,
                           bool* done) {
  if (o.drain) {
    Reply r = DrainAndPrint(c, url, o.watcher);
    if (!r.refused.ok()) return *done = true, r.refused;
    if (!r.lost.ok()) return r.lost;
  }
  // Announced once caught up: whatever happens after this line reaches the output.
  c.err << "statewatch: following wakes"
        << (o.watcher.empty() ? std::string(" of every watcher") : " of " + o.watcher) << " at "
        << url << (o.drain ? " (draining notices)" : "") << "\n";
  c.err.flush();
  while (!stop.stopped()) {
    auto message = ws.Receive(kPollMs);
    if (!message.ok()) return message.status();
    if (!message->has_value()) continue;
    PrintLine(c, **message);
    if (o.drain) {
      Reply r = DrainAndPrint(c, url, o.watcher);
      if (!r.refused.ok()) return *done = true, r.refused;
      if (!r.lost.ok()) return r.lost;
    }
    if (o.count > 0 && ++*wakes >= o.count) break;
  }
  ws.Close();
  *done = true;
  return Status::OK();
}

std::string WakesTarget(const std::string& watcher) {
  return watcher.empty() ? "/v1/wakes" : "/v1/wakes?watcher=" + server::PercentEncode(watcher);
}

net::HeaderList AuthHeaders(const Command& c) {
  if (c.global.token.empty()) return {};
  return {{"Authorization", "Bearer " + c.global.token}};
}

}  // namespace

int FollowWakes(Command& c) {
  WakeOptions o;
  o.watcher = c.args.Get("watcher").value_or("");
  auto drain = FlagOption(c, "drain");
  if (!drain.ok()) return UsageError(c, drain.status().message());
  o.drain = *drain;
  auto count = CountOption(c, "count");
  if (!count.ok()) return UsageError(c, count.status().message());
  o.count = *count;
  if (o.drain && o.watcher.empty()) return UsageError(c, "'watch --drain' needs --watcher");
  StopSignals stop;
  Daemons daemons(c.global);
  bool ever_connected = false;
  std::size_t failures = 0;
  int64_t wakes = 0;
  while (!stop.stopped()) {
    const std::string url = daemons.url();
    // An https:// URL is wss://, verified as the other verbs' requests are.
    auto ws = net::WebSocket::Connect(url, WakesTarget(o.watcher), AuthHeaders(c), kConnectMs,
                                      TlsOptions(c));
    if (!ws.ok()) {
      if (Refused(ws.status())) return RuntimeError(c, ws.status());
      // The first connection must succeed somewhere: a wrong URL should not retry quietly.
      if (!ever_connected && ++failures >= daemons.count()) return RuntimeError(c, ws.status());
      int wait_ms = daemons.Failed();
      if (ever_connected) {
        c.err << "statewatch: " << ws.status().message() << "; retrying in " << wait_ms
              << " ms\n";
      }
      SleepUnlessStopped(stop, wait_ms);
      continue;
    }
    ever_connected = true;
    daemons.Connected();
    bool done = false;
    Status s = FollowOneConnection(c, **ws, url, o, stop, &wakes, &done);
    if (done) return s.ok() ? kExitOk : RuntimeError(c, s);
    c.err << "statewatch: lost the daemon at " << url << " (" << s.message() << ")\n";
  }
  return kExitOk;
}

// ---- tail -----------------------------------------------------------------------------

namespace {

struct Followed {
  std::string key;    // as given
  std::string agent;  // --agent, "" = the key's own or main
  Sequence after = 0;
};

std::string StateTarget(const Followed& f, const std::string& since) {
  std::string target = "/v1/sessions/" + server::PercentEncode(f.key) + "/state";
  std::string query = f.agent.empty() ? "" : "agentId=" + server::PercentEncode(f.agent);
  if (!since.empty()) query += (query.empty() ? "" : "&") + ("changesSince=" + since);
  return query.empty() ? target : target + "?" + query;
}

// The session's current version, where following starts without --changes-since.
Reply StartAtHead(const Command& c, const std::string& url, Followed* f) {
  Reply r = Ask(c, url, "GET", StateTarget(*f, ""), "");
  if (!r.body) return r;
  const json::value* v = r.body->is_object() ? r.body->as_object().if_contains("stateVersion")
                                             : nullptr;
  if (v == nullptr || !v->is_number()) {
    r.refused = Status::IOError("the daemon's state answer has no stateVersion");
  } else {
    f->after = v->to_number<Sequence>();
  }
  return r;
}

// Prints the events after f->after, page by page; moves f->after; counts into *printed.
Reply PrintNewEvents(Command& c, const std::string& url, Followed* f, int64_t* printed,
                     int64_t count) {
  for (;;) {
    Reply r = Ask(c, url, "GET", StateTarget(*f, std::to_string(f->after)), "");
    if (!r.body) return r;
    const json::object* state = r.body->if_object();
    const json::value* page = state ? state->if_contains("stateChanges") : nullptr;
    const json::value* events = page && page->is_object() ? page->as_object().if_contains("events")
                                                          : nullptr;
    if (events == nullptr || !events->is_array()) {
      r.refused = Status::IOError("the daemon's state answer has no stateChanges.events");
      return r;
    }
    if (const json::value* gap = page->as_object().if_contains("historyGap");
        gap && gap->is_bool() && gap->as_bool()) {
      c.err << "statewatch: " << f->key << ": history was pruned past " << f->after
            << "; some events are gone\n";
    }
    for (const json::value& e : events->as_array()) {
      json::object line{{"sessionKey", state->at("sessionKey")}, {"agentId", state->at("agentId")}};
      for (const auto& field : e.as_object()) line[field.key()] = field.value();
      PrintLine(c, json::serialize(line));
      f->after = std::max(f->after, e.as_object().at("sequence").to_number<Sequence>());
      if (count > 0 && ++*printed >= count) return r;
    }
    const json::value* truncated = page->as_object().if_contains("truncated");
    if (!(truncated && truncated->is_bool() && truncated->as_bool())) return r;
  }
}

}  // namespace

int RunTail(Command& c) {
  return UsageError(c, "'tail' follows a running daemon: give --server URL (or set "
                       "STATEWATCH_SERVER)");
}

int RemoteTail(Command& c) {
  auto count = CountOption(c, "count");
  if (!count.ok()) return UsageError(c, count.status().message());
  auto interval = ParseIntOption("interval-ms", c.args.Get("interval-ms").value_or("1000"));
  if (!interval.ok() || *interval < 10 || *interval > 3600000) {
    return UsageError(c, "--interval-ms must be an integer from 10 to 3600000 (got \"" +
                             c.args.Get("interval-ms").value_or("") + "\")");
  }
  std::optional<Sequence> since;
  if (auto text = c.args.Get("changes-since")) {
    auto n = ParseIntOption("changes-since", *text);
    if (!n.ok() || *n < 0) {
      return RuntimeError(c, Status::InvalidArgument("changesSince must be a non-negative integer"));
    }
    since = static_cast<Sequence>(*n);
  }
  std::vector<Followed> followed;
  for (const std::string& key : c.args.GetAll("session")) {
    followed.push_back({key, c.args.Get("agent").value_or(""), since.value_or(0)});
  }
  StopSignals stop;
  Daemons daemons(c.global);
  // The starting points: every session's head, unless --changes-since named one.
  for (Followed& f : followed) {
    if (since) break;
    Reply r = StartAtHead(c, daemons.url(), &f);
    if (!r.refused.ok()) return RuntimeError(c, r.refused);
    if (!r.lost.ok()) return RuntimeError(c, r.lost);
  }
  c.err << "statewatch: tailing " << followed.size() << " session(s) at " << daemons.url()
        << " every " << *interval << " ms\n";
  int64_t printed = 0;
  while (!stop.stopped()) {
    Status lost;
    for (Followed& f : followed) {
      Reply r = PrintNewEvents(c, daemons.url(), &f, &printed, *count);
      if (!r.refused.ok()) return RuntimeError(c, r.refused);
      if (*count > 0 && printed >= *count) return kExitOk;
      if (!r.lost.ok()) {
        lost = r.lost;
        break;
      }
    }
    if (lost.ok()) {
      daemons.Connected();
      SleepUnlessStopped(stop, static_cast<int>(*interval));
      continue;
    }
    int wait_ms = daemons.Failed();
    c.err << "statewatch: " << lost.message() << "; retrying in " << wait_ms << " ms\n";
    SleepUnlessStopped(stop, wait_ms);
  }
  return kExitOk;
}

}  // namespace statewatch::cli

namespace statewatch::cli {

int RunWatchOrFollow(Command& c) {
  if (Status s = CheckWatchForm(c); !s.ok()) return UsageError(c, s.message());
  if (c.args.Has("target")) return RunWatch(c);
  return UsageError(c, "'watch' without --target follows a daemon's wakes: give --server URL "
                       "(or set STATEWATCH_SERVER); to register a watch, give --target KEY");
}

int RemoteWatchOrFollow(Command& c) {
  if (Status s = CheckWatchForm(c); !s.ok()) return UsageError(c, s.message());
  return c.args.Has("target") ? RemoteWatch(c) : FollowWakes(c);
}

Status CheckWatchForm(const Command& c) {
  if (!c.args.Has("target")) return Status::OK();
  if (!c.args.Has("watcher")) return Status::InvalidArgument("'watch' needs --watcher");
  for (const char* name : {"drain", "count"}) {
    if (c.args.Has(name)) {
      return Status::InvalidArgument("--" + std::string(name) +
                                     " is for following wakes (watch without --target)");
    }
  }
  return Status::OK();
}

}  // namespace statewatch::cli
