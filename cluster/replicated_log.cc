#include "cluster/replicated_log.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <utility>

#include "cluster/commit_codec.h"
#include "engine/records.h"
#include "log/batch_frame.h"
#include "log/chain_verifier.h"
#include "storage/key_codec.h"

namespace statewatch::cluster {

using log::LogPosition;
using storage::Family;

namespace {

constexpr std::size_t kFoldChunk = 1024;

void PutFixed64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t Fixed64(std::string_view bytes) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(bytes[i])} << (8 * i);
  return v;
}

// Stream position and local position (8 bytes each, little-endian), then the ChainState's
// FlatBuffers bytes.
std::string EncodeApplied(const AppliedState& s) {
  std::string out;
  PutFixed64(&out, s.position);
  PutFixed64(&out, s.local_position);
  return out + log::EncodeChainState(s.chain);
}

Result<AppliedState> DecodeApplied(std::string_view bytes) {
  if (bytes.size() < 16) {
    return Status::Corruption("the cluster applied-state entry has " +
                              std::to_string(bytes.size()) + " bytes, fewer than 16");
  }
  AppliedState s;
  s.position = Fixed64(bytes);
  s.local_position = Fixed64(bytes.substr(8));
  auto chain = log::DecodeChainState(std::string(bytes.substr(16)));  // aligned copy
  if (!chain.ok()) return chain.status();
  s.chain = *chain;
  return s;
}

// A commit group's frame header must name the group's own sequences: as many counter values
// as the record has sequences, and (when the record names its first sequence, P > 1) the
// counter of that sequence.
Status CheckCounters(const log::BatchHeader& h, std::string_view record, LogPosition position) {
  engine::GroupRec rec;
  Status decoded = engine::DecodeGroup(record, &rec);
  if (!decoded.ok()) {
    return Status::Corruption("stream position " + std::to_string(position) + ": " +
                              decoded.ToString());
  }
  const std::string at = "stream position " + std::to_string(position) + ": the frame says ";
  if (h.n_count != rec.sequence_count()) {
    return Status::Corruption(at + std::to_string(h.n_count) +
                              " sequences but its commit group has " +
                              std::to_string(rec.sequence_count()));
  }
  const Sequence first = h.first_n * h.partitions + h.partition;
  if (rec.first_sequence != 0 && rec.first_sequence != first) {
    return Status::Corruption(at + "counter " + std::to_string(h.first_n) + " (sequence " +
                              std::to_string(first) + ") but its commit group starts at sequence " +
                              std::to_string(rec.first_sequence));
  }
  return Status::OK();
}

// Applies one verified frame at `position`: a commit group's writes and record go to the
// local log, a fence only moves the applied state; both in one RocksDB batch.
Status ApplyFrame(storage::Store& store, log::LogBackend& local, const log::FrameView& frame,
                  LogPosition position, AppliedState* state, const log::ChainState& after) {
  storage::Batch batch(store);
  AppliedState next{position, state->local_position, after};
  if (frame.kind == log::FrameKind::kFence) {
    PutAppliedState(batch, next);
    SW_RETURN_IF_ERROR(store.Write(batch, /*sync=*/false));
  } else {
    auto record = DecodeClusterCommit(frame.body, &batch);
    if (!record.ok()) {
      return Status::Corruption("stream position " + std::to_string(position) + ": " +
                                record.status().ToString());
    }
    SW_RETURN_IF_ERROR(CheckCounters(frame.header, *record, position));
    auto tail = local.Tail();
    if (!tail.ok()) return tail.status();
    log::AppendOptions append;
    append.expected_last = *tail;
    append.sync = false;  // the stream is the source of truth: a crash refolds from it
    append.writes = &batch;
    next.local_position = *tail + 1;
    PutAppliedState(batch, next);
    auto applied = local.Append(*record, append);
    if (!applied.ok()) return applied.status();
  }
  *state = next;
  return Status::OK();
}

}  // namespace

std::string AppliedStateKey() { return std::string(1, storage::kMetaTag) + "cluster"; }

