// statewatch::SessionMailTables — the durable mail of the session tools between the
// partitions of a cluster (docs/cluster-internals.md, "Session tools across partitions").
//
//   statewatch::SessionMailTables mail(*engine);
//   auto st = mail.Post(m, &run);          // home: the outbox row (and the run), one group
//   auto d = mail.Apply(m, transcript);    // destination: applied once, whatever the retries
//   auto gone = mail.Remove(m.key);        // home: the destination acknowledged it
//
// A mail is one delivery (a sessions_send message or ping-pong turn, a steer, a kill's stop)
// addressed to a session of another partition — or, for sessions_spawn (docs/cluster-internals.md,
// "Session tools across partitions"), a child to create there (kind "spawn": its registry
// row, its child_spawned event, the fork's transcript copies and the task) or an event to
// record on a session there (kind "event": a child run's end). The home partition keeps it
// in its outbox until the destination's owner acknowledges it; the destination applies it —
// the transcript message, the delivery and a mark under the mail's key, in one group — at
// most once: a mail whose mark exists is acknowledged again and changes nothing. Both rows
// live in the engine's `webhooks` column family under their own tags (storage/key_codec.h:
// 'Q' outbox, 'K' marks) and are written through the engine's commit groups, so in cluster
// mode they travel in the partition's replicated log and survive a failover.
//
// REQUIRES: the engine was made by Engine::Open and outlives the handle.
// Thread-safe.
#ifndef STATEWATCH_SESSION_MAIL_H_
#define STATEWATCH_SESSION_MAIL_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "statewatch/engine.h"
#include "statewatch/session_records.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch {

namespace engine {
class SideTableHost;
}  // namespace engine

inline constexpr char kMailKindSpawn[] = "spawn";
inline constexpr char kMailKindEvent[] = "event";

struct SessionMail {
  std::string key;         // `<runId>:<step>`: unique per mail, the destination's dedupe key
  uint32_t partition = 0;  // the destination partition
  // To delivery.agent_id / delivery.session_key; id unset. Kind "event": names the session
  // only, nothing is enqueued.
  Delivery delivery;
  std::string watcher;     // non-empty: the destination also runs Watch(watcher, session)
  // The watcher's listing version at its home once this mail's destination was listed there
  // (WatcherDirectory::Register) — for a spawn, the caller's, the one watcher its event
  // names; 0 when not recorded. The destination skips the watch (a spawn: leaves the caller
  // out of the event's watchers) when its clear fence for the watcher is above it: a reset
  // of the watcher began after the send, and would have removed the cursor had the mail
  // arrived first.
  uint64_t watcher_listing = 0;
  int64_t created_at_ms = 0;  // set by Post when 0
  std::string kind;        // "" (a message) | kMailKindSpawn | kMailKindEvent
  // Spawn: the child's registry row (its name is the delivery's session).
  std::optional<SessionRecord> child;
  // Spawn: the fork's copies (index and time unset: given when applied), before the task.
  std::vector<TranscriptMessage> transcript;
  // Spawn: child_spawned; event: the event. Recorded with its dedupe key (required).
  std::optional<EventInput> event;
};

// The mail's FlatBuffers record (schema/session_mail.fbs Mail), as kept in the outbox, and
// back (Corruption naming what failed). The wire form (tools/session_mail_forwarder.h)
// carries it for mail that is not a plain message.
std::string EncodeSessionMail(const SessionMail& mail);
Result<SessionMail> DecodeSessionMail(std::string_view bytes);

// InvalidArgument (naming the mail) for a mail that cannot be posted or applied: an empty
// key, a delivery without a session, an unknown kind, a spawn without its child or event,
// an event mail without its event, an event without a dedupe key.
Status CheckSessionMail(const SessionMail& mail);

// One commit group of a session tool at the home partition: runs, outbox rows, and local
// deliveries each with the transcript message it leaves in its session (the delivery's id
// unset: assigned in the group). Everything or nothing.
struct HomeGroup {
  std::vector<RunRecord> runs;
  std::vector<SessionMail> mails;
  std::vector<std::pair<Delivery, TranscriptMessage>> deliveries;
  // When set, runs inside the group once its writes are built (on the commit leader, before
  // they are durable), with the deliveries and the ids they got: what an answer written with
  // the group needs (an X-Request-Id answer, statewatch/request_ids.h). It may run more than
  // once if the group is built again; it must not write.
  std::function<void(const std::vector<Delivery>& sent)> built;
};

class SessionMailTables {
 public:
  // Aborts with a message for an Engine not made by Engine::Open.
  explicit SessionMailTables(Engine& engine);

  // ---- the home partition's outbox ----
  // Writes `mail` to the outbox and, when `run` is not null, the run in the same group.
  // InvalidArgument (nothing written) for an empty key or a delivery without a session.
  Status Post(const SessionMail& mail, const RunRecord* run);
  // Writes `group` in one commit group and returns its deliveries with their ids, in order.
  // InvalidArgument (nothing written) for a bad mail or run, Misdirected for a delivery to
  // a session this partition does not hold.
  Result<std::vector<Delivery>> Commit(HomeGroup group);
  // Every outbox row, in key order.
  Result<std::vector<SessionMail>> Outbox() const;
  // Removes the outbox row; false when there was none.
  Result<bool> Remove(const std::string& key);

  // ---- the destination ----
  // Applies `mail` once: when no mark for its key exists, appends `messages` (in order) to
  // the delivery's session's transcript, enqueues the delivery (not for kind "event") and
  // writes the mark, in one group, and returns true, with the delivery and its id in
  // `*delivery` when one was enqueued; false when the mark existed (applied before: nothing
  // written). Misdirected when this partition does not hold the session. The mail's child
  // row and event are the caller's (SessionMessaging::ApplyMail writes them first).
  Result<bool> Apply(const SessionMail& mail, std::vector<TranscriptMessage> messages,
                     std::optional<Delivery>* delivery);
  // Whether the mail with `key` was applied here.
  Result<bool> Applied(const std::string& key) const;

 private:
  engine::SideTableHost* host_;
};

}  // namespace statewatch

#endif  // STATEWATCH_SESSION_MAIL_H_
