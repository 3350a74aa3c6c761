// EngineImpl: opening (checkpoint + replay), checkpoints, and the format-1 migration.
//
// The heads and cursors families and the meta record together are a checkpoint: the
// projections as they were after the log position meta.applied_position. A checkpoint
// writes only what changed since the last one (the projections' dirty set), with the new
// position, in one batch through the WAL — no flush and no flush ordering to reason about,
// and a crash can never split a checkpoint. The log before it is purged afterwards (a crash
// in between leaves records that replay skips).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/engine_impl.h"
#include "engine/request_seal.h"
#include "projections/log_fold.h"
#include "storage/key_codec.h"
#include "storage/local_log.h"
#include "storage/store_replace.h"

namespace statewatch::engine {

using storage::Family;

namespace {
constexpr std::size_t kReplayChunk = 256;
}  // namespace

// ---- open -----------------------------------------------------------------------------------

Status EngineImpl::Load() {
  bool had_meta = false;
  bool migrate_format2 = false;
  SW_RETURN_IF_ERROR(LoadState(&had_meta, &migrate_format2));
  // Outside the lock: the migration ends with a checkpoint, which takes it.
  if (migrate_format2) SW_RETURN_IF_ERROR(MigrateRowIndexes());
  if (!options_.read_only) SW_RETURN_IF_ERROR(MoveRequestRecords(*store_));
  return MaybeWriteNumbering(had_meta);
}

Status EngineImpl::LoadState(bool* had_meta_out, bool* migrate_out) {
  std::unique_lock lock(state_mu_);
  SW_RETURN_IF_ERROR(ClearOrRefuseInterruptedReplace());
  bool& had_meta = *had_meta_out;
  bool& migrate_format2 = *migrate_out;
  auto read_meta = [this, &had_meta, &migrate_format2]() -> Status {
    auto stored = store_->Get(Family::kMeta, storage::MetaKey());
    if (!stored.ok()) return stored.status();
    had_meta = stored->has_value();
    auto m = DecodeStoredMeta(*stored);
    if (!m.ok()) return m.status();
    meta_ = *m;
    SW_RETURN_IF_ERROR(LoadNumbering(had_meta));
    if (meta_.format_version == 1) SW_RETURN_IF_ERROR(MigrateFormat1(&meta_));
    if (meta_.format_version == 2 || meta_.format_version == 3) {
      if (options_.read_only) {
        return Status::FailedPrecondition(
            "the database has format " + std::to_string(meta_.format_version) +
            " and must be migrated to format " + std::to_string(kFormatVersion) +
            " (its row indexes are built once): open it once for writing (e.g. statewatch "
            "serve)");
      }
      migrate_format2 = true;
      return Status::OK();
    }
    if (meta_.format_version != kFormatVersion) {
      return Status::FailedPrecondition(
          "the database has format " + std::to_string(meta_.format_version) +
          ", which this build (format " + std::to_string(kFormatVersion) + ") cannot read");
    }
    return Status::OK();
  };
  SW_RETURN_IF_ERROR(read_meta());
  auto log = storage::LocalLog::Open(store_.get(), meta_.applied_position);
  if (!log.ok()) return log.status();
  log_ = std::move(*log);
  SW_RETURN_IF_ERROR(CheckUnnumberedLog(had_meta));
  if (options_.wrap_log && !options_.read_only) {  // cluster mode: folds the stream
    // into the store first, so that the names and rows loaded below include what it added
    auto wrapped = options_.wrap_log(*store_, std::move(log_));
    if (!wrapped.ok()) return wrapped.status();
    log_ = std::move(*wrapped);
    // A fold that restored a cluster checkpoint replaced the whole store, the engine's own
    // checkpoint meta included (docs/cluster-internals.md, "Checkpoints and purge"); an
    // ordinary fold leaves it as it was.
    SW_RETURN_IF_ERROR(read_meta());
  }
  SW_RETURN_IF_ERROR(LoadNames());
  state_.Clear();
  SW_RETURN_IF_ERROR(LoadProjections(state_));
  // Compaction may drop only what a durable checkpoint's mark covers: replay needs the rows
  // after the checkpoint even where the (replayed) mark has moved past them.
  durable_cap_mark_->store(meta_.row_cap_mark, std::memory_order_release);
  // Only the groups after the checkpoint are read, each event's row by a point Get: an open
  // costs what the checkpoint does not cover, whatever the journal's length. Damaged rows
  // the replay does not need are found by verify and by the reads that meet them.
  uint64_t replayed = 0;
  SW_RETURN_IF_ERROR(ReplayLog(state_, &meta_, &replayed));
  if (replayed > 0) spdlog::debug("statewatch: replayed {} commit groups at open", replayed);
  return Status::OK();
}

// The stored numbering must be the options' (a partition's sequences only mean something
// under its own). A database without a meta record yet takes the options'.
Status EngineImpl::LoadNumbering(bool stored) {
  // A read-only open hands out no sequence: it reads the database under the numbering the
  // database states, so `verify`, `export` and the other read-only verbs work on a
  // partition's directory without being told its partition, and a read of another
  // partition's session is Misdirected there as on the owner (CheckOwned).
  if (stored && options_.read_only) {
    options_.partition = meta_.partition;
    options_.partitions = meta_.partitions;
    return Status::OK();
  }
  if (stored && (meta_.partition != options_.partition ||
                 meta_.partitions != options_.partitions)) {
    return Status::InvalidArgument(
        "the database numbers partition " + std::to_string(meta_.partition) + " of " +
        std::to_string(meta_.partitions) + ", but the options ask for partition " +
        std::to_string(options_.partition) + " of " + std::to_string(options_.partitions));
  }
  meta_.partition = options_.partition;
  meta_.partitions = options_.partitions;
  return Status::OK();
}

// A cluster checkpoint restore cut off part-way (storage/store_replace.h) left part of the
// old state beside part of the checkpoint. Only the partition's stream can rebuild it: a
// cluster owner's open (wrap_log) empties the store so that its fold restores again; any
// other open refuses it and changes nothing.
Status EngineImpl::ClearOrRefuseInterruptedReplace() {
  auto interrupted = storage::ReplaceInterrupted(*store_);
  if (!interrupted.ok()) return interrupted.status();
  if (!*interrupted) return Status::OK();
  if (!options_.wrap_log || options_.read_only) {
    return Status::FailedPrecondition(
        "a cluster checkpoint restore into this database was cut off part-way, so it holds "
        "neither the old state nor the checkpoint's; only the partition's stream can rebuild "
        "it: statewatch cluster follow, or serve --cluster, on this directory finishes it");
  }
  auto cleared = storage::ClearInterruptedReplace(*store_);
  if (!cleared.ok()) return cleared.status();
  spdlog::warn("event=interrupted_restore_cleared: the store is refolded from the stream");
  return Status::OK();
}

// A database without a meta record but with commit groups was written by a single node
// (an engine with P > 1 writes its meta at its first open, before any group): its
// sequences are dense, so it is partition 0 of 1.
Status EngineImpl::CheckUnnumberedLog(bool stored) const {
  if (stored || options_.partitions == 1) return Status::OK();
  auto tail = log_->Tail();
  if (!tail.ok()) return tail.status();
  if (*tail == 0) return Status::OK();
  return Status::InvalidArgument(
      "the database numbers partition 0 of 1, but the options ask for partition " +
      std::to_string(options_.partition) + " of " + std::to_string(options_.partitions));
}

// A writable cluster engine (P > 1) whose database has no meta record yet writes one once
// the open succeeded, so that a later open with another numbering is refused before
// anything is replayed. It is the absent record's content (no checkpoint yet) plus the
// numbering: not the replayed state, which no checkpoint holds. After the replay, so that
// an open that fails (e.g. a single-node log read under P > 1) writes nothing.
Status EngineImpl::MaybeWriteNumbering(bool stored) {
  if (stored || options_.read_only || options_.partitions == 1) return Status::OK();
  MetaRec fresh;
  fresh.partition = options_.partition;
  fresh.partitions = options_.partitions;
  storage::Batch b(*store_);
  b.Put(Family::kMeta, storage::MetaKey(), EncodeMeta(fresh));
  return store_->Write(b, /*sync=*/true);
}

Status EngineImpl::LoadNames() {
  refs_by_name_.clear();
  names_by_ref_.clear();
  subagent_refs_.clear();
  auto it = store_->NewIterator(Family::kRefs, std::string(1, storage::kRefTag),
                                std::string(1, storage::kRefTag + 1));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto ref = storage::ParseSessionKeyed(storage::kRefTag, it->key());
    auto name = DecodeSessionName(it->value());
    if (!ref || !name.ok()) return Status::Corruption("bad refs entry");
    RememberNameLocked(*ref, *name);
    meta_.last_ref = std::max(meta_.last_ref, ref->value);
  }
  return it->status();
}

