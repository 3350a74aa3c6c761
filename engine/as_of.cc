// EngineImpl: state as of a past sequence — StatusAt and ReplayUntil (include/statewatch/
// engine.h), for post-mortems.
//
// The projections at sequence S are what an open would compute had the log ended at S: the
// checkpoint (heads, cursors, meta) with the log after it folded in, entry by entry, by the
// same folds as replay (projections/log_fold.h), stopping after the entry at S — also inside
// a commit group. So S can go back to the checkpoint's sequence and no further: the log
// before it is purged.
//
// The fold reads the checkpoint, the log and the journal rows of the events it folds from
// the store, not from memory, and without the engine's locks: writers go on. A checkpoint
// landing meanwhile (it rewrites heads and cursors, then purges the log) is seen in the meta
// record, which only a checkpoint rewrites: the fold compares it before and after and starts
// again (a few times) when it moved.
//
// The log after S is walked too, without folding it: the prunes there raised watermarks of
// rows that existed at S and are gone now, and a DeleteSession there removed a session's
// rows. The answer's watermark includes those raises, so that historyGap is exact for what
// can still be read.
#include <algorithm>
#include <filesystem>
#include <unordered_map>

#include "engine/engine_impl.h"
#include "projections/log_fold.h"
#include "statewatch/session_key.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

using storage::Family;

namespace {
constexpr std::size_t kFoldChunk = 256;
constexpr int kFoldAttempts = 4;
constexpr std::size_t kCopyBatchKeys = 4096;
}  // namespace

// The projections right after `until`, and what happened to them after it.
struct EngineImpl::AsOfFold {
  projections::ProjectionState state;
  MetaRec meta;                // the fold's meta: counters and row-cap mark as of `until`
  Sequence earliest = 0;       // the checkpoint's sequence: the earliest foldable
  Sequence last_sequence = 0;  // the log's last sequence
  std::unordered_map<uint64_t, Sequence> raised;   // session -> highest prune raise after
  std::unordered_map<uint64_t, Sequence> deleted;  // session -> first delete after
  // The session's watermark counting the prunes after `until` (capped at its head then).
  Sequence WatermarkOf(SessionRef s, const projections::HeadState& h) const {
    Sequence wm = h.watermark;
    if (auto it = raised.find(s.value); it != raised.end()) {
      wm = std::max(wm, std::min(it->second, h.head));
    }
    return wm;
  }
};

Status EngineImpl::FoldAsOf(Sequence until, AsOfFold* out) const {
  for (int attempt = 1;; ++attempt) {
    bool moved = false;
    *out = AsOfFold{};
    Status st = FoldAsOfOnce(until, out, &moved);
    if (!moved) return st;
    if (attempt == kFoldAttempts) {
      return Status::Busy("the database checkpointed " + std::to_string(kFoldAttempts) +
                          " times while sequence " + std::to_string(until) +
                          " was rebuilt; ask again");
    }
  }
}

Status EngineImpl::FoldAsOfOnce(Sequence until, AsOfFold* out, bool* moved) const {
  auto read_meta = [this]() -> Result<std::optional<std::string>> {
    return store_->Get(Family::kMeta, storage::MetaKey());
  };
  auto before = read_meta();
  if (!before.ok()) return before.status();
  auto decoded = DecodeStoredMeta(*before);
  if (!decoded.ok()) return decoded.status();
  MetaRec m = *decoded;
  MetaRec numbering;
  {
    std::shared_lock lock(state_mu_);
    numbering = meta_;
  }
  m.partition = numbering.partition;
  m.partitions = numbering.partitions;
  out->earliest = m.last_sequence;
  // The result is only as good as the meta still being the same afterwards.
  auto check_moved = [&]() -> Status {
    auto after = read_meta();
    if (!after.ok()) return after.status();
    *moved = *after != *before;
    return Status::OK();
  };
  if (until < m.last_sequence) {
    return Status::FailedPrecondition("sequence " + std::to_string(until) +
                                      " is before the earliest sequence the retained "
                                      "log can rebuild, " +
                                      std::to_string(m.last_sequence) +
                                      " (the last checkpoint's; the log before it is gone)");
  }
  Status st = LoadProjections(out->state);
  if (st.ok()) st = FoldLogAsOf(until, &m, out);
  if (Status c = check_moved(); !c.ok()) return c;
  if (!st.ok()) return st;
  out->meta = m;
  if (until > out->last_sequence) {
    return Status::InvalidArgument("sequence " + std::to_string(until) +
                                   " is beyond the database's last sequence, " +
                                   std::to_string(out->last_sequence));
  }
  return Status::OK();
}

