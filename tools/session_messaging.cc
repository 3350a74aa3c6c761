#include "tools/session_messaging.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <random>

#include "statewatch/session_key.h"
#include "tools/json_codec.h"
#include "tools/session_history.h"
#include "tools/json_fields.h"
#include "tools/visibility.h"

namespace statewatch::tools {
namespace json = boost::json;

namespace {

// ---- the edge (parameters are read with tools/json_fields.h) -------------------------------

// Tool entry points are the edge: Boost.JSON throws (allocation, .at()) become a Status.
template <typename F>
auto Guarded(const char* what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Status::IOError(std::string(what) + " failed: " + e.what());
  }
}

// ---- small things ----------------------------------------------------------------------------

std::string NewUuidV4() {
  thread_local std::random_device rd;
  unsigned char b[16];
  for (int i = 0; i < 16; i += 4) {
    uint32_t w = rd();
    std::memcpy(b + i, &w, 4);
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0F) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3F) | 0x80);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 0x0F]);
  }
  return out;
}

json::object ParseObject(std::string_view text) {
  std::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return {};
  return std::move(v.as_object());
}

std::size_t CountChars(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

bool StopsLoop(std::string_view reply) {
  std::string t = Trim(reply);
  return t.empty() || t == kReplySkip;
}

Delivery MakeDelivery(const SessionName& to, std::string type, const std::string& run_id,
                      std::string text, const std::string& source_key, std::string source_tool) {
  Delivery d;
  d.agent_id = to.agent_id;
  d.type = std::move(type);
  d.session_key = to.session_key;
  d.run_id = run_id;
  d.text = std::move(text);
  d.source_session_key = source_key;
  d.source_tool = std::move(source_tool);
  return d;
}

std::string YieldRunId(const SessionName& requester) {
  return "yield:" + requester.agent_id + ":" + requester.session_key;
}

std::string ChildName(const RunRecord& run) {
  return run.label.empty() ? run.target.session_key : "\"" + run.label + "\"";
}

const char* OutcomeWords(std::string_view status) {
  if (status == "ok") return "completed";
  if (status == "timeout") return "timed out";
  if (status == "cancelled") return "was cancelled";
  return "failed";
}

std::string AnnounceText(const RunRecord& run) {
  std::string text = "Sub-agent " + ChildName(run) + " " + OutcomeWords(run.status) + " (run " +
                     run.run_id + ", session " + run.target.session_key + ").";
  if (!run.result.empty()) text += "\n\n" + run.result;
  return text;
}

}  // namespace

// ---- the send state machine ------------------------------------------------------------------

// Persisted in the send run's extra_json (DO NOT CHANGE the field names: runs outlive
// restarts): {"phase": "awaiting" | "pingpong" | "done", "turn", "maxTurns",
// "next": "target" | "requester", "timeoutMs", "deadlineAt", "watch", "watched",
// "lastReply"?, "outcome"?}.
struct SessionMessaging::SendState {
  enum class Phase { kAwaiting, kPingPong, kDone };
  Phase phase = Phase::kAwaiting;
  int turn = 0;  // ping-pong deliveries made
  int max_turns = 0;
  bool next_is_requester = false;  // whose reply is awaited
  int64_t timeout_ms = 0;          // 0: fire and forget
  int64_t deadline_ms = 0;         // 0: none
  bool watch = false;
  bool watched = false;
  std::string last_reply;
  std::string outcome;  // how the loop ended: skip | turns | single | timeout | finished

  int64_t TurnTimeoutMs() const {
    return timeout_ms > 0 ? timeout_ms : kDefaultSendTimeoutSeconds * 1000;
  }

  static SendState Read(const RunRecord& run) {
    json::object o = ParseObject(run.extra_json);
    SendState s;
    auto str = [&](std::string_view k) {
      const json::value* v = o.if_contains(k);
      return v && v->is_string() ? std::string(v->as_string()) : std::string();
    };
    auto num = [&](std::string_view k) -> int64_t {
      const json::value* v = o.if_contains(k);
      return v && v->is_number() ? v->to_number<int64_t>() : 0;
    };
    auto flag = [&](std::string_view k) {
      const json::value* v = o.if_contains(k);
      return v && v->is_bool() && v->as_bool();
    };
    std::string phase = str("phase");
    s.phase = phase == "pingpong" ? Phase::kPingPong
              : phase == "done"   ? Phase::kDone
                                  : Phase::kAwaiting;
    s.turn = static_cast<int>(num("turn"));
    s.max_turns = static_cast<int>(num("maxTurns"));
    s.next_is_requester = str("next") == "requester";
    s.timeout_ms = num("timeoutMs");
    s.deadline_ms = num("deadlineAt");
    s.watch = flag("watch");
    s.watched = flag("watched");
    s.last_reply = str("lastReply");
    s.outcome = str("outcome");
    return s;
  }

  void Write(RunRecord* run) const {
    json::object o;
    o["phase"] = phase == Phase::kPingPong ? "pingpong"
                 : phase == Phase::kDone   ? "done"
                                           : "awaiting";
    o["turn"] = turn;
    o["maxTurns"] = max_turns;
    o["next"] = next_is_requester ? "requester" : "target";
    o["timeoutMs"] = timeout_ms;
    o["deadlineAt"] = deadline_ms;
    o["watch"] = watch;
    o["watched"] = watched;
    if (!last_reply.empty()) o["lastReply"] = last_reply;
    if (!outcome.empty()) o["outcome"] = outcome;
    run->extra_json = json::serialize(o);
  }
};

namespace {

// The sessions_send result a run stands for.
json::object SendResultJson(const RunRecord& run, bool watch, bool watched) {
  json::object o;
  o["runId"] = run.run_id;
  if (run.status == "running") {
    o["status"] = "accepted";
  } else if (run.status == "ok") {
    o["status"] = "ok";
    o["reply"] = run.reply;
  } else {
    o["status"] = run.status == "timeout" ? "timeout" : "error";
    o["error"] = run.result;
  }
  o["sessionKey"] = run.target.session_key;
  if (watch) o["watched"] = watched;
  return o;
}

}  // namespace

// ---- options, JSON -----------------------------------------------------------------------------

Status ValidateMessagingOptions(const MessagingOptions& options) {
  if (options.max_ping_pong_turns < 0 || options.max_ping_pong_turns > kMaxPingPongTurnsLimit) {
    return Status::InvalidArgument("maxPingPongTurns must be an integer from 0 to 20 (got " +
                                   std::to_string(options.max_ping_pong_turns) + ")");
  }
  if (options.max_children_per_session < 1) {
    return Status::InvalidArgument("maxChildrenPerAgent must be a positive integer (got " +
                                   std::to_string(options.max_children_per_session) + ")");
  }
  if (options.steer_interval_ms < 0 || options.recent_window_ms < 0) {
    return Status::InvalidArgument("steer interval and recent window must not be negative");
  }
  return ValidateToolPolicy(options.tool_policy);
}

