// The session tools that move work between sessions (docs/semantics.md, "Session tools"):
// sessions_send, sessions_spawn, subagents, sessions_yield — and the gateway's side of them:
// replies, run results, timeouts and the delivery feed. CallTool is the one entry point of all
// seven tools (the profile check, then the tool). JSON in, JSON out; no HTTP and no threads
// here: the daemon (or an embedding gateway) calls these from its own threads and timers. The
// code is split by concern: session_messaging{,_send,_spawn,_spawn_remote,_subagents,_json}.cc.
//
// The gateway runs the models. statewatch hands it work as Deliveries (durable until
// acknowledged: SessionTables::EnqueueDelivery / PendingDeliveries / AckDelivery) and takes back
// replies (OnReply) and run ends (OnRunFinish). Every delivery this class enqueues is also
// passed to MessagingOptions::on_delivery once it is durable, so that a live feed can push
// it at once; a feed that reconnects replays PendingDeliveries. Every message, task, steer
// and announcement is also appended to the receiving session's transcript with its
// provenance (inter-session data, isUser=false), so that sessions_history and the next
// model turn see where it came from.
//
// sessions_send is a small state machine per run, kept in the RunRecord (RunRecord::send,
// the SendState table) so that it survives a restart:
//
//   awaiting --reply--> ping-pong --reply (x maxPingPongTurns) or REPLY_SKIP--> done
//       |                   |
//       +--timeout/finish---+-----------------------------------------------> done
//
//   * Send() stores the run, enqueues the message (type "message") and answers at once
//     with status "accepted" (timeoutSeconds 0) — or with a *pending* answer: the call's
//     result comes later through `on_complete` (and in the RunUpdate of the event that
//     produced it): status "ok" with the reply (OnReply), "timeout" (OnTimeout/ExpireDue,
//     or a finish with status timeout) or "error" (a finish with error/cancelled).
//   * After the target's first reply the reply-back loop starts (also after a fire-and-
//     forget send, when a reply arrives): the reply is delivered to the requester, the
//     requester's reply to the target, and so on — exactly maxPingPongTurns deliveries,
//     unless a side replies exactly `REPLY_SKIP` (surrounding whitespace ignored) or an
//     empty text, or a turn times out. The reply to the last turn ends the loop and is not
//     delivered. No loop when the target is the requester itself.
//   * Each ping-pong turn waits as long as the call did (30 s after a fire-and-forget send).
//
// Refusals are values: InvalidArgument for bad parameters (messages byte-exact where
// semantics.md gives them; an unknown parameter is refused by name), NotFound for unknown
// sessions / runs / sub-agent targets, PermissionDenied for profile, spawn-depth, allow-list
// and visibility refusals — except that sessions_send answers a visibility refusal as its
// result {"runId", "status": "forbidden", "error", "sessionKey"} as "Session tools" lists.
// Other errors come from the engine.
//
// Time is the engine's clock (a ManualClock in tests).
//
// Thread-safe: transitions of one run are serialized (a lock stripe per run id, another per
// requester for spawn / yield bookkeeping); callbacks run on the calling thread after every
// lock is released. Reconfigure() may run concurrently with calls: each call reads one
// snapshot of the policy.
#ifndef STATEWATCH_TOOLS_SESSION_MESSAGING_H_
#define STATEWATCH_TOOLS_SESSION_MESSAGING_H_

#include <array>
#include <boost/json.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "statewatch/engine.h"
#include "statewatch/session_mail.h"
#include "statewatch/status.h"
#include "statewatch/session_records.h"
#include "statewatch/types.h"
#include "tools/loop_guards.h"
#include "tools/session_tools.h"
#include "tools/tool_policy.h"
#include "tools/tool_profiles.h"

