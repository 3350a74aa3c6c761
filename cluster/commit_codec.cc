#include "cluster/commit_codec.h"

#include <flatbuffers/flatbuffers.h>

#include <optional>
#include <vector>

#include "engine/flatbuffer_values.h"
#include "engine/row_index.h"
#include "schema/cluster_commit_generated.h"

namespace statewatch::cluster {
namespace {

using storage::Family;
namespace fb = statewatch::cluster::fb;

using engine::fbv::Bytes;

}  // namespace

// Wire ids are part of the stream's format: append new families, never renumber. Id 2 is
// by_seq as a format-3 build wrote it (a RowIndex per row); format 4's runs are id 17, so that
// a format-3 build refuses them as unknown rather than misread them.
uint8_t FamilyWireId(Family f) {
  switch (f) {
    case Family::kJournal: return 1;
    case Family::kBySeq: return kBySeqRunsWireId;
    case Family::kLog: return 3;
    case Family::kHeads: return 4;
    case Family::kCursors: return 5;
    case Family::kBase: return 6;
    case Family::kDedupe: return 7;
    case Family::kRefs: return 8;
    case Family::kSessions: return 9;
    case Family::kMeta: return 10;
    case Family::kTranscripts: return 11;
    case Family::kRuns: return 12;
    case Family::kDeliveries: return 13;
    case Family::kUpstream: return 14;
    case Family::kWebhooks: return 15;
    case Family::kRequests: return 16;
    case Family::kCount: break;
  }
  return 0;
}

std::optional<Family> FamilyOfWireId(uint8_t id) {
  if (id == kBySeqFormat3WireId) return Family::kBySeq;
  for (int f = 0; f < static_cast<int>(Family::kCount); ++f) {
    if (FamilyWireId(static_cast<Family>(f)) == id) return static_cast<Family>(f);
  }
  return std::nullopt;
}

Result<std::string> EncodeClusterCommit(std::string_view record, const storage::Batch* writes) {
  flatbuffers::FlatBufferBuilder b(record.size() + (writes ? writes->ByteSize() : 0) + 256);
  std::vector<flatbuffers::Offset<fb::KeyedWrite>> entries;
  if (writes != nullptr) {
    auto bytes = [&](std::string_view s) {
      return b.CreateVector(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    };
    Status st = writes->ForEachWrite([&](const storage::Batch::Write& w) {
      auto key = bytes(w.key);
      auto value = bytes(w.value);
      auto op = w.op == storage::Batch::Write::Op::kPut      ? fb::WriteOp::Put
                : w.op == storage::Batch::Write::Op::kDelete ? fb::WriteOp::Delete
                                                             : fb::WriteOp::DeleteRange;
      entries.push_back(fb::CreateKeyedWrite(b, op, FamilyWireId(w.family), key, value));
    });
    if (!st.ok()) return st;
  }
  auto rec = b.CreateVector(reinterpret_cast<const uint8_t*>(record.data()), record.size());
  b.Finish(fb::CreateClusterCommit(b, rec, b.CreateVector(entries)));
  return engine::fbv::Finish(b);
}

Result<std::string> DecodeClusterCommit(std::string_view body, storage::Batch* writes) {
  // FlatBuffers reads in place and wants its buffer aligned; a frame's body may not be.
  std::string copy(body);
  flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(copy.data()), copy.size());
  if (!fb::VerifyClusterCommitBuffer(verifier)) {
    return Status::Corruption("a commit-group body of " + std::to_string(body.size()) +
                              " bytes is not a ClusterCommit");
  }
  const fb::ClusterCommit* commit = fb::GetClusterCommit(copy.data());
  if (commit->writes() != nullptr) {
    for (const fb::KeyedWrite* w : *commit->writes()) {
      std::optional<Family> family = FamilyOfWireId(w->family());
      if (!family) {
        return Status::Corruption("a commit-group body writes to family id " +
                                  std::to_string(w->family()) + ", which this build does not know");
      }
      switch (w->op()) {
        case fb::WriteOp::Put:
          if (w->family() == kBySeqFormat3WireId) {
            auto run = engine::RunOfFormat3Entry(Bytes(w->value()));
            if (!run.ok()) {
              return Status::Corruption("a commit-group body: " + run.status().message());
            }
            writes->Put(*family, Bytes(w->key()), *run);
            break;
          }
          writes->Put(*family, Bytes(w->key()), Bytes(w->value()));
          break;
        case fb::WriteOp::Delete: writes->Delete(*family, Bytes(w->key())); break;
        case fb::WriteOp::DeleteRange:
          writes->DeleteRange(*family, Bytes(w->key()), Bytes(w->value()));
          break;
        default:
          return Status::Corruption("a commit-group body holds write op " +
                                    std::to_string(static_cast<int>(w->op())));
      }
    }
  }
  return std::string(Bytes(commit->record()));
}

}  // namespace statewatch::cluster
