#include "engine/row_index.h"

#include <limits>
#include <type_traits>

#include "engine/flatbuffer_values.h"
#include "schema/statewatch_generated.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

namespace fb = statewatch::schema;
using fbv::Decode;

namespace {

// Whether `row` can join a run that starts with `first` (sequence step and time offset stored
// in 32 bits, as the schema's RowRun has them).
bool Joins(const IndexedRow& first, const IndexedRow& row) {
  const int64_t offset = row.occurred_at - first.occurred_at;
  return row.sequence - first.sequence <= std::numeric_limits<uint32_t>::max() &&
         offset >= std::numeric_limits<int32_t>::min() &&
         offset <= std::numeric_limits<int32_t>::max();
}

// Builds the columns in place (no temporary vectors: the record path builds one run a group).
std::string_view BuildRun(flatbuffers::FlatBufferBuilder& b, std::span<const IndexedRow> members) {
  b.Clear();
  const IndexedRow& first = members.front();
  const std::size_t n = members.size();
  const uint64_t stride = n > 1 ? members[1].sequence - first.sequence : 1;
  bool regular = stride <= std::numeric_limits<uint32_t>::max();
  std::size_t keyed = 0, removed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    regular = regular && members[i].sequence - first.sequence == i * stride;
    keyed += members[i].keyed;
    removed += members[i].removed;
  }
  auto column = [&](auto value_of) {  // one value per member
    using T = std::invoke_result_t<decltype(value_of), const IndexedRow&>;
    T* out = nullptr;
    auto v = b.CreateUninitializedVector<T>(n, &out);
    for (std::size_t i = 0; i < n; ++i) out[i] = value_of(members[i]);
    return v;
  };
  auto indexes = [&](std::size_t count, bool IndexedRow::*flag) {  // the flagged members
    uint32_t* out = nullptr;
    auto v = b.CreateUninitializedVector<uint32_t>(count, &out);
    for (std::size_t i = 0; i < n; ++i) {
      if (members[i].*flag) *out++ = static_cast<uint32_t>(i);
    }
    return v;
  };
  flatbuffers::Offset<flatbuffers::Vector<uint64_t>> sessions_v = 0;
  flatbuffers::Offset<flatbuffers::Vector<int32_t>> offsets_v = 0;
  if (n > 1) {  // one member: its session and time are the scalars
    sessions_v = column([](const IndexedRow& m) { return m.session.value; });
    offsets_v = column([&](const IndexedRow& m) {
      return static_cast<int32_t>(m.occurred_at - first.occurred_at);
    });
  }
  flatbuffers::Offset<flatbuffers::Vector<uint32_t>> steps_v = 0, keyed_v = 0, removed_v = 0;
  if (!regular) {
    steps_v = column([&](const IndexedRow& m) {
      return static_cast<uint32_t>(m.sequence - first.sequence);
    });
  }
  if (keyed) keyed_v = indexes(keyed, &IndexedRow::keyed);
  if (removed) removed_v = indexes(removed, &IndexedRow::removed);
  b.Finish(fb::CreateRowRun(b, n == 1 ? first.session.value : 0, first.occurred_at, sessions_v,
                            offsets_v, regular && n > 1 ? static_cast<uint32_t>(stride) : 0,
                            steps_v, keyed_v, removed_v));
  return fbv::Written(b);
}

// Marks `flag` on the members listed (ascending indexes below `n`) in `list`.
Status MarkMembers(const flatbuffers::Vector<uint32_t>* list, const char* what,
                   std::vector<IndexedRow>* out, bool IndexedRow::*flag) {
  if (!list) return Status::OK();
  uint32_t previous = 0;
  for (flatbuffers::uoffset_t i = 0; i < list->size(); ++i) {
    const uint32_t m = list->Get(i);
    if (m >= out->size() || (i > 0 && m <= previous)) {
      return Status::Corruption(std::string("row run lists ") + what + " member " +
                                std::to_string(m) + " of " + std::to_string(out->size()) +
                                " out of order or range");
    }
    (*out)[m].*flag = true;
    previous = m;
  }
  return Status::OK();
}

}  // namespace

struct RowRunWriter::Rep {
  flatbuffers::FlatBufferBuilder builder{256};
  std::vector<IndexedRow> members;
};
RowRunWriter::RowRunWriter() : rep_(std::make_unique<Rep>()) {}
RowRunWriter::~RowRunWriter() = default;