json::object RunUpdate::ToJson() const {
  json::array ids;
  for (const Delivery& d : deliveries) ids.emplace_back(d.id);
  return json::object{
      {"runId", run_id}, {"applied", applied}, {"status", status}, {"deliveries", std::move(ids)}};
}

json::object DeliveryToJson(const Delivery& d) {
  json::object o;
  o["deliveryId"] = d.id;
  o["type"] = d.type;
  o["sessionKey"] = d.session_key;
  o["agentId"] = d.agent_id;
  o["runId"] = d.run_id;
  o["text"] = d.text;
  o["provenance"] = json::object{
      {"sourceSessionKey", d.source_session_key}, {"sourceTool", d.source_tool}, {"isUser", false}};
  o["createdAt"] = d.created_at_ms;
  return o;
}

Result<std::string> RunReplyFromJson(const json::value& body) {
  const json::value* text = body.is_object() ? body.as_object().if_contains("text") : nullptr;
  if (text == nullptr || text->is_null()) return Status::InvalidArgument("text is required");
  if (!text->is_string()) {
    return Status::InvalidArgument("text must be a string (got " + DescribeJson(*text) + ")");
  }
  return std::string(text->as_string());
}

Result<RunFinish> RunFinishFromJson(const json::value& body) {
  if (!body.is_object()) {
    return Status::InvalidArgument("the body must be a JSON object (got " + DescribeJson(body) +
                                   ")");
  }
  const json::object& o = body.as_object();
  const json::value* status = o.if_contains("status");
  RunFinish finish;
  if (status != nullptr && status->is_string()) finish.status = std::string(status->as_string());
  if (finish.status != "ok" && finish.status != "error" && finish.status != "timeout" &&
      finish.status != "cancelled") {
    return Status::InvalidArgument("status must be one of ok, error, timeout, cancelled (got " +
                                   (status ? DescribeJson(*status) : std::string("nothing")) + ")");
  }
  if (const json::value* r = o.if_contains("result"); r && !r->is_null()) {
    finish.result = r->is_string() ? std::string(r->as_string()) : json::serialize(*r);
  }
  return finish;
}

// ---- lifecycle, plumbing ---------------------------------------------------------------------

SessionMessaging::SessionMessaging(Engine* engine, MessagingOptions options)
    : engine_(engine), options_(std::move(options)) {}

Result<std::unique_ptr<SessionMessaging>> SessionMessaging::Open(Engine* engine,
                                                                 MessagingOptions options) {
  SW_RETURN_IF_ERROR(ValidateMessagingOptions(options));
  std::unique_ptr<SessionMessaging> m(new SessionMessaging(engine, std::move(options)));
  SW_RETURN_IF_ERROR(m->LoadDeadlines());
  return m;
}

Status SessionMessaging::LoadDeadlines() {
  auto runs = engine_->ListRuns();
  if (!runs.ok()) return runs.status();
  for (const RunRecord& run : *runs) {
    if (run.kind != "send") continue;
    SendState s = SendState::Read(run);
    if (s.phase != SendState::Phase::kDone && s.deadline_ms > 0)
      SetDeadline(run.run_id, s.deadline_ms);
  }
  return Status::OK();
}

std::mutex& SessionMessaging::StripeOf(std::string_view key) const {
  return stripes_[std::hash<std::string_view>{}(key) % stripes_.size()];
}

void SessionMessaging::Publish(const std::vector<Delivery>& deliveries) const {
  if (!options_.on_delivery) return;
  for (const Delivery& d : deliveries) options_.on_delivery(d);
}

Result<Delivery> SessionMessaging::Enqueue(Delivery delivery) {
  delivery.created_at_ms = engine_->clock().NowMs();
  auto id = engine_->EnqueueDelivery(delivery);
  if (!id.ok()) return id.status();
  delivery.id = *id;
  return delivery;
}

void SessionMessaging::SetDeadline(const std::string& run_id, int64_t deadline_ms) {
  std::lock_guard lock(waits_mu_);
  if (auto it = deadline_of_.find(run_id); it != deadline_of_.end()) {
    deadlines_.erase({it->second, run_id});
    deadline_of_.erase(it);
  }
  if (deadline_ms > 0) {
    deadline_of_[run_id] = deadline_ms;
    deadlines_.insert({deadline_ms, run_id});
  }
}

CallCompletion SessionMessaging::TakeCompletion(const std::string& run_id) {
  std::lock_guard lock(waits_mu_);
  auto it = completions_.find(run_id);
  if (it == completions_.end()) return {};
  CallCompletion done = std::move(it->second);
  completions_.erase(it);
  return done;
}

void SessionMessaging::Abandon(const std::string& run_id) { (void)TakeCompletion(run_id); }

std::optional<int64_t> SessionMessaging::NextDeadlineMs() const {
  std::lock_guard lock(waits_mu_);
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

// Publishes an update's deliveries and completes the waiting call, outside every lock.
void SessionMessaging::Deliver(RunUpdate update, std::vector<RunUpdate>* out) {
  Publish(update.deliveries);
  if (update.call_result) {
    if (CallCompletion done = TakeCompletion(update.run_id)) done(*update.call_result);
  }
  if (out != nullptr) out->push_back(std::move(update));
}

Result<std::vector<RunRecord>> SessionMessaging::ChildRuns(const SessionName& requester) const {
  auto runs = engine_->ListRuns();
  if (!runs.ok()) return runs.status();
  std::vector<RunRecord> out;
  for (RunRecord& r : *runs) {
    if (r.kind == "spawn" && r.requester == requester) out.push_back(std::move(r));
  }
  return out;
}

// ---- sessions_send ---------------------------------------------------------------------------

namespace {

struct SendParams {
  std::optional<std::string> session_key;
  std::optional<std::string> label;
  std::optional<std::string> agent_id;
  std::string message;
  int64_t timeout_seconds = kDefaultSendTimeoutSeconds;
  bool watch = false;
};

Result<SendParams> ReadSendParams(const json::object& params) {
  SendParams p;
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "sessionKey"), &p.session_key));
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "label"), &p.label));
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "agentId"), &p.agent_id));
  if (!p.session_key && !p.label && !p.agent_id) {
    return Status::InvalidArgument("Either sessionKey or label is required");
  }
  if (p.session_key && p.label) {
    return Status::InvalidArgument("Provide either sessionKey or label (not both).");
  }
  const json::value* message = Param(params, "message");
  if (message == nullptr) return Status::InvalidArgument("message is required");
  if (!message->is_string()) return Status::InvalidArgument("message must be a string");
  p.message = std::string(message->as_string());
  std::optional<int64_t> timeout;
  SW_RETURN_IF_ERROR(
      Assign(IntegerParam(params, "timeoutSeconds", 0, kMaxSendTimeoutSeconds), &timeout));
  if (timeout) p.timeout_seconds = *timeout;
  std::optional<bool> watch;
  SW_RETURN_IF_ERROR(Assign(BoolParam(params, "watch"), &watch));
  p.watch = watch.value_or(false);
  return p;
}

