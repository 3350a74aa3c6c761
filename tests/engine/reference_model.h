// ReferenceModel: docs/semantics.md, "Sessions and their keys" through "Retention", as a
// small in-memory state machine, for the model test (tests/engine/model_test.cc) and the
// recovery tests (tests/recovery/). It is written from the spec, not from the engine: each
// rule names the spec line it states. Where the spec leaves a choice open, the choice is
// marked "MODEL CHOICE" next to the code. The small rules (keys, event fields, kinds,
// notice text) are in engine/model/spec_rules.h.
//
// Sequences. The spec only promises that the one global counter is strictly increasing and
// never reused ("a session's sequences are increasing but not contiguous"). The engine also
// spends a sequence on every state-changing operation that is not an event, and the model
// mirrors that exactly so that every answer can be compared byte for byte:
//   - a registration that creates a cursor,
//   - an acknowledgement (drain) that acknowledges at least one pending notice,
//   - a watcher reset that removes at least one cursor,
//   - a session delete that removes anything (rows, head or a cursor naming it),
//   - a prune (age pass, on-demand or at open, or the row cap after a write) that deletes
//     rows or expires cursors,
//   - a sweep that changes a cursor.
// No-ops spend none.
//
// Not thread-safe. A value type: copy it to ask "what if this operation also landed".
#ifndef STATEWATCH_TESTS_ENGINE_REFERENCE_MODEL_H_
#define STATEWATCH_TESTS_ENGINE_REFERENCE_MODEL_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/model/spec_rules.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::model {

struct ModelOptions {
  int64_t retention_ms = 30 * kDayMs;  // the default of "Retention"
  uint64_t max_rows = 50000;           // the default of "Retention"
  std::size_t summary_max_bytes = 512;
  std::vector<KindSpec> kinds = SpecKinds();
};

// ---- the model ------------------------------------------------------------------------------

class ReferenceModel {
 public:
  explicit ReferenceModel(ModelOptions options = {}) : options_(std::move(options)) {}

  // "Recording is one atomic step" for each input in order, then the row cap ("Retention").
  // All inputs are validated first; one bad input refuses the call and nothing changes.
  Result<std::vector<RecordResult>> RecordMany(const std::vector<EventInput>& inputs, int64_t now) {
    std::vector<Prepared> prepared;
    for (const EventInput& in : inputs) {
      std::optional<Prepared> p = Prepare(in, now);
      if (!p) return Status::InvalidArgument("model: refused input");
      prepared.push_back(std::move(*p));
    }
    std::vector<RecordResult> out;
    for (Prepared& p : prepared) out.push_back(RecordOne(p, now));
    if (!out.empty()) CapRows();
    return out;
  }

  // Explicit registration ("How a watcher starts watching").
  bool Watch(const std::string& watcher_key, const SessionName& target, int64_t now) {
    WatcherKey w = ParseWatcher(watcher_key);
    std::optional<Key> tk = ParseKey(target.session_key);
    if (!w.session || !tk || !tk->agent_scoped) return false;
    std::optional<SessionName> t = Resolve(target.session_key, target.agent_id);
    if (!t || *t == *w.session) return false;
    CursorId id{Id(*w.session), Id(*t)};
    if (cursors_.count(id)) return true;  // an existing cursor keeps its positions
    Sequence head = HeadOf(id.second);
    cursors_[id] = CursorM{head, head, head, now};
    ++last_;
    return true;
  }

  // Removes the named watches: every pair must be one Watch would accept (else nothing
  // changes); each distinct pair's cursor goes, a sequence each.
  Result<UnwatchResult> Unwatch(const std::vector<WatchSpec>& watches) {
    std::set<CursorId> pairs;
    for (const WatchSpec& spec : watches) {
      WatcherKey w = ParseWatcher(spec.watcher_key);
      std::optional<Key> tk = ParseKey(spec.target.session_key);
      if (!w.session || !tk || !tk->agent_scoped) {
        return Status::InvalidArgument("model: refused watch");
      }
      std::optional<SessionName> t = Resolve(spec.target.session_key, spec.target.agent_id);
      if (!t || *t == *w.session) return Status::InvalidArgument("model: refused watch");
      pairs.insert(CursorId{Id(*w.session), Id(*t)});
    }
    UnwatchResult r;
    r.watches = pairs.size();
    for (const CursorId& id : pairs) {
      if (cursors_.erase(id) == 0) continue;
      ++r.removed;
      ++last_;
    }
    return r;
  }

