// SessionMessaging: options, lifecycle, the plumbing every tool shares, and CallTool. The
// tools themselves are in session_messaging_{send,spawn,subagents}.cc; the gateway's JSON in
// session_messaging_json.cc (see session_messaging_internal.h).
#include "tools/session_messaging.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "base/hex.h"
#include "base/trace_context.h"
#include "codecs/json_fields.h"
#include "engine/agent_partition.h"
#include "statewatch/request_ids.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"
#include "tools/session_history.h"
#include "tools/session_messaging_internal.h"

namespace statewatch::tools {
namespace json = boost::json;

namespace messaging_internal {

std::string NewUuidV4() {
  thread_local std::random_device rd;
  unsigned char b[16];
  for (int i = 0; i < 16; i += 4) {
    uint32_t w = rd();
    std::memcpy(b + i, &w, 4);
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0F) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3F) | 0x80);  // RFC 4122 variant
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    hex::AppendByte(b[i], &out);
  }
  return out;
}

Result<WatcherListing> UnsealedRegister(Engine& engine, const std::string& watcher,
                                        uint32_t partition) {
  ArmRequestSeal unsealed(nullptr);  // the seal is back on the thread when this returns
  WatcherDirectory directory(engine);
  // As a node's registration (server/watcher_sagas.h): a cursor made while a removal of the
  // watcher is still clearing partitions could be cleared by it after this request answered.
  auto pending = directory.SagaOf(watcher);
  if (!pending.ok()) return pending.status();
  if (pending->has_value()) {
    return Status::Busy(WatcherSagaPendingMessage(**pending) + "; retry once it has finished");
  }
  return directory.Register(watcher, partition);
}

