// ProjectionState: heads, watermarks, cursors and the pending-notice index, as pure folds
// over the engine's log records. No I/O: the engine persists what a fold reports as touched;
// replay and `verify` run the very same folds on a fresh state.
//
// Coalescing. A notifying event on a target whose watchers all have a pending notice must
// cost about as much as an event with no watchers. So a cursor's M (material) is not
// rewritten by every event: the target's head remembers its latest notifying event (and
// actor) and the latest one by a different actor, and a cursor's effective M is
//   max(stored M, latest notifying event on the target by an actor other than the watcher).
// updatedAt is derived the same way. Only cursors whose notice opens are touched, found via
// a per-target list of idle cursors (N == L).
//
// Not thread-safe: the engine's sequencer mutates it; readers hold the engine's lock.
#ifndef STATEWATCH_PROJECTIONS_PROJECTION_STATE_H_
#define STATEWATCH_PROJECTIONS_PROJECTION_STATE_H_

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "schema/session_ref.h"

namespace statewatch::projections {

using Seq = uint64_t;

struct HeadState {
  Seq head = 0;       // state version: highest sequence the session recorded
  Seq watermark = 0;  // highest sequence pruning deleted (historyGap when after < watermark)
  int64_t updated_at = 0;
  Seq material_latest = 0;            // latest notifying event
  uint64_t material_latest_actor = 0;  // its actor's ref (0: none)
  int64_t material_latest_at = 0;
  Seq material_other = 0;  // latest notifying event by an actor other than the latest's
  int64_t material_other_at = 0;
  bool dirty = false;  // changed since the last checkpoint; not persisted, not compared
  bool operator==(const HeadState& o) const {
    return head == o.head && watermark == o.watermark && updated_at == o.updated_at &&
           material_latest == o.material_latest &&
           material_latest_actor == o.material_latest_actor &&
           material_latest_at == o.material_latest_at && material_other == o.material_other &&
           material_other_at == o.material_other_at;
  }
};

struct CursorRec {
  Seq last_seen = 0;  // L
  Seq notified = 0;   // N (pending exactly when N > L)
  Seq material = 0;   // M as stored; see EffectiveMaterial
  int64_t updated_at = 0;
  bool in_idle = false;  // bookkeeping of the idle list; not persisted, not compared
  bool dirty = false;    // changed since the last checkpoint; not persisted, not compared
  bool pending() const { return notified > last_seen; }
  bool SamePositions(const CursorRec& o) const {
    return last_seen == o.last_seen && notified == o.notified && material == o.material &&
           updated_at == o.updated_at;
  }
};

struct CursorId {
  SessionRef watcher;
  SessionRef target;
  bool operator==(const CursorId&) const = default;
};

// A notice that opened (or re-opened) during a fold: the engine publishes it as a wake
// once the batch is durable.
struct OpenedNotice {
  SessionRef watcher;
  SessionRef target;
};

// What a fold did that the engine publishes once the group is durable.
struct FoldEffects {
  std::vector<OpenedNotice> opened;
  void Clear() { opened.clear(); }
};

// The inputs of an event's fold (from an EventRecord).
struct EventFold {
  SessionRef target;
  bool notifying = false;
  bool seeds_cursor = false;
  SessionRef actor;  // 0 when the actor is not a known session
  std::span<const SessionRef> watchers;  // producer-passed, agent-scoped, deduplicated
};

struct WatermarkRaise {
  SessionRef session;
  Seq sequence;
};

class ProjectionState {
 public:
  // ---- reads ----
  const HeadState* FindHead(SessionRef s) const;
  const CursorRec* FindCursor(SessionRef watcher, SessionRef target) const;
  // The cursor's M including coalesced material (see the file comment).
  Seq EffectiveMaterial(const CursorRec& c, SessionRef watcher, SessionRef target) const;
  int64_t EffectiveUpdatedAt(const CursorRec& c, SessionRef watcher, SessionRef target) const;
  // Watchers holding a cursor on the target (unordered).
  std::vector<SessionRef> WatchersOf(SessionRef target) const;
  // Targets the watcher holds cursors on (unordered).
  const std::vector<SessionRef>* TargetsOf(SessionRef watcher) const;
  std::size_t head_count() const { return heads_.size(); }
  std::size_t cursor_count() const { return cursor_count_; }
  std::size_t pending_count() const { return pending_count_; }
  template <typename F>  // f(SessionRef, const HeadState&)
  void ForEachHead(F&& f) const {
    for (const auto& [ref, h] : heads_) f(SessionRef{ref}, h);
  }
  template <typename F>  // f(CursorId, const CursorRec&)
  void ForEachCursor(F&& f) const {
    for (const auto& [t, tc] : targets_) {
      for (const auto& [w, c] : tc.cursors) f(CursorId{SessionRef{w}, SessionRef{t}}, c);
    }
  }
  // True when some cursor's effective updatedAt is before `cutoff` (it would expire).
  bool AnyCursorIdleBefore(int64_t cutoff) const;
  // True when a sweep at this point would change a cursor.
  bool SweepWouldChange() const;