// The receiving session: sessionKey (key or session id), else the session with `label` in
// agentId's agent (default the caller's), else agentId's main session.
Result<SessionName> SendTarget(const Engine& engine, const SessionName& caller,
                               const SendParams& p) {
  if (p.session_key) return ResolveSessionReference(engine, caller, *p.session_key);
  std::string agent = caller.agent_id;
  if (p.agent_id) {
    auto id = NormalizeAgentId(*p.agent_id);
    if (!id.ok()) return id.status();
    agent = *id;
  }
  if (!p.label) return SessionName{agent, "agent:" + agent + ":main"};
  auto all = engine.ListSessions();
  if (!all.ok()) return all.status();
  std::vector<SessionName> matches;
  for (const SessionRecord& r : *all) {
    if (r.label && *r.label == *p.label && r.name.agent_id == agent) matches.push_back(r.name);
  }
  if (matches.empty()) {
    return Status::NotFound("No session found with label: " + *p.label + " (agent " + agent + ")");
  }
  if (matches.size() > 1) {
    return Status::InvalidArgument("Multiple sessions found with label: " + *p.label +
                                   " (use the sessionKey from sessions_list)");
  }
  return matches[0];
}

}  // namespace

Result<ToolAnswer> SessionMessaging::Send(const SessionName& caller, const json::object& params,
                                          CallCompletion on_complete) {
  return Guarded("sessions_send", [&]() -> Result<ToolAnswer> {
    auto p = ReadSendParams(params);
    if (!p.ok()) return p.status();
    if (p->session_key && ThreadParentKey(*p->session_key)) {
      return Status::InvalidArgument(kThreadSendRefusal);
    }
    auto target = SendTarget(*engine_, caller, *p);
    if (!target.ok()) return target.status();
    if (ThreadParentKey(target->session_key)) return Status::InvalidArgument(kThreadSendRefusal);
    Status access =
        CheckSessionAccess(*engine_, options_.sessions, SessionAction::kSend, caller, *target);
    if (access.code() == Status::Code::kPermissionDenied) {
      ToolAnswer refused;
      refused.result = json::object{{"runId", NewUuidV4()},
                                    {"status", "forbidden"},
                                    {"error", access.message()},
                                    {"sessionKey", target->session_key}};
      return refused;
    }
    SW_RETURN_IF_ERROR(access);
    return Dispatch(caller, *target, p->message, p->timeout_seconds, p->watch,
                    std::move(on_complete));
  });
}

Result<ToolAnswer> SessionMessaging::Dispatch(const SessionName& caller, const SessionName& target,
                                              const std::string& message, int64_t timeout_seconds,
                                              bool watch, CallCompletion on_complete) {
  int64_t now = engine_->clock().NowMs();
  SendState state;
  state.max_turns = options_.max_ping_pong_turns;
  state.timeout_ms = timeout_seconds * 1000;
  state.deadline_ms = state.timeout_ms > 0 ? now + state.timeout_ms : 0;
  state.watch = watch;
  RunRecord run;
  run.run_id = NewUuidV4();
  run.kind = "send";
  run.requester = caller;
  run.target = target;
  run.task = message;
  run.created_at_ms = now;
  state.Write(&run);

  std::vector<Delivery> sent;
  {
    // The run and the wait exist before the delivery does: a reply can only name a run the
    // gateway saw, and it may arrive (on another thread) before this returns.
    std::lock_guard lock(StripeOf(run.run_id));
    SW_RETURN_IF_ERROR(engine_->PutRun(run));
    if (state.deadline_ms > 0) {
      SetDeadline(run.run_id, state.deadline_ms);
      if (on_complete) {
        std::lock_guard waits(waits_mu_);
        completions_[run.run_id] = std::move(on_complete);
      }
    }
    auto d = Enqueue(
        MakeDelivery(target, "message", run.run_id, message, caller.session_key, "sessions_send"));
    if (!d.ok()) {
      SetDeadline(run.run_id, 0);
      (void)TakeCompletion(run.run_id);
      return d.status();
    }
    sent.push_back(*d);
    if (watch) {
      // semantics.md §3.1: after the dispatch, at the target's current state version. A key
      // the engine cannot watch (bare, malformed, the sender itself) is a refusal: false.
      auto watched = engine_->Watch(caller.session_key, target);
      state.watched = watched.ok() && *watched;
      state.Write(&run);
      SW_RETURN_IF_ERROR(engine_->PutRun(run));
    }
  }
  Publish(sent);
  ToolAnswer answer;
  answer.run_id = run.run_id;
  if (state.deadline_ms > 0) {
    answer.pending = true;
    answer.deadline_ms = state.deadline_ms;
  } else {
    answer.result = SendResultJson(run, state.watch, state.watched);
  }
  return answer;
}

// A reply from the side the run waits for. REQUIRES: the run's stripe is held.
Result<RunUpdate> SessionMessaging::ApplyReply(RunRecord run, std::string_view text, int64_t now) {
  SendState s = SendState::Read(run);
  RunUpdate u;
  u.run_id = run.run_id;
  u.status = run.status;
  if (s.phase == SendState::Phase::kDone) return u;
  bool completes_call = s.phase == SendState::Phase::kAwaiting;
  bool forward = false;
  if (completes_call) {
    run.status = "ok";
    run.reply = std::string(text);
    if (StopsLoop(text) || s.max_turns == 0 || run.requester == run.target) {
      s.phase = SendState::Phase::kDone;
      s.outcome = StopsLoop(text) ? "skip" : "single";
    } else {
      s.phase = SendState::Phase::kPingPong;
      s.turn = 1;
      s.next_is_requester = true;
      forward = true;
    }
  } else {
    s.last_reply = std::string(text);
    if (StopsLoop(text) || s.turn >= s.max_turns) {
      s.phase = SendState::Phase::kDone;
      s.outcome = StopsLoop(text) ? "skip" : "turns";
    } else {
      ++s.turn;
      s.next_is_requester = !s.next_is_requester;
      forward = true;
    }
  }
  s.deadline_ms = forward ? now + s.TurnTimeoutMs() : 0;
  if (s.phase == SendState::Phase::kDone) run.ended_at_ms = now;
  s.Write(&run);
  SW_RETURN_IF_ERROR(engine_->PutRun(run));
  if (forward) {
    // The awaited side gets the other side's words, as inter-session data.
    const SessionName& to = s.next_is_requester ? run.requester : run.target;
    const SessionName& from = s.next_is_requester ? run.target : run.requester;
    auto d = Enqueue(MakeDelivery(to, "message", run.run_id, std::string(text), from.session_key,
                                  "sessions_send"));
    if (!d.ok()) return d.status();
    u.deliveries.push_back(*d);
  }
  SetDeadline(run.run_id, s.deadline_ms);
  u.applied = true;
  u.status = run.status;
  if (completes_call) u.call_result = SendResultJson(run, s.watch, s.watched);
  return u;
}

