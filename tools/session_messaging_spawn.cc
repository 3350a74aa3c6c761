// SessionMessaging: sessions_spawn, run ends and announcements, sessions_yield.
#include <algorithm>

#include "codecs/json_fields.h"
#include "statewatch/request_ids.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"
#include "tools/session_messaging.h"
#include "tools/session_messaging_internal.h"
#include "tools/tool_profiles.h"
#include "tools/visibility.h"

namespace statewatch::tools {
namespace json = boost::json;
using namespace messaging_internal;  // NOLINT: the implementation's own helpers

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
  SW_RETURN_IF_ERROR(CheckKnownParams(params, "sessions_spawn",
                                      {"task", "label", "runtime", "agentId", "model", "thinking",
                                       "thread", "sandbox", "context"}));
  SpawnParams p;
  SW_RETURN_IF_ERROR(Assign(RequiredTextParam(params, "task"), &p.task));
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

SpawnOptions OptionsOf(const SpawnParams& p, int depth) {
  SpawnOptions o;
  o.runtime = p.runtime.value_or("subagent");
  o.model = p.model.value_or("");
  o.thinking = p.thinking.value_or("");
  o.thread = p.thread.value_or(false);
  o.sandbox = p.sandbox.value_or("inherit");
  o.context = p.context.value_or("isolated");
  o.label = p.label.value_or("");
  o.depth = depth;
  return o;
}

std::string AllowList(const std::vector<std::string>& patterns) {
  if (patterns.empty()) return "none";
  std::string out;
  for (const std::string& p : patterns) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// The caller may spawn at its depth and into `agent`; PermissionDenied naming the key.
Status CheckSpawnAllowed(const ToolPolicy& policy, const SessionName& caller, int depth,
                         const std::string& agent) {
  if (depth >= policy.max_spawn_depth) {
    return Status::PermissionDenied("sessions_spawn is not allowed at this depth (spawn depth " +
                                    std::to_string(depth) + ", " + policy.DepthKey() + "=" +
                                    std::to_string(policy.max_spawn_depth) + ").");
  }
  AgentToAgentPolicy allow{true, policy.allow_agents};
  if (agent != caller.agent_id && (allow.allow.empty() || !allow.MatchesAllow(agent))) {
    return Status::PermissionDenied(
        "agentId is not allowed for sessions_spawn (allowed: " + AllowList(policy.allow_agents) +
        "; " + policy.AllowAgentsKey() + ").");
  }
  return Status::OK();
}

RunRecord NewSpawnRun(const SessionName& caller, const std::string& agent, const SpawnParams& p,
                      int depth, int64_t now) {
  RunRecord run;
  run.run_id = NewUuidV4();
  run.kind = "spawn";
  run.requester = caller;
  run.target = SessionName{agent, "agent:" + agent + ":subagent:" + NewUuidV4()};
  run.label = p.label.value_or("");
  run.task = p.task;
  run.created_at_ms = now;
  run.spawn = OptionsOf(p, depth + 1);
  return run;
}

}  // namespace

Result<json::object> SessionMessaging::Spawn(const SessionName& caller,
                                             const json::object& params,
                                             std::string_view traceparent,
                                             const AnswerKnown& answer_known) {
  return Guarded("sessions_spawn", [&]() -> Result<json::object> {
    auto p = ReadSpawnParams(params);
    if (!p.ok()) return p.status();
    auto depth = SpawnDepth(*engine_, caller);
    if (!depth.ok()) return depth.status();
    ToolPolicy policy = Policy()->tool_policy.ForAgent(caller.agent_id);
    std::string agent = p->agent_id.value_or(caller.agent_id);
    SW_RETURN_IF_ERROR(CheckSpawnAllowed(policy, caller, *depth, agent));
    if (auto refused = guards_->AdmitSpawn(caller)) {
      return RefuseByGuard(*refused, "sessions_spawn", caller, nullptr, traceparent);
    }
    auto caller_record = SessionTablesView(*engine_).GetSession(caller);
    if (!caller_record.ok()) return caller_record.status();
    bool sandboxed = p->sandbox == "require" ||
                     (caller_record->has_value() && (*caller_record)->sandboxed.value_or(false));
    RunRecord run = NewSpawnRun(caller, agent, *p, *depth, engine_->clock().NowMs());
    run.traceparent = CallerTrace(traceparent);
    // Cluster mode: a child of an agent of another partition lives there — created by
    // session mail when cross-partition mail is on, else Misdirected
    // (docs/cluster-internals.md, "Session tools across partitions").
    auto remote = RemotePartition(run.target);
    if (!remote.ok()) return remote.status();
    if (caller_record->has_value()) run.requester_route = (*caller_record)->route();
    const json::object accepted{
        {"status", "accepted"}, {"runId", run.run_id}, {"childSessionKey", run.target.session_key}};

    std::vector<Delivery> sent;
    {
      // The requester's stripe makes the children count and the creation one step.
      std::lock_guard lock(StripeOf(caller.session_key));
      auto children = ChildRuns(caller);
      if (!children.ok()) return children.status();
      auto active = std::count_if(children->begin(), children->end(),
                                  [](const RunRecord& r) { return r.status == "running"; });
      if (active >= policy.max_children_per_agent) {
        return Status::PermissionDenied(
            "sessions_spawn has reached max active children for this session (" +
            std::to_string(active) + "/" + std::to_string(policy.max_children_per_agent) + ", " +
            policy.ChildrenKey() + ").");
      }
      // The answer is known before the spawn's last write and rides on it: the mail's group
      // (the only one the request's record can ride on: the listing is unsealed), or the
      // task's delivery after the child, its run, its event and a fork's transcript.
      if (*remote) {
        if (answer_known) answer_known(accepted);
        SW_RETURN_IF_ERROR(SpawnRemote(caller, run, sandboxed, **remote));
        sent.emplace_back();  // id 0: wakes the forwarder (Publish)
      } else {
        SW_RETURN_IF_ERROR(CreateChild(caller, run, sandboxed));
        if (run.spawn->context == "fork") SW_RETURN_IF_ERROR(ForkTranscript(caller, run.target));
        Delivery task = MakeDelivery(run.target, "task", run.run_id, run.task, caller.session_key,
                                     "sessions_spawn", run.traceparent);
        task.route = run.requester_route;
        task.spawn = run.spawn;
        if (answer_known) answer_known(accepted);
        auto d = Enqueue(std::move(task));
        if (!d.ok()) return d.status();
        sent.push_back(*d);
      }
    }
    Publish(sent);
    return accepted;
  });
}

// Registry entry, run, then the journal: a `child_spawned` never names a run that is not
// stored, and the delivery (last, in Spawn) never names a child that is not registered.
Status SessionMessaging::CreateChild(const SessionName& caller, const RunRecord& run,
                                     bool sandboxed) {
  SW_RETURN_IF_ERROR(SessionTables(*engine_).UpsertSession(ChildRecord(caller, run, sandboxed)));
  SW_RETURN_IF_ERROR(StoreRun(run));
  auto recorded = engine_->Record(ChildSpawned(caller, run));
  return recorded.status();
}

SessionRecord SessionMessaging::ChildRecord(const SessionName& caller, const RunRecord& run,
                                            bool sandboxed) {
  const SpawnOptions& o = *run.spawn;
  SessionRecord child;
  child.name = run.target;
  child.parent_session_key = caller.session_key;
  if (!run.label.empty()) child.label = run.label;
  if (!o.model.empty()) child.model = o.model;
  if (!o.thinking.empty()) child.thinking = o.thinking;
  child.runtime = o.runtime;
  child.sandboxed = sandboxed;
  child.created_at_ms = run.created_at_ms;
  child.updated_at_ms = run.created_at_ms;
  return child;
}

EventInput SessionMessaging::ChildSpawned(const SessionName& caller, const RunRecord& run) {
  EventInput spawned;
  spawned.session_key = run.target.session_key;
  spawned.agent_id = run.target.agent_id;
  spawned.kind = "child_spawned";
  spawned.actor_type = ActorType::kAgent;
  spawned.actor_id = caller.session_key;
  spawned.run_id = run.run_id;
  spawned.summary = "child session spawned";
  spawned.dedupe_key = "child-spawned:" + run.run_id;
  // Seeds the spawner's cursor (docs/semantics.md, "How a watcher starts watching").
  spawned.watchers = {caller.session_key};
  spawned.traceparent = run.traceparent;
  return spawned;
}

// context "fork": the child starts from the requester's conversation. The copies keep their
// roles, content, tool names, usage and provenance; they get the child's own indexes and
// times of the copy (the transcript is the child's history, and it starts now).
Status SessionMessaging::ForkTranscript(const SessionName& from, const SessionName& to) {
  auto messages = SessionTablesView(*engine_).RecentTranscript(from, kMaxForkMessages);
  if (!messages.ok()) return messages.status();
  if (messages->empty()) return Status::OK();
  for (TranscriptMessage& m : *messages) {
    m.index = 0;
    m.timestamp_ms = 0;
  }
  return SessionTables(*engine_).AppendTranscript(to, std::move(*messages));
}

// ---- run ends ----------------------------------------------------------------------------------

Result<RunUpdate> SessionMessaging::OnRunFinish(const std::string& run_id, std::string_view status,
                                                std::string_view result,
                                                const RunAnswer& in_group) {
  if (status != "ok" && status != "error" && status != "timeout" && status != "cancelled") {
    return Status::InvalidArgument("status must be one of ok, error, timeout, cancelled (got \"" +
                                   std::string(status) + "\")");
  }
  auto kind = Guarded("finish", [&]() -> Result<std::string> {
    auto run = KnownRun(*engine_, run_id);
    if (!run.ok()) return run.status();
    return run->kind;
  });
  if (!kind.ok()) return kind.status();
  if (*kind == "spawn") {
    auto update = Guarded("finish", [&]() -> Result<RunUpdate> {
      return FinishSpawnRun(run_id, std::string(status), result, "", /*by_kill=*/false,
                            in_group);
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
    auto run = KnownRun(*engine_, run_id);
    if (!run.ok()) return run.status();
    int64_t now = engine_->clock().NowMs();
    if (status == "ok") return ApplyReply(std::move(*run), result, now, in_group);
    std::string error(result);
    if (error.empty())
      error = "the run of " + run->target.session_key + " ended: " + std::string(status);
    return EndSend(std::move(*run), std::string(status), error, now, in_group);
  });
  if (update.ok()) Deliver(*update, nullptr);
  return update;
}

// Ends a running spawn run: the journal of a local child first (deduplicated by
// `run-terminal:<runId>`), then one commit group — the run's end, the event's mail for a
// child of another partition, a kill's stop, and the requester's announcement (or the yield
// record) — so that a retry after a failure anywhere repeats nothing and loses nothing.
// `actor_key` ("" = the child itself) is the journal's actor; a kill also tells the child
// to stop and announces nothing to the killer.
Result<RunUpdate> SessionMessaging::FinishSpawnRun(const std::string& run_id,
                                                   const std::string& status,
                                                   std::string_view result,
                                                   const std::string& actor_key, bool by_kill,
                                                   const RunAnswer& in_group) {
  RunUpdate u;
  u.run_id = run_id;
  auto first = KnownRun(*engine_, run_id);
  if (!first.ok()) return first.status();
  // The run's stripe and its requester's (the announcement, the yield record), together.
  std::mutex& run_mu = StripeOf(run_id);
  std::mutex& requester_mu = StripeOf(first->requester.session_key);
  std::unique_lock<std::mutex> l1(run_mu, std::defer_lock), l2(requester_mu, std::defer_lock);
  if (&run_mu == &requester_mu) {
    l1.lock();
  } else {
    std::lock(l1, l2);
  }
  auto stored = KnownRun(*engine_, run_id);
  if (!stored.ok()) return stored.status();
  RunRecord run = std::move(*stored);
  u.status = run.status;
  if (run.status != "running") return u;
  EventInput ended;
  ended.session_key = run.target.session_key;
  ended.agent_id = run.target.agent_id;
  ended.actor_type = ActorType::kAgent;
  ended.actor_id = actor_key.empty() ? run.target.session_key : actor_key;
  ended.run_id = run_id;
  ended.dedupe_key = "run-terminal:" + run_id;
  ended.traceparent = run.traceparent;  // the spawn's trace: the run's end belongs to it
  if (status == "ok") {
    ended.kind = "run_completed";
    ended.summary = "child run completed";
  } else {
    // The reference's summaries: the outcome in words, never the result text.
    ended.kind = "run_failed";
    ended.summary = status == "timeout"     ? "child run timed out"
                    : status == "cancelled" ? "child run cancelled"
                                            : "child run failed";
    ended.payload_json = json::serialize(json::object{{"outcome", status}});
  }
  auto remote = RemotePartition(run.target);
  if (!remote.ok()) return remote.status();
  int64_t now = engine_->clock().NowMs();
  HomeGroup group;
  if (*remote) {
    // The child's journal is at its partition: the event goes as mail, in this group.
    ended.occurred_at_ms = now;
    SessionMail mail = NewMail(MakeDelivery(run.target, "", run_id, "", "", "", run.traceparent),
                               **remote, kMailStepEnd);
    mail.kind = kMailKindEvent;
    mail.event = ended;
    group.mails.push_back(std::move(mail));
  } else {
    // A request's X-Request-Id record rides on the group below, with its answer, not on
    // this event: a retry after a crash between the two records no second event (dedupe)
    // and writes the group, where the answer is.
    ArmRequestSeal not_here(nullptr);
    auto recorded = engine_->Record(ended);
    if (!recorded.ok()) return recorded.status();
  }
  run.status = status;
  run.result = std::string(result);
  run.ended_at_ms = now;
  group.runs.push_back(run);
  if (by_kill) {
    Delivery stop =
        MakeDelivery(run.target, "announce", run_id,
                     "Run " + run_id + " was cancelled by " + actor_key + ". Stop working on it.",
                     actor_key, "subagents", run.traceparent);
    if (*remote) {
      group.mails.push_back(NewMail(std::move(stop), **remote, kMailStepStop));
    } else {
      TranscriptMessage m = PrepareDelivery(&stop);
      group.deliveries.emplace_back(std::move(stop), std::move(m));
    }
  }
  SW_RETURN_IF_ERROR(PlanAnnouncement(run, /*individual=*/!by_kill, &group));
  u.mailed = !group.mails.empty();
  u.applied = true;
  u.status = status;
  SW_RETURN_IF_ERROR(CommitRunStep(std::move(group), in_group, &u));
  return u;
}

// The yield record is a run (DO NOT CHANGE: persisted) with run_id `yield:<agent>:<key>`,
// kind "yield", status "yielded" while it collects and "ok" once delivered, and extra_json
// {"results": [{"runId", "sessionKey", "label", "status", "result"}...]}.
Status SessionMessaging::PlanAnnouncement(const RunRecord& run, bool individual,
                                          HomeGroup* group) {
  auto announce = [&](Delivery d) {
    TranscriptMessage m = PrepareDelivery(&d);
    group->deliveries.emplace_back(std::move(d), std::move(m));
  };
  auto yielded = SessionTablesView(*engine_).GetRun(YieldRunId(run.requester));
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
    // `run` ends in the same group: its stored record still says running.
    bool last = std::none_of(children->begin(), children->end(), [&](const RunRecord& r) {
      return r.status == "running" && r.run_id != run.run_id;
    });
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
      // Named after the run that ended last: its end is what released the announcement.
      Delivery combined = MakeDelivery(run.requester, "announce", run.run_id, text,
                                       run.target.session_key, "sessions_yield", run.traceparent);
      combined.route = AnnounceRoute(run);
      announce(std::move(combined));
      mark.status = "ok";
      mark.ended_at_ms = engine_->clock().NowMs();
    }
    mark.extra_json = json::serialize(extra);
    group->runs.push_back(std::move(mark));
    return Status::OK();
  }
  if (!individual) return Status::OK();
  Delivery d = MakeDelivery(run.requester, "announce", run.run_id, AnnounceText(run),
                            run.target.session_key, "sessions_spawn", run.traceparent);
  d.route = AnnounceRoute(run);
  announce(std::move(d));
  return Status::OK();
}