  // "One notice, not many": the pending notices (before the acknowledgement), then L = N
  // and, where M > N, exactly one new notice (N = M).
  Result<std::vector<Notice>> Drain(const std::string& watcher_key, int64_t now) {
    auto notices = PendingNotices(watcher_key);
    if (!notices.ok() || notices->empty()) return notices;
    SessionId w = Id(*ParseWatcher(watcher_key).session);
    for (const Notice& n : *notices) Ack(cursors_.at({w, Id(n.target)}), now);
    ++last_;
    return notices;
  }

  // Acknowledges only these targets' pending notices. MODEL CHOICE: a target named twice is
  // acknowledged once: the notice that reopens for intervening changes was never shown.
  Status Acknowledge(const std::string& watcher_key, const std::vector<SessionName>& targets,
                     int64_t now) {
    WatcherKey w = ParseWatcher(watcher_key);
    if (w.malformed) return Status::InvalidArgument("model: malformed watcher");
    std::set<SessionId> ids;
    for (const SessionName& t : targets) {
      std::optional<SessionName> r = Resolve(t.session_key, t.agent_id);
      if (!r) return Status::InvalidArgument("model: malformed target");
      ids.insert(Id(*r));
    }
    if (!w.session) return Status::OK();
    bool any = false;
    for (const SessionId& t : ids) {
      auto it = cursors_.find({Id(*w.session), t});
      if (it == cursors_.end() || !Pending(it->second)) continue;
      Ack(it->second, now);
      any = true;
    }
    if (any) ++last_;
    return Status::OK();
  }

  // "The transition table", watcher session reset: every cursor *of* the watcher.
  Status ResetWatcher(const std::string& watcher_key) {
    WatcherKey w = ParseWatcher(watcher_key);
    if (w.malformed) return Status::InvalidArgument("model: malformed watcher");
    if (!w.session) return Status::OK();
    SessionId id = Id(*w.session);
    auto held = [&](const CursorId& c, const CursorM&) { return c.first == id; };
    if (EraseCursorsIf(held) > 0) ++last_;
    return Status::OK();
  }

  // "Retention": events, head and every cursor naming it; its dedupe keys are freed. Rows removed
  // this way never raise a watermark (the head and its watermark go).
  Status DeleteSession(const SessionName& session) {
    std::optional<SessionName> s = Resolve(session.session_key, session.agent_id);
    if (!s) return Status::InvalidArgument("model: malformed session");
    SessionId id = Id(*s);
    bool any = heads_.erase(id) > 0;
    auto rows = journal_.find(id);
    if (rows != journal_.end()) {
      std::vector<Sequence> seqs;
      for (const auto& [seq, e] : rows->second) seqs.push_back(seq);
      for (Sequence seq : seqs) EraseRow(seq);
      journal_.erase(id);
      any = any || !seqs.empty();
    }
    auto names = [&](const CursorId& c, const CursorM&) { return c.first == id || c.second == id; };
    if (EraseCursorsIf(names) > 0) any = true;
    if (any) ++last_;
    return Status::OK();
  }

  // "Retention" on demand (also at open): the age pass, the row cap (newest survive), idle cursors.
  PruneStats Prune(int64_t now) {
    int64_t cutoff = now - options_.retention_ms;
    std::set<Sequence> doomed;
    for (const auto& [seq, id] : rows_by_seq_) {
      if (journal_.at(id).at(seq).occurred_at_ms < cutoff) doomed.insert(seq);
    }
    uint64_t survivors = rows_by_seq_.size() - doomed.size();
    for (auto it = rows_by_seq_.begin(); survivors > options_.max_rows; ++it) {
      if (doomed.insert(it->first).second) --survivors;
    }
    PruneStats stats = DeleteForRetention({doomed.begin(), doomed.end()});
    // "The transition table", expiry: updatedAt older than the retention period.
    stats.cursors_expired =
        EraseCursorsIf([&](const CursorId&, const CursorM& c) { return c.updated_at < cutoff; });
    if (stats.rows_deleted > 0 || stats.cursors_expired > 0) ++last_;
    return stats;
  }