// Ends a send run that did not get (all) its replies. REQUIRES: the run's stripe is held.
Result<RunUpdate> SessionMessaging::EndSend(RunRecord run, const std::string& status,
                                            std::string_view error, int64_t now) {
  SendState s = SendState::Read(run);
  RunUpdate u;
  u.run_id = run.run_id;
  u.status = run.status;
  if (s.phase == SendState::Phase::kDone) return u;
  bool completes_call = s.phase == SendState::Phase::kAwaiting;
  if (completes_call) {
    run.status = status;
    run.result = std::string(error);
  } else {
    s.outcome = status == "timeout" ? "timeout" : "finished";  // the first reply stands
  }
  s.phase = SendState::Phase::kDone;
  s.deadline_ms = 0;
  run.ended_at_ms = now;
  s.Write(&run);
  SW_RETURN_IF_ERROR(engine_->PutRun(run));
  SetDeadline(run.run_id, 0);
  u.applied = true;
  u.status = run.status;
  if (completes_call) u.call_result = SendResultJson(run, s.watch, s.watched);
  return u;
}

Result<RunUpdate> SessionMessaging::OnReply(const std::string& run_id, std::string_view text) {
  auto update = Guarded("reply", [&]() -> Result<RunUpdate> {
    std::lock_guard lock(StripeOf(run_id));
    auto run = engine_->GetRun(run_id);
    if (!run.ok()) return run.status();
    if (!*run) return Status::NotFound("Unknown runId: " + run_id);
    if ((*run)->kind != "send") {
      return Status::InvalidArgument("run " + run_id + " is a " + (*run)->kind +
                                     " run: report its end with POST /v1/runs/" + run_id +
                                     "/finish");
    }
    return ApplyReply(std::move(**run), text, engine_->clock().NowMs());
  });
  if (update.ok()) Deliver(*update, nullptr);
  return update;
}

Result<RunUpdate> SessionMessaging::TimeOut(const std::string& run_id, bool only_if_due) {
  auto update = Guarded("timeout", [&]() -> Result<RunUpdate> {
    std::lock_guard lock(StripeOf(run_id));
    auto run = engine_->GetRun(run_id);
    if (!run.ok()) return run.status();
    if (!*run) return Status::NotFound("Unknown runId: " + run_id);
    int64_t now = engine_->clock().NowMs();
    SendState s = SendState::Read(**run);
    RunUpdate not_due;
    not_due.run_id = run_id;
    not_due.status = (*run)->status;
    bool live = (*run)->kind == "send" && s.phase != SendState::Phase::kDone;
    // A reply may have renewed the deadline since ExpireDue picked the run: the stored state
    // is the truth, the in-memory index follows it.
    if (!live || (only_if_due && (s.deadline_ms == 0 || s.deadline_ms > now))) {
      SetDeadline(run_id, live ? s.deadline_ms : 0);
      return not_due;
    }
    std::string error;
    if (s.phase == SendState::Phase::kAwaiting) {
      error = "No reply from " + (*run)->target.session_key + " within " +
              std::to_string(s.timeout_ms / 1000) + " s.";
    }
    return EndSend(std::move(**run), "timeout", error, now);
  });
  if (update.ok()) Deliver(*update, nullptr);
  return update;
}

Result<RunUpdate> SessionMessaging::OnTimeout(const std::string& run_id) {
  return TimeOut(run_id, /*only_if_due=*/false);
}

std::vector<RunUpdate> SessionMessaging::ExpireDue() {
  std::vector<std::string> due;
  {
    std::lock_guard lock(waits_mu_);
    int64_t now = engine_->clock().NowMs();
    for (const auto& [deadline, run_id] : deadlines_) {
      if (deadline > now) break;
      due.push_back(run_id);
    }
  }
  std::vector<RunUpdate> out;
  for (const std::string& run_id : due) {
    auto u = TimeOut(run_id, /*only_if_due=*/true);
    if (u.ok() && u->applied) out.push_back(std::move(*u));
  }
  return out;
}

// ---- sessions_spawn ----------------------------------------------------------------------------

namespace {

struct SpawnParams {
  std::string task;
  std::optional<std::string> label;
  std::optional<std::string> runtime;
  std::optional<std::string> agent_id;
  std::optional<std::string> model;
  std::optional<std::string> thinking;
  std::optional<bool> thread;
  std::optional<std::string> sandbox;
  std::optional<std::string> context;
};

constexpr std::size_t kMaxLabelChars = 128;

Result<SpawnParams> ReadSpawnParams(const json::object& params) {
  SpawnParams p;
  const json::value* task = Param(params, "task");
  if (task == nullptr) return Status::InvalidArgument("task is required");
  if (!task->is_string()) return Status::InvalidArgument("task must be a string");
  p.task = std::string(task->as_string());
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "label"), &p.label));
  if (p.label && CountChars(*p.label) > kMaxLabelChars) {
    return Status::InvalidArgument("label must be at most 128 characters");
  }
  SW_RETURN_IF_ERROR(Assign(
      EnumParam(params, "runtime", {"subagent", "acp"}, "runtime must be \"subagent\" or \"acp\""),
      &p.runtime));
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "agentId"), &p.agent_id));
  if (p.agent_id) {
    auto id = NormalizeAgentId(*p.agent_id);
    if (!id.ok()) return id.status();
    p.agent_id = *id;
  }
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "model"), &p.model));
  SW_RETURN_IF_ERROR(
      Assign(EnumParam(params, "thinking", {"off", "minimal", "low", "medium", "high", "xhigh"},
                       "thinking must be one of off, minimal, low, medium, high, xhigh"),
             &p.thinking));
  SW_RETURN_IF_ERROR(Assign(BoolParam(params, "thread"), &p.thread));
  SW_RETURN_IF_ERROR(Assign(EnumParam(params, "sandbox", {"inherit", "require"},
                                      "sandbox must be \"inherit\" or \"require\""),
                            &p.sandbox));
  SW_RETURN_IF_ERROR(Assign(EnumParam(params, "context", {"isolated", "fork"},
                                      "context must be \"isolated\" or \"fork\""),
                            &p.context));
  return p;
}

