// SessionMessaging: sessions_send — the send state machine, replies, timeouts.
#include <algorithm>

#include "codecs/json_fields.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"
#include "tools/session_history.h"
#include "tools/session_messaging.h"
#include "tools/session_messaging_internal.h"
#include "tools/visibility.h"

namespace statewatch::tools {
namespace json = boost::json;
using namespace messaging_internal;  // NOLINT: the implementation's own helpers

// ---- the send state machine ------------------------------------------------------------------

namespace {

using Phase = SendRunState::Phase;

// Send runs written before RunRecord::send existed kept their state as JSON in extra_json
// (field names as below); they still time out and take replies after an upgrade.
SendRunState LegacyState(const RunRecord& run) {
  json::object o = ParseObject(run.extra_json);
  auto str = [&](std::string_view k) {
    const json::value* v = o.if_contains(k);
    return v && v->is_string() ? std::string(v->as_string()) : std::string();
  };
  auto num = [&](std::string_view k) -> int64_t {
    const json::value* v = o.if_contains(k);
    return v ? IntegerValue(*v, /*allow_strings=*/false).value_or(0) : 0;
  };
  auto flag = [&](std::string_view k) {
    const json::value* v = o.if_contains(k);
    return v && v->is_bool() && v->as_bool();
  };
  SendRunState s;
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

SendRunState StateOf(const RunRecord& run) { return run.send ? *run.send : LegacyState(run); }

// What a reply or an end starts from: the run's state, the update that says nothing changed
// (returned as it is when the run is done), and whether it completes the parked call.
struct SendStep {
  SendRunState s;
  RunUpdate u;
  bool completes_call = false;
};
SendStep BeginStep(const RunRecord& run) {
  SendStep step{StateOf(run), RunUpdate{}, false};
  step.u.run_id = run.run_id;
  step.u.status = run.status;
  step.completes_call = step.s.phase == Phase::kAwaiting;
  return step;
}

int64_t TurnTimeoutMs(const SendRunState& s) {
  return s.timeout_ms > 0 ? s.timeout_ms : kDefaultSendTimeoutSeconds * 1000;
}

}  // namespace

Status SessionMessaging::LoadDeadlines() {
  auto runs = SessionTablesView(*engine_).ListRuns();
  if (!runs.ok()) return runs.status();
  for (const RunRecord& run : *runs) {
    guards_->TrackRun(run);
    if (run.kind != "send") continue;
    SendRunState s = StateOf(run);
    if (s.phase != Phase::kDone && s.deadline_ms > 0) SetDeadline(run.run_id, s.deadline_ms);
  }
  return Status::OK();
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
  SW_RETURN_IF_ERROR(
      CheckKnownParams(params, "sessions_send",
                       {"sessionKey", "label", "agentId", "message", "timeoutSeconds", "watch"}));
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
  SW_RETURN_IF_ERROR(Assign(RequiredTextParam(params, "message"), &p.message));
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
  auto all = SessionTablesView(engine).ListSessions();
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
                                          CallCompletion on_complete,
                                          std::string_view traceparent,
                                          const AnswerKnown& answer_known) {
  return Guarded("sessions_send", [&]() -> Result<ToolAnswer> {
    auto p = ReadSendParams(params);
    if (!p.ok()) return p.status();
    if (p->session_key && ThreadParentKey(*p->session_key)) {
      return Status::InvalidArgument(kThreadSendRefusal);
    }
    // Cluster mode: a full key of another partition's session is taken as it is — only the
    // destination could say whether the session exists (docs/cluster-internals.md,
    // "Session tools across partitions").
    Result<SessionName> target = Status::NotFound("no target");
    std::optional<SessionName> remote_key;
    if (p->session_key) {
      auto name = ResolveSession(Trim(*p->session_key), "", caller.agent_id);
      if (name.ok()) {
        auto where = RemotePartition(*name);
        if (where.ok() && *where) remote_key = *name;
      }
    }
    if (remote_key) {
      target = *remote_key;
    } else {
      target = SendTarget(*engine_, caller, *p);
    }
    if (!target.ok()) return target.status();
    // Cluster mode: another partition's session (by key, label or agentId) is Misdirected,
    // unless cross-partition mail is on (docs/cluster-internals.md,
    // "Session tools across partitions"): Dispatch finds it again.
    auto remote = RemotePartition(*target);
    if (!remote.ok()) return remote.status();
    if (ThreadParentKey(target->session_key)) return Status::InvalidArgument(kThreadSendRefusal);
    auto policy = Policy();
    Status access =
        CheckSessionAccess(*engine_, policy->sessions, SessionAction::kSend, caller, *target);
    if (access.code() == Status::Code::kPermissionDenied) {
      ToolAnswer refused;
      refused.result = json::object{{"runId", NewUuidV4()},
                                    {"status", "forbidden"},
                                    {"error", access.message()},
                                    {"sessionKey", target->session_key}};
      return refused;
    }
    SW_RETURN_IF_ERROR(access);
    if (auto refused = guards_->AdmitSend(caller, *target, p->message,
                                          /*opens_run=*/p->timeout_seconds > 0)) {
      return RefuseByGuard(*refused, "sessions_send", caller, &*target, traceparent);
    }
    return Dispatch(caller, *target, p->message, p->timeout_seconds, p->watch,
                    policy->max_ping_pong_turns, std::move(on_complete), traceparent,
                    answer_known);
  });
}

Result<ToolAnswer> SessionMessaging::Dispatch(const SessionName& caller, const SessionName& target,
                                              const std::string& message, int64_t timeout_seconds,
                                              bool watch, int max_turns,
                                              CallCompletion on_complete,
                                              std::string_view traceparent,
                                              const AnswerKnown& answer_known) {
  int64_t now = engine_->clock().NowMs();
  SendRunState state;
  state.max_turns = max_turns;
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
  run.send = state;
  run.traceparent = CallerTrace(traceparent);

  auto remote = RemotePartition(target);
  if (!remote.ok()) return remote.status();
  std::vector<Delivery> sent;
  if (*remote) {
    // Cluster mode (docs/cluster-internals.md, "Session tools across partitions"): the run
    // here, the message (and the watch) as mail to the target's partition — one group, so a
    // run never exists without its mail.
    std::lock_guard lock(StripeOf(run.run_id));
    if (watch) {
      state.watched = true;  // set by the destination when the message lands, exactly once
      run.send = state;
    }
    if (state.deadline_ms > 0) {
      SetDeadline(run.run_id, state.deadline_ms);
      if (on_complete) {
        std::lock_guard waits(waits_mu_);
        completions_[run.run_id] = std::move(on_complete);
      }
    }
    uint64_t listing = 0;
    if (watch) {
      // The caller's watcher directory lists the target's partition before the cursor can
      // exist there (docs/cluster-internals.md, "Watchers across partitions": a superset,
      // never a subset), so that a peek or drain of the caller through a node asks that
      // partition too. The caller's partition is this one: its home. The listing is no effect
      // of the request's own (idempotent, a superset): its X-Request-Id record rides on the
      // mail's group below, so a crash between the two leaves no record, and the retry sends.
      auto listed = UnsealedRegister(*engine_, caller.session_key, **remote);
      if (!listed.ok()) {
        SetDeadline(run.run_id, 0);
        (void)TakeCompletion(run.run_id);
        return listed.status();
      }
      listing = listed->version;
    }
    // A send that does not wait knows its answer now: it rides on the mail's group.
    if (state.deadline_ms == 0 && answer_known) {
      answer_known(SendResultJson(run, state.watch, state.watched));
    }
    Status posted = PostMail(MakeDelivery(target, "message", run.run_id, message,
                                          caller.session_key, "sessions_send", run.traceparent),
                             **remote, "m", watch ? caller.session_key : std::string(), &run,
                             listing);
    if (!posted.ok()) {
      SetDeadline(run.run_id, 0);
      (void)TakeCompletion(run.run_id);
      return posted;
    }
    sent.emplace_back();  // id 0: wakes the forwarder (Publish)
  } else {
    // The run, the message's transcript entry and its delivery are one group, and the wait
    // exists before a reply can come: a reply (on another thread) takes the run's stripe.
    std::lock_guard lock(StripeOf(run.run_id));
    Delivery d = MakeDelivery(target, "message", run.run_id, message, caller.session_key,
                              "sessions_send", run.traceparent);
    TranscriptMessage m = PrepareDelivery(&d);
    HomeGroup group;
    group.runs.push_back(run);
    group.deliveries.emplace_back(std::move(d), std::move(m));
    // A send that neither waits nor watches knows its answer now: it rides on this group.
    if (state.deadline_ms == 0 && !watch && answer_known) {
      answer_known(SendResultJson(run, state.watch, state.watched));
    }
    auto committed = CommitHome(std::move(group));
    if (!committed.ok()) return committed.status();
    sent = std::move(*committed);
    if (state.deadline_ms > 0) {
      SetDeadline(run.run_id, state.deadline_ms);
      if (on_complete) {
        std::lock_guard waits(waits_mu_);
        completions_[run.run_id] = std::move(on_complete);
      }
    }
    if (watch) {
      // docs/semantics.md, "How a watcher starts watching": after the dispatch, at the
      // target's current state version. A key the engine cannot watch (bare, malformed, the
      // sender itself) is a refusal: false.
      auto watched = engine_->Watch(caller.session_key, target);
      state.watched = watched.ok() && *watched;
      run.send = state;
      if (state.deadline_ms == 0 && answer_known) {
        answer_known(SendResultJson(run, state.watch, state.watched));  // the run's last write
      }
      SW_RETURN_IF_ERROR(StoreRun(run));
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
Result<RunUpdate> SessionMessaging::ApplyReply(RunRecord run, std::string_view text, int64_t now,
                                               const RunAnswer& in_group) {
  auto [s, u, completes_call] = BeginStep(run);
  if (s.phase == Phase::kDone) return u;
  bool forward = false;
  if (completes_call) {
    run.status = "ok";
    run.reply = std::string(text);
    if (StopsLoop(text) || s.max_turns == 0 || run.requester == run.target) {
      s.phase = Phase::kDone;
      s.outcome = StopsLoop(text) ? "skip" : "single";
    } else {
      s.phase = Phase::kPingPong;
      s.turn = 1;
      s.next_is_requester = true;
      forward = true;
    }
  } else {
    s.last_reply = std::string(text);
    if (StopsLoop(text) || s.turn >= s.max_turns) {
      s.phase = Phase::kDone;
      s.outcome = StopsLoop(text) ? "skip" : "turns";
    } else {
      ++s.turn;
      s.next_is_requester = !s.next_is_requester;
      forward = true;
    }
  }
  s.deadline_ms = forward ? now + TurnTimeoutMs(s) : 0;
  if (s.phase == Phase::kDone) run.ended_at_ms = now;
  run.send = s;
  // The awaited side gets the other side's words, as inter-session data.
  const SessionName& to = s.next_is_requester ? run.requester : run.target;
  const SessionName& from = s.next_is_requester ? run.target : run.requester;
  std::optional<uint32_t> remote;
  if (forward) {
    auto p = RemotePartition(to);
    if (!p.ok()) return p.status();
    remote = *p;
  }
  HomeGroup group;
  if (forward) {
    Delivery d = MakeDelivery(to, "message", run.run_id, std::string(text), from.session_key,
                              "sessions_send", run.traceparent);
    if (remote) {
      // Cluster mode: the turn goes as mail to the other partition, in the run's group.
      group.mails.push_back(NewMail(d, *remote, "t" + std::to_string(s.turn)));
      u.deliveries.push_back(std::move(d));  // id 0: mail (Publish wakes the forwarder)
    } else {
      TranscriptMessage m = PrepareDelivery(&d);
      group.deliveries.emplace_back(std::move(d), std::move(m));
    }
  }
  group.runs.push_back(run);
  u.applied = true;
  u.status = run.status;
  if (completes_call) u.call_result = SendResultJson(run, s.watch, s.watched);
  SW_RETURN_IF_ERROR(CommitRunStep(std::move(group), in_group, &u));
  SetDeadline(run.run_id, s.deadline_ms);
  return u;
}

// Ends a send run that did not get (all) its replies. REQUIRES: the run's stripe is held.
Result<RunUpdate> SessionMessaging::EndSend(RunRecord run, const std::string& status,
                                            std::string_view error, int64_t now,
                                            const RunAnswer& in_group) {
  auto [s, u, completes_call] = BeginStep(run);
  if (s.phase == Phase::kDone) return u;
  if (completes_call) {
    run.status = status;
    run.result = std::string(error);
  } else {
    s.outcome = status == "timeout" ? "timeout" : "finished";  // the first reply stands
  }
  s.phase = Phase::kDone;
  s.deadline_ms = 0;
  run.ended_at_ms = now;
  run.send = s;
  u.applied = true;
  u.status = run.status;
  if (completes_call) u.call_result = SendResultJson(run, s.watch, s.watched);
  HomeGroup group;
  group.runs.push_back(run);
  SW_RETURN_IF_ERROR(CommitRunStep(std::move(group), in_group, &u));
  SetDeadline(run.run_id, 0);
  return u;
}

Status SessionMessaging::CommitRunStep(HomeGroup group, const RunAnswer& in_group,
                                       RunUpdate* u) {
  if (in_group) {
    group.built = [&in_group, u](const std::vector<Delivery>& sent) {
      RunUpdate answered = *u;  // the group may be built again: *u is left as it is
      answered.deliveries.insert(answered.deliveries.end(), sent.begin(), sent.end());
      in_group(answered);
    };
  }
  auto sent = CommitHome(std::move(group));
  if (!sent.ok()) return sent.status();
  u->deliveries.insert(u->deliveries.end(), sent->begin(), sent->end());
  return Status::OK();
}

Result<RunUpdate> SessionMessaging::OnReply(const std::string& run_id, std::string_view text,
                                            const RunAnswer& in_group) {
  auto update = Guarded("reply", [&]() -> Result<RunUpdate> {
    std::lock_guard lock(StripeOf(run_id));
    auto run = KnownRun(*engine_, run_id);
    if (!run.ok()) return run.status();
    if (run->kind != "send") {
      return Status::InvalidArgument("run " + run_id + " is a " + run->kind +
                                     " run: report its end with POST /v1/runs/" + run_id +
                                     "/finish");
    }
    return ApplyReply(std::move(*run), text, engine_->clock().NowMs(), in_group);
  });
  if (update.ok()) Deliver(*update, nullptr);
  return update;
}

Result<RunUpdate> SessionMessaging::TimeOut(const std::string& run_id, bool only_if_due) {
  auto update = Guarded("timeout", [&]() -> Result<RunUpdate> {
    std::lock_guard lock(StripeOf(run_id));
    auto run = KnownRun(*engine_, run_id);
    if (!run.ok()) return run.status();
    int64_t now = engine_->clock().NowMs();
    SendRunState s = StateOf(*run);
    RunUpdate not_due;
    not_due.run_id = run_id;
    not_due.status = run->status;
    bool live = run->kind == "send" && s.phase != Phase::kDone;
    // A reply may have renewed the deadline since ExpireDue picked the run: the stored state
    // is the truth, the in-memory index follows it.
    if (!live || (only_if_due && (s.deadline_ms == 0 || s.deadline_ms > now))) {
      SetDeadline(run_id, live ? s.deadline_ms : 0);
      return not_due;
    }
    std::string error;
    if (s.phase == Phase::kAwaiting) {
      error = "No reply from " + run->target.session_key + " within " +
              std::to_string(s.timeout_ms / 1000) + " s.";
    }
    return EndSend(std::move(*run), "timeout", error, now, /*in_group=*/{});
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

}  // namespace statewatch::tools
