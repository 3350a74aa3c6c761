#include "cluster/replicated_log.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "cluster/checkpoint_codec.h"
#include "cluster/commit_codec.h"
#include "engine/flatbuffer_values.h"
#include "engine/records.h"
#include "log/batch_frame.h"
#include "log/chain_verifier.h"
#include "schema/cluster_applied_generated.h"
#include "storage/key_codec.h"
#include "storage/local_log.h"

namespace statewatch::cluster {

using log::LogPosition;
using storage::Family;

namespace {

constexpr std::size_t kFoldChunk = 1024;

constexpr char kAppliedIdentifier[] = "SWAS";

// The entry of the builds before 2026-12-05: stream position and local position (8 bytes
// each, little-endian), then the ChainState's FlatBuffers bytes. Read (a database or a
// cluster checkpoint of those builds), never written.
Result<AppliedState> DecodePositionPrefixedAppliedState(std::string_view bytes) {
  if (bytes.size() < 16) {
    return Status::Corruption("the cluster applied-state entry has " +
                              std::to_string(bytes.size()) + " bytes, fewer than 16");
  }
  auto fixed64 = [](std::string_view b) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(b[i])} << (8 * i);
    return v;
  };
  AppliedState s;
  s.position = fixed64(bytes);
  s.local_position = fixed64(bytes.substr(8));
  auto chain = log::DecodeChainState(std::string(bytes.substr(16)));  // aligned copy
  if (!chain.ok()) return chain.status();
  s.chain = *chain;
  return s;
}

std::string EncodeApplied(const AppliedState& s) {
  const std::string chain = log::EncodeChainState(s.chain);
  flatbuffers::FlatBufferBuilder b(64 + chain.size());
  auto chain_bytes = b.CreateVector(reinterpret_cast<const uint8_t*>(chain.data()), chain.size());
  b.Finish(fb::CreateAppliedState(b, s.position, s.local_position, chain_bytes),
           kAppliedIdentifier);
  return engine::fbv::Finish(b);
}

}  // namespace

Result<AppliedState> DecodeAppliedState(std::string_view bytes) {
  if (bytes.size() < 8 || !flatbuffers::BufferHasIdentifier(bytes.data(), kAppliedIdentifier)) {
    return DecodePositionPrefixedAppliedState(bytes);
  }
  return engine::fbv::Decode<fb::AppliedState>(
      bytes, "the cluster applied-state entry",
      [](const fb::AppliedState& f) -> Result<AppliedState> {
        auto chain = log::DecodeChainState(std::string(engine::fbv::Bytes(f.chain())));
        if (!chain.ok()) return chain.status();
        return AppliedState{f.position(), f.local_position(), *chain};
      });
}