Result<AppliedState> LoadAppliedState(storage::Store& store, uint32_t partition,
                                      uint32_t partitions) {
  auto stored = store.Get(Family::kMeta, AppliedStateKey());
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) {
    return AppliedState{0, 0, log::GenesisChainState(partition, partitions, /*first_n=*/1)};
  }
  auto state = DecodeApplied(**stored);
  if (!state.ok()) return state.status();
  if (state->chain.partition != partition || state->chain.partitions != partitions) {
    return Status::FailedPrecondition(
        "this database follows partition " + std::to_string(state->chain.partition) + " of " +
        std::to_string(state->chain.partitions) + ", not partition " + std::to_string(partition) +
        " of " + std::to_string(partitions));
  }
  return state;
}

void PutAppliedState(storage::Batch& batch, const AppliedState& state) {
  batch.Put(Family::kMeta, AppliedStateKey(), EncodeApplied(state));
}

Status FoldStream(log::LogBackend& remote, storage::Store& store, log::LogBackend& local,
                  AppliedState* state) {
  log::ChainVerifier verifier(state->chain);
  for (;;) {  // each round applies at least one record or returns
    auto records = remote.ReadFrom(state->position + 1, kFoldChunk);
    if (!records.ok()) return records.status();
    if (records->empty()) return Status::OK();
    for (const log::LogRecord& r : *records) {
      auto frame = verifier.Next(r.position, r.data);
      if (!frame.ok()) return frame.status();
      SW_RETURN_IF_ERROR(ApplyFrame(store, local, *frame, r.position, state, verifier.state()));
    }
  }
}

Result<log::ChainWriter> ReplicatedLog::Fence(storage::Store& store, log::LogBackend& local,
                                              log::LogBackend& remote,
                                              const ReplicatedLogOptions& options,
                                              AppliedState* applied) {
  Status last;
  for (int round = 0; round < options.fence_rounds; ++round) {
    SW_RETURN_IF_ERROR(FoldStream(remote, store, local, applied));
    auto writer = log::ChainWriter::Make(applied->chain, applied->chain.fence_epoch + 1);
    if (!writer.ok()) return writer.status();
    auto fence = writer->SealFence(options.node);
    if (!fence.ok()) return fence.status();
    log::AppendOptions append;
    append.expected_last = applied->position;
    append.dedupe_id = fence->dedupe_id;
    auto position = log::AppendResolved(remote, fence->bytes, append, options.retry);
    if (position.ok()) {
      // Applied like any frame, so that the fold and the owner agree on the state.
      SW_RETURN_IF_ERROR(FoldStream(remote, store, local, applied));
      if (applied->position < *position) {
        return Status::IOError("the fence at stream position " + std::to_string(*position) +
                               " was acknowledged but could not be read back");
      }
      writer->Advance(*fence);
      return std::move(*writer);
    }
    if (!(position.status().code() == Status::Code::kFailedPrecondition)) return position.status();
    last = position.status();  // another owner appended meanwhile: fold and fence again
  }
  return Status::Busy("partition " + std::to_string(options.partition) +
                      ": another owner kept appending through " +
                      std::to_string(options.fence_rounds) + " fence attempts (" +
                      last.ToString() + "); stop it first");
}

Result<std::unique_ptr<ReplicatedLog>> ReplicatedLog::OpenAsOwner(
    storage::Store* store, std::unique_ptr<log::LogBackend> local,
    std::shared_ptr<log::LogBackend> remote, const ReplicatedLogOptions& options) {
  auto applied = LoadAppliedState(*store, options.partition, options.partitions);
  if (!applied.ok()) return applied.status();
  auto writer = Fence(*store, *local, *remote, options, &*applied);
  if (!writer.ok()) return writer.status();
  spdlog::info("statewatch: partition {} owned at epoch {} from stream position {}",
               options.partition, writer->epoch(), applied->position);
  if (options.state) options.state->Owned(writer->epoch(), applied->position);
  return std::unique_ptr<ReplicatedLog>(new ReplicatedLog(
      store, std::move(local), std::move(remote), options, *applied, std::move(*writer)));
}