// Folds the log after the checkpoint in `*m` into out->state up to and including `until`,
// and notes the prunes and deletes after it. As ReplayLog (checkpoint.cc), with the stop.
Status EngineImpl::FoldLogAsOf(Sequence until, MetaRec* m, AsOfFold* out) const {
  GroupRec rec;
  StoredEventFold fetched;
  out->last_sequence = m->last_sequence;
  Sequence last = m->last_sequence;  // the last sequence of the groups read so far
  for (log::LogPosition from = m->applied_position + 1;;) {
    auto chunk = log_->ReadFrom(from, kFoldChunk);
    if (!chunk.ok()) return chunk.status();
    if (chunk->empty()) break;
    for (const log::LogRecord& r : *chunk) {
      SW_RETURN_IF_ERROR(DecodeGroup(r.data, &rec));
      const Sequence expected = NextSequence(*m, last);
      if (rec.first_sequence == 0) rec.first_sequence = expected;
      if (rec.first_sequence != expected) {
        return Status::Corruption("log position " + std::to_string(r.position) +
                                  " starts at sequence " + std::to_string(rec.first_sequence) +
                                  " but must start at " + std::to_string(expected));
      }
      auto on_event = [&](std::size_t i, Sequence seq) -> Status {
        if (seq > until) return Status::OK();
        auto row = store_->Get(Family::kJournal, storage::JournalKey(rec.events[i], seq));
        if (!row.ok()) return row.status();
        if (!row->has_value() || !DecodeEventFold(**row, &fetched).ok() ||
            fetched.sequence != seq) {
          return Status::Corruption("log position " + std::to_string(r.position) + " names event " +
                                    std::to_string(seq) + " of session #" +
                                    std::to_string(rec.events[i].value) +
                                    ", but its journal row is missing or damaged");
        }
        out->state.ApplyEvent(
            seq, rec.committed_at,
            projections::EventFold{rec.events[i], fetched.notifies, fetched.seeds_cursor,
                                   fetched.actor, fetched.watchers},
            nullptr);
        return Status::OK();
      };
      auto on_op = [&](const projections::LogOp& op) {
        if (op.sequence <= until) {
          projections::ApplyOp(op, rec.committed_at, out->state, nullptr);
          if (op.type == projections::LogOp::Type::kPrune) {
            m->row_cap_mark = std::max(m->row_cap_mark, op.row_cap_mark);
            if (op.cursor_cutoff != 0 || !op.raises.empty()) m->last_prune_at = rec.committed_at;
          }
          return;
        }
        if (op.type == projections::LogOp::Type::kPrune) {
          for (const projections::WatermarkRaise& w : op.raises) {
            Sequence& r = out->raised[w.session.value];
            r = std::max(r, w.sequence);
          }
        } else if (op.type == projections::LogOp::Type::kDelete) {
          out->deleted.try_emplace(op.session.value, op.sequence);
        }
      };
      SW_RETURN_IF_ERROR(projections::ForEachEntry(rec.first_sequence, m->partitions,
                                                   rec.events.size(), rec.ops, on_event, on_op));
      if (rec.sequence_count() > 0) {
        last = rec.first_sequence + (rec.sequence_count() - 1) * m->partitions;
      }
      if (last <= until) {  // the counters of the whole groups folded
        m->last_ref = std::max(m->last_ref, rec.last_ref);
        m->last_delivery_id = std::max(m->last_delivery_id, rec.last_delivery_id);
        m->last_message_index = std::max(m->last_message_index, rec.last_message_index);
        m->applied_position = r.position;
      }
    }
    from = chunk->back().position + 1;
  }
  out->last_sequence = last;
  m->last_sequence = std::min(until, last);
  return Status::OK();
}