namespace statewatch::tools {

inline constexpr char kReplySkip[] = "REPLY_SKIP";
inline constexpr int kMaxPingPongTurnsLimit = 20;
inline constexpr int64_t kDefaultSendTimeoutSeconds = 30;
inline constexpr int64_t kMaxSendTimeoutSeconds = 24 * 3600;
inline constexpr std::size_t kMaxSteerChars = 4000;
// The largest sessions_send message and sessions_spawn task: the sessions_history answer
// bound (80 KiB), so that anything one session sends another can be read back whole.
inline constexpr std::size_t kMaxMessageBytes = 80 * 1024;
// The most requester messages a `context: "fork"` spawn copies into the child's transcript
// (the newest ones).
inline constexpr std::size_t kMaxForkMessages = 1000;
inline constexpr char kThreadSendRefusal[] =
    "sessions_send cannot target a thread session for inter-agent coordination. Use the "
    "parent channel session key instead.";

struct MessagingOptions {
  // ---- behaviour (the policy: Reconfigure() replaces these four while running) -----------

  // tools.sessions.visibility and tools.agentToAgent (shared with session_status / list).
  SessionToolsOptions sessions;
  // tools.profile, tools.alsoAllow, tools.deny, tools.subagents.tools,
  // agents.defaults.subagents.*, agents.list[] (tools/tool_policy.h).
  ToolPolicy tool_policy;
  // session.agentToAgent.maxPingPongTurns, 0..20. Default 5. 0 = no reply-back loop.
  int max_ping_pong_turns = 5;
  // guards.*: the loop and cost guards of sessions_send and sessions_spawn
  // (tools/loop_guards.h; on by default). Reconfigure() replaces them too.
  GuardOptions guards;

  // ---- behaviour (fixed for the life of the object) ---------------------------------------

  // At most one steer per run in this window. Default 2 s.
  int64_t steer_interval_ms = 2000;
  // subagents list shows finished runs that ended within this window. Default 30 min.
  int64_t recent_window_ms = 30LL * 60 * 1000;

  // Called with every delivery once it is durable (from the thread that enqueued it, with
  // no lock held). The daemon pushes it to the connected feeds. May be empty.
  std::function<void(const Delivery&)> on_delivery;

  // Cluster mode (docs/cluster-internals.md, "Session tools across partitions"). false: a
  // sessions_send naming a session of another partition is Misdirected, as on a stage-1 slot. true:
  // it is sent as session mail — the run stays here, the message goes to this partition's outbox
  // (SessionMailTables) in the run's commit group, and a forwarder (tools/session_mail_forwarder.h)
  // carries it to the destination's owner, which applies it with ApplyMail. Replies come back as
  // POST /v1/runs/{runId}/reply, which a node routes to the partition holding the run.
  bool cross_partition = false;
  // The cluster's partition count P (EngineOptions::partitions), to address the mail.
  uint32_t partitions = 1;
  // Called (no lock held) after a mail was written to the outbox: wakes the forwarder.
  std::function<void()> on_mail;
};

// InvalidArgument naming the setting and the value, e.g.
// `maxPingPongTurns must be an integer from 0 to 20 (got 21)`.
Status ValidateMessagingOptions(const MessagingOptions& options);

// The answer to a tool call. Only sessions_send with timeoutSeconds > 0 can be pending.
struct ToolAnswer {
  boost::json::object result;  // the tool's result; empty while pending or when `text` is set
  // With AnswerForm::kText, session_status's result already serialized (the bytes
  // json::serialize(result) would give): each event's JSON was rendered once and cached
  // with its row, so the daemon writes it as is. Empty otherwise.
  std::string text;
  bool pending = false;
  std::string run_id;       // the run whose reply / timeout completes a pending call
  int64_t deadline_ms = 0;  // when ExpireDue() times the pending call out
};

// How CallTool hands back a result. kText only changes session_status (the daemon's hot
// route, where building the events' JSON objects cost more than the rest of the answer);
// every other tool answers with `result` either way.
enum class AnswerForm { kObject, kText };

// What OnReply / OnTimeout / OnRunFinish did.
struct RunUpdate {
  std::string run_id;
  bool applied = false;  // false: the run was not waiting for this (late reply, ended run)
  std::string status;    // the run's status afterwards: running | ok | error | timeout | cancelled
  // The final result of the sessions_send call this completed (also passed to its
  // on_complete). Set at most once per run.
  std::optional<boost::json::object> call_result;
  std::vector<Delivery> deliveries;  // enqueued by this update (durable, already published)
  bool mailed = false;  // session mail was written (not in `deliveries`): wakes the forwarder