DeliveryRoute SessionMessaging::AnnounceRoute(const RunRecord& run) const {
  DeliveryRoute route = run.requester_route;
  if (route.empty()) {
    auto requester = SessionTablesView(*engine_).GetSession(run.requester);
    if (requester.ok() && requester->has_value()) route = (*requester)->route();
  }
  if (!run.spawn || !run.spawn->thread) return route;
  // Thread-bound: the gateway bound the child to a thread by setting the child's route; the
  // announcement goes back there. Fields the child's route leaves empty keep the requester's.
  auto child = SessionTablesView(*engine_).GetSession(run.target);
  if (!child.ok() || !child->has_value()) return route;
  DeliveryRoute bound = (*child)->route();
  if (!bound.channel.empty()) route.channel = bound.channel;
  if (!bound.to.empty()) route.to = bound.to;
  if (!bound.account_id.empty()) route.account_id = bound.account_id;
  if (!bound.thread_id.empty()) route.thread_id = bound.thread_id;
  return route;
}

// ---- sessions_yield ----------------------------------------------------------------------------

Result<json::object> SessionMessaging::Yield(const SessionName& caller,
                                             const json::object& params,
                                             const AnswerKnown& answer_known) {
  return Guarded("sessions_yield", [&]() -> Result<json::object> {
    SW_RETURN_IF_ERROR(CheckKnownParams(params, "sessions_yield", {"message"}));
    std::optional<std::string> message;
    SW_RETURN_IF_ERROR(Assign(StringParam(params, "message"), &message));
    std::lock_guard lock(StripeOf(caller.session_key));
    auto children = ChildRuns(caller);
    if (!children.ok()) return children.status();
    const int64_t running = std::count_if(children->begin(), children->end(),
                                          [](const RunRecord& r) { return r.status == "running"; });
    std::string text = message.value_or(
        running > 0 ? "Turn yielded. The results of your " + std::to_string(running) +
                          " running sub-agent(s) arrive together as your next message."
                    : std::string("Turn yielded. No sub-agents are running."));
    json::object yielded{{"status", "yielded"}, {"message", text}, {"waitingFor", running}};
    if (running > 0) {
      auto existing = SessionTablesView(*engine_).GetRun(YieldRunId(caller));
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
      if (answer_known) answer_known(yielded);  // the yield record's write is the only one
      SW_RETURN_IF_ERROR(StoreRun(mark));
    }
    return yielded;
  });
}

}  // namespace statewatch::tools
