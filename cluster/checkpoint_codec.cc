#include "cluster/checkpoint_codec.h"

#include <flatbuffers/flatbuffers.h>

#include <cstring>
#include <functional>
#include <optional>
#include <vector>

#include "cluster/commit_codec.h"
#include "engine/flatbuffer_values.h"
#include "engine/row_index.h"
#include "schema/cluster_checkpoint_generated.h"
#include "storage/store_replace.h"

namespace statewatch::cluster {
namespace {

using storage::Family;
namespace fb = statewatch::cluster::fb;

using engine::fbv::Bytes;

// Builds parts one at a time; each finished part is appended to the blob.
class PartWriter {
 public:
  PartWriter(std::string* blob, std::size_t part_bytes) : blob_(blob), part_bytes_(part_bytes) {}

  void Add(Family f, std::string_view key, std::string_view value) {
    auto k = b_.CreateVector(reinterpret_cast<const uint8_t*>(key.data()), key.size());
    auto v = b_.CreateVector(reinterpret_cast<const uint8_t*>(value.data()), value.size());
    entries_.push_back(fb::CreateSnapshotEntry(b_, FamilyWireId(f), k, v));
    bytes_ += key.size() + value.size();
    ++total_;
    if (bytes_ >= part_bytes_) Finish(nullptr);
  }

  // The last part, carrying `applied` (the applied-state entry's value).
  void FinishLast(std::string_view applied) { Finish(&applied); }

  uint32_t parts() const { return index_; }
  uint64_t entries() const { return total_; }

 private:
  void Finish(const std::string_view* applied) {
    auto entries = b_.CreateVector(entries_);
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> a;
    if (applied) {
      a = b_.CreateVector(reinterpret_cast<const uint8_t*>(applied->data()), applied->size());
    }
    fb::SnapshotPartBuilder part(b_);
    part.add_index(index_);
    part.add_entries(entries);
    if (applied) {
      part.add_last(true);
      part.add_applied(a);
      part.add_parts(index_ + 1);
      part.add_entries_total(total_);
    }
    b_.FinishSizePrefixed(part.Finish(), fb::SnapshotPartIdentifier());
    blob_->append(reinterpret_cast<const char*>(b_.GetBufferPointer()), b_.GetSize());
    b_.Clear();
    entries_.clear();
    bytes_ = 0;
    ++index_;
  }

  std::string* blob_;
  const std::size_t part_bytes_;
  flatbuffers::FlatBufferBuilder b_{64 * 1024};
  std::vector<flatbuffers::Offset<fb::SnapshotEntry>> entries_;
  std::size_t bytes_ = 0;
  uint32_t index_ = 0;
  uint64_t total_ = 0;
};

// Calls `fn` with each verified part in order (its bytes stay valid during the call).
Status ForEachPart(std::string_view blob,
                   const std::function<Status(uint32_t index, const fb::SnapshotPart&)>& fn) {
  std::size_t offset = 0;
  uint32_t index = 0;
  std::string copy;  // FlatBuffers reads in place and wants its buffer aligned
  bool last = false;
  while (offset < blob.size()) {
    const std::string where = "checkpoint part " + std::to_string(index) + " at byte " +
                              std::to_string(offset) + " of " + std::to_string(blob.size());
    if (last) return Status::Corruption(where + ": bytes follow the last part");
    if (blob.size() - offset < sizeof(flatbuffers::uoffset_t)) {
      return Status::Corruption(where + ": truncated size prefix");
    }
    flatbuffers::uoffset_t size = 0;
    std::memcpy(&size, blob.data() + offset, sizeof(size));
    size = flatbuffers::EndianScalar(size);
    const std::size_t whole = sizeof(size) + std::size_t{size};
    if (blob.size() - offset < whole) {
      return Status::Corruption(where + ": says " + std::to_string(size) + " bytes, only " +
                                std::to_string(blob.size() - offset - sizeof(size)) + " remain");
    }
    copy.assign(blob.data() + offset, whole);
    flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(copy.data()), copy.size());
    if (!fb::VerifySizePrefixedSnapshotPartBuffer(verifier)) {
      return Status::Corruption(where + ": not a SnapshotPart");
    }
    const fb::SnapshotPart* part = fb::GetSizePrefixedSnapshotPart(copy.data());
    if (part->index() != index) {
      return Status::Corruption(where + ": holds part " + std::to_string(part->index()));
    }
    if (part->entries() != nullptr) {
      for (const fb::SnapshotEntry* e : *part->entries()) {
        if (!FamilyOfWireId(e->family())) {
          return Status::Corruption(where + ": family id " + std::to_string(e->family()) +
                                    ", which this build does not know");
        }
      }
    }
    last = part->last();
    if (last && part->parts() != index + 1) {
      return Status::Corruption(where + ": the last part says " + std::to_string(part->parts()) +
                                " parts");
    }
    SW_RETURN_IF_ERROR(fn(index, *part));
    offset += whole;
    ++index;
  }
  if (!last) {
    return Status::Corruption("checkpoint of " + std::to_string(blob.size()) + " bytes ends after " +
                              std::to_string(index) + " parts without its last part");
  }
  return Status::OK();
}

}  // namespace