  // {"runId", "applied", "status", "deliveries": [ids...]} — the answer of the gateway's
  // POST /v1/runs/{runId}/reply and /finish.
  boost::json::object ToJson() const;
};

// Receives the final result of a pending sessions_send call exactly once, unless the call
// is abandoned or the process stops first. It runs on the thread that produced the result
// (OnReply / OnRunFinish / OnTimeout / ExpireDue) — possibly before Send has returned, when
// the reply is that fast — so the daemon answers its parked request from here and ignores
// `pending` once this has run.
using CallCompletion = std::function<void(const boost::json::object& result)>;

// Receives a tool call's result once it is final, before or in the call's last write: how
// the daemon writes the call's X-Request-Id answer in that write's group
// (server/request_ledger.h). Called by a call that writes and knows its answer before its
// last write (a sessions_send that does not wait for the reply, a sessions_spawn, a
// sessions_yield: once, on the calling thread) or only inside it (a steer, whose answer
// names its delivery's id: on the commit leader, again if the group is built again); a call
// that does not call it is answered as before. Must not write.
using AnswerKnown = std::function<void(const boost::json::object& result)>;

// Receives, inside the commit group that applies a reply or a run's end (on the commit
// leader, before the group is durable), the update as OnReply / OnRunFinish will return it,
// its deliveries' ids included: how the daemon writes a request's X-Request-Id answer with
// its effect (server/request_ledger.h). Not called when nothing is applied; may be called
// again if the group is built again. Must not write.
using RunAnswer = std::function<void(const RunUpdate& update)>;

class SessionMessaging {
 public:
  // Validates the options and loads the deadlines of the send runs still waiting (after a
  // restart they time out as they would have). `engine` is not owned and must outlive this.
  static Result<std::unique_ptr<SessionMessaging>> Open(Engine* engine, MessagingOptions options);

  // Applies a new policy (sessions, tool_policy, max_ping_pong_turns, guards of `options`;
  // the rest is ignored) to every later call; calls in flight finish under the old one. Runs
  // already started keep the ping-pong turns they started with; the guards' buckets keep
  // their tokens. InvalidArgument (and no change) when the options are invalid.
  Status Reconfigure(const MessagingOptions& options);
  // The policy in force (a snapshot).
  MessagingOptions options() const;

  SessionMessaging(const SessionMessaging&) = delete;
  SessionMessaging& operator=(const SessionMessaging&) = delete;

  // Any of the seven session tools (tool_profiles.h names), after the profile check for the
  // caller's agent and spawn depth: session_status, sessions_list and sessions_history answer
  // through tools/session_tools.h and tools/session_history.h. `on_complete` only matters
  // for a pending sessions_send; `answer_known` is called as AnswerKnown says.
  // REQUIRES: `caller` is resolved (ResolveSession).
  //
  // `traceparent`: the caller's W3C trace context (base/trace_context.h), "" if none; an
  // invalid one is ignored (as W3C tells a receiver to). sessions_send and sessions_spawn
  // keep it with the run: every delivery of the run carries it, and the events the call
  // records (child_spawned, run ends, guard refusals) store it.
  Result<ToolAnswer> CallTool(std::string_view tool, const SessionName& caller,
                              const boost::json::object& params, CallCompletion on_complete = {},
                              AnswerForm form = AnswerForm::kObject,
                              std::string_view traceparent = {},
                              const AnswerKnown& answer_known = {});

