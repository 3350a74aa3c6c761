#include "storage/key_codec.h"

namespace statewatch::storage {

void PutFixed64BE(std::string* dst, uint64_t v) {
  char buf[8];
  for (int i = 7; i >= 0; --i) {
    buf[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  dst->append(buf, 8);
}

uint64_t DecodeFixed64BE(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

namespace {

std::string TaggedU64(char tag, uint64_t v) {
  std::string k(1, tag);
  PutFixed64BE(&k, v);
  return k;
}

}  // namespace

std::string JournalKey(SessionRef session, uint64_t sequence) {
  std::string k = TaggedU64(kJournalTag, session.value);
  PutFixed64BE(&k, sequence);
  return k;
}
FixedKey JournalKeyFixed(SessionRef session, uint64_t sequence) {
  FixedKey k;
  k.data[0] = kJournalTag;
  uint64_t s = session.value, q = sequence;
  for (int i = 8; i >= 1; --i, s >>= 8) k.data[i] = static_cast<char>(s & 0xff);
  for (int i = 16; i >= 9; --i, q >>= 8) k.data[i] = static_cast<char>(q & 0xff);
  k.size = 17;
  return k;
}
std::string JournalPrefix(SessionRef session) { return TaggedU64(kJournalTag, session.value); }
std::string BySeqKey(uint64_t sequence) { return TaggedU64(kBySeqTag, sequence); }
FixedKey BySeqKeyFixed(uint64_t sequence) {
  FixedKey k;
  k.data[0] = kBySeqTag;
  for (int i = 8; i >= 1; --i, sequence >>= 8) k.data[i] = static_cast<char>(sequence & 0xff);
  k.size = 9;
  return k;
}
std::string LogKey(uint64_t sequence) { return TaggedU64(kLogTag, sequence); }
std::string HeadKey(SessionRef session) { return TaggedU64(kHeadTag, session.value); }
std::string CursorKey(SessionRef watcher, SessionRef target) {
  std::string k = TaggedU64(kCursorTag, target.value);
  PutFixed64BE(&k, watcher.value);
  return k;
}
std::string DedupeKey(std::string_view dedupe_key) {
  std::string k(1, kDedupeTag);
  k.append(dedupe_key);
  return k;
}
std::string NameKey(std::string_view agent_id, std::string_view session_key) {
  // Agent ids never contain NUL (validated), so the separator is unambiguous.
  std::string k(1, kNameTag);
  k.append(agent_id);
  k.push_back('\0');
  k.append(session_key);
  return k;
}
std::string RefKey(SessionRef session) { return TaggedU64(kRefTag, session.value); }
std::string RegistryKey(SessionRef session) { return TaggedU64(kRegistryTag, session.value); }
std::string TranscriptKey(SessionRef session, uint64_t index) {
  std::string k = TaggedU64(kTranscriptTag, session.value);
  PutFixed64BE(&k, index);
  return k;
}
std::string TranscriptPrefix(SessionRef session) {
  return TaggedU64(kTranscriptTag, session.value);
}
std::string RunKey(std::string_view run_id) {
  std::string k(1, kRunTag);
  k.append(run_id);
  return k;
}
std::string DeliveryKey(uint64_t id) { return TaggedU64(kDeliveryTag, id); }
std::string UpstreamKey(SessionRef session) { return TaggedU64(kUpstreamTag, session.value); }
std::string MetaKey() { return std::string(1, kMetaTag) + "engine"; }
std::string ReplacingKey() { return std::string(1, kMetaTag) + "replacing"; }
std::string BaseMarkKey() { return std::string(1, kBaseMarkTag); }

std::optional<JournalKeyParts> ParseJournalKey(std::string_view key) {
  if (key.size() != 17 || key[0] != kJournalTag) return std::nullopt;
  return JournalKeyParts{SessionRef{DecodeFixed64BE(key.data() + 1)},
                         DecodeFixed64BE(key.data() + 9)};
}

std::optional<uint64_t> ParseSequenceKey(char tag, std::string_view key) {
  if (key.size() != 9 || key[0] != tag) return std::nullopt;
  return DecodeFixed64BE(key.data() + 1);
}

std::optional<SessionRef> ParseSessionKeyed(char tag, std::string_view key) {
  if (key.size() != 9 || key[0] != tag) return std::nullopt;
  return SessionRef{DecodeFixed64BE(key.data() + 1)};
}

std::optional<CursorKeyParts> ParseCursorKey(std::string_view key) {
  if (key.size() != 17 || key[0] != kCursorTag) return std::nullopt;
  return CursorKeyParts{/*watcher=*/SessionRef{DecodeFixed64BE(key.data() + 9)},
                        /*target=*/SessionRef{DecodeFixed64BE(key.data() + 1)}};
}

}  // namespace statewatch::storage