Result<RunRecord> KnownRun(const Engine& engine, const std::string& run_id) {
  auto run = SessionTablesView(engine).GetRun(run_id);
  if (!run.ok()) return run.status();
  if (!*run) return Status::NotFound("Unknown runId: " + run_id);
  return std::move(**run);
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

Result<std::string> RequiredTextParam(const json::object& params, const char* name) {
  const json::value* v = Param(params, name);
  if (v == nullptr) return Status::InvalidArgument(std::string(name) + " is required");
  if (!v->is_string()) {
    return Status::InvalidArgument(std::string(name) + " must be a string (got " +
                                   DescribeJson(*v) + ")");
  }
  std::string text(v->as_string());
  if (text.size() > kMaxMessageBytes) {
    return Status::InvalidArgument(std::string(name) + " is too large (" +
                                   std::to_string(text.size()) + " bytes, max " +
                                   std::to_string(kMaxMessageBytes) + ")");
  }
  return text;
}

bool StopsLoop(std::string_view reply) {
  std::string t = Trim(reply);
  return t.empty() || t == kReplySkip;
}

Delivery MakeDelivery(const SessionName& to, std::string type, const std::string& run_id,
                      std::string text, const std::string& source_key, std::string source_tool,
                      std::string traceparent) {
  Delivery d;
  d.agent_id = to.agent_id;
  d.type = std::move(type);
  d.session_key = to.session_key;
  d.run_id = run_id;
  d.text = std::move(text);
  d.source_session_key = source_key;
  d.source_tool = std::move(source_tool);
  d.traceparent = std::move(traceparent);
  return d;
}

// An edge (HTTP, MCP): a trace context that does not parse is dropped, never refused.
std::string CallerTrace(std::string_view traceparent) {
  return trace::NormalizeTraceparent(traceparent).value_or("");
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

SpawnOptions SpawnOptionsOf(const RunRecord& run) {
  if (run.spawn) return *run.spawn;
  SpawnOptions o;
  json::object extra = ParseObject(run.extra_json);
  auto str = [&](std::string_view k, std::string fallback) {
    const json::value* v = extra.if_contains(k);
    return v && v->is_string() ? std::string(v->as_string()) : fallback;
  };
  o.runtime = str("runtime", o.runtime);
  o.model = str("model", "");
  o.thinking = str("thinking", "");
  o.sandbox = str("sandbox", o.sandbox);
  o.context = str("context", o.context);
  const json::value* thread = extra.if_contains("thread");
  o.thread = thread && thread->is_bool() && thread->as_bool();
  const json::value* depth = extra.if_contains("depth");
  o.depth = depth ? static_cast<int>(IntegerValue(*depth, false).value_or(1)) : 1;
  o.label = run.label;
  return o;
}

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

}  // namespace messaging_internal

using namespace messaging_internal;  // NOLINT: the implementation's own helpers

// ---- options -----------------------------------------------------------------------------------

Status ValidateMessagingOptions(const MessagingOptions& options) {
  if (options.max_ping_pong_turns < 0 || options.max_ping_pong_turns > kMaxPingPongTurnsLimit) {
    return Status::InvalidArgument(
        "session.agentToAgent.maxPingPongTurns must be an integer from 0 to 20 (got " +
        std::to_string(options.max_ping_pong_turns) + ")");
  }
  if (options.steer_interval_ms < 0 || options.recent_window_ms < 0) {
    return Status::InvalidArgument("steer interval and recent window must not be negative");
  }
  SW_RETURN_IF_ERROR(ValidateGuardOptions(options.guards));
  return ValidateToolPolicy(options.tool_policy);
}

// ---- lifecycle, plumbing ---------------------------------------------------------------------

SessionMessaging::SessionMessaging(Engine* engine, MessagingOptions options)
    : engine_(engine),
      guards_(std::make_unique<LoopGuards>(&engine->clock(), options.guards)),
      options_(std::make_shared<const MessagingOptions>(std::move(options))) {}

Result<std::unique_ptr<SessionMessaging>> SessionMessaging::Open(Engine* engine,
                                                                 MessagingOptions options) {
  SW_RETURN_IF_ERROR(ValidateMessagingOptions(options));
  std::unique_ptr<SessionMessaging> m(new SessionMessaging(engine, std::move(options)));
  SW_RETURN_IF_ERROR(m->LoadDeadlines());
  return m;
}

Status SessionMessaging::Reconfigure(const MessagingOptions& options) {
  SW_RETURN_IF_ERROR(ValidateMessagingOptions(options));
  std::lock_guard lock(policy_mu_);
  auto next = std::make_shared<MessagingOptions>(*options_);
  next->sessions = options.sessions;
  next->tool_policy = options.tool_policy;
  next->max_ping_pong_turns = options.max_ping_pong_turns;
  next->guards = options.guards;
  guards_->Reconfigure(options.guards);
  options_ = std::move(next);
  return Status::OK();
}

std::shared_ptr<const MessagingOptions> SessionMessaging::Policy() const {
  std::lock_guard lock(policy_mu_);
  return options_;
}

MessagingOptions SessionMessaging::options() const { return *Policy(); }

std::mutex& SessionMessaging::StripeOf(std::string_view key) const {
  return stripes_[std::hash<std::string_view>{}(key) % stripes_.size()];
}

void SessionMessaging::Publish(const std::vector<Delivery>& deliveries) const {
  auto policy = Policy();  // on_delivery and on_mail never change; the snapshot keeps them
  bool mail = false;
  for (const Delivery& d : deliveries) {
    // A delivery without an id is session mail: its destination publishes it once applied.
    if (d.id == 0) {
      mail = true;
    } else if (policy->on_delivery) {
      policy->on_delivery(d);
    }
  }
  if (mail && policy->on_mail) policy->on_mail();
}

Status SessionMessaging::StoreRun(const RunRecord& run) {
  SW_RETURN_IF_ERROR(SessionTables(*engine_).PutRun(run));
  guards_->TrackRun(run);
  return Status::OK();
}

Status SessionMessaging::RefuseByGuard(const GuardRefusal& refusal, const char* tool,
                                       const SessionName& caller, const SessionName* target,
                                       std::string_view traceparent) {
  const char* guard = GuardName(refusal.guard);
  EventInput e;
  e.session_key = caller.session_key;
  e.agent_id = caller.agent_id;
  e.kind = "guard_refused";
  e.actor_type = ActorType::kSystem;
  e.summary = std::string(tool) + (target ? " to " + target->session_key : std::string()) +
              " refused by loop guard " + guard;
  json::object payload{{"guard", guard}, {"tool", tool}, {"setting", refusal.setting}};
  if (target != nullptr) payload["target"] = target->session_key;
  e.payload_json = json::serialize(payload);
  // One event per guard, caller and target a second: a loop hammering a closed guard is
  // counted in /metrics, not written into the journal once per attempt.
  std::string who = caller.agent_id + '\0' + caller.session_key + '\0' +
                    (target ? target->agent_id + '\0' + target->session_key : std::string());
  uint64_t h = 1469598103934665603ULL;
  for (char c : who) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  std::string digest;
  for (int shift = 56; shift >= 0; shift -= 8) {
    hex::AppendByte(static_cast<unsigned char>(h >> shift), &digest);
  }
  e.dedupe_key = "guard-refused:" + std::string(guard) + ":" + digest + ":" +
                 std::to_string(engine_->clock().NowMs() / 1000);
  e.traceparent = CallerTrace(traceparent);
  // Best effort: the refusal stands even when the journal cannot take the event.
  (void)engine_->Record(e);
  return Status::ResourceExhausted(refusal.message);
}

TranscriptMessage SessionMessaging::PrepareDelivery(Delivery* delivery) const {
  delivery->created_at_ms = engine_->clock().NowMs();
  if (delivery->source_channel.empty() && !delivery->source_session_key.empty()) {
    auto source = ResolveSession(delivery->source_session_key, "", delivery->agent_id);
    if (source.ok()) delivery->source_channel = ChannelOf(*source);
  }
  TranscriptMessage m;
  m.role = "user";
  m.content_json = json::serialize(json::value(delivery->text));
  m.timestamp_ms = delivery->created_at_ms;
  m.provenance = MessageProvenance{"inter_session", delivery->source_session_key,
                                   delivery->source_tool, delivery->source_channel,
                                   delivery->run_id};
  return m;
}

// The transcript entry and the delivery in one group: a gateway that takes the delivery and
// reads the session's history already finds the message there, marked with where it came
// from, and a crash leaves both or neither.
Result<Delivery> SessionMessaging::Enqueue(Delivery delivery) {
  TranscriptMessage m = PrepareDelivery(&delivery);
  HomeGroup group;
  group.deliveries.emplace_back(std::move(delivery), std::move(m));
  auto sent = CommitHome(std::move(group));
  if (!sent.ok()) return sent.status();
  return std::move(sent->front());
}

// ---- cluster mode: session mail --------------------------------------------------------------

Result<std::optional<uint32_t>> SessionMessaging::RemotePartition(
    const SessionName& session) const {
  Status owned = SessionTablesView(*engine_).CheckOwned(session);
  if (owned.ok()) return std::optional<uint32_t>();
  auto policy = Policy();
  if (owned.code() != Status::Code::kMisdirected || !policy->cross_partition ||
      policy->partitions <= 1) {
    return owned;
  }
  auto name = ResolveSession(session.session_key, session.agent_id);
  if (!name.ok()) return name.status();
  return std::optional<uint32_t>(engine::PartitionOfAgent(name->agent_id, policy->partitions));
}

SessionMail SessionMessaging::NewMail(Delivery delivery, uint32_t partition,
                                      const std::string& step) const {
  (void)PrepareDelivery(&delivery);  // the time and source channel, known only here
  SessionMail mail;
  mail.key = delivery.run_id + ":" + step;
  mail.partition = partition;
  mail.delivery = std::move(delivery);
  return mail;
}

Status SessionMessaging::PostMail(Delivery delivery, uint32_t partition, const std::string& step,
                                  const std::string& watcher, const RunRecord* run,
                                  uint64_t watcher_listing) {
  SessionMail mail = NewMail(std::move(delivery), partition, step);
  mail.watcher = watcher;
  mail.watcher_listing = watcher_listing;
  SW_RETURN_IF_ERROR(SessionMailTables(*engine_).Post(mail, run));
  if (run != nullptr) guards_->TrackRun(*run);
  return Status::OK();
}

Result<std::vector<Delivery>> SessionMessaging::CommitHome(HomeGroup group) {
  std::vector<RunRecord> runs = group.runs;
  auto sent = SessionMailTables(*engine_).Commit(std::move(group));
  if (!sent.ok()) return sent.status();
  for (const RunRecord& r : runs) guards_->TrackRun(r);
  return sent;
}

Result<bool> SessionMessaging::ApplyMail(const SessionMail& mail) {
  return Guarded("session mail", [&]() -> Result<bool> {
    SW_RETURN_IF_ERROR(CheckSessionMail(mail));
    SessionName to{mail.delivery.agent_id, mail.delivery.session_key};
    SW_RETURN_IF_ERROR(SessionTablesView(*engine_).CheckOwned(to));
    SessionMailTables tables(*engine_);
    SW_RETURN_IF_ERROR(CascadeStop(mail));  // takes run stripes: before the key's lock
    std::lock_guard lock(StripeOf(mail.key));  // one apply of a key at a time
    auto applied = tables.Applied(mail.key);
    if (!applied.ok()) return applied.status();
    if (*applied) return false;
    // The watch first: setting it again after a lost acknowledgement changes nothing, and
    // it is in place before the gateway can see the message.
    if (!mail.watcher.empty()) {
      // A reset of the watcher that began after this send listed us cleared this partition
      // already; the cursor would outlive it, unlisted at the home. The send came first: no
      // watch (a reset not yet here removes the cursor when it comes).
      auto reset = WatcherDirectory(*engine_).ClearedSince(mail.watcher, mail.watcher_listing);
      if (!reset.ok()) return reset.status();
      if (!*reset) {
        auto watched = engine_->Watch(mail.watcher, to);
        if (!watched.ok() && watched.status().code() != Status::Code::kInvalidArgument) {
          return watched.status();
        }
      }
    }
    // A spawn's child row and child_spawned, or an event: before the group, repeatable.
    SW_RETURN_IF_ERROR(ApplyChildAndEvent(mail));
    std::vector<TranscriptMessage> messages = mail.transcript;
    if (mail.kind != kMailKindEvent) {
      // The message as the home partition rendered it (time, source channel, provenance).
      TranscriptMessage m;
      m.role = "user";
      m.content_json = json::serialize(json::value(mail.delivery.text));
      m.timestamp_ms = mail.delivery.created_at_ms;
      m.provenance = MessageProvenance{"inter_session", mail.delivery.source_session_key,
                                       mail.delivery.source_tool, mail.delivery.source_channel,
                                       mail.delivery.run_id};
      messages.push_back(std::move(m));
    }
    std::optional<Delivery> d;
    auto done = tables.Apply(mail, std::move(messages), &d);
    if (!done.ok()) return done.status();
    if (d) Publish({*d});
    return *done;
  });
}

std::string SessionMessaging::ChannelOf(const SessionName& session) const {
  auto record = SessionTablesView(*engine_).GetSession(session);
  if (!record.ok() || !record->has_value()) return "";
  const SessionRecord& r = **record;
  if (r.last_channel && !r.last_channel->empty()) return *r.last_channel;
  return r.channel.value_or("");
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
  if (update.mailed) {
    auto policy = Policy();
    if (policy->on_mail) policy->on_mail();
  }
  if (update.call_result) {
    if (CallCompletion done = TakeCompletion(update.run_id)) done(*update.call_result);
  }
  if (out != nullptr) out->push_back(std::move(update));
}

Result<std::vector<RunRecord>> SessionMessaging::ChildRuns(const SessionName& requester) const {
  auto runs = SessionTablesView(*engine_).ListRuns();
  if (!runs.ok()) return runs.status();
  std::vector<RunRecord> out;
  for (RunRecord& r : *runs) {
    if (r.kind == "spawn" && r.requester == requester) out.push_back(std::move(r));
  }
  return out;
}

// ---- every tool ------------------------------------------------------------------------------

Result<ToolAnswer> SessionMessaging::CallTool(std::string_view tool, const SessionName& caller,
                                              const json::object& params,
                                              CallCompletion on_complete, AnswerForm form,
                                              std::string_view traceparent,
                                              const AnswerKnown& answer_known) {
  // Cluster mode: a caller of another partition is served by that partition's owner, whose
  // node holds its registry entry, children and transcript.
  SW_RETURN_IF_ERROR(SessionTablesView(*engine_).CheckOwned(caller));
  auto policy = Policy();
  auto depth = SpawnDepth(*engine_, caller);
  if (!depth.ok()) return depth.status();
  SW_RETURN_IF_ERROR(CheckToolAllowed(policy->tool_policy.ForAgent(caller.agent_id), tool, *depth));
  if (tool == "sessions_send") {
    return Send(caller, params, std::move(on_complete), traceparent, answer_known);
  }
  if (tool == "session_status" && form == AnswerForm::kText) {
    auto text = SessionStatusJson(*engine_, policy->sessions, caller, params);
    if (!text.ok()) return text.status();
    ToolAnswer answer;
    answer.text = std::move(*text);
    return answer;
  }
  Result<json::object> result = Status::NotFound("Unknown tool: " + std::string(tool));
  if (tool == "session_status") {
    result = SessionStatus(*engine_, policy->sessions, caller, params);
  } else if (tool == "sessions_list") {
    result = SessionsList(*engine_, policy->sessions, caller, params);
  } else if (tool == "sessions_history") {
    result = SessionsHistory(*engine_, policy->sessions, caller, params);
  } else if (tool == "sessions_spawn") {
    result = Spawn(caller, params, traceparent, answer_known);
  } else if (tool == "subagents") {
    result = Subagents(caller, params, answer_known);
  } else if (tool == "sessions_yield") {
    result = Yield(caller, params, answer_known);
  }
  if (!result.ok()) return result.status();
  ToolAnswer answer;
  answer.result = std::move(*result);
  return answer;
}

}  // namespace statewatch::tools