Status EngineImpl::LoadProjections(projections::ProjectionState& state) const {
  for (Family family : {Family::kHeads, Family::kCursors}) {
    auto it = store_->NewIterator(family);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      std::string_view k = it->key();
      if (auto ref = storage::ParseSessionKeyed(storage::kHeadTag, k)) {
        auto h = DecodeHead(it->value());
        if (!h.ok()) return h.status();
        state.LoadHead(*ref, *h);
      } else if (auto ck = storage::ParseCursorKey(k)) {
        auto c = DecodeCursor(it->value());
        if (!c.ok()) return c.status();
        state.LoadCursor(projections::CursorId{ck->watcher, ck->target}, *c);
      }
    }
    SW_RETURN_IF_ERROR(it->status());
  }
  return Status::OK();
}

// Folds every commit group after meta->applied_position, reading each event's fold inputs
// from its row. The same folds as the live path (projections/log_fold.h).
Status EngineImpl::ReplayLog(projections::ProjectionState& state, MetaRec* meta,
                             uint64_t* records, const RowFolds* rows) const {
  GroupRec rec;
  StoredEventFold fetched;
  const MetaRec& numbering = meta_;  // Load() set (and checked) the numbering before replay
  // The fold inputs of event `seq` of `session`, or null when its row is missing or damaged.
  auto fold_of = [&](SessionRef session, Sequence seq) -> Result<const StoredEventFold*> {
    if (rows != nullptr) {
      auto it = rows->find(seq);
      if (it == rows->end() || it->second.session != session) return nullptr;
      return &it->second.fold;
    }
    auto row = store_->Get(Family::kJournal, storage::JournalKey(session, seq));
    if (!row.ok()) return row.status();
    if (!row->has_value() || !DecodeEventFold(**row, &fetched).ok()) return nullptr;
    return &fetched;
  };
  for (log::LogPosition from = meta->applied_position + 1;;) {
    auto chunk = log_->ReadFrom(from, kReplayChunk);
    if (!chunk.ok()) return chunk.status();
    if (chunk->empty()) return Status::OK();
    for (const log::LogRecord& r : *chunk) {
      SW_RETURN_IF_ERROR(DecodeGroup(r.data, &rec));
      // A group's first sequence follows the previous group's last under the numbering
      // (log/partition.h); each event's row repeats its own sequence, which on_event checks,
      // so a lost or reordered group shows.
      const Sequence expected = NextSequence(numbering, meta->last_sequence);
      if (rec.first_sequence == 0) rec.first_sequence = expected;
      if (rec.first_sequence != expected) {
        return Status::Corruption("log position " + std::to_string(r.position) +
                                  " starts at sequence " + std::to_string(rec.first_sequence) +
                                  " but the last one was " +
                                  std::to_string(meta->last_sequence) + ", so it must start at " +
                                  std::to_string(expected));
      }
      auto on_event = [&](std::size_t i, Sequence seq) -> Status {
        auto fold = fold_of(rec.events[i], seq);
        if (!fold.ok()) return fold.status();
        if (*fold == nullptr || (*fold)->sequence != seq) {
          return Status::Corruption("log position " + std::to_string(r.position) +
                                    " names event " + std::to_string(seq) + " of session #" +
                                    std::to_string(rec.events[i].value) +
                                    ", but its journal row is missing or damaged");
        }
        const StoredEventFold& f = **fold;
        state.ApplyEvent(seq, rec.committed_at,
                         projections::EventFold{rec.events[i], f.notifies, f.seeds_cursor,
                                                f.actor, f.watchers},
                         nullptr);
        return Status::OK();
      };
      auto on_op = [&](const projections::LogOp& op) {
        projections::ApplyOp(op, rec.committed_at, state, nullptr);
        if (op.type == projections::LogOp::Type::kPrune) {
          meta->row_cap_mark = std::max(meta->row_cap_mark, op.row_cap_mark);
          if (op.cursor_cutoff != 0 || !op.raises.empty()) meta->last_prune_at = rec.committed_at;
        }
      };
      SW_RETURN_IF_ERROR(
          projections::ForEachEntry(rec.first_sequence, numbering.partitions, rec.events.size(),
                                    rec.ops, on_event, on_op));
      if (rec.sequence_count() > 0) {
        meta->last_sequence = rec.first_sequence + (rec.sequence_count() - 1) * numbering.partitions;
      }
      meta->last_ref = std::max(meta->last_ref, rec.last_ref);
      meta->last_delivery_id = std::max(meta->last_delivery_id, rec.last_delivery_id);
      meta->last_message_index = std::max(meta->last_message_index, rec.last_message_index);
      // Format 2's groups carry no count (0): its migration recounts the rows afterwards.
      meta->journal_rows += rec.events.size();
      meta->journal_rows -= std::min<uint64_t>(meta->journal_rows, rec.rows_removed);
      meta->applied_position = r.position;
      ++*records;
    }
    from = chunk->back().position + 1;
  }
}

