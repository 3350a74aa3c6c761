// Key codec: every RocksDB key statewatch writes.
//
// KEY GRAMMAR — DO NOT CHANGE (persisted). Integers are big-endian fixed width so that
// RocksDB's default byte-wise order is numeric order. Retired tags are never reused.
//
//   column family  key                                         value (schema/statewatch.fbs)
//   -------------  ------------------------------------------  -----------------------------
//   journal        'J' session:u64 sequence:u64                 Event
//   by_seq         'S' sequence:u64                             RowRun (format 4: a commit
//                                                               group's rows, keyed by the
//                                                               first; formats 1 and 3: RowIndex,
//                                                               a row each)
//   log            'L' position:u64                             GroupRecord (format 2; format 1:
//                                                               'L' sequence -> LogRecord)
//   heads          'H' session:u64                              Head (as of the checkpoint)
//   cursors        'C' target:u64 watcher:u64                   Cursor (as of the checkpoint)
//   base           'H' session:u64 | 'C' target:u64 watcher:u64 Head | Cursor (format 1 only)
//   base           'M'                                          u64 snapshot sequence (format 1)
//   dedupe         'D' dedupe-key bytes                         DedupeEntry (formats 1, 3, 4)
//   refs           'N' agent-id bytes 0x00 session-key bytes    raw u64 session ref
//   refs           'R' session:u64                              SessionName
//   sessions       'G' session:u64                              SessionRecord (registry)
//   meta           'M' "engine"                                 Meta (the checkpoint's)
//   meta           'M' "cluster"                                AppliedState (cluster/)
//   meta           'M' "replacing"                              empty: a whole-store
//                                                               replacement is under way
//                                                               (storage/store_replace.h)
//   transcripts    'T' session:u64 index:u64                    TranscriptMessage
//   runs           'U' run-id bytes                             Run
//   deliveries     'V' id:u64                                   Delivery
//   upstream       'P' session:u64                              UpstreamLink
//   webhooks       'W' watcher-key bytes                        Webhook (schema/webhooks.fbs)
//   webhooks       'E' watcher 0x00 agent 0x00 target 0x00      u64 BE: the `since` of the
//                  (bytes)                                      notice last enqueued
//   webhooks       'O' watcher 0x00 agent 0x00 target 0x00      WebhookDelivery (outbox)
//                  since:u64
//   webhooks       'X' (as 'O')                                 WebhookDelivery (dead letter)
//   webhooks       'Q' mail-key bytes                           Mail (schema/session_mail.fbs):
//                                                               a session mail's outbox row
//   webhooks       'K' mail-key bytes                           MailMark: the mail was applied
//   requests       'Q' request-id bytes                         RequestRecord: an X-Request-Id's
//                                                               record (statewatch/request_ids.h);
//                                                               in meta before 2026-12-07
//
// A session ref is a 64-bit id interned once per (agentId, sessionKey), never reused.
// Cursor keys lead with the target: a notifying event writes the cursors of one target, and
// with the target as key prefix those writes land next to each other in the memtable.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_STORAGE_KEY_CODEC_H_
#define STATEWATCH_STORAGE_KEY_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "schema/session_ref.h"

namespace statewatch::storage {

inline constexpr char kJournalTag = 'J';
inline constexpr char kBySeqTag = 'S';
inline constexpr char kLogTag = 'L';
inline constexpr char kHeadTag = 'H';
inline constexpr char kCursorTag = 'C';
inline constexpr char kBaseMarkTag = 'M';
inline constexpr char kDedupeTag = 'D';
inline constexpr char kNameTag = 'N';
inline constexpr char kRefTag = 'R';
inline constexpr char kRegistryTag = 'G';
inline constexpr char kMetaTag = 'M';
inline constexpr char kTranscriptTag = 'T';
inline constexpr char kRunTag = 'U';
inline constexpr char kDeliveryTag = 'V';
inline constexpr char kUpstreamTag = 'P';
inline constexpr char kWebhookTag = 'W';
inline constexpr char kWebhookMarkTag = 'E';
inline constexpr char kOutboxTag = 'O';
inline constexpr char kDeadLetterTag = 'X';
inline constexpr char kSessionMailTag = 'Q';      // include/statewatch/session_mail.h
inline constexpr char kSessionMailMarkTag = 'K';
inline constexpr char kRequestRecordTag = 'Q';     // requests: statewatch/request_ids.h

void PutFixed64BE(std::string* dst, uint64_t v);
uint64_t DecodeFixed64BE(const char* p);

std::string JournalKey(SessionRef session, uint64_t sequence);
// The same key in a fixed buffer, for the record path (no allocation per row).
struct FixedKey {
  char data[17];
  std::size_t size = 0;
  std::string_view view() const { return std::string_view(data, size); }
};
FixedKey JournalKeyFixed(SessionRef session, uint64_t sequence);
std::string JournalPrefix(SessionRef session);  // 'J' session
std::string BySeqKey(uint64_t sequence);
FixedKey BySeqKeyFixed(uint64_t sequence);  // the same key, for the record path
std::string LogKey(uint64_t sequence);
std::string HeadKey(SessionRef session);
std::string CursorKey(SessionRef watcher, SessionRef target);
std::string DedupeKey(std::string_view dedupe_key);
std::string NameKey(std::string_view agent_id, std::string_view session_key);
std::string RefKey(SessionRef session);
std::string RegistryKey(SessionRef session);
std::string MetaKey();
std::string ReplacingKey();
std::string TranscriptKey(SessionRef session, uint64_t index);
std::string TranscriptPrefix(SessionRef session);
std::string RunKey(std::string_view run_id);
std::string DeliveryKey(uint64_t id);
std::string UpstreamKey(SessionRef session);
std::string BaseMarkKey();

// Decoders return nullopt for a key of another shape.
struct JournalKeyParts { SessionRef session; uint64_t sequence; };
std::optional<JournalKeyParts> ParseJournalKey(std::string_view key);
std::optional<uint64_t> ParseSequenceKey(char tag, std::string_view key);  // by_seq, log
std::optional<SessionRef> ParseSessionKeyed(char tag, std::string_view key);  // heads, refs
struct CursorKeyParts { SessionRef watcher; SessionRef target; };
std::optional<CursorKeyParts> ParseCursorKey(std::string_view key);

}  // namespace statewatch::storage

#endif  // STATEWATCH_STORAGE_KEY_CODEC_H_