std::string SpawnExtra(const SpawnParams& p, int depth) {
  json::object o;
  o["runtime"] = p.runtime.value_or("subagent");
  if (p.model) o["model"] = *p.model;
  if (p.thinking) o["thinking"] = *p.thinking;
  o["thread"] = p.thread.value_or(false);
  o["sandbox"] = p.sandbox.value_or("inherit");
  o["context"] = p.context.value_or("isolated");
  o["depth"] = depth;
  return json::serialize(o);
}

std::string AllowList(const std::vector<std::string>& patterns) {
  if (patterns.empty()) return "none";
  std::string out;
  for (const std::string& p : patterns) out += (out.empty() ? "" : ", ") + p;
  return out;
}

}  // namespace

Result<json::object> SessionMessaging::Spawn(const SessionName& caller,
                                             const json::object& params) {
  return Guarded("sessions_spawn", [&]() -> Result<json::object> {
    auto p = ReadSpawnParams(params);
    if (!p.ok()) return p.status();
    auto depth = SpawnDepth(*engine_, caller);
    if (!depth.ok()) return depth.status();
    const int max_depth = options_.tool_policy.max_spawn_depth;
    if (*depth >= max_depth) {
      return Status::PermissionDenied(
          "sessions_spawn is not allowed at this depth (spawn depth " + std::to_string(*depth) +
          ", agents.defaults.subagents.maxSpawnDepth=" + std::to_string(max_depth) + ").");
    }
    std::string agent = p->agent_id.value_or(caller.agent_id);
    AgentToAgentPolicy allow{true, options_.spawn_allow_agents};
    if (agent != caller.agent_id && (allow.allow.empty() || !allow.MatchesAllow(agent))) {
      return Status::PermissionDenied("agentId is not allowed for sessions_spawn (allowed: " +
                                      AllowList(options_.spawn_allow_agents) +
                                      "; agents.defaults.subagents.allowAgents).");
    }
    auto caller_record = engine_->GetSession(caller);
    if (!caller_record.ok()) return caller_record.status();
    bool sandboxed = p->sandbox == "require" ||
                     (caller_record->has_value() && (*caller_record)->sandboxed.value_or(false));

    int64_t now = engine_->clock().NowMs();
    RunRecord run;
    run.run_id = NewUuidV4();
    run.kind = "spawn";
    run.requester = caller;
    run.target = SessionName{agent, "agent:" + agent + ":subagent:" + NewUuidV4()};
    run.label = p->label.value_or("");
    run.task = p->task;
    run.created_at_ms = now;
    run.extra_json = SpawnExtra(*p, *depth + 1);

    std::vector<Delivery> sent;
    {
      // The requester's stripe makes the children count and the creation one step.
      std::lock_guard lock(StripeOf(caller.session_key));
      auto children = ChildRuns(caller);
      if (!children.ok()) return children.status();
      auto active = std::count_if(children->begin(), children->end(),
                                  [](const RunRecord& r) { return r.status == "running"; });
      if (active >= options_.max_children_per_session) {
        return Status::PermissionDenied(
            "sessions_spawn has reached max active children for this session (" +
            std::to_string(active) + "/" + std::to_string(options_.max_children_per_session) +
            ", agents.defaults.subagents.maxChildrenPerAgent).");
      }
      SW_RETURN_IF_ERROR(CreateChild(caller, run, p->model, sandboxed));
      auto d = Enqueue(MakeDelivery(run.target, "task", run.run_id, run.task, caller.session_key,
                                    "sessions_spawn"));
      if (!d.ok()) return d.status();
      sent.push_back(*d);
    }
    Publish(sent);
    return json::object{
        {"status", "accepted"}, {"runId", run.run_id}, {"childSessionKey", run.target.session_key}};
  });
}

// Registry entry, run, then the journal: a `child_spawned` never names a run that is not
// stored, and the delivery (last, in Spawn) never names a child that is not registered.
Status SessionMessaging::CreateChild(const SessionName& caller, const RunRecord& run,
                                     const std::optional<std::string>& model, bool sandboxed) {
  SessionRecord child;
  child.name = run.target;
  child.parent_session_key = caller.session_key;
  if (!run.label.empty()) child.label = run.label;
  if (model) child.model = *model;
  child.sandboxed = sandboxed;
  child.created_at_ms = run.created_at_ms;
  child.updated_at_ms = run.created_at_ms;
  SW_RETURN_IF_ERROR(engine_->UpsertSession(child));
  SW_RETURN_IF_ERROR(engine_->PutRun(run));
  EventInput spawned;
  spawned.session_key = run.target.session_key;
  spawned.agent_id = run.target.agent_id;
  spawned.kind = "child_spawned";
  spawned.actor_type = ActorType::kAgent;
  spawned.actor_id = caller.session_key;
  spawned.run_id = run.run_id;
  spawned.summary = "child session spawned";
  spawned.dedupe_key = "child-spawned:" + run.run_id;
  spawned.watchers = {caller.session_key};  // seeds the spawner's cursor (semantics.md §3.1)
  auto recorded = engine_->Record(spawned);
  return recorded.status();
}

// ---- run ends ----------------------------------------------------------------------------------

Result<RunUpdate> SessionMessaging::OnRunFinish(const std::string& run_id, std::string_view status,
                                                std::string_view result) {
  if (status != "ok" && status != "error" && status != "timeout" && status != "cancelled") {
    return Status::InvalidArgument("status must be one of ok, error, timeout, cancelled (got \"" +
                                   std::string(status) + "\")");
  }
  auto kind = Guarded("finish", [&]() -> Result<std::string> {
    auto run = engine_->GetRun(run_id);
    if (!run.ok()) return run.status();
    if (!*run) return Status::NotFound("Unknown runId: " + run_id);
    return (*run)->kind;
  });
  if (!kind.ok()) return kind.status();
  if (*kind == "spawn") {
    auto update = Guarded("finish", [&]() -> Result<RunUpdate> {
      return FinishSpawnRun(run_id, std::string(status), result, "", /*by_kill=*/false);
    });
    if (update.ok()) Deliver(*update, nullptr);
    return update;
  }
  if (*kind != "send") {
    return Status::InvalidArgument("run " + run_id +
                                   " is not a sessions_send or sessions_spawn run");
  }
  auto update = Guarded("finish", [&]() -> Result<RunUpdate> {
    std::lock_guard lock(StripeOf(run_id));
    auto run = engine_->GetRun(run_id);
    if (!run.ok()) return run.status();
    if (!*run) return Status::NotFound("Unknown runId: " + run_id);
    int64_t now = engine_->clock().NowMs();
    if (status == "ok") return ApplyReply(std::move(**run), result, now);
    std::string error(result);
    if (error.empty())
      error = "the run of " + (*run)->target.session_key + " ended: " + std::string(status);
    return EndSend(std::move(**run), std::string(status), error, now);
  });
  if (update.ok()) Deliver(*update, nullptr);
  return update;
}