// Format 1 persisted every projection in every commit, so its heads, cursors and meta are
// already a checkpoint at its last sequence. What format 2 no longer keeps goes: the per-
// sequence log records (whose keys the group log reuses), by_seq, dedupe and base.
Status EngineImpl::MigrateFormat1(MetaRec* meta) {
  if (options_.read_only) {
    return Status::FailedPrecondition(
        "the database has format 1 and must be migrated to format " +
        std::to_string(kFormatVersion) + ": open it once for writing (e.g. statewatch serve)");
  }
  storage::Batch b(*store_);
  b.DeleteRange(Family::kLog, std::string(1, storage::kLogTag),
                std::string(1, storage::kLogTag + 1));
  b.DeleteRange(Family::kBySeq, std::string(1, storage::kBySeqTag),
                std::string(1, storage::kBySeqTag + 1));
  b.DeleteRange(Family::kDedupe, std::string(1, storage::kDedupeTag),
                std::string(1, storage::kDedupeTag + 1));
  b.DeleteRange(Family::kBase, std::string(1, 'A'), std::string(1, 'Z'));
  meta->format_version = 2;  // then format 2 -> 4 (MigrateRowIndexes) after the replay
  meta->checkpoint_sequence = meta->last_sequence;
  meta->applied_position = 0;
  meta->log_records_since_checkpoint = 0;
  b.Put(Family::kMeta, storage::MetaKey(), EncodeMeta(*meta));
  SW_RETURN_IF_ERROR(store_->Write(b, /*sync=*/true));
  spdlog::info("statewatch: migrated the database from format 1 to format 2");
  return Status::OK();
}