Result<Snapshot> EncodeSnapshot(const storage::Store& store, std::size_t part_bytes) {
  Snapshot out;
  PartWriter writer(&out.blob, part_bytes);
  const std::string applied_key = AppliedStateKey();
  std::optional<std::string> applied;
  SW_RETURN_IF_ERROR(store.ForEachInSnapshot(
      [&](Family f, std::string_view key, std::string_view value) -> Status {
        if (f == Family::kMeta && key == applied_key) {
          applied.emplace(value);  // written last on restore: it says the restore finished
        } else {
          writer.Add(f, key, value);
        }
        return Status::OK();
      }));
  if (!applied) {
    return Status::FailedPrecondition("the database at " + store.path() +
                                      " has applied nothing of a stream: no checkpoint to take");
  }
  auto state = DecodeAppliedState(*applied);
  if (!state.ok()) return state.status();
  writer.FinishLast(*applied);
  out.applied = *state;
  out.entries = writer.entries();
  out.parts = writer.parts();
  return out;
}

Result<AppliedState> InspectSnapshot(std::string_view blob) {
  std::optional<Result<AppliedState>> applied;
  uint64_t entries = 0;
  SW_RETURN_IF_ERROR(ForEachPart(blob, [&](uint32_t, const fb::SnapshotPart& part) -> Status {
    if (part.entries() != nullptr) entries += part.entries()->size();
    if (part.last()) {
      if (part.entries_total() != entries) {
        return Status::Corruption("checkpoint's last part counts " +
                                  std::to_string(part.entries_total()) + " entries, its parts hold " +
                                  std::to_string(entries));
      }
      applied.emplace(DecodeAppliedState(Bytes(part.applied())));
    }
    return Status::OK();
  }));
  if (!applied->ok()) {
    return Status::Corruption("checkpoint's applied state: " + applied->status().ToString());
  }
  return **applied;
}

Result<AppliedState> RestoreSnapshot(storage::Store& store, std::string_view blob) {
  auto applied = InspectSnapshot(blob);
  if (!applied.ok()) return applied.status();
  // Bracketed by the replacement marker (storage/store_replace.h): a crash anywhere between
  // here and the last part's batch leaves a store the next cluster open empties and
  // restores again, and that a single-node or read-only open refuses.
  SW_RETURN_IF_ERROR(storage::BeginReplace(store));
  SW_RETURN_IF_ERROR(storage::DeleteEveryKeyButTheMarker(store));
  storage::Batch batch(store);
  SW_RETURN_IF_ERROR(ForEachPart(blob, [&](uint32_t, const fb::SnapshotPart& part) -> Status {
    batch.Clear();
    if (part.entries() != nullptr) {
      for (const fb::SnapshotEntry* e : *part.entries()) {
        if (e->family() == kBySeqFormat3WireId) {  // a format-3 snapshot: one-row runs
          auto run = engine::RunOfFormat3Entry(Bytes(e->value()));
          if (!run.ok()) return run.status();
          batch.Put(Family::kBySeq, Bytes(e->key()), *run);
          continue;
        }
        batch.Put(*FamilyOfWireId(e->family()), Bytes(e->key()), Bytes(e->value()));
      }
    }
    if (part.last()) {  // the applied state and the marker's removal: one batch
      PutAppliedState(batch, *applied);
      storage::FinishReplace(batch);
    }
    return store.Write(batch, /*sync=*/part.last());
  }));
  return applied;
}

}  // namespace statewatch::cluster
