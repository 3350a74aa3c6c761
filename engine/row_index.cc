#include "engine/row_index.h"

#include "engine/flatbuffer_values.h"
#include "schema/statewatch_generated.h"

namespace statewatch::engine {

namespace fb = statewatch::schema;
using fbv::Decode;

struct RowIndexEncoder::Rep {
  flatbuffers::FlatBufferBuilder builder{64};
};
RowIndexEncoder::RowIndexEncoder() : rep_(std::make_unique<Rep>()) {}
RowIndexEncoder::~RowIndexEncoder() = default;

std::string_view RowIndexEncoder::Encode(SessionRef session, int64_t occurred_at,
                                         std::string_view dedupe_key) {
  auto& b = rep_->builder;
  b.Clear();
  flatbuffers::Offset<flatbuffers::String> key = 0;
  if (!dedupe_key.empty()) key = b.CreateString(dedupe_key.data(), dedupe_key.size());
  b.Finish(fb::CreateRowIndex(b, session.value, occurred_at, key));
  return fbv::Written(b);
}

Status DecodeRowIndex(std::string_view bytes, IndexedRow* out) {
  return Decode<fb::RowIndex>(bytes, "row index", [out](const auto& f) {
    out->session = SessionRef{f.session()};
    out->occurred_at = f.occurred_at();
    if (f.dedupe_key()) {
      out->dedupe_key.assign(f.dedupe_key()->data(), f.dedupe_key()->size());
    } else {
      out->dedupe_key.clear();
    }
    return Status::OK();
  });
}

std::string EncodeDedupeEntry(SessionRef session, Sequence sequence) {
  flatbuffers::FlatBufferBuilder b(48);
  b.Finish(fb::CreateDedupeEntry(b, session.value, sequence));
  return fbv::Finish(b);
}

Result<DedupeEntryRec> DecodeDedupeEntry(std::string_view bytes) {
  return Decode<fb::DedupeEntry>(bytes, "dedupe entry", [](const auto& f) {
    return DedupeEntryRec{SessionRef{f.session()}, f.sequence()};
  });
}

}  // namespace statewatch::engine
