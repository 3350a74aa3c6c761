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
  bool operator==(const HeadState&) const = default;
};

struct CursorRec {
  Seq last_seen = 0;  // L
  Seq notified = 0;   // N (pending exactly when N > L)
  Seq material = 0;   // M as stored; see EffectiveMaterial
  int64_t updated_at = 0;
  bool in_idle = false;  // bookkeeping of the idle list; not persisted, not compared
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

// What a fold touched, for the engine to persist. Entries may repeat.
struct FoldEffects {
  std::vector<SessionRef> heads;   // write the current head, or delete it if gone
  std::vector<CursorId> cursors;   // write the current cursor, or delete it if gone
  std::vector<OpenedNotice> opened;
  void Clear() {
    heads.clear();
    cursors.clear();
    opened.clear();
  }
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
  void ApplyReset(Seq seq, SessionRef watcher, FoldEffects* fx);
  void ApplyDelete(Seq seq, SessionRef session, FoldEffects* fx);
  void ApplyPrune(Seq seq, int64_t cursor_cutoff, std::span<const WatermarkRaise> raises,
                  FoldEffects* fx);
  void ApplySweep(Seq seq, int64_t now, FoldEffects* fx);

  // ---- loading persisted state (open, snapshot) ----
  void LoadHead(SessionRef s, const HeadState& h);
  void LoadCursor(CursorId id, CursorRec c);
  void Clear();

  // Differences between two states (for verify), at most `max` lines.
  std::vector<std::string> Diff(const ProjectionState& other, std::size_t max) const;

 private:
  struct TargetCursors {
    std::unordered_map<uint64_t, CursorRec> cursors;  // by watcher ref
    std::vector<uint64_t> idle;  // watchers whose cursor may be idle (validated on use)
  };

  CursorRec* MutableCursor(SessionRef watcher, SessionRef target);
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
};

}  // namespace statewatch::projections

#endif  // STATEWATCH_PROJECTIONS_PROJECTION_STATE_H_
