// statewatch::SessionMailTables — the durable mail of the session tools between the
// partitions of a cluster (docs/cluster.md §15.8).
//
//   statewatch::SessionMailTables mail(*engine);
//   auto st = mail.Post(m, &run);          // home: the outbox row (and the run), one group
//   auto d = mail.Apply(m, transcript);    // destination: applied once, whatever the retries
//   auto gone = mail.Remove(m.key);        // home: the destination acknowledged it
//
// A mail is one delivery (a sessions_send message or ping-pong turn) addressed to a session
// of another partition. The home partition keeps it in its outbox until the destination's
// owner acknowledges it; the destination applies it — the transcript message, the delivery
// and a mark under the mail's key, in one group — at most once: a mail whose mark exists is
// acknowledged again and changes nothing. Both rows live in the engine's `webhooks` column
// family under their own tags (storage/key_codec.h: 'Q' outbox, 'K' marks) and are written
// through the engine's commit groups, so in cluster mode they travel in the partition's
// replicated log and survive a failover.
//
// REQUIRES: the engine was made by Engine::Open and outlives the handle.
// Thread-safe.
#ifndef STATEWATCH_SESSION_MAIL_H_
#define STATEWATCH_SESSION_MAIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "statewatch/engine.h"
#include "statewatch/session_records.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch {

namespace engine {
class SideTableHost;
}  // namespace engine

struct SessionMail {
  std::string key;         // `<runId>:<step>`: unique per mail, the destination's dedupe key
  uint32_t partition = 0;  // the destination partition
  Delivery delivery;       // to delivery.agent_id / delivery.session_key; id unset
  std::string watcher;     // non-empty: the destination also runs Watch(watcher, session)
  int64_t created_at_ms = 0;  // set by Post when 0
};

class SessionMailTables {
 public:
  // Aborts with a message for an Engine not made by Engine::Open.
  explicit SessionMailTables(Engine& engine);

  // ---- the home partition's outbox ----
  // Writes `mail` to the outbox and, when `run` is not null, the run in the same group.
  // InvalidArgument (nothing written) for an empty key or a delivery without a session.
  Status Post(const SessionMail& mail, const RunRecord* run);
  // Every outbox row, in key order.
  Result<std::vector<SessionMail>> Outbox() const;
  // Removes the outbox row; false when there was none.
  Result<bool> Remove(const std::string& key);

  // ---- the destination ----
  // Applies `mail` once: when no mark for its key exists, appends `message` to the
  // delivery's session's transcript, enqueues the delivery and writes the mark, in one
  // group, and returns the delivery with its id; nullopt when the mark existed (applied
  // before: nothing written). Misdirected when this partition does not hold the session.
  Result<std::optional<Delivery>> Apply(const SessionMail& mail, TranscriptMessage message);
  // Whether the mail with `key` was applied here.
  Result<bool> Applied(const std::string& key) const;

 private:
  engine::SideTableHost* host_;
};

}  // namespace statewatch

#endif  // STATEWATCH_SESSION_MAIL_H_