  // sessions_send: `sessionKey?` (key or session id) | `label?` (exact, in the caller's agent
  // or `agentId`'s) | `agentId?` alone (that agent's `agent:<id>:main`), `message`,
  // `timeoutSeconds?` (0..86400, default 30), `watch?`. Result:
  //   {"runId", "status": "accepted" | "ok" | "timeout" | "error" | "forbidden", "reply"?,
  //    "error"?, "sessionKey", "watched"?}
  // `watched` (Engine::Watch of the caller on the target, after the message is enqueued)
  // is present exactly when watch was true and the message was dispatched. `message` is at
  // most kMaxMessageBytes.
  // Cluster mode with MessagingOptions::cross_partition: a target of another partition
  // (by full key or agentId) gets the message as session mail (ApplyMail there); the run,
  // its wait and its ping-pong turns stay here (docs/cluster-internals.md,
  // "Session tools across partitions").
  Result<ToolAnswer> Send(const SessionName& caller, const boost::json::object& params,
                          CallCompletion on_complete = {}, std::string_view traceparent = {},
                          const AnswerKnown& answer_known = {});

  // sessions_spawn: `task` (at most kMaxMessageBytes), `label?`, `runtime?` (subagent |
  // acp), `agentId?`, `model?`, `thinking?` (off | minimal | low | medium | high | xhigh),
  // `thread?` (boolean), `sandbox?` (inherit | require), `context?` (isolated | fork).
  // Creates `agent:<agentId>:subagent:<uuid>` in the registry (parentSessionKey = caller,
  // label, model, thinking, runtime, sandboxed = require or the caller's), the run (kind
  // "spawn", RunRecord::spawn, the caller's delivery route), `child_spawned` on the child
  // (the caller's cursor seeded); with context "fork" copies the caller's transcript (its
  // newest kMaxForkMessages messages) into the child's; appends the task to the child's
  // transcript and delivers it ("task", with every option and the caller's route).
  // Answers {"status": "accepted", "runId", "childSessionKey"}.
  // Cluster mode with MessagingOptions::cross_partition: a child of an agent of another
  // partition is created there by session mail (kind "spawn": the registry row,
  // child_spawned, the fork's copies and the task, applied once); the run stays here
  // (docs/cluster-internals.md, "Session tools across partitions").
  Result<boost::json::object> Spawn(const SessionName& caller, const boost::json::object& params,
                                    std::string_view traceparent = {},
                                    const AnswerKnown& answer_known = {});

  // subagents: `action` (list | steer | kill; default list), `target?`, `message?` (steer),
  // `recentMinutes?` (1..1440, default 30). A target is `last`, a 1-based index of the list,
  // a run id or child session key of any of the caller's children, or a label
  // (case-insensitive, running children first); kill also takes `all`. Answers:
  //   list  {"status": "ok", "action": "list", "requesterSessionKey", "total",
  //          "active": [row...], "recent": [row...], "text"}
  //         row {"index", "runId", "sessionKey", "label"?, "task", "status", "runtime",
  //              "model"?, "createdAt", "endedAt"?, "runtimeMs"}: active (running, oldest
  //         first) then recent (ended within recentMinutes, newest first), one index;
  //   steer {"status": "accepted", "action", "runId", "sessionKey", "deliveryId"} |
  //         {"status": "rate_limited", "action", "runId", "sessionKey", "error"};
  //   kill  {"status": "ok", "action", "killed", "text": "killed <n> subagent(s)." |
  //          "no running subagents to kill.", "runId"?, "sessionKey"?} — a kill also
  //         cancels the runs the child spawned, and tells each child ("announce");
  //   steer / kill of a child that is not running: {"status": "done", ..., "text"}.
  // Refusals: `Missing subagent target.`, `Missing steer message.`,
  // `Message too long (<n> chars, max 4000).`, `Unknown subagent session: <x>` (NotFound),
  // `Ambiguous subagent label: <x>`.
  Result<boost::json::object> Subagents(const SessionName& caller,
                                        const boost::json::object& params,
                                        const AnswerKnown& answer_known = {});