void RowRunWriter::Clear() { rep_->members.clear(); }

void RowRunWriter::Add(Sequence sequence, SessionRef session, int64_t occurred_at, bool keyed) {
  rep_->members.push_back(IndexedRow{sequence, session, occurred_at, keyed, false});
}

void RowRunWriter::Emit(const std::function<void(Sequence, std::string_view)>& put) {
  std::span<const IndexedRow> rest(rep_->members);
  while (!rest.empty()) {
    std::size_t n = 1;
    while (n < rest.size() && n < kMaxRunMembers && Joins(rest.front(), rest[n])) ++n;
    put(rest.front().sequence, BuildRun(rep_->builder, rest.first(n)));
    rest = rest.subspan(n);
  }
}

std::string EncodeRowRun(std::span<const IndexedRow> members) {
  flatbuffers::FlatBufferBuilder b(64 + 16 * members.size());
  return std::string(BuildRun(b, members));
}

Status DecodeRowRun(Sequence first, std::string_view bytes, std::vector<IndexedRow>* out) {
  return Decode<fb::RowRun>(bytes, "row run", [first, out](const auto& f) {
    out->clear();
    const auto* sessions = f.sessions();
    const auto* offsets = f.occurred_offsets();
    const auto* steps = f.sequence_steps();
    const std::size_t n = sessions ? sessions->size() : 1;
    if (n == 0 || (n > 1 && (!offsets || offsets->size() != n)) || (n == 1 && offsets) ||
        (steps && steps->size() != n) || (!steps && n > 1 && f.stride() == 0)) {
      return Status::Corruption("row run of " + std::to_string(n) +
                                " members has malformed sequence or time columns");
    }
    out->resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      IndexedRow& m = (*out)[i];
      const uint64_t step = steps ? steps->Get(i) : i * uint64_t{f.stride()};
      if (i > 0 && step <= (*out)[i - 1].sequence - first) {
        return Status::Corruption("row run member " + std::to_string(i) +
                                  " does not follow the one before");
      }
      m.sequence = first + step;
      const auto at = static_cast<flatbuffers::uoffset_t>(i);
      m.session = SessionRef{sessions ? fbv::U64At(*sessions, at) : f.session()};
      m.occurred_at = f.occurred_base() + (offsets ? offsets->Get(at) : 0);
    }
    if (steps && steps->Get(0) != 0) {
      return Status::Corruption("row run's first member is not at its key's sequence");
    }
    SW_RETURN_IF_ERROR(MarkMembers(f.keyed(), "keyed", out, &IndexedRow::keyed));
    return MarkMembers(f.removed(), "removed", out, &IndexedRow::removed);
  });
}

Status DecodeRowRunEntry(std::string_view key, std::string_view value,
                         std::vector<IndexedRow>* out) {
  auto first = storage::ParseSequenceKey(storage::kBySeqTag, key);
  if (!first) {
    return Status::Corruption("by_seq key of " + std::to_string(key.size()) +
                              " bytes is malformed");
  }
  Status decoded = DecodeRowRun(*first, value, out);
  if (!decoded.ok()) {
    return Status::Corruption("by_seq run at sequence " + std::to_string(*first) + ": " +
                              decoded.message());
  }
  return Status::OK();
}

Result<std::string> RunOfFormat3Entry(std::string_view row_index) {
  return Decode<fb::RowIndex>(row_index, "format-3 row index", [](const auto& f) {
    const IndexedRow member{0, SessionRef{f.session()}, f.occurred_at(),
                            f.dedupe_key() && f.dedupe_key()->size() > 0, false};
    return Result<std::string>(EncodeRowRun({&member, 1}));
  });
}

std::unique_ptr<storage::Iterator> NewRunIterator(const storage::Store& store) {
  return store.NewIterator(storage::Family::kBySeq, std::string(1, storage::kBySeqTag),
                           std::string(1, storage::kBySeqTag + 1));
}

void SeekRunHolding(storage::Iterator* it, Sequence sequence) {
  const std::string target = storage::BySeqKey(sequence);
  it->Seek(target);
  if (it->Valid() && it->key() == target) return;
  if (it->Valid()) {
    it->Prev();
  } else {
    it->SeekToLast();
  }
  if (it->Valid() && it->key() < std::string_view(target)) return;
  it->Seek(target);  // no run starts before `sequence`
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