// Ends a running spawn run: journal, run record, then the requester's announcement. The
// journal goes first and is deduplicated by `run-terminal:<runId>`, so a retry after a
// failure anywhere later repeats nothing. `actor_key` ("" = the child itself) is the
// journal's actor; a kill also tells the child to stop and announces nothing to the killer.
Result<RunUpdate> SessionMessaging::FinishSpawnRun(const std::string& run_id,
                                                   const std::string& status,
                                                   std::string_view result,
                                                   const std::string& actor_key, bool by_kill) {
  RunUpdate u;
  u.run_id = run_id;
  RunRecord run;
  {
    std::lock_guard lock(StripeOf(run_id));
    auto stored = engine_->GetRun(run_id);
    if (!stored.ok()) return stored.status();
    if (!*stored) return Status::NotFound("Unknown runId: " + run_id);
    run = std::move(**stored);
    u.status = run.status;
    if (run.status != "running") return u;
    EventInput ended;
    ended.session_key = run.target.session_key;
    ended.agent_id = run.target.agent_id;
    ended.actor_type = ActorType::kAgent;
    ended.actor_id = actor_key.empty() ? run.target.session_key : actor_key;
    ended.run_id = run_id;
    ended.dedupe_key = "run-terminal:" + run_id;
    if (status == "ok") {
      ended.kind = "run_completed";
      ended.summary = "child run completed";
    } else {
      ended.kind = "run_failed";
      ended.summary = "child run failed";
      ended.payload_json = json::serialize(json::object{{"outcome", status}});
    }
    auto recorded = engine_->Record(ended);
    if (!recorded.ok()) return recorded.status();
    int64_t now = engine_->clock().NowMs();
    run.status = status;
    run.result = std::string(result);
    run.ended_at_ms = now;
    SW_RETURN_IF_ERROR(engine_->PutRun(run));
    u.applied = true;
    u.status = status;
    if (by_kill) {
      auto d = Enqueue(
          MakeDelivery(run.target, "announce", run_id,
                       "Run " + run_id + " was cancelled by " + actor_key + ". Stop working on it.",
                       actor_key, "subagents"));
      if (!d.ok()) return d.status();
      u.deliveries.push_back(*d);
    }
  }
  std::lock_guard lock(StripeOf(run.requester.session_key));
  SW_RETURN_IF_ERROR(AnnounceToRequester(run, /*individual=*/!by_kill, &u));
  return u;
}

// Announces a finished child to its requester: at once, or — when the requester yielded —
// collected into its yield record and delivered as one announcement when its last running
// child has ended. REQUIRES: the requester's stripe is held.
//
// The yield record is a run (DO NOT CHANGE: persisted) with run_id `yield:<agent>:<key>`,
// kind "yield", status "yielded" while it collects and "ok" once delivered, and extra_json
// {"results": [{"runId", "sessionKey", "label", "status", "result"}...]}.
Status SessionMessaging::AnnounceToRequester(const RunRecord& run, bool individual, RunUpdate* u) {
  auto yielded = engine_->GetRun(YieldRunId(run.requester));
  if (!yielded.ok()) return yielded.status();
  if (*yielded && (*yielded)->status == "yielded") {
    RunRecord mark = std::move(**yielded);
    json::object extra = ParseObject(mark.extra_json);
    if (!extra["results"].is_array()) extra["results"] = json::array();
    extra["results"].as_array().push_back(json::object{{"runId", run.run_id},
                                                       {"sessionKey", run.target.session_key},
                                                       {"label", run.label},
                                                       {"status", run.status},
                                                       {"result", run.result}});
    auto children = ChildRuns(run.requester);
    if (!children.ok()) return children.status();
    bool last = std::none_of(children->begin(), children->end(),
                             [](const RunRecord& r) { return r.status == "running"; });
    std::optional<Delivery> combined;
    if (last) {
      const json::array& results = extra["results"].as_array();
      std::string text = "Results of your sub-agents (" + std::to_string(results.size()) + "):";
      for (std::size_t i = 0; i < results.size(); ++i) {
        const json::object& r = results[i].as_object();
        RunRecord view;
        view.run_id = std::string(r.at("runId").as_string());
        view.target.session_key = std::string(r.at("sessionKey").as_string());
        view.label = std::string(r.at("label").as_string());
        view.status = std::string(r.at("status").as_string());
        view.result = std::string(r.at("result").as_string());
        text += "\n\n" + std::to_string(i + 1) + ". " + AnnounceText(view);
      }
      combined = MakeDelivery(run.requester, "announce", "", text, "", "sessions_yield");
      mark.status = "ok";
      mark.ended_at_ms = engine_->clock().NowMs();
    }
    mark.extra_json = json::serialize(extra);
    SW_RETURN_IF_ERROR(engine_->PutRun(mark));
    if (combined) {
      auto d = Enqueue(*combined);
      if (!d.ok()) return d.status();
      u->deliveries.push_back(*d);
    }
    return Status::OK();
  }
  if (!individual) return Status::OK();
  auto d = Enqueue(MakeDelivery(run.requester, "announce", run.run_id, AnnounceText(run),
                                run.target.session_key, "sessions_spawn"));
  if (!d.ok()) return d.status();
  u->deliveries.push_back(*d);
  return Status::OK();
}

// ---- sessions_yield ----------------------------------------------------------------------------

Result<json::object> SessionMessaging::Yield(const SessionName& caller,
                                             const json::object& params) {
  return Guarded("sessions_yield", [&]() -> Result<json::object> {
    std::optional<std::string> message;
    SW_RETURN_IF_ERROR(Assign(StringParam(params, "message"), &message));
    int64_t running = 0;
    {
      std::lock_guard lock(StripeOf(caller.session_key));
      auto children = ChildRuns(caller);
      if (!children.ok()) return children.status();
      running = std::count_if(children->begin(), children->end(),
                              [](const RunRecord& r) { return r.status == "running"; });
      if (running > 0) {
        auto existing = engine_->GetRun(YieldRunId(caller));
        if (!existing.ok()) return existing.status();
        RunRecord mark;
        if (*existing && (*existing)->status == "yielded") mark = std::move(**existing);
        if (mark.run_id.empty()) {
          mark.run_id = YieldRunId(caller);
          mark.kind = "yield";
          mark.requester = caller;
          mark.status = "yielded";
          mark.created_at_ms = engine_->clock().NowMs();
          mark.extra_json = R"({"results":[]})";
        }
        SW_RETURN_IF_ERROR(engine_->PutRun(mark));
      }
    }
    std::string text = message.value_or(
        running > 0 ? "Turn yielded. The results of your " + std::to_string(running) +
                          " running sub-agent(s) arrive together as your next message."
                    : std::string("Turn yielded. No sub-agents are running."));
    return json::object{{"status", "yielded"}, {"message", text}, {"waitingFor", running}};
  });
}