  // sessions_yield: `message?`. Answers {"status": "yielded", "message", "waitingFor": n}.
  // With n > 0 running children, their announcements are held back and the caller's next
  // delivery is one "announce" carrying every child result, sent when the last one ends
  // (its runId and provenance are those of the run that ended last).
  Result<boost::json::object> Yield(const SessionName& caller, const boost::json::object& params,
                                    const AnswerKnown& answer_known = {});

  // ---- the gateway's side ----------------------------------------------------------------

  // POST /v1/runs/{runId}/reply: the awaited side's reply in a send run. NotFound
  // `Unknown runId: <id>`; InvalidArgument for a spawn run.
  Result<RunUpdate> OnReply(const std::string& run_id, std::string_view text,
                            const RunAnswer& in_group = {});

  // POST /v1/runs/{runId}/finish. A spawn run journals `run_completed` / `run_failed`
  // ({"outcome"}, summary `child run failed` | `child run timed out` | `child run
  // cancelled`, dedupe `run-terminal:<runId>`) on the child — as session mail (kind
  // "event") when the child lives at another partition — then stores status and result and
  // announces the result to the requester on its route — the child's thread when the spawn
  // was thread-bound — or holds it for a yielded requester. The run's end, the event's mail
  // and the announcement are one commit group (the journal of a local child goes first,
  // deduplicated), so a retry after a failure anywhere announces exactly once. A send run: ok
  // counts as the reply `result`; error / cancelled / timeout end it. A second finish is
  // not applied. InvalidArgument for a status other than ok | error | timeout | cancelled.
  // Either way the run's step is one group, the last (`in_group` is called in it).
  Result<RunUpdate> OnRunFinish(const std::string& run_id, std::string_view status,
                                std::string_view result, const RunAnswer& in_group = {});

  // Times a waiting send run out now, whatever its deadline.
  Result<RunUpdate> OnTimeout(const std::string& run_id);
  // Times out every waiting send run whose deadline is <= the clock's now.
  std::vector<RunUpdate> ExpireDue();
  // The earliest deadline of a waiting send run, for the daemon's timer.
  std::optional<int64_t> NextDeadlineMs() const;
  // Forgets the on_complete of a pending call (its HTTP client went away). The run goes on.
  void Abandon(const std::string& run_id);

  // ---- cluster mode: session mail ("Session tools across partitions") ---------------------

  // The destination's side of a mail another partition's forwarder carried here: appends
  // the message to the session's transcript and enqueues its delivery once (the mail's key
  // is the dedupe key: a mail applied before is acknowledged again and changes nothing), and
  // with a watcher first watches the session for it. Publishes the delivery. Returns whether
  // this call applied it. Misdirected when this partition does not hold the session.
  Result<bool> ApplyMail(const SessionMail& mail);

  // ---- the guards --------------------------------------------------------------------------

  // The loop and cost guards every sessions_send and sessions_spawn passes first. A refusal
  // is ResourceExhausted naming the guard and its setting (HTTP 429 loop_guard), and one
  // `guard_refused` event on the caller's journal (at most one per guard, caller and target
  // a second; summary `<tool> [to <target>] refused by loop guard <guard>`, payload
  // {"guard", "tool", "setting", "target"?}, the caller's traceparent). Nothing else changes.
  const LoopGuards& guards() const { return *guards_; }

 private:
  SessionMessaging(Engine* engine, MessagingOptions options);
  Status LoadDeadlines();
  std::shared_ptr<const MessagingOptions> Policy() const;
  // Stores a run and tells the guards whether it is open (every run write goes through here).
  Status StoreRun(const RunRecord& run);
  // Journals `refusal` on the caller's journal (guard_refused) and returns its status.
  Status RefuseByGuard(const GuardRefusal& refusal, const char* tool, const SessionName& caller,
                       const SessionName* target, std::string_view traceparent);