  // ---- folds (one per log record kind; `fx` may be null during replay) ----
  void ApplyEvent(Seq seq, int64_t now, const EventFold& e, FoldEffects* fx);
  void ApplyRegister(Seq seq, int64_t now, SessionRef watcher, SessionRef target,
                     FoldEffects* fx);
  void ApplyAck(Seq seq, int64_t now, SessionRef watcher, std::span<const SessionRef> targets,
                FoldEffects* fx);
  void ApplyUnregister(Seq seq, SessionRef watcher, SessionRef target, FoldEffects* fx);
  void ApplyReset(Seq seq, SessionRef watcher, FoldEffects* fx);
  void ApplyDelete(Seq seq, SessionRef session, FoldEffects* fx);
  void ApplyPrune(Seq seq, int64_t cursor_cutoff, std::span<const WatermarkRaise> raises,
                  FoldEffects* fx);
  void ApplySweep(Seq seq, int64_t now, FoldEffects* fx);

  // ---- loading persisted state (open, checkpoint) ----
  void LoadHead(SessionRef s, const HeadState& h);
  void LoadCursor(CursorId id, CursorRec c);
  void Clear();

  // ---- the dirty set: what changed since the last checkpoint ----
  // Every fold marks what it changes; a checkpoint writes exactly those keys. Marking costs
  // no allocation per change beyond the amortised growth of two vectors, and a key changed
  // many times between checkpoints is listed once (erased keys may repeat).
  // f(SessionRef, const HeadState* or null when gone) / f(CursorId, const CursorRec* or null).
  template <typename H, typename C>
  void ForEachDirty(H&& on_head, C&& on_cursor) const {
    for (SessionRef s : dirty_heads_) on_head(s, FindHead(s));
    for (const CursorId& id : dirty_cursors_) on_cursor(id, FindCursor(id.watcher, id.target));
  }
  std::size_t dirty_count() const { return dirty_heads_.size() + dirty_cursors_.size(); }
  // After the checkpoint holding them is durable.
  void ClearDirty();

  // Differences between two states (for verify), at most `max` lines.
  std::vector<std::string> Diff(const ProjectionState& other, std::size_t max) const;

 private:
  struct TargetCursors {
    std::unordered_map<uint64_t, CursorRec> cursors;  // by watcher ref
    std::vector<uint64_t> idle;  // watchers whose cursor may be idle (validated on use)
  };

  CursorRec* MutableCursor(SessionRef watcher, SessionRef target);
  void TouchHead(SessionRef s, HeadState& h);
  void TouchCursor(SessionRef watcher, SessionRef target, CursorRec& c);
  // Creates or overwrites a cursor, keeping counts and indexes right.
  CursorRec& PutCursor(SessionRef watcher, SessionRef target, const CursorRec& c);
  void EraseCursor(SessionRef watcher, SessionRef target, FoldEffects* fx);
  void MarkIdle(TargetCursors& tc, uint64_t watcher, CursorRec& c);
  void OpenNoticesOnIdle(Seq seq, int64_t now, SessionRef target, SessionRef actor,
                         FoldEffects* fx);
  void ExpireCursors(int64_t cutoff, FoldEffects* fx);

  std::unordered_map<uint64_t, HeadState> heads_;
  std::unordered_map<uint64_t, TargetCursors> targets_;
  std::unordered_map<uint64_t, std::vector<SessionRef>> watcher_targets_;
  std::size_t cursor_count_ = 0;
  std::size_t pending_count_ = 0;
  std::vector<SessionRef> dirty_heads_;
  std::vector<CursorId> dirty_cursors_;
};

}  // namespace statewatch::projections

#endif  // STATEWATCH_PROJECTIONS_PROJECTION_STATE_H_