Result<SessionStatusAt> EngineImpl::StatusAt(const SessionName& session,
                                             std::optional<Sequence> as_of, Sequence after,
                                             int limit) const {
  SW_RETURN_IF_ERROR(CheckOwnedForRead(session));  // as ReadChanges
  const SessionName canonical = CanonicalSession(session);
  SessionStatusAt out;
  AsOfFold fold;
  if (as_of) SW_RETURN_IF_ERROR(FoldAsOf(*as_of, &fold));
  ChangesReader::Request req;
  req.after = after;
  req.limit = std::clamp(limit, 1, 200);
  {
    std::shared_lock lock(state_mu_);
    const projections::ProjectionState& st = as_of ? fold.state : state_;
    out.last_sequence = as_of ? fold.last_sequence : meta_.last_sequence;
    out.as_of = as_of ? *as_of : meta_.last_sequence;
    out.earliest_as_of = as_of ? fold.earliest : meta_.checkpoint_sequence;
    req.cap_mark = meta_.row_cap_mark;  // rows at or below the live mark are gone
    req.session = FindRef(canonical);
    if (!req.session) return out;
    if (const projections::HeadState* h = st.FindHead(req.session)) {
      out.state_version = req.head = h->head;
      out.watermark = as_of ? fold.WatermarkOf(req.session, *h) : h->watermark;
    }
    if (auto it = fold.deleted.find(req.session.value); it != fold.deleted.end()) {
      out.deleted_at = it->second;
    }
    auto entry = [&](SessionRef w, SessionRef t, const projections::CursorRec& c) {
      CursorEntry e;
      if (const SessionName* n = NameOf(w)) e.watcher = *n;
      if (const SessionName* n = NameOf(t)) e.target = *n;
      e.cursor = CursorState{c.last_seen, c.notified, st.EffectiveMaterial(c, w, t),
                             st.EffectiveUpdatedAt(c, w, t)};
      return e;
    };
    if (const auto* targets = st.TargetsOf(req.session)) {
      for (SessionRef t : *targets) {
        if (const projections::CursorRec* c = st.FindCursor(req.session, t)) {
          out.watching.push_back(entry(req.session, t, *c));
        }
      }
    }
    for (SessionRef w : st.WatchersOf(req.session)) {
      if (const projections::CursorRec* c = st.FindCursor(w, req.session)) {
        out.watchers.push_back(entry(w, req.session, *c));
      }
    }
    if (NameOf(req.session) != nullptr) out.pending = PendingIn(st, req.session);
  }
  auto by = [](const SessionName& a, const SessionName& b) {
    return std::tie(a.session_key, a.agent_id) < std::tie(b.session_key, b.agent_id);
  };
  std::sort(out.watching.begin(), out.watching.end(),
            [&](const CursorEntry& a, const CursorEntry& b) { return by(a.target, b.target); });
  std::sort(out.watchers.begin(), out.watchers.end(),
            [&](const CursorEntry& a, const CursorEntry& b) { return by(a.watcher, b.watcher); });
  // The page: the rows of the session up to its head at as_of that are still there. A reader
  // without a row cache, so that a past head never meets the live cache's runs.
  ChangesView view;
  view.state_version = req.head;
  view.history_gap = after < out.watermark;
  if (req.head > 0) {
    ChangesReader reader(*store_, /*cache_bytes=*/0);
    ChangesReader::Lease lease;
    SW_RETURN_IF_ERROR(reader.Begin(req, &lease));
    SW_RETURN_IF_ERROR(reader.Finish(req, &lease, nullptr, &view));
  }
  out.changes = view.ToPage();
  out.changes.state_version = req.head;
  out.changes.history_gap = after < out.watermark;
  if (req.head == 0) out.changes.earliest_available_sequence = 0;
  return out;
}