  // plumbing
  std::mutex& StripeOf(std::string_view key) const;
  void Publish(const std::vector<Delivery>& deliveries) const;
  // Appends the delivery to the receiving session's transcript (with its provenance), then
  // makes it durable on the feed.
  Result<Delivery> Enqueue(Delivery delivery);
  // The transcript message a delivery leaves in its receiving session (its provenance);
  // fills in the delivery's time and source channel first.
  TranscriptMessage PrepareDelivery(Delivery* delivery) const;
  // Cluster mode: the partition of `session` when cross-partition mail is on and another
  // partition holds it; nullopt when this one does (or mail is off).
  Result<std::optional<uint32_t>> RemotePartition(const SessionName& session) const;
  // Writes a mail for `delivery` (to another partition's session) keyed `<runId>:<step>`,
  // with `run` in the same group when not null, and wakes the forwarder.
  // `watcher_listing`: the watcher's listing version (SessionMail::watcher_listing).
  Status PostMail(Delivery delivery, uint32_t partition, const std::string& step,
                  const std::string& watcher, const RunRecord* run,
                  uint64_t watcher_listing = 0);
  // The mail of `delivery` keyed `<runId>:<step>` (its time and source channel filled in).
  SessionMail NewMail(Delivery delivery, uint32_t partition, const std::string& step) const;
  // Writes `group` in one commit group (SessionMailTables::Commit) and tells the guards
  // about its runs. Returns the group's deliveries with their ids.
  Result<std::vector<Delivery>> CommitHome(HomeGroup group);
  void SetDeadline(const std::string& run_id, int64_t deadline_ms);  // 0 clears
  CallCompletion TakeCompletion(const std::string& run_id);
  void Deliver(RunUpdate update, std::vector<RunUpdate>* out);
  Result<std::vector<RunRecord>> ChildRuns(const SessionName& requester) const;
  // The channel a session is known on (registry lastChannel, else channel), "" if none.
  std::string ChannelOf(const SessionName& session) const;

  // sessions_send
  Result<ToolAnswer> Dispatch(const SessionName& caller, const SessionName& target,
                              const std::string& message, int64_t timeout_seconds, bool watch,
                              int max_turns, CallCompletion on_complete,
                              std::string_view traceparent, const AnswerKnown& answer_known);
  // A reply or an end of a send run: the run, and the forwarded turn (a delivery with its
  // transcript message, or mail), in one group.
  Result<RunUpdate> ApplyReply(RunRecord run, std::string_view text, int64_t now,
                               const RunAnswer& in_group);
  Result<RunUpdate> EndSend(RunRecord run, const std::string& status, std::string_view error,
                            int64_t now, const RunAnswer& in_group);
  // Commits a run's step, `group`, with `*u` (applied, status and any mail already set) and
  // adds the deliveries the group enqueued to `u->deliveries`; `in_group` gets the update
  // inside the group.
  Status CommitRunStep(HomeGroup group, const RunAnswer& in_group, RunUpdate* u);
  Result<RunUpdate> TimeOut(const std::string& run_id, bool only_if_due);