  // "The transition table", restart sweep: M > L -> N = M (pending again,
  // `changesSince L`). Returns the number of pending notices after it (each is (re)announced).
  uint64_t Sweep(int64_t now) {
    bool changed = false;
    uint64_t pending = 0;
    for (auto& [id, c] : cursors_) {
      if (c.m > c.l && c.n != c.m) {
        c.n = c.m;
        c.updated_at = now;  // MODEL CHOICE: updatedAt moves only when the sweep moves N
        changed = true;
      }
      if (Pending(c)) ++pending;
    }
    if (changed) ++last_;
    return pending;
  }

  // ---- reads ----

  Sequence StateVersion(const SessionName& session) const {
    std::optional<SessionName> s = Resolve(session.session_key, session.agent_id);
    return s ? HeadOf(Id(*s)) : 0;
  }

  // "Catching up: `changesSince`".
  ChangesPage ChangesSince(const SessionName& session, Sequence after, int limit) const {
    limit = std::clamp(limit, 1, kMaxPageLimit);
    ChangesPage page;
    std::optional<SessionName> s = Resolve(session.session_key, session.agent_id);
    if (!s) return page;
    SessionId id = Id(*s);
    auto head = heads_.find(id);
    if (head != heads_.end()) {
      page.state_version = head->second.head;
      page.history_gap = after < head->second.watermark;
    }
    auto rows = journal_.find(id);
    if (rows != journal_.end() && !rows->second.empty()) {
      page.earliest_available_sequence = rows->second.begin()->first;
      for (auto it = rows->second.upper_bound(after); it != rows->second.end(); ++it) {
        if (page.events.size() == static_cast<std::size_t>(limit)) {
          page.truncated = true;
          break;
        }
        page.events.push_back(it->second);
      }
    } else if (page.state_version > 0) {
      page.earliest_available_sequence = page.state_version + 1;
    }
    return page;
  }

  // Oldest first. MODEL CHOICE: "oldest" is the notified mark N (the event that opened it),
  // ties by target key.
  Result<std::vector<Notice>> PendingNotices(const std::string& watcher_key) const {
    WatcherKey w = ParseWatcher(watcher_key);
    if (w.malformed) return Status::InvalidArgument("model: malformed watcher");
    std::vector<Notice> out;
    if (!w.session) return out;
    SessionId id = Id(*w.session);
    std::vector<std::pair<Sequence, SessionId>> pending;
    for (const auto& [cid, c] : cursors_) {
      if (cid.first == id && Pending(c)) pending.push_back({c.n, cid.second});
    }
    // Ties (a restart sweep reopens many at one mark) go by target key, as the engine's.
    std::sort(pending.begin(), pending.end(), [this](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first < b.first;
      const SessionName x = Name(a.second), y = Name(b.second);
      return std::tie(x.session_key, x.agent_id) < std::tie(y.session_key, y.agent_id);
    });
    for (const auto& [n, target] : pending) {
      out.push_back(MakeNotice(*w.session, Name(target), cursors_.at({id, target}).l));
    }
    return out;
  }

  Result<std::optional<CursorState>> Cursor(const std::string& watcher_key,
                                            const SessionName& target) const {
    WatcherKey w = ParseWatcher(watcher_key);
    if (w.malformed) return Status::InvalidArgument("model: malformed watcher");
    std::optional<SessionName> t = Resolve(target.session_key, target.agent_id);
    if (!w.session || !t) return std::optional<CursorState>();
    auto it = cursors_.find({Id(*w.session), Id(*t)});
    if (it == cursors_.end()) return std::optional<CursorState>();
    const CursorM& c = it->second;
    return std::optional<CursorState>(CursorState{c.l, c.n, c.m, c.updated_at});
  }

  // The prune mark of the session ("Retention"; 0 when it has no head).
  Sequence Watermark(const SessionName& session) const {
    std::optional<SessionName> s = Resolve(session.session_key, session.agent_id);
    auto it = s ? heads_.find(Id(*s)) : heads_.end();
    return it == heads_.end() ? 0 : it->second.watermark;
  }

  Sequence last_sequence() const { return last_; }
  uint64_t journal_rows() const { return rows_by_seq_.size(); }
  uint64_t head_count() const { return heads_.size(); }
  uint64_t cursor_count() const { return cursors_.size(); }
  uint64_t pending_count() const {
    uint64_t n = 0;
    for (const auto& [id, c] : cursors_) n += Pending(c) ? 1 : 0;
    return n;
  }
  // Whether the journal still holds (session, sequence).
  bool Retains(const SessionName& session, Sequence seq) const {
    auto rows = journal_.find(Id(session));
    return rows != journal_.end() && rows->second.count(seq) > 0;
  }
  const ModelOptions& options() const { return options_; }

