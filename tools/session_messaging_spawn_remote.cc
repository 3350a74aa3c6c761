// SessionMessaging: sessions_spawn into an agent of another partition
// (docs/cluster-internals.md, "Session tools across partitions"). The run stays at the
// requester's partition (its home); the child is created at its agent's partition by one
// session mail of kind "spawn", applied there exactly once; a kill's stop cancels, there,
// the runs the child spawned itself.
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"
#include "tools/session_messaging.h"
#include "tools/session_messaging_internal.h"

namespace statewatch::tools {
namespace json = boost::json;
using namespace messaging_internal;  // NOLINT: the implementation's own helpers

namespace {

// The most a fork copies across partitions, in content bytes: the mail's wire form (hex,
// twice the size) must stay well under a node's request body limit (4 MiB by default).
constexpr std::size_t kMaxRemoteForkBytes = 1u << 20;

}  // namespace

// At the home: the caller's watcher directory lists the child's partition first (the
// child_spawned there seeds the caller's cursor, and the directory stays a superset), then
// the run and the mail are one group. The mail carries what the child's partition needs:
// the registry row, child_spawned, the fork's copies (read here, where the caller's
// transcript is) and the task with its route and options. The request's X-Request-Id record
// rides on that group, not on the listing's (UnsealedRegister).
Status SessionMessaging::SpawnRemote(const SessionName& caller, const RunRecord& run,
                                     bool sandboxed, uint32_t partition) {
  auto listed = UnsealedRegister(*engine_, caller.session_key, partition);
  if (!listed.ok()) return listed.status();
  Delivery task = MakeDelivery(run.target, "task", run.run_id, run.task, caller.session_key,
                               "sessions_spawn", run.traceparent);
  task.route = run.requester_route;
  task.spawn = run.spawn;
  SessionMail mail = NewMail(std::move(task), partition, kMailStepSpawn);
  mail.kind = kMailKindSpawn;
  mail.child = ChildRecord(caller, run, sandboxed);
  mail.event = ChildSpawned(caller, run);
  mail.watcher_listing = listed->version;
  if (run.spawn->context == "fork") {
    auto messages = SessionTablesView(*engine_).RecentTranscript(caller, kMaxForkMessages);
    if (!messages.ok()) return messages.status();
    // The newest messages that fit, oldest first (as ForkTranscript copies them).
    std::size_t bytes = 0;
    std::size_t first = messages->size();
    while (first > 0) {
      const TranscriptMessage& m = (*messages)[first - 1];
      std::size_t size = m.content_json.size() + m.role.size() + m.tool_name.size() + 64;
      if (bytes + size > kMaxRemoteForkBytes) break;
      bytes += size;
      --first;
    }
    for (std::size_t i = first; i < messages->size(); ++i) {
      TranscriptMessage m = std::move((*messages)[i]);
      m.index = 0;
      m.timestamp_ms = 0;  // the copy's time: when the child's partition applies it
      mail.transcript.push_back(std::move(m));
    }
  }
  HomeGroup group;
  group.runs.push_back(run);
  group.mails.push_back(std::move(mail));
  auto committed = CommitHome(std::move(group));
  return committed.status();
}

// At the child's partition, before the mail's group (ApplyMail): the registry row, then the
// journal — the single-node order (CreateChild), so child_spawned never names a child that
// is not registered, and the task (in the group, last) never reaches an unregistered child.
// Both are repeatable: the row is an upsert, the event is deduplicated by its key.
Status SessionMessaging::ApplyChildAndEvent(const SessionMail& mail) {
  if (mail.child) {
    SessionRecord child = *mail.child;
    child.name = SessionName{mail.delivery.agent_id, mail.delivery.session_key};
    SW_RETURN_IF_ERROR(SessionTables(*engine_).UpsertSession(child));
  }
  if (mail.event) {
    EventInput event = *mail.event;
    // As a watched send's watch (ApplyMail): a watcher whose reset began after the spawn
    // listed this partition is not seeded a cursor that would outlive the reset.
    WatcherDirectory directory(*engine_);
    std::vector<std::string> kept;
    for (std::string& w : event.watchers) {
      auto reset = directory.ClearedSince(w, mail.watcher_listing);
      if (!reset.ok()) return reset.status();
      if (!*reset) kept.push_back(std::move(w));
    }
    event.watchers = std::move(kept);
    auto recorded = engine_->Record(event);
    if (!recorded.ok()) return recorded.status();
  }
  return Status::OK();
}

Status SessionMessaging::CascadeStop(const SessionMail& mail) {
  const std::string suffix = std::string(":") + kMailStepStop;
  if (!mail.kind.empty() || mail.key.size() < suffix.size() ||
      mail.key.compare(mail.key.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return Status::OK();
  }
  auto applied = SessionMailTables(*engine_).Applied(mail.key);
  if (!applied.ok()) return applied.status();
  if (*applied) return Status::OK();
  auto runs = ChildRuns(SessionName{mail.delivery.agent_id, mail.delivery.session_key});
  if (!runs.ok()) return runs.status();
  for (const RunRecord& r : *runs) {
    if (r.status != "running") continue;
    // The killer is the stop's source; the killed child was depth 1 of this kill.
    auto killed = KillTree(r.run_id, mail.delivery.source_session_key, 1);
    if (!killed.ok()) return killed.status();
  }
  return Status::OK();
}

}  // namespace statewatch::tools
