// The two writes several side tables make inside a commit group (engine/group_write.h):
// appending messages to a session's transcript and enqueueing a delivery. The session tables
// (engine/session_tables.cc) and the session mail (engine/session_mail.cc) both use them, so
// a transcript index, a delivery id and their times are assigned in one place.
//
// Runs on the commit leader, inside a write function given to SideTableHost::WriteInGroup.
#ifndef STATEWATCH_ENGINE_SIDE_TABLE_WRITES_H_
#define STATEWATCH_ENGINE_SIDE_TABLE_WRITES_H_

#include <utility>

#include "engine/group_write.h"
#include "engine/table_codecs.h"
#include "statewatch/session_key.h"
#include "statewatch/session_records.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

// Whether every text field of `m` (role, content, tool name, provenance) is valid UTF-8:
// checked before a group, so that a refused message writes nothing.
inline bool IsValidUtf8Message(const TranscriptMessage& m) {
  const bool provenance_ok =
      !m.provenance ||
      (IsValidUtf8(m.provenance->source_session_key) && IsValidUtf8(m.provenance->source_tool) &&
       IsValidUtf8(m.provenance->source_channel) && IsValidUtf8(m.provenance->run_id));
  return IsValidUtf8(m.role) && IsValidUtf8(m.content_json) && IsValidUtf8(m.tool_name) &&
         provenance_ok;
}

// Appends `m` to the transcript of `canonical` (a resolved session name): the next message
// index, and the group's time when `m` has none. Returns the message as written.
inline TranscriptMessage PutTranscriptMessage(GroupWrite& g, const SessionName& canonical,
                                              TranscriptMessage m) {
  m.index = g.NextId(GroupCounter::kMessageIndex);
  if (m.timestamp_ms == 0) m.timestamp_ms = g.now();
  g.Put(storage::Family::kTranscripts, storage::TranscriptKey(g.Intern(canonical), m.index),
        EncodeTranscriptMessage(m));
  return m;
}

// Enqueues `d` on its agent's feed: the next delivery id, and the group's time when `d` has
// no creation time. Returns the delivery as written (with its id).
inline Delivery PutDelivery(GroupWrite& g, Delivery d) {
  d.id = g.NextId(GroupCounter::kDeliveryId);
  if (d.created_at_ms == 0) d.created_at_ms = g.now();
  g.Put(storage::Family::kDeliveries, storage::DeliveryKey(d.id), EncodeDelivery(d));
  return d;
}

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_SIDE_TABLE_WRITES_H_