// ---- subagents (answers documented in the header) -----------------------------------------

namespace {

struct ChildList {
  std::vector<RunRecord> active;
  std::vector<RunRecord> recent;
  std::vector<RunRecord> all;  // every child run of the caller, for run id / key targets

  const RunRecord* At(std::size_t index) const {  // 1-based over active then recent
    if (index >= 1 && index <= active.size()) return &active[index - 1];
    if (index > active.size() && index <= active.size() + recent.size()) {
      return &recent[index - active.size() - 1];
    }
    return nullptr;
  }
};

ChildList SortChildren(std::vector<RunRecord> runs, int64_t now, int64_t recent_ms) {
  ChildList list;
  for (const RunRecord& r : runs) {
    if (r.status == "running") {
      list.active.push_back(r);
    } else if (r.ended_at_ms >= now - recent_ms) {
      list.recent.push_back(r);
    }
  }
  std::sort(list.active.begin(), list.active.end(), [](const RunRecord& a, const RunRecord& b) {
    return std::tie(a.created_at_ms, a.run_id) < std::tie(b.created_at_ms, b.run_id);
  });
  std::sort(list.recent.begin(), list.recent.end(), [](const RunRecord& a, const RunRecord& b) {
    return std::tie(b.ended_at_ms, b.run_id) < std::tie(a.ended_at_ms, a.run_id);
  });
  list.all = std::move(runs);
  return list;
}

Result<RunRecord> ResolveChild(const ChildList& list, const std::string& target) {
  std::string t = Trim(target);
  if (t.empty()) return Status::InvalidArgument("Missing subagent target.");
  if (t == "last") {
    const RunRecord* newest = nullptr;
    for (const auto* group : {&list.active, &list.recent}) {
      for (const RunRecord& r : *group) {
        if (!newest || r.created_at_ms > newest->created_at_ms) newest = &r;
      }
    }
    if (newest) return *newest;
  } else if (t.size() <= 6 && t.find_first_not_of("0123456789") == std::string::npos) {
    if (const RunRecord* r = list.At(std::stoul(t))) return *r;
  } else {
    for (const RunRecord& r : list.all) {
      if (r.run_id == t) return r;
    }
    const RunRecord* by_key = nullptr;  // the newest run of that child session
    for (const RunRecord& r : list.all) {
      if (r.target.session_key == t && (!by_key || r.created_at_ms > by_key->created_at_ms)) {
        by_key = &r;
      }
    }
    if (by_key) return *by_key;
    std::string label = Lower(t);
    for (const auto* group : {&list.active, &list.recent}) {
      std::vector<const RunRecord*> hits;
      for (const RunRecord& r : *group) {
        if (!r.label.empty() && Lower(r.label) == label) hits.push_back(&r);
      }
      if (hits.size() > 1) return Status::InvalidArgument("Ambiguous subagent label: " + t);
      if (hits.size() == 1) return *hits[0];
    }
  }
  return Status::NotFound("Unknown subagent session: " + t);
}

json::object ChildRow(const RunRecord& r, std::size_t index, int64_t now) {
  json::object extra = ParseObject(r.extra_json);
  json::object o;
  o["index"] = index;
  o["runId"] = r.run_id;
  o["sessionKey"] = r.target.session_key;
  if (!r.label.empty()) o["label"] = r.label;
  o["task"] = r.task.size() > 200 ? r.task.substr(0, 200) + "…" : r.task;
  o["status"] = r.status;
  const json::value* runtime = extra.if_contains("runtime");
  o["runtime"] = runtime && runtime->is_string() ? runtime->as_string() : json::string("subagent");
  if (const json::value* model = extra.if_contains("model"); model && model->is_string()) {
    o["model"] = *model;
  }
  o["createdAt"] = r.created_at_ms;
  if (r.ended_at_ms > 0) o["endedAt"] = r.ended_at_ms;
  o["runtimeMs"] = (r.ended_at_ms > 0 ? r.ended_at_ms : now) - r.created_at_ms;
  return o;
}

json::object NotRunning(const char* action, const RunRecord& run) {
  return json::object{
      {"status", "done"},
      {"action", action},
      {"runId", run.run_id},
      {"sessionKey", run.target.session_key},
      {"text", "Subagent " + ChildName(run) + " is not running (status " + run.status + ")."}};
}

}  // namespace

Result<json::object> SessionMessaging::Subagents(const SessionName& caller,
                                                 const json::object& params) {
  return Guarded("subagents", [&]() -> Result<json::object> {
    std::optional<std::string> action, target;
    std::optional<int64_t> recent_minutes;
    SW_RETURN_IF_ERROR(Assign(EnumParam(params, "action", {"list", "steer", "kill"},
                                        "action must be one of list, steer, kill"),
                              &action));
    SW_RETURN_IF_ERROR(Assign(StringParam(params, "target"), &target));
    SW_RETURN_IF_ERROR(Assign(IntegerParam(params, "recentMinutes", 1, 1440), &recent_minutes));
    const json::value* message = params.if_contains("message");
    if (message != nullptr && !message->is_null() && !message->is_string()) {
      return Status::InvalidArgument("message must be a string");
    }
    int64_t recent_ms = recent_minutes ? *recent_minutes * 60000 : options_.recent_window_ms;
    std::string act = action.value_or("list");
    if (act == "list") return ListChildren(caller, recent_ms);
    if (!target) return Status::InvalidArgument("Missing subagent target.");
    if (act == "kill") return Kill(caller, *target, recent_ms);
    std::string text = message && message->is_string() ? std::string(message->as_string()) : "";
    if (Trim(text).empty()) return Status::InvalidArgument("Missing steer message.");
    std::size_t chars = CountChars(text);
    if (chars > kMaxSteerChars) {
      return Status::InvalidArgument("Message too long (" + std::to_string(chars) +
                                     " chars, max 4000).");
    }
    return Steer(caller, *target, text, recent_ms);
  });
}

