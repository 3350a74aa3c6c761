#include "projections/projection_state.h"

#include <algorithm>
#include <map>

namespace statewatch::projections {

namespace {

void Opened(FoldEffects* fx, SessionRef w, SessionRef t) {
  if (fx) fx->opened.push_back(OpenedNotice{w, t});
}

}  // namespace

// ---- reads --------------------------------------------------------------------------------

const HeadState* ProjectionState::FindHead(SessionRef s) const {
  auto it = heads_.find(s.value);
  return it == heads_.end() ? nullptr : &it->second;
}

const CursorRec* ProjectionState::FindCursor(SessionRef watcher, SessionRef target) const {
  auto t = targets_.find(target.value);
  if (t == targets_.end()) return nullptr;
  auto c = t->second.cursors.find(watcher.value);
  return c == t->second.cursors.end() ? nullptr : &c->second;
}

CursorRec* ProjectionState::MutableCursor(SessionRef watcher, SessionRef target) {
  return const_cast<CursorRec*>(FindCursor(watcher, target));
}

void ProjectionState::TouchHead(SessionRef s, HeadState& h) {
  if (h.dirty) return;
  h.dirty = true;
  dirty_heads_.push_back(s);
}

void ProjectionState::TouchCursor(SessionRef watcher, SessionRef target, CursorRec& c) {
  if (c.dirty) return;
  c.dirty = true;
  dirty_cursors_.push_back(CursorId{watcher, target});
}

void ProjectionState::ClearDirty() {
  for (SessionRef s : dirty_heads_) {
    if (auto it = heads_.find(s.value); it != heads_.end()) it->second.dirty = false;
  }
  for (const CursorId& id : dirty_cursors_) {
    if (CursorRec* c = MutableCursor(id.watcher, id.target)) c->dirty = false;
  }
  dirty_heads_.clear();
  dirty_cursors_.clear();
}

Seq ProjectionState::EffectiveMaterial(const CursorRec& c, SessionRef watcher,
                                       SessionRef target) const {
  const HeadState* h = FindHead(target);
  if (!h) return c.material;
  Seq derived = h->material_latest_actor == watcher.value ? h->material_other : h->material_latest;
  return std::max(c.material, derived);
}

int64_t ProjectionState::EffectiveUpdatedAt(const CursorRec& c, SessionRef watcher,
                                            SessionRef target) const {
  const HeadState* h = FindHead(target);
  if (!h) return c.updated_at;
  bool self = h->material_latest_actor == watcher.value;
  Seq derived = self ? h->material_other : h->material_latest;
  int64_t at = self ? h->material_other_at : h->material_latest_at;
  return derived > c.material ? std::max(c.updated_at, at) : c.updated_at;
}

std::vector<SessionRef> ProjectionState::WatchersOf(SessionRef target) const {
  std::vector<SessionRef> out;
  auto t = targets_.find(target.value);
  if (t == targets_.end()) return out;
  for (const auto& [w, c] : t->second.cursors) out.push_back(SessionRef{w});
  return out;
}

const std::vector<SessionRef>* ProjectionState::TargetsOf(SessionRef watcher) const {
  auto it = watcher_targets_.find(watcher.value);
  return it == watcher_targets_.end() ? nullptr : &it->second;
}

bool ProjectionState::AnyCursorIdleBefore(int64_t cutoff) const {
  for (const auto& [t, tc] : targets_) {
    for (const auto& [w, c] : tc.cursors) {
      if (EffectiveUpdatedAt(c, SessionRef{w}, SessionRef{t}) < cutoff) return true;
    }
  }
  return false;
}

bool ProjectionState::SweepWouldChange() const {
  for (const auto& [t, tc] : targets_) {
    for (const auto& [w, c] : tc.cursors) {
      Seq m = EffectiveMaterial(c, SessionRef{w}, SessionRef{t});
      if (m > c.last_seen && c.notified != m) return true;
    }
  }
  return false;
}

// ---- cursor bookkeeping -------------------------------------------------------------------

CursorRec& ProjectionState::PutCursor(SessionRef watcher, SessionRef target, const CursorRec& c) {
  TargetCursors& tc = targets_[target.value];
  auto [it, inserted] = tc.cursors.try_emplace(watcher.value, c);
  CursorRec& rec = it->second;
  if (inserted) {
    ++cursor_count_;
    watcher_targets_[watcher.value].push_back(target);
    rec.in_idle = false;
    rec.dirty = false;
  } else {
    if (rec.pending()) --pending_count_;
    bool in_idle = rec.in_idle, dirty = rec.dirty;
    rec = c;
    rec.in_idle = in_idle;
    rec.dirty = dirty;
  }
  if (rec.pending()) {
    ++pending_count_;
  } else {
    MarkIdle(tc, watcher.value, rec);
  }
  return rec;
}

void ProjectionState::MarkIdle(TargetCursors& tc, uint64_t watcher, CursorRec& c) {
  if (c.in_idle) return;
  c.in_idle = true;
  tc.idle.push_back(watcher);
  if (tc.idle.size() > 2 * tc.cursors.size() + 16) {
    // Drop stale entries (erased cursors) so the list stays proportional to the cursors.
    std::vector<uint64_t> live;
    for (uint64_t w : tc.idle) {
      auto it = tc.cursors.find(w);
      if (it != tc.cursors.end() && it->second.in_idle) {
        it->second.in_idle = false;  // de-duplicates repeated entries
        live.push_back(w);
      }
    }
    for (uint64_t w : live) tc.cursors[w].in_idle = true;
    tc.idle.swap(live);
  }
}

void ProjectionState::EraseCursor(SessionRef watcher, SessionRef target, FoldEffects* fx) {
  auto t = targets_.find(target.value);
  if (t == targets_.end()) return;
  auto c = t->second.cursors.find(watcher.value);
  if (c == t->second.cursors.end()) return;
  if (c->second.pending()) --pending_count_;
  t->second.cursors.erase(c);
  // The erased key goes on the dirty list as is: the checkpoint deletes it (or writes the
  // cursor that replaced it).
  dirty_cursors_.push_back(CursorId{watcher, target});
  --cursor_count_;
  // The idle list keeps a stale entry; it is dropped when validated.
  if (t->second.cursors.empty()) targets_.erase(t);
  auto w = watcher_targets_.find(watcher.value);
  if (w != watcher_targets_.end()) {
    auto& v = w->second;
    auto pos = std::find(v.begin(), v.end(), target);
    if (pos != v.end()) {
      *pos = v.back();
      v.pop_back();
    }
    if (v.empty()) watcher_targets_.erase(w);
  }
}

// ---- folds --------------------------------------------------------------------------------

void ProjectionState::ApplyEvent(Seq seq, int64_t now, const EventFold& e, FoldEffects* fx) {
  HeadState& h = heads_[e.target.value];
  h.head = seq;
  h.updated_at = now;
  if (e.notifying) {
    if (h.material_latest_actor != e.actor.value) {
      h.material_other = h.material_latest;
      h.material_other_at = h.material_latest_at;
      h.material_latest_actor = e.actor.value;
    }
    h.material_latest = seq;
    h.material_latest_at = now;
  }
  TouchHead(e.target, h);

  if (e.seeds_cursor) {
    // Spawn seed: L = N = M = s, overwriting any earlier cursor on the pair.
    for (SessionRef w : e.watchers) {
      TouchCursor(w, e.target, PutCursor(w, e.target, CursorRec{seq, seq, seq, now}));
    }
    return;
  }
  if (!e.notifying) return;  // journal-only kinds never touch cursors
  for (SessionRef w : e.watchers) {
    if (w == e.actor || FindCursor(w, e.target)) continue;
    // A producer-passed watcher without a cursor: L = 0, N = M = e, notice opens.
    TouchCursor(w, e.target, PutCursor(w, e.target, CursorRec{0, seq, seq, now}));
    Opened(fx, w, e.target);
  }
  OpenNoticesOnIdle(seq, now, e.target, e.actor, fx);
}

// Every idle cursor on the target (N == L) opens a notice, except the actor's own
// (self-suppression). Pending cursors are not visited: their M moves through the head.
void ProjectionState::OpenNoticesOnIdle(Seq seq, int64_t now, SessionRef target,
                                        SessionRef actor, FoldEffects* fx) {
  auto t = targets_.find(target.value);
  if (t == targets_.end()) return;
  TargetCursors& tc = t->second;
  std::vector<uint64_t> still_idle;
  for (uint64_t w : tc.idle) {
    auto c = tc.cursors.find(w);
    if (c == tc.cursors.end() || !c->second.in_idle) continue;  // stale entry
    CursorRec& rec = c->second;
    rec.in_idle = false;
    if (rec.pending()) continue;
    if (w == actor.value) {
      still_idle.push_back(w);
      continue;
    }
    rec.notified = seq;
    rec.material = seq;
    rec.updated_at = now;
    ++pending_count_;
    TouchCursor(SessionRef{w}, target, rec);
    Opened(fx, SessionRef{w}, target);
  }
  tc.idle.swap(still_idle);
  for (uint64_t w : tc.idle) tc.cursors[w].in_idle = true;
}

void ProjectionState::ApplyRegister(Seq seq, int64_t now, SessionRef watcher, SessionRef target,
                                    FoldEffects* fx) {
  if (FindCursor(watcher, target)) return;  // an existing cursor keeps its positions
  const HeadState* h = FindHead(target);
  Seq head = h ? h->head : 0;
  TouchCursor(watcher, target, PutCursor(watcher, target, CursorRec{head, head, head, now}));
}

void ProjectionState::ApplyAck(Seq seq, int64_t now, SessionRef watcher,
                               std::span<const SessionRef> targets, FoldEffects* fx) {
  std::vector<SessionRef> done;
  for (SessionRef t : targets) {
    // A target named twice is acknowledged once: a second pass would acknowledge the notice
    // that just reopened for intervening changes, unseen.
    if (std::find(done.begin(), done.end(), t) != done.end()) continue;
    done.push_back(t);
    CursorRec* c = MutableCursor(watcher, t);
    if (!c || !c->pending()) continue;
    Seq m = EffectiveMaterial(*c, watcher, t);
    CursorRec next{c->notified, c->notified, m, now};
    if (m > c->notified) {
      next.notified = m;  // exactly one new notice: changesSince old N
      Opened(fx, watcher, t);
    }
    TouchCursor(watcher, t, PutCursor(watcher, t, next));
  }
}

// The cursor goes with its pending notice, as in a reset of that one pair.
void ProjectionState::ApplyUnregister(Seq seq, SessionRef watcher, SessionRef target,
                                      FoldEffects* fx) {
  EraseCursor(watcher, target, fx);
}

void ProjectionState::ApplyReset(Seq seq, SessionRef watcher, FoldEffects* fx) {
  const std::vector<SessionRef>* targets = TargetsOf(watcher);
  if (!targets) return;
  std::vector<SessionRef> copy = *targets;
  for (SessionRef t : copy) EraseCursor(watcher, t, fx);
}

void ProjectionState::ApplyDelete(Seq seq, SessionRef session, FoldEffects* fx) {
  if (heads_.erase(session.value)) dirty_heads_.push_back(session);
  ApplyReset(seq, session, fx);  // cursors it holds as watcher
  auto t = targets_.find(session.value);
  if (t == targets_.end()) return;
  std::vector<uint64_t> watchers;
  for (const auto& [w, c] : t->second.cursors) watchers.push_back(w);
  for (uint64_t w : watchers) EraseCursor(SessionRef{w}, session, fx);
}

void ProjectionState::ApplyPrune(Seq seq, int64_t cursor_cutoff,
                                 std::span<const WatermarkRaise> raises, FoldEffects* fx) {
  for (const WatermarkRaise& r : raises) {
    auto it = heads_.find(r.session.value);
    if (it == heads_.end()) continue;  // pruning never creates a head
    if (r.sequence > it->second.watermark) {
      it->second.watermark = r.sequence;
      TouchHead(r.session, it->second);
    }
  }
  if (cursor_cutoff > 0) ExpireCursors(cursor_cutoff, fx);
}

void ProjectionState::ExpireCursors(int64_t cutoff, FoldEffects* fx) {
  std::vector<CursorId> expired;
  ForEachCursor([&](CursorId id, const CursorRec& c) {
    if (EffectiveUpdatedAt(c, id.watcher, id.target) < cutoff) expired.push_back(id);
  });
  for (const CursorId& id : expired) EraseCursor(id.watcher, id.target, fx);
}

void ProjectionState::ApplySweep(Seq seq, int64_t now, FoldEffects* fx) {
  std::vector<std::pair<CursorId, CursorRec>> changes;
  ForEachCursor([&](CursorId id, const CursorRec& c) {
    Seq m = EffectiveMaterial(c, id.watcher, id.target);
    if (m > c.last_seen && c.notified != m) {
      changes.push_back({id, CursorRec{c.last_seen, m, m, now}});
    }
  });
  for (const auto& [id, rec] : changes) {
    TouchCursor(id.watcher, id.target, PutCursor(id.watcher, id.target, rec));
    Opened(fx, id.watcher, id.target);
  }
}

// ---- loading ------------------------------------------------------------------------------

void ProjectionState::LoadHead(SessionRef s, const HeadState& h) {
  HeadState& stored = heads_[s.value];
  stored = h;
  stored.dirty = false;
}

void ProjectionState::LoadCursor(CursorId id, CursorRec c) {
  c.in_idle = false;
  PutCursor(id.watcher, id.target, c);
}

void ProjectionState::Clear() {
  heads_.clear();
  targets_.clear();
  watcher_targets_.clear();
  cursor_count_ = 0;
  pending_count_ = 0;
  dirty_heads_.clear();
  dirty_cursors_.clear();
}

// ---- diff ---------------------------------------------------------------------------------

namespace {

std::string DescribeHead(const HeadState& h) {
  return "head=" + std::to_string(h.head) + " watermark=" + std::to_string(h.watermark) +
         " material=" + std::to_string(h.material_latest) + "/" +
         std::to_string(h.material_other);
}

std::string DescribeCursor(const CursorRec& c) {
  return "L=" + std::to_string(c.last_seen) + " N=" + std::to_string(c.notified) +
         " M=" + std::to_string(c.material) + " updatedAt=" + std::to_string(c.updated_at);
}

}  // namespace

std::vector<std::string> ProjectionState::Diff(const ProjectionState& other,
                                               std::size_t max) const {
  std::vector<std::string> out;
  auto add = [&](std::string line) {
    if (out.size() < max) out.push_back(std::move(line));
  };
  for (const auto& [ref, h] : heads_) {
    const HeadState* o = other.FindHead(SessionRef{ref});
    if (!o) add("head of session #" + std::to_string(ref) + " missing in rebuilt state");
    else if (!(*o == h)) {
      add("head of session #" + std::to_string(ref) + ": live " + DescribeHead(h) +
          ", rebuilt " + DescribeHead(*o));
    }
  }
  other.ForEachHead([&](SessionRef ref, const HeadState&) {
    if (!FindHead(ref)) add("head of session #" + std::to_string(ref.value) + " missing in live state");
  });
  ForEachCursor([&](CursorId id, const CursorRec& c) {
    const CursorRec* o = other.FindCursor(id.watcher, id.target);
    std::string name = "cursor #" + std::to_string(id.watcher.value) + " -> #" +
                       std::to_string(id.target.value);
    if (!o) add(name + " missing in rebuilt state");
    else if (!o->SamePositions(c)) {
      add(name + ": live " + DescribeCursor(c) + ", rebuilt " + DescribeCursor(*o));
    }
  });
  other.ForEachCursor([&](CursorId id, const CursorRec&) {
    if (!FindCursor(id.watcher, id.target)) {
      add("cursor #" + std::to_string(id.watcher.value) + " -> #" +
          std::to_string(id.target.value) + " missing in live state");
    }
  });
  return out;
}

}  // namespace statewatch::projections