// Idempotent: a crash part-way leaves the old format in the meta, and the next open starts
// again (format 3's per-row entries are deleted first, in the first batch written).
Status EngineImpl::MigrateRowIndexes() {
  constexpr std::size_t kBatchRows = 4096;
  const uint32_t from = meta_.format_version;
  storage::Batch b(*store_);
  b.DeleteRange(Family::kBySeq, std::string(1, storage::kBySeqTag),
                std::string(1, storage::kBySeqTag + 1));
  StoredEventFold fold;
  uint64_t rows = 0;
  auto it = store_->NewIterator(Family::kJournal);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto key = storage::ParseJournalKey(it->key());
    if (!key)
      return Status::Corruption("journal key of " + std::to_string(it->key().size()) +
                                " bytes is malformed");
    if (key->sequence <= meta_.row_cap_mark) continue;  // gone, awaiting compaction
    Status decoded = DecodeEventFold(it->value(), &fold);
    if (!decoded.ok()) {
      return Status::Corruption("journal row of session #" + std::to_string(key->session.value) +
                                " sequence " + std::to_string(key->sequence) + ": " +
                                decoded.message());
    }
    const IndexedRow member{key->sequence, key->session, fold.occurred_at,
                            !fold.dedupe_key.empty(), false};
    b.Put(Family::kBySeq, storage::BySeqKey(key->sequence), EncodeRowRun({&member, 1}));
    if (!fold.dedupe_key.empty()) {
      b.Put(Family::kDedupe, storage::DedupeKey(fold.dedupe_key),
            EncodeDedupeEntry(key->session, key->sequence));
    }
    if (++rows % kBatchRows == 0) {
      SW_RETURN_IF_ERROR(store_->Write(b, /*sync=*/false));
      b.Clear();
    }
  }
  SW_RETURN_IF_ERROR(it->status());
  SW_RETURN_IF_ERROR(store_->Write(b, /*sync=*/false));
  // The checkpoint (synced) makes the entries and the count durable as the new format,
  // covering every replayed group, so that format 2's groups (which carry no row count) are
  // never replayed under it.
  meta_.format_version = kFormatVersion;
  meta_.journal_rows = rows;
  SW_RETURN_IF_ERROR(Checkpoint());
  spdlog::info("statewatch: migrated the database from format {} to format {} ({} rows indexed)",
               from, kFormatVersion, rows);
  return Status::OK();
}