Result<json::object> SessionMessaging::ListChildren(const SessionName& caller, int64_t recent_ms) {
  auto runs = ChildRuns(caller);
  if (!runs.ok()) return runs.status();
  int64_t now = engine_->clock().NowMs();
  ChildList list = SortChildren(std::move(*runs), now, recent_ms);
  json::array active, recent;
  std::string text;
  std::size_t index = 0;
  for (const auto& [group, rows] : {std::pair{&list.active, &active}, {&list.recent, &recent}}) {
    for (const RunRecord& r : *group) {
      rows->push_back(ChildRow(r, ++index, now));
      text += std::to_string(index) + ". [" + r.status + "] " + ChildName(r) + " (run " + r.run_id +
              ")\n";
    }
  }
  if (text.empty()) text = "no subagents.";
  json::object o;
  o["status"] = "ok";
  o["action"] = "list";
  o["requesterSessionKey"] = caller.session_key;
  o["total"] = index;
  o["active"] = std::move(active);
  o["recent"] = std::move(recent);
  o["text"] = Trim(text);
  return o;
}

Result<json::object> SessionMessaging::Steer(const SessionName& caller, const std::string& target,
                                             const std::string& message, int64_t recent_ms) {
  auto runs = ChildRuns(caller);
  if (!runs.ok()) return runs.status();
  auto child =
      ResolveChild(SortChildren(std::move(*runs), engine_->clock().NowMs(), recent_ms), target);
  if (!child.ok()) return child.status();
  std::vector<Delivery> sent;
  json::object out;
  {
    std::lock_guard lock(StripeOf(child->run_id));
    auto stored = engine_->GetRun(child->run_id);
    if (!stored.ok()) return stored.status();
    if (!*stored) return Status::NotFound("Unknown subagent session: " + Trim(target));
    RunRecord run = std::move(**stored);
    if (run.status != "running") return NotRunning("steer", run);
    int64_t now = engine_->clock().NowMs();
    out = json::object{
        {"action", "steer"}, {"runId", run.run_id}, {"sessionKey", run.target.session_key}};
    if (run.last_steer_at_ms > 0 && now - run.last_steer_at_ms < options_.steer_interval_ms) {
      out["status"] = "rate_limited";
      out["error"] = "Steer rate limit: at most one steer every " +
                     std::to_string(options_.steer_interval_ms / 1000) + " s per run (retry in " +
                     std::to_string(options_.steer_interval_ms - (now - run.last_steer_at_ms)) +
                     " ms).";
      return out;
    }
    run.last_steer_at_ms = now;
    SW_RETURN_IF_ERROR(engine_->PutRun(run));
    auto d = Enqueue(
        MakeDelivery(run.target, "steer", run.run_id, message, caller.session_key, "subagents"));
    if (!d.ok()) return d.status();
    sent.push_back(*d);
    out["status"] = "accepted";
    out["deliveryId"] = d->id;
  }
  Publish(sent);
  return out;
}

// Cancels a running child and, depth first, the runs it spawned itself. Returns how many
// runs it cancelled.
Result<int64_t> SessionMessaging::KillTree(const std::string& run_id, const std::string& killer,
                                           int depth) {
  auto u = FinishSpawnRun(run_id, "cancelled", "killed by " + killer, killer, /*by_kill=*/true);
  if (!u.ok()) return u.status();
  int64_t killed = u->applied ? 1 : 0;
  Deliver(std::move(*u), nullptr);
  auto run = engine_->GetRun(run_id);
  if (!run.ok()) return run.status();
  if (!*run || depth >= 32) return killed;
  auto grandchildren = ChildRuns((*run)->target);
  if (!grandchildren.ok()) return grandchildren.status();
  for (const RunRecord& g : *grandchildren) {
    if (g.status != "running") continue;
    auto n = KillTree(g.run_id, killer, depth + 1);
    if (!n.ok()) return n.status();
    killed += *n;
  }
  return killed;
}

Result<json::object> SessionMessaging::Kill(const SessionName& caller, const std::string& target,
                                            int64_t recent_ms) {
  auto runs = ChildRuns(caller);
  if (!runs.ok()) return runs.status();
  ChildList list = SortChildren(std::move(*runs), engine_->clock().NowMs(), recent_ms);
  std::string t = Trim(target);
  auto killed_text = [](int64_t n) { return "killed " + std::to_string(n) + " subagent(s)."; };
  if (t == "all" || t == "*") {
    if (list.active.empty()) {
      return json::object{{"status", "ok"},
                          {"action", "kill"},
                          {"killed", 0},
                          {"text", "no running subagents to kill."}};
    }
    int64_t killed = 0;
    for (const RunRecord& r : list.active) {
      auto n = KillTree(r.run_id, caller.session_key, 0);
      if (!n.ok()) return n.status();
      killed += *n;
    }
    return json::object{
        {"status", "ok"}, {"action", "kill"}, {"killed", killed}, {"text", killed_text(killed)}};
  }
  auto child = ResolveChild(list, t);
  if (!child.ok()) return child.status();
  if (child->status != "running") return NotRunning("kill", *child);
  auto killed = KillTree(child->run_id, caller.session_key, 0);
  if (!killed.ok()) return killed.status();
  return json::object{{"status", "ok"},         {"action", "kill"},
                      {"runId", child->run_id}, {"sessionKey", child->target.session_key},
                      {"killed", *killed},      {"text", killed_text(*killed)}};
}

// ---- every tool ------------------------------------------------------------------------------

Result<ToolAnswer> SessionMessaging::CallTool(std::string_view tool, const SessionName& caller,
                                              const json::object& params,
                                              CallCompletion on_complete) {
  auto depth = SpawnDepth(*engine_, caller);
  if (!depth.ok()) return depth.status();
  SW_RETURN_IF_ERROR(CheckToolAllowed(options_.tool_policy, tool, *depth));
  if (tool == "sessions_send") return Send(caller, params, std::move(on_complete));
  Result<json::object> result = Status::NotFound("Unknown tool: " + std::string(tool));
  if (tool == "session_status") {
    result = SessionStatus(*engine_, options_.sessions, caller, params);
  } else if (tool == "sessions_list") {
    result = SessionsList(*engine_, options_.sessions, caller, params);
  } else if (tool == "sessions_history") {
    result = SessionsHistory(*engine_, options_.sessions, caller, params);
  } else if (tool == "sessions_spawn") {
    result = Spawn(caller, params);
  } else if (tool == "subagents") {
    result = Subagents(caller, params);
  } else if (tool == "sessions_yield") {
    result = Yield(caller, params);
  }
  if (!result.ok()) return result.status();
  ToolAnswer answer;
  answer.result = std::move(*result);
  return answer;
}

}  // namespace statewatch::tools