ReplicatedLog::ReplicatedLog(storage::Store* store, std::unique_ptr<log::LogBackend> local,
                             std::shared_ptr<log::LogBackend> remote,
                             const ReplicatedLogOptions& options, AppliedState applied,
                             log::ChainWriter writer)
    : store_(store),
      local_(std::move(local)),
      remote_(std::move(remote)),
      options_(options),
      applied_(applied),
      writer_(std::move(writer)) {}

Result<LogPosition> ReplicatedLog::Append(std::string_view data,
                                          const log::AppendOptions& options) {
  if (!closed_.ok()) return closed_;
  auto* batch = dynamic_cast<storage::Batch*>(options.writes);
  if (options.writes != nullptr && batch == nullptr) {
    return Status::InvalidArgument("ReplicatedLog: the keyed writes are not a storage::Batch");
  }
  // The frame's counters are the group's: its first sequence's counter must be the chain's
  // next one, or the stream would say other sequences than the record (nothing is appended).
  if (options.first_counter != 0 && options.first_counter != writer_.next_n()) {
    return Status::Corruption("partition " + std::to_string(options_.partition) +
                              ": the commit group starts at counter " +
                              std::to_string(options.first_counter) +
                              " but the stream's next counter is " +
                              std::to_string(writer_.next_n()));
  }
  auto body = EncodeClusterCommit(data, batch);
  if (!body.ok()) return body.status();
  auto sealed = writer_.SealCommitGroup(*body, options.counter_values);
  if (!sealed.ok()) return sealed.status();
  log::AppendOptions remote;
  remote.expected_last = applied_.position;
  remote.dedupe_id = sealed->dedupe_id;
  auto position = log::AppendResolved(*remote_, sealed->bytes, remote, options_.retry);
  if (!position.ok()) {
    if (!(position.status().code() == Status::Code::kFailedPrecondition)) return position.status();
    closed_ = Status::FailedPrecondition(
        "partition moved: partition " + std::to_string(options_.partition) +
        " has a newer owner than epoch " + std::to_string(writer_.epoch()) +
        "; this node acknowledges nothing more for it (" + position.status().ToString() + ")");
    spdlog::warn("statewatch: {}", closed_.ToString());
    if (options_.state) options_.state->Moved(closed_.message());
    return closed_;
  }
  log::ChainWriter next = writer_;
  next.Advance(*sealed);
  storage::Batch own(*store_);
  storage::Batch& local_batch = batch ? *batch : own;
  PutAppliedState(local_batch, AppliedState{*position, options.expected_last + 1, next.state()});
  log::AppendOptions local = options;
  local.writes = &local_batch;
  auto applied = local_->Append(data, local);
  if (!applied.ok()) return applied.status();  // the stream has it: a reopen refolds it
  writer_ = std::move(next);
  applied_ = AppliedState{*position, *applied, writer_.state()};
  if (options_.state) options_.state->Appended(*position);
  return applied;
}

Result<std::vector<log::LogRecord>> ReplicatedLog::ReadFrom(LogPosition from,
                                                            std::size_t max_records) {
  return local_->ReadFrom(from, max_records);
}

Result<LogPosition> ReplicatedLog::Tail() { return local_->Tail(); }

Status ReplicatedLog::PurgeBelow(LogPosition position) { return local_->PurgeBelow(position); }

decltype(EngineOptions::wrap_log) OwnerLog(std::shared_ptr<log::LogBackend> remote,
                                           ReplicatedLogOptions options) {
  return [remote = std::move(remote), options = std::move(options)](
             storage::Store& store, std::unique_ptr<log::LogBackend> local)
             -> Result<std::unique_ptr<log::LogBackend>> {
    auto owner = ReplicatedLog::OpenAsOwner(&store, std::move(local), remote, options);
    if (!owner.ok()) return owner.status();
    return std::unique_ptr<log::LogBackend>(std::move(*owner));
  };
}

}  // namespace statewatch::cluster