// ---- checkpoints ----------------------------------------------------------------------------

bool EngineImpl::CheckpointDue() const {
  if (options_.read_only || !sticky_error_.ok() || !space_error_.ok()) return false;
  uint64_t size = state_.head_count() + state_.cursor_count();
  uint64_t threshold = std::max<uint64_t>(options_.checkpoint_min_records, 2 * size);
  // Counts sequences, not the span: a partition's sequences are P apart.
  return (meta_.last_sequence - meta_.checkpoint_sequence) / meta_.partitions >= threshold;
}

Status EngineImpl::MaybeCheckpoint() {
  return CheckpointDue() ? Checkpoint() : Status::OK();
}

// A failed purge is a failed write like any other (sticky), though the log stays whole.
Status EngineImpl::PurgeLog(log::LogPosition below) {
  Status st = log_->PurgeBelow(below);
  if (!st.ok()) {
    std::unique_lock lock(state_mu_);
    NoteWriteFailureLocked(st);
  }
  return st;
}

// Runs on the leader (the projections' only writer), so it reads them without the lock.
Status EngineImpl::Checkpoint() {
  std::vector<std::pair<projections::CursorId, const projections::CursorRec*>> cursors;
  storage::Batch b(*store_);
  state_.ForEachDirty(
      [&](SessionRef s, const projections::HeadState* h) {
        if (h) {
          b.Put(Family::kHeads, storage::HeadKey(s), EncodeHead(*h));
        } else {
          b.Delete(Family::kHeads, storage::HeadKey(s));
        }
      },
      [&](projections::CursorId id, const projections::CursorRec* c) {
        cursors.emplace_back(id, c);
      });
  // Key order (target, watcher): the inserts land next to each other in the memtable.
  std::sort(cursors.begin(), cursors.end(), [](const auto& a, const auto& b) {
    return std::pair(a.first.target.value, a.first.watcher.value) <
           std::pair(b.first.target.value, b.first.watcher.value);
  });
  CursorEncoder encoder;
  for (const auto& [id, c] : cursors) {
    std::string key = storage::CursorKey(id.watcher, id.target);
    if (c) {
      b.Put(Family::kCursors, key, encoder.Encode(*c));
    } else {
      b.Delete(Family::kCursors, key);
    }
  }
  MetaRec next;
  SW_RETURN_IF_ERROR(WriteCheckpoint(b, &next));
  std::unique_lock lock(state_mu_);
  state_.ClearDirty();
  meta_.checkpoint_sequence = next.checkpoint_sequence;
  meta_.log_records_since_checkpoint = 0;
  lock.unlock();
  durable_cap_mark_->store(next.row_cap_mark, std::memory_order_release);
  if (crash_point_) crash_point_("checkpointed");
  return PurgeLog(next.applied_position + 1);
}

Status EngineImpl::WriteCheckpoint(storage::Batch& b, MetaRec* next) {
  *next = meta_;
  next->checkpoint_sequence = meta_.last_sequence;
  next->log_records_since_checkpoint = 0;
  b.Put(Family::kMeta, storage::MetaKey(), EncodeMeta(*next));
  Status st = store_->Write(b, options_.durability == Durability::kSync);
  if (!st.ok()) {
    std::unique_lock lock(state_mu_);
    NoteWriteFailureLocked(st);
  }
  return st;
}

}  // namespace statewatch::engine