 private:
  using SessionId = std::pair<std::string, std::string>;  // (agentId, sessionKey)
  using CursorId = std::pair<SessionId, SessionId>;       // (watcher, target)
  struct CursorM {
    Sequence l = 0, n = 0, m = 0;  // "Cursors": L, N, M
    int64_t updated_at = 0;
  };
  struct HeadM {
    Sequence head = 0;       // state version ("Recording is one atomic step")
    Sequence watermark = 0;  // prune mark ("Retention")
  };
  struct Prepared {
    SessionName session;
    KindSpec kind;
    Event event;                        // without its sequence
    std::vector<SessionName> watchers;  // producer-passed, agent-scoped, de-duplicated
    std::string actor_key;              // the actor as a canonical agent-scoped key, or ""
  };

  static SessionId Id(const SessionName& s) { return {s.agent_id, s.session_key}; }
  static SessionName Name(const SessionId& id) { return SessionName{id.first, id.second}; }
  static bool Pending(const CursorM& c) { return c.n > c.l; }  // "Cursors": pending iff N > L

  static Notice MakeNotice(const SessionName& watcher, const SessionName& target, Sequence since) {
    Notice n;
    n.watcher_key = watcher.session_key;
    n.target = target;
    n.since = since;
    n.context_key = ModelContextKey(target.session_key);
    n.text = ModelNoticeText(target.session_key, since);
    return n;
  }

  Sequence HeadOf(const SessionId& id) const {
    auto it = heads_.find(id);
    return it == heads_.end() ? 0 : it->second.head;
  }

  const KindSpec* FindKind(const std::string& name) const {
    for (const KindSpec& k : options_.kinds) {
      if (k.name == name) return &k;
    }
    return nullptr;
  }

  std::optional<Prepared> Prepare(const EventInput& in, int64_t now) const {
    Prepared p;
    std::optional<SessionName> s = Resolve(in.session_key, in.agent_id);
    const KindSpec* kind = FindKind(in.kind);
    if (!s || !kind) return std::nullopt;
    p.session = *s;
    p.kind = *kind;
    for (const std::string& key : in.watchers) {
      WatcherKey w = ParseWatcher(key);
      if (w.malformed) return std::nullopt;
      // "Recording is one atomic step", step 3: agent-scoped keys only; the target itself
      // is no watcher of itself.
      // "Sessions and their keys": a bare target never gets a cursor or a notice, whoever
      // names the watcher.
      std::optional<Key> target = ParseKey(p.session.session_key);
      if (!w.session || *w.session == p.session || !target || !target->agent_scoped) continue;
      if (std::find(p.watchers.begin(), p.watchers.end(), *w.session) == p.watchers.end()) {
        p.watchers.push_back(*w.session);
      }
    }
    Event& e = p.event;
    e.session_key = s->session_key;
    e.agent_id = s->agent_id;
    e.session_id = in.session_id;
    e.kind = in.kind;
    e.actor_type = in.actor_type;
    e.actor_id = in.actor_id;
    // MODEL CHOICE: an agent actor's key is stored in its canonical spelling, the spelling
    // self-suppression compares with the watcher key.
    std::optional<Key> actor = in.actor_id.empty() ? std::nullopt : ParseKey(in.actor_id);
    if (actor && actor->agent_scoped) p.actor_key = e.actor_id = actor->canonical;
    e.run_id = in.run_id;
    e.occurred_at_ms = std::clamp(in.occurred_at_ms.value_or(now), now - kClampWindowMs, now);
    e.summary = ModelFoldSummary(in.summary, options_.summary_max_bytes);
    e.payload_json = ModelPayload(in.payload_json);
    e.dedupe_key = in.dedupe_key;
    return p;
  }

  // "Recording is one atomic step", steps 1-4.
  RecordResult RecordOne(Prepared& p, int64_t now) {
    const std::string& dk = p.event.dedupe_key;
    if (auto d = dedupe_.find(dk); !dk.empty() && d != dedupe_.end()) {
      return RecordResult{journal_.at(rows_by_seq_.at(d->second)).at(d->second), true};
    }
    Sequence seq = ++last_;
    SessionId id = Id(p.session);
    p.event.sequence = seq;
    journal_[id][seq] = p.event;
    rows_by_seq_[seq] = id;
    if (!dk.empty()) dedupe_[dk] = seq;
    heads_[id].head = seq;
    ApplyCursorRules(p, seq, now);
    return RecordResult{p.event, false};
  }

