// Journal rows built with the generated FlatBuffers builder alone, bypassing EncodeEvent: the
// rows an older schema or a damaged store left behind, which the decoders must still judge.
#ifndef STATEWATCH_TESTS_ENGINE_RAW_EVENT_ROW_H_
#define STATEWATCH_TESTS_ENGINE_RAW_EVENT_ROW_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "schema/statewatch_generated.h"

namespace statewatch::testing {

// What `b` holds once finished, as bytes.
inline std::string BuilderBytes(const flatbuffers::FlatBufferBuilder& b) {
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

// Event 7 of agent:main:main (agent main): `kind`, the actor type stored as the raw value
// `actor_type` (unchecked), and — when given — its summary and occurrence time. No field the
// first schema lacked (no traceparent).
inline std::string RawEventRow(int8_t actor_type, std::string_view kind,
                               std::string_view summary = "", int64_t occurred_at = 0) {
  flatbuffers::FlatBufferBuilder b;
  auto key = b.CreateString("agent:main:main");
  auto agent = b.CreateString("main");
  auto kind_offset = b.CreateString(kind.data(), kind.size());
  flatbuffers::Offset<flatbuffers::String> summary_offset;
  if (!summary.empty()) summary_offset = b.CreateString(summary.data(), summary.size());
  schema::EventBuilder eb(b);
  eb.add_sequence(7);
  eb.add_session_key(key);
  eb.add_agent_id(agent);
  eb.add_kind(kind_offset);
  eb.add_actor_type(static_cast<schema::ActorType>(actor_type));
  if (occurred_at != 0) eb.add_occurred_at(occurred_at);
  if (!summary.empty()) eb.add_summary(summary_offset);
  b.Finish(eb.Finish());
  return BuilderBytes(b);
}

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_ENGINE_RAW_EVENT_ROW_H_