  // sessions_spawn, run ends, yield
  Status CreateChild(const SessionName& caller, const RunRecord& run, bool sandboxed);
  // The child's registry row and its child_spawned event, the same on one node and across
  // partitions.
  static SessionRecord ChildRecord(const SessionName& caller, const RunRecord& run,
                                   bool sandboxed);
  static EventInput ChildSpawned(const SessionName& caller, const RunRecord& run);
  // Cluster mode: the child lives at `partition`: the watcher directory lists it for the
  // caller, then the run and the spawn mail are one group. REQUIRES: the requester's stripe.
  Status SpawnRemote(const SessionName& caller, const RunRecord& run, bool sandboxed,
                     uint32_t partition);
  // The destination's side of a spawn or event mail (ApplyMail).
  Status ApplyChildAndEvent(const SessionMail& mail);
  // The destination's side of a kill's stop (ApplyMail, before the mail's group and outside
  // its lock): cancels the runs the killed child spawned itself, which live here, as a kill
  // on one node cascades. Repeatable: an ended run is not ended again.
  Status CascadeStop(const SessionMail& mail);
  Status ForkTranscript(const SessionName& from, const SessionName& to);
  Result<RunUpdate> FinishSpawnRun(const std::string& run_id, const std::string& status,
                                   std::string_view result, const std::string& actor_key,
                                   bool by_kill, const RunAnswer& in_group = {});
  // Adds the announcement of the ended `run` to `group`: its requester's delivery, or the
  // result collected into the yield record (and the combined delivery when it was the last
  // running child). REQUIRES: the requester's stripe is held.
  Status PlanAnnouncement(const RunRecord& run, bool individual, HomeGroup* group);
  // Where a finished child's announcement goes: the requester's route at spawn time (its
  // current one when none was known then); for a thread-bound spawn, the child's own route
  // (the thread the gateway bound it to) where it has one.
  DeliveryRoute AnnounceRoute(const RunRecord& run) const;

  // subagents
  Result<boost::json::object> ListChildren(const SessionName& caller, int64_t recent_ms);
  Result<boost::json::object> Steer(const SessionName& caller, const std::string& target,
                                    const std::string& message, int64_t recent_ms,
                                    const AnswerKnown& answer_known);
  Result<boost::json::object> Kill(const SessionName& caller, const std::string& target,
                                   int64_t recent_ms);
  Result<int64_t> KillTree(const std::string& run_id, const std::string& killer, int depth);

  Engine* engine_;
  std::unique_ptr<LoopGuards> guards_;  // thread-safe itself
  mutable std::mutex policy_mu_;  // a leaf
  std::shared_ptr<const MessagingOptions> options_;
  mutable std::array<std::mutex, 64> stripes_;

  mutable std::mutex waits_mu_;  // a leaf: never held while taking a stripe
  std::map<std::string, int64_t> deadline_of_;
  std::set<std::pair<int64_t, std::string>> deadlines_;
  std::unordered_map<std::string, CallCompletion> completions_;
};

// ---- the gateway's JSON ----------------------------------------------------------------------

// The line the receiving model sees before an inter-session message, as the reference
// gateway renders it: `[Inter-session message] sourceSession=<key> sourceChannel=<channel>
// sourceTool=<tool> isUser=false` (sourceChannel only when known).
std::string InterSessionMarker(const Delivery& delivery);

// One delivery as the feed sends it:
//   {"deliveryId", "type", "sessionKey", "agentId", "runId", "text",
//    "provenance": {"kind": "inter_session", "sourceSessionKey", "sourceTool",
//                   "sourceChannel"?, "isUser": false},
//    "marker", "prompt"   (message and announce: InterSessionMarker, and marker + "\n" + text
//                          — what a gateway that only forwards text should hand the model),
//    "route"?: {"channel"?, "to"?, "accountId"?, "threadId"?}
//                         (task: the requester's route; announce: where to post it),
//    "options"?: {"runtime", "model"?, "thinking"?, "thread", "sandbox", "context",
//                 "label"?, "depth"}   (task: how to start the run),
//    "createdAt",
//    "traceparent"?       (the W3C trace context of the call that caused it, when it had one)}
boost::json::object DeliveryToJson(const Delivery& delivery);

// {"channel"?, "to"?, "accountId"?, "threadId"?}: the non-empty fields of a route.
boost::json::object RouteToJson(const DeliveryRoute& route);

// The body of POST /v1/runs/{runId}/reply: {"text": string}.
Result<std::string> RunReplyFromJson(const boost::json::value& body);

struct RunFinish {
  std::string status;  // ok | error | timeout | cancelled
  std::string result;  // a string result as is; any other JSON serialized
};
// The body of POST /v1/runs/{runId}/finish: {"status", "result"?}.
Result<RunFinish> RunFinishFromJson(const boost::json::value& body);

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_SESSION_MESSAGING_H_