namespace {

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
  auto state = DecodeAppliedState(**stored);
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

namespace {

// The fold found the stream purged below state->position + 1 (`purged`): restores the
// latest checkpoint if it is usable, else says why the node cannot catch up.
Status RestoreCheckpoint(log::LogBackend& remote, storage::Store& store, log::LogBackend& local,
                         AppliedState* state, const FoldOptions& options,
                         const Status& purged) {
  const std::string need = "the stream no longer holds position " +
                           std::to_string(state->position + 1) + " (" + purged.ToString() + ")";
  if (!options.checkpoints) {
    return Status::FailedPrecondition(need + " and no checkpoint store is configured: this " +
                                      "node cannot catch up");
  }
  auto latest = options.checkpoints->Latest();
  if (!latest.ok()) return latest.status();
  if (!latest->has_value()) {
    return Status::FailedPrecondition(need + " and there is no checkpoint: this node cannot " +
                                      "catch up");
  }
  const log::Checkpoint& cp = **latest;
  if (cp.position <= state->position) {
    return Status::FailedPrecondition(need + " and the latest checkpoint is at position " +
                                      std::to_string(cp.position) + ", not past position " +
                                      std::to_string(state->position) + ": this node cannot catch up");
  }
  // Positions first (cheap), then the snapshot, then whether the next frame chains onto it:
  // all before anything changes.
  auto next = remote.ReadFrom(cp.position + 1, 1);
  if (!next.ok()) {
    if (next.status().code() == Status::Code::kNotFound) {
      return Status::FailedPrecondition(
          need + "; the latest checkpoint is at position " + std::to_string(cp.position) +
          " but the stream no longer holds position " + std::to_string(cp.position + 1) +
          " either: this node cannot catch up");
    }
    return next.status();
  }
  auto applied = InspectSnapshot(cp.data);
  if (!applied.ok()) return applied.status();
  if (applied->position != cp.position) {
    return Status::Corruption("the checkpoint at position " + std::to_string(cp.position) +
                              " holds a snapshot of position " +
                              std::to_string(applied->position));
  }
  if (applied->chain.partition != state->chain.partition ||
      applied->chain.partitions != state->chain.partitions) {
    return Status::Corruption("the checkpoint at position " + std::to_string(cp.position) +
                              " is of partition " + std::to_string(applied->chain.partition) +
                              " of " + std::to_string(applied->chain.partitions) +
                              ", not partition " + std::to_string(state->chain.partition) +
                              " of " + std::to_string(state->chain.partitions));
  }
  if (next->empty()) {  // nothing after it yet: it must at least be within the stream
    auto tail = remote.Tail();
    if (!tail.ok()) return tail.status();
    if (*tail < cp.position) {
      return Status::Corruption("the checkpoint at position " + std::to_string(cp.position) +
                                " is beyond the stream's tail at position " +
                                std::to_string(*tail));
    }
  } else {
    log::ChainVerifier verifier(applied->chain);
    auto frame = verifier.Next((*next)[0].position, (*next)[0].data);
    if (!frame.ok()) {
      return Status::Corruption("the checkpoint at position " + std::to_string(cp.position) +
                                " does not match the stream: the frame at position " +
                                std::to_string(cp.position + 1) + " does not chain onto it (" +
                                frame.status().ToString() + ")");
    }
  }
  auto* local_log = dynamic_cast<storage::LocalLog*>(&local);
  if (local_log == nullptr) {
    return Status::InvalidArgument("a checkpoint restore needs the node's local log");
  }
  const auto start = std::chrono::steady_clock::now();
  auto restored = RestoreSnapshot(store, cp.data);
  if (!restored.ok()) return restored.status();
  SW_RETURN_IF_ERROR(local_log->Reload(restored->local_position));
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  spdlog::info(
      "event=cluster_checkpoint_restored partition={} position={} from_position={} bytes={} ms={}",
      state->chain.partition, cp.position, state->position, cp.data.size(), ms);
  *state = *restored;
  if (options.state) options.state->Checkpointed(cp.position);
  if (options.restored_at) *options.restored_at = cp.position;
  return Status::OK();
}

}  // namespace

Status FoldStream(log::LogBackend& remote, storage::Store& store, log::LogBackend& local,
                  AppliedState* state, const FoldOptions& options) {
  log::ChainVerifier verifier(state->chain);
  int restores = 0;
  for (;;) {  // each round applies at least one record, restores a checkpoint, or returns
    auto records = remote.ReadFrom(state->position + 1, kFoldChunk);
    if (!records.ok()) {
      // Purged again while restoring means a newer checkpoint: bounded all the same.
      if (records.status().code() != Status::Code::kNotFound || restores == 3) {
        return records.status();
      }
      ++restores;
      SW_RETURN_IF_ERROR(RestoreCheckpoint(remote, store, local, state, options, records.status()));
      verifier = log::ChainVerifier(state->chain);
      continue;
    }
    if (records->empty()) return Status::OK();
    for (const log::LogRecord& r : *records) {
      auto frame = verifier.Next(r.position, r.data);
      if (!frame.ok()) return frame.status();
      SW_RETURN_IF_ERROR(ApplyFrame(store, local, *frame, r.position, state, verifier.state()));
    }
  }
}

namespace {

// The epoch of this node's fence: see ReplicatedLogOptions::assignment_epoch.
Result<uint64_t> FenceEpoch(const ReplicatedLogOptions& options, uint64_t last_fence_epoch) {
  const uint64_t next = last_fence_epoch + 1;
  if (options.assignment_epoch == 0) return next;
  if (last_fence_epoch > options.assignment_epoch) {
    return Status::FailedPrecondition(
        "partition " + std::to_string(options.partition) + ": the stream's last fence has epoch " +
        std::to_string(last_fence_epoch) + ", newer than this node's assignment (epoch " +
        std::to_string(options.assignment_epoch) + "): the assignment is stale");
  }
  return std::max(next, options.assignment_epoch);
}

}  // namespace

Result<log::ChainWriter> ReplicatedLog::Fence(storage::Store& store, log::LogBackend& local,
                                              log::LogBackend& remote,
                                              const ReplicatedLogOptions& options,
                                              AppliedState* applied,
                                              log::LogPosition* restored_at) {
  FoldOptions fold;
  fold.checkpoints = options.checkpoints;
  fold.state = options.state;
  fold.restored_at = restored_at;
  Status last;
  for (int round = 0; round < options.fence_rounds; ++round) {
    SW_RETURN_IF_ERROR(FoldStream(remote, store, local, applied, fold));
    auto epoch = FenceEpoch(options, applied->chain.fence_epoch);
    if (!epoch.ok()) return epoch.status();
    auto writer = log::ChainWriter::Make(applied->chain, *epoch);
    if (!writer.ok()) return writer.status();
    auto fence = writer->SealFence(options.node);
    if (!fence.ok()) return fence.status();
    log::AppendOptions append;
    append.expected_last = applied->position;
    append.dedupe_id = fence->dedupe_id;
    auto position = log::AppendResolved(remote, fence->bytes, append, options.retry);
    if (position.ok()) {
      // Applied like any frame, so that the fold and the owner agree on the state.
      SW_RETURN_IF_ERROR(FoldStream(remote, store, local, applied, fold));
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
  log::LogPosition restored_at = 0;
  auto writer = Fence(*store, *local, *remote, options, &*applied, &restored_at);
  if (!writer.ok()) return writer.status();
  spdlog::info("statewatch: partition {} owned at epoch {} from stream position {}",
               options.partition, writer->epoch(), applied->position);
  if (options.state) options.state->Owned(writer->epoch(), applied->position);
  // The first checkpoint is due checkpoint_every positions after the stream's latest one
  // (an earlier owner's, or the one this open restored), not after position 0: a new owner
  // of a long stream would otherwise write one at its first commit, a stall after every
  // takeover. Only the end marker is read. Unknown (the store unreachable): from the
  // restored one.
  log::LogPosition last_checkpoint = restored_at;
  if (options.checkpoints) {
    auto latest = options.checkpoints->LatestPosition();
    if (latest.ok() && latest->has_value()) {
      last_checkpoint = std::max(last_checkpoint, **latest);
    } else if (!latest.ok()) {
      spdlog::warn("event=cluster_checkpoint_unknown partition={} error=\"{}\"",
                   options.partition, latest.status().ToString());
    }
  }
  return std::unique_ptr<ReplicatedLog>(new ReplicatedLog(
      store, std::move(local), std::move(remote), options, *applied, std::move(*writer),
      last_checkpoint));
}

ReplicatedLog::ReplicatedLog(storage::Store* store, std::unique_ptr<log::LogBackend> local,
                             std::shared_ptr<log::LogBackend> remote,
                             const ReplicatedLogOptions& options, AppliedState applied,
                             log::ChainWriter writer, LogPosition last_checkpoint)
    : store_(store),
      local_(std::move(local)),
      remote_(std::move(remote)),
      options_(options),
      applied_(applied),
      writer_(std::move(writer)),
      last_checkpoint_(last_checkpoint) {}

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

Status ReplicatedLog::PurgeBelow(LogPosition position) {
  SW_RETURN_IF_ERROR(local_->PurgeBelow(position));
  if (options_.checkpoints && closed_.ok() && !publishing_.load() &&
      (publish_failed_.load() ||
       applied_.position >= last_checkpoint_ + options_.checkpoint_every)) {
    ClusterCheckpoint();
  }
  return Status::OK();
}

ReplicatedLog::~ReplicatedLog() {
  if (publisher_.joinable()) publisher_.join();
}

namespace {

int64_t MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

}  // namespace

// On the commit leader, between two commit groups: the snapshot is the state after
// applied_.position. Its cost here is the read of the whole database; the publish runs on
// publisher_.
void ReplicatedLog::ClusterCheckpoint() {
  const auto start = std::chrono::steady_clock::now();
  auto snapshot = EncodeSnapshot(*store_);
  if (!snapshot.ok()) {
    spdlog::warn("event=cluster_checkpoint_failed partition={} error=\"{}\"", options_.partition,
                 snapshot.status().ToString());
    return;
  }
  const LogPosition position = snapshot->applied.position;
  // Advanced now, so that the next one is due checkpoint_every positions after this one
  // whether or not it is stored yet (publish_failed_ makes a failed one due at once).
  last_checkpoint_ = position;
  publishing_ = true;
  publish_failed_ = false;
  if (!options_.checkpoint_in_background) {
    PublishCheckpoint(log::Checkpoint{position, std::move(snapshot->blob)}, snapshot->entries,
                      snapshot->parts, MsSince(start));
    return;
  }
  if (publisher_.joinable()) publisher_.join();  // finished: publishing_ was false
  publisher_ = std::thread(&ReplicatedLog::PublishCheckpoint, this,
                           log::Checkpoint{position, std::move(snapshot->blob)},
                           snapshot->entries, snapshot->parts, MsSince(start));
}

void ReplicatedLog::PublishCheckpoint(log::Checkpoint checkpoint, uint64_t entries, uint64_t parts,
                                      int64_t snapshot_ms) {
  const auto start = std::chrono::steady_clock::now();
  const LogPosition position = checkpoint.position;
  const std::size_t bytes = checkpoint.data.size();
  Status st = options_.checkpoints->Write(checkpoint);
  if (st.code() == Status::Code::kFailedPrecondition) {
    // A newer checkpoint exists (a newer owner's): it is the one the purge relies on.
    spdlog::info("event=cluster_checkpoint_skipped partition={} position={} reason=\"{}\"",
                 options_.partition, position, st.ToString());
  } else if (!st.ok()) {
    spdlog::warn("event=cluster_checkpoint_failed partition={} position={} error=\"{}\"",
                 options_.partition, position, st.ToString());
    publish_failed_ = true;
  } else {
    if (options_.state) options_.state->Checkpointed(position);
    st = remote_->PurgeBelow(position + 1);
    if (!st.ok()) {
      spdlog::warn("event=cluster_purge_failed partition={} below={} error=\"{}\"",
                   options_.partition, position + 1, st.ToString());
    }
    spdlog::info(
        "event=cluster_checkpoint partition={} position={} entries={} parts={} bytes={} "
        "snapshot_ms={} publish_ms={}",
        options_.partition, position, entries, parts, bytes, snapshot_ms, MsSince(start));
  }
  publishing_ = false;
}

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