Status EngineImpl::ReplayUntil(Sequence until, const std::string& dir) const {
  if (dir.empty()) return Status::InvalidArgument("the output directory must be named");
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    return Status::InvalidArgument("the output directory " + dir +
                                   " exists: replay writes a new database only");
  }
  AsOfFold fold;
  SW_RETURN_IF_ERROR(FoldAsOf(until, &fold));
  MetaRec live;
  {
    std::shared_lock lock(state_mu_);
    live = meta_;
  }
  // Rows pruned or deleted since `until` are gone: their sessions' watermarks say so.
  std::vector<std::pair<SessionRef, projections::HeadState>> heads;
  fold.state.ForEachHead([&](SessionRef s, const projections::HeadState& h) {
    projections::HeadState copy = h;
    copy.watermark = fold.WatermarkOf(s, h);
    heads.emplace_back(s, copy);
  });

  storage::StoreOptions so;
  so.create_if_missing = true;
  so.block_cache_bytes = 8u << 20;
  so.write_buffer_bytes = options_.write_buffer_bytes;
  auto opened = storage::Store::Open(dir, so);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<storage::Store> target = std::move(*opened);
  storage::Batch b(*target);
  std::size_t pending = 0;
  auto flush = [&]() -> Status {
    if (pending == 0) return Status::OK();
    SW_RETURN_IF_ERROR(target->Write(b, /*sync=*/false));
    b.Clear();
    pending = 0;
    return Status::OK();
  };
  const Sequence gone_through = live.row_cap_mark;  // rows at or below it are gone now
  auto kept_row = [&](Sequence seq) { return seq > gone_through && seq <= until; };
  uint64_t rows = 0;
  std::vector<IndexedRow> run;
  RowRunWriter runs;
  Status copied = store_->ForEachInSnapshot(
      [&](Family f, std::string_view key, std::string_view value) -> Status {
        switch (f) {
          case Family::kHeads:  // rebuilt below
          case Family::kCursors:
          case Family::kMeta:
          case Family::kRequests:  // a retry's answer belongs to the live database
          case Family::kLog:  // the new database's checkpoint covers every sequence
            return Status::OK();
          case Family::kJournal: {
            auto k = storage::ParseJournalKey(key);
            if (!k || !kept_row(k->sequence)) return Status::OK();
            ++rows;
            break;
          }
          case Family::kBySeq: {  // a run keeps the members the copy keeps, under the first
            if (!DecodeRowRunEntry(key, value, &run).ok()) return Status::OK();
            runs.Clear();
            for (const IndexedRow& m : run) {
              if (!m.removed && kept_row(m.sequence)) {
                runs.Add(m.sequence, m.session, m.occurred_at, m.keyed);
              }
            }
            runs.Emit([&](Sequence first, std::string_view kept) {
              b.Put(f, storage::BySeqKey(first), kept);
              ++pending;
            });
            return pending >= kCopyBatchKeys ? flush() : Status::OK();
          }
          case Family::kDedupe: {
            auto entry = DecodeDedupeEntry(value);
            if (!entry.ok() || !kept_row(entry->sequence)) return Status::OK();
            break;
          }
          default:
            break;
        }
        b.Put(f, key, value);
        if (++pending == kCopyBatchKeys) return flush();
        return Status::OK();
      });
  if (copied.ok()) copied = flush();
  if (!copied.ok()) {
    target.reset();
    std::filesystem::remove_all(dir, ec);
    return copied;
  }
  for (const auto& [ref, h] : heads) b.Put(Family::kHeads, storage::HeadKey(ref), EncodeHead(h));
  fold.state.ForEachCursor([&](projections::CursorId id, const projections::CursorRec& c) {
    b.Put(Family::kCursors, storage::CursorKey(id.watcher, id.target), EncodeCursor(c));
  });
  MetaRec m = fold.meta;
  m.format_version = kFormatVersion;
  m.last_sequence = until;
  m.checkpoint_sequence = until;
  m.journal_rows = rows;
  m.log_records_since_checkpoint = 0;
  m.applied_position = 0;  // an empty log: its first record will be position 1
  // The registry and the other tables are copied as they are now: their counters too.
  m.last_ref = std::max(m.last_ref, live.last_ref);
  m.last_delivery_id = std::max(m.last_delivery_id, live.last_delivery_id);
  m.last_message_index = std::max(m.last_message_index, live.last_message_index);
  m.partition = live.partition;
  m.partitions = live.partitions;
  b.Put(Family::kMeta, storage::MetaKey(), EncodeMeta(m));
  Status st = target->Write(b, /*sync=*/true);
  if (!st.ok()) {
    target.reset();
    std::filesystem::remove_all(dir, ec);
  }
  return st;
}

}  // namespace statewatch::engine

namespace statewatch {

Result<SessionStatusAt> Engine::StatusAt(const SessionName&, std::optional<Sequence>, Sequence,
                                         int) const {
  return Status::FailedPrecondition("this engine does not answer StatusAt");
}

Status Engine::ReplayUntil(Sequence, const std::string&) const {
  return Status::FailedPrecondition("this engine does not write replays");
}

}  // namespace statewatch