  // The spawn seed of "How a watcher starts watching" and the event rows of "The transition table".
  void ApplyCursorRules(const Prepared& p, Sequence e, int64_t now) {
    SessionId target = Id(p.session);
    if (p.kind.seeds_cursor) {
      for (const SessionName& w : p.watchers) cursors_[{Id(w), target}] = CursorM{e, e, e, now};
      return;
    }
    if (!p.kind.notifies) return;  // journal-only kinds change no cursor
    std::set<SessionId> watchers;
    for (const SessionName& w : p.watchers) watchers.insert(Id(w));
    for (const auto& [id, c] : cursors_) {
      if (id.second == target) watchers.insert(id.first);
    }
    for (const SessionId& w : watchers) {
      if (w.second == p.actor_key) continue;  // self-suppression
      auto it = cursors_.find({w, target});
      if (it == cursors_.end()) {  // producer-passed watcher without a cursor
        cursors_[{w, target}] = CursorM{0, e, e, now};
        continue;
      }
      CursorM& c = it->second;
      if (c.n == c.l) c.n = e;  // opens one notice; a pending one keeps its pinned N
      c.m = e;
      c.updated_at = now;
    }
  }

  // "The transition table", acknowledge: L = N; M > N reopens exactly one notice.
  static void Ack(CursorM& c, int64_t now) {
    c.l = c.n;
    if (c.m > c.n) c.n = c.m;
    c.updated_at = now;
  }

  // Removes one row and frees its dedupe key.
  void EraseRow(Sequence seq) {
    SessionId id = rows_by_seq_.at(seq);
    const Event& e = journal_.at(id).at(seq);
    auto d = dedupe_.find(e.dedupe_key);
    if (!e.dedupe_key.empty() && d != dedupe_.end() && d->second == seq) dedupe_.erase(d);
    journal_.at(id).erase(seq);
    rows_by_seq_.erase(seq);
  }

  // "Retention": raise each session's watermark to the highest sequence about to be deleted, then
  // delete. Never creates a head, never lowers one.
  PruneStats DeleteForRetention(const std::vector<Sequence>& seqs) {
    std::map<SessionId, Sequence> marks;
    for (Sequence seq : seqs) {
      Sequence& mark = marks[rows_by_seq_.at(seq)];
      mark = std::max(mark, seq);
    }
    for (const auto& [id, mark] : marks) {
      auto h = heads_.find(id);
      if (h != heads_.end()) h->second.watermark = std::max(h->second.watermark, mark);
    }
    for (Sequence seq : seqs) EraseRow(seq);
    PruneStats stats;
    stats.rows_deleted = seqs.size();
    stats.sessions_touched = marks.size();
    return stats;
  }

  // The row cap ("Retention") after a write: the oldest rows past max_rows go.
  void CapRows() {
    std::vector<Sequence> doomed;
    for (auto it = rows_by_seq_.begin(); rows_by_seq_.size() - doomed.size() > options_.max_rows;
         ++it) {
      doomed.push_back(it->first);
    }
    if (doomed.empty()) return;
    DeleteForRetention(doomed);
    ++last_;
  }

  // Erases every cursor for which pred(id, cursor) holds; returns how many.
  template <typename Pred>
  uint64_t EraseCursorsIf(Pred pred) {
    uint64_t n = 0;
    for (auto it = cursors_.begin(); it != cursors_.end();) {
      if (pred(it->first, it->second)) {
        it = cursors_.erase(it);
        ++n;
      } else {
        ++it;
      }
    }
    return n;
  }

  ModelOptions options_;
  Sequence last_ = 0;  // "What an event holds": one counter for the whole engine
  std::map<SessionId, HeadM> heads_;
  std::map<SessionId, std::map<Sequence, Event>> journal_;
  std::map<Sequence, SessionId> rows_by_seq_;  // every retained row, in sequence order
  // Dedupe keys: global, freed with its row ("Recording is one atomic step").
  std::map<std::string, Sequence> dedupe_;
  std::map<CursorId, CursorM> cursors_;
};

}  // namespace statewatch::model

#endif  // STATEWATCH_TESTS_ENGINE_REFERENCE_MODEL_H_
