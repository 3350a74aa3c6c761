// Operations applied alike to an Engine and to the ReferenceModel, their results in one
// comparable text form, and a seeded generator of random operations over a small universe
// of sessions. Shared by the model test and the recovery tests.
//
// The generator depends only on its seed (never on results), so a crash test's parent can
// regenerate exactly the operations its child ran.
//
// Not thread-safe.
#ifndef STATEWATCH_TESTS_ENGINE_MODEL_OPS_H_
#define STATEWATCH_TESTS_ENGINE_MODEL_OPS_H_

#include <cstdint>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/reference_model.h"
#include "statewatch/engine.h"

namespace statewatch::model {

struct Op {
  enum class Type {
    kRecord, kWatch, kDrain, kAcknowledge, kReset, kDelete, kPrune, kSweep, kUnwatch
  };
  Type type = Type::kRecord;
  int64_t now_ms = 0;                // the clock is set to this before the operation
  std::vector<EventInput> events;    // kRecord: Record() for one, RecordMany() for several
  std::string watcher;               // kWatch, kDrain, kAcknowledge, kReset
  SessionName target;                // kWatch, kDelete
  std::vector<SessionName> targets;  // kAcknowledge
  std::vector<WatchSpec> watches;    // kUnwatch
};

inline const char* OpName(Op::Type t) {
  switch (t) {
    case Op::Type::kRecord:
      return "record";
    case Op::Type::kWatch:
      return "watch";
    case Op::Type::kDrain:
      return "drain";
    case Op::Type::kAcknowledge:
      return "acknowledge";
    case Op::Type::kReset:
      return "reset";
    case Op::Type::kDelete:
      return "delete";
    case Op::Type::kPrune:
      return "prune";
    case Op::Type::kSweep:
      return "sweep";
    case Op::Type::kUnwatch:
      return "unwatch";
  }
  return "?";
}

// What an operation answered. `code` is the status code; the rest is set when it is OK.
struct OpResult {
  Status::Code code = Status::Code::kOk;
  std::string message;  // for failure reports only; never compared
  std::vector<RecordResult> records;
  bool watched = false;
  std::vector<Notice> notices;
  PruneStats prune;
  uint64_t swept = 0;
  UnwatchResult unwatched;
  bool ok() const { return code == Status::Code::kOk; }
};

// ---- text forms (one line each, no newline) ---------------------------------------------------

inline std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else
      out.push_back(c);
  }
  return out + "\"";
}

inline std::string DescribeName(const SessionName& s) { return s.agent_id + "/" + s.session_key; }

inline std::string DescribeEvent(const Event& e) {
  std::ostringstream o;
  o << "#" << e.sequence << " " << e.agent_id << "/" << e.session_key
    << " sid=" << Quoted(e.session_id) << " " << e.kind << " " << ActorTypeName(e.actor_type)
    << " actor=" << Quoted(e.actor_id) << " run=" << Quoted(e.run_id) << " at=" << e.occurred_at_ms
    << " summary=" << Quoted(e.summary) << " payload=" << Quoted(e.payload_json)
    << " dedupe=" << Quoted(e.dedupe_key);
  return o.str();
}

inline std::string DescribeNotice(const Notice& n) {
  return n.watcher_key + "->" + DescribeName(n.target) + " since=" + std::to_string(n.since) +
         " ctx=" + n.context_key + " text=" + Quoted(n.text);
}

inline std::string DescribeCursor(const std::optional<CursorState>& c) {
  if (!c) return "none";
  return "L=" + std::to_string(c->last_seen) + " N=" + std::to_string(c->notified) +
         " M=" + std::to_string(c->material) + " updatedAt=" + std::to_string(c->updated_at_ms);
}

inline std::string DescribePage(const ChangesPage& p) {
  std::ostringstream o;
  o << "version=" << p.state_version << " truncated=" << p.truncated
    << " earliest=" << p.earliest_available_sequence << " gap=" << p.history_gap << " events=[";
  for (const Event& e : p.events) o << " {" << DescribeEvent(e) << "}";
  o << " ]";
  return o.str();
}

// `compact` keeps what the crash test's child reports through its pipe (sequence, session,
// dedupe key; notices as target and since) so that one result stays far below PIPE_BUF.
inline std::string DescribeResult(const OpResult& r, bool compact = false) {
  std::ostringstream o;
  o << "code=" << static_cast<int>(r.code);
  if (!r.ok()) return o.str();
  for (const RecordResult& rr : r.records) {
    if (compact) {
      o << " rec{#" << rr.event.sequence << " "
        << DescribeName(SessionName{rr.event.agent_id, rr.event.session_key})
        << " dk=" << Quoted(rr.event.dedupe_key) << " dup=" << rr.deduplicated << "}";
    } else {
      o << " rec{" << DescribeEvent(rr.event) << " dup=" << rr.deduplicated << "}";
    }
  }
  o << " watched=" << r.watched;
  for (const Notice& n : r.notices) {
    if (compact)
      o << " notice{" << DescribeName(n.target) << " " << n.since << "}";
    else
      o << " notice{" << DescribeNotice(n) << "}";
  }
  o << " prune=" << r.prune.rows_deleted << "/" << r.prune.sessions_touched << "/"
    << r.prune.cursors_expired << " swept=" << r.swept << " unwatched=" << r.unwatched.removed
    << "/" << r.unwatched.watches;
  return o.str();
}

inline std::string DescribeOp(const Op& op) {
  std::ostringstream o;
  o << OpName(op.type) << " @" << op.now_ms;
  for (const EventInput& in : op.events) {
    o << " {" << Quoted(in.session_key) << " agent=" << Quoted(in.agent_id) << " " << in.kind << " "
      << ActorTypeName(in.actor_type) << " actor=" << Quoted(in.actor_id)
      << " dedupe=" << Quoted(in.dedupe_key)
      << " at=" << (in.occurred_at_ms ? std::to_string(*in.occurred_at_ms) : "-") << " watchers=[";
    for (const std::string& w : in.watchers) o << " " << Quoted(w);
    o << " ]}";
  }
  if (!op.watcher.empty()) o << " watcher=" << Quoted(op.watcher);
  if (!op.target.session_key.empty()) o << " target=" << DescribeName(op.target);
  for (const SessionName& t : op.targets) o << " t=" << DescribeName(t);
  for (const WatchSpec& w : op.watches) {
    o << " w=" << Quoted(w.watcher_key) << "->" << DescribeName(w.target);
  }
  return o.str();
}

// ---- applying ---------------------------------------------------------------------------------

template <typename T>
inline bool Take(const Result<T>& r, OpResult& out) {
  out.code = r.status().code();
  out.message = r.ok() ? "" : r.status().ToString();
  return r.ok();
}
inline void TakeStatus(const Status& s, OpResult& out) {
  out.code = s.code();
  out.message = s.ToString();
}

inline OpResult ApplyToEngine(Engine& engine, const Op& op) {
  OpResult out;
  switch (op.type) {
    case Op::Type::kRecord:
      if (op.events.size() == 1) {
        auto r = engine.Record(op.events.front());
        if (Take(r, out)) out.records.push_back(*r);
      } else {
        auto r = engine.RecordMany(op.events);
        if (Take(r, out)) out.records = *r;
      }
      break;
    case Op::Type::kWatch: {
      auto r = engine.Watch(op.watcher, op.target);
      if (Take(r, out)) out.watched = *r;
      break;
    }
    case Op::Type::kDrain: {
      auto r = engine.Drain(op.watcher);
      if (Take(r, out)) out.notices = *r;
      break;
    }
    case Op::Type::kAcknowledge:
      TakeStatus(engine.Acknowledge(op.watcher, op.targets), out);
      break;
    case Op::Type::kReset:
      TakeStatus(engine.ResetWatcher(op.watcher), out);
      break;
    case Op::Type::kDelete:
      TakeStatus(engine.DeleteSession(op.target), out);
      break;
    case Op::Type::kPrune: {
      auto r = engine.Prune();
      if (Take(r, out)) out.prune = *r;
      break;
    }
    case Op::Type::kSweep: {
      auto r = engine.Sweep();
      if (Take(r, out)) out.swept = *r;
      break;
    }
    case Op::Type::kUnwatch: {
      auto r = engine.Unwatch(op.watches);
      if (Take(r, out)) out.unwatched = *r;
      break;
    }
  }
  return out;
}

inline OpResult ApplyToModel(ReferenceModel& model, const Op& op) {
  OpResult out;
  int64_t now = op.now_ms;
  switch (op.type) {
    case Op::Type::kRecord: {
      auto r = model.RecordMany(op.events, now);
      if (Take(r, out)) out.records = *r;
      break;
    }
    case Op::Type::kWatch:
      out.watched = model.Watch(op.watcher, op.target, now);
      break;
    case Op::Type::kDrain: {
      auto r = model.Drain(op.watcher, now);
      if (Take(r, out)) out.notices = *r;
      break;
    }
    case Op::Type::kAcknowledge:
      TakeStatus(model.Acknowledge(op.watcher, op.targets, now), out);
      break;
    case Op::Type::kReset:
      TakeStatus(model.ResetWatcher(op.watcher), out);
      break;
    case Op::Type::kDelete:
      TakeStatus(model.DeleteSession(op.target), out);
      break;
    case Op::Type::kPrune:
      out.prune = model.Prune(now);
      break;
    case Op::Type::kSweep:
      out.swept = model.Sweep(now);
      break;
    case Op::Type::kUnwatch: {
      auto r = model.Unwatch(op.watches);
      if (Take(r, out)) out.unwatched = *r;
      break;
    }
  }
  return out;
}

// ---- the universe and the generator ---------------------------------------------------------

// 3 agents x 4 sessions: main, a sub-agent, a nested sub-agent, and the bare key `global`.
struct Universe {
  std::vector<SessionName> sessions;      // canonical
  std::vector<std::string> watcher_keys;  // the agent-scoped ones

  static Universe Small() {
    Universe u;
    for (std::string agent : {"main", "ops", "qa"}) {
      for (std::string rest : {"main", "subagent:a1", "subagent:a1:subagent:b2"}) {
        std::string key = "agent:" + agent + ":" + rest;
        u.sessions.push_back(SessionName{agent, key});
        u.watcher_keys.push_back(key);
      }
      u.sessions.push_back(SessionName{agent, "global"});
    }
    return u;
  }
};

// Relative weights of the operation types; 0 turns one off.
struct OpMix {
  int record = 50, watch = 10, drain = 10, acknowledge = 5, reset = 2, remove = 2, prune = 4,
      sweep = 3, unwatch = 4;
  bool invalid_inputs = true;  // malformed keys, unknown kinds, bare watchers
  bool key_variants = true;    // `AGENT:Main:...` spellings of the same session
  // Acknowledge() with a target named twice (see ModelTest.AcknowledgeRepeatedTarget...).
  bool repeated_ack_targets = true;
  int dedupe_pool = 8;
  int max_batch = 3;  // events per RecordMany
  // Clock steps: mostly small, sometimes hours, past a day, past the retention.
  int64_t small_step_ms = 2000, medium_step_ms = kHourMs, retention_ms = 30 * kDayMs;
  int big_step_percent = 3;  // chance of a step past the retention
};

class OpGenerator {
 public:
  OpGenerator(uint64_t seed, Universe universe, OpMix mix, int64_t start_ms)
      : rng_(seed), u_(std::move(universe)), mix_(mix), now_(start_ms) {}

  Op Next() {
    Op op;
    now_ += Step();
    op.now_ms = now_;
    int weights[] = {mix_.record, mix_.watch,  mix_.drain, mix_.acknowledge, mix_.reset,
                     mix_.remove, mix_.prune, mix_.sweep, mix_.unwatch};
    op.type = static_cast<Op::Type>(Pick(std::vector<int>(std::begin(weights), std::end(weights))));
    switch (op.type) {
      case Op::Type::kRecord: {
        int n = Chance(80) ? 1 : 2 + Below(std::max(1, mix_.max_batch - 1));
        for (int i = 0; i < n; ++i) op.events.push_back(Event_());
        break;
      }
      case Op::Type::kWatch:
        op.watcher = RandomWatcherKey();
        op.target = RandomTarget();
        break;
      case Op::Type::kAcknowledge:
        op.watcher = RandomWatcherKey();
        for (int i = Below(4); i > 0; --i) {
          SessionName t = RandomTarget();
          if (!mix_.repeated_ack_targets && Names(op.targets, t)) continue;
          op.targets.push_back(t);
        }
        break;
      case Op::Type::kDrain:
      case Op::Type::kReset:
        op.watcher = RandomWatcherKey();
        break;
      case Op::Type::kDelete:
        op.target = RandomTarget();
        break;
      case Op::Type::kPrune:
      case Op::Type::kSweep:
        break;
      case Op::Type::kUnwatch:
        for (int i = Chance(60) ? 1 : 2 + Below(2); i > 0; --i) {
          op.watches.push_back(WatchSpec{RandomWatcherKey(), RandomTarget()});
        }
        break;
    }
    return op;
  }

  int64_t now() const { return now_; }
  std::mt19937_64& rng() { return rng_; }
  const Universe& universe() const { return u_; }

  // Helpers, also used by the tests for their read checks.
  int Below(int n) { return n <= 1 ? 0 : static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool Chance(int percent) { return Below(100) < percent; }
  const SessionName& AnySession() {
    return u_.sessions[Below(static_cast<int>(u_.sessions.size()))];
  }
  const std::string& AnyWatcher() {
    return u_.watcher_keys[Below(static_cast<int>(u_.watcher_keys.size()))];
  }
  // A session of the universe, sometimes spelled differently or with its agent given.
  SessionName RandomTarget() {
    const SessionName& s = AnySession();
    if (s.session_key.rfind("agent:", 0) == 0) {
      return SessionName{Chance(30) ? s.agent_id : "", Respell(s.session_key)};
    }
    return SessionName{s.agent_id == "main" && Chance(50) ? "" : s.agent_id, s.session_key};
  }
  // A watcher key: mostly agent-scoped, sometimes bare or malformed (when the mix allows).
  std::string RandomWatcherKey() {
    int r = Below(100);
    if (mix_.invalid_inputs && r < 3) return "agent::broken";
    if (mix_.invalid_inputs && r < 8) return "global";
    return Respell(AnyWatcher());
  }

 private:
  int Pick(const std::vector<int>& weights) {
    int total = 0;
    for (int w : weights) total += w;
    int r = Below(total);
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (r < weights[i]) return static_cast<int>(i);
      r -= weights[i];
    }
    return 0;
  }

  // Whether `targets` already names the session of `t` (in any spelling).
  static bool Names(const std::vector<SessionName>& targets, const SessionName& t) {
    for (const SessionName& o : targets) {
      if (Resolve(o.session_key, o.agent_id) == Resolve(t.session_key, t.agent_id)) return true;
    }
    return false;
  }

  int64_t Uniform(int64_t lo, int64_t hi) {  // [lo, hi]
    return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }

  int64_t Step() {
    int r = Below(100);
    if (r < mix_.big_step_percent) return mix_.retention_ms + Uniform(1, 2 * kDayMs);
    if (r < mix_.big_step_percent + 3) return kDayMs + Uniform(1, kHourMs);  // past 24 h
    if (r < mix_.big_step_percent + 20) return Uniform(0, mix_.medium_step_ms);
    return Uniform(0, mix_.small_step_ms);
  }

  // Another spelling of the same agent-scoped key (docs/semantics.md,
  // "Sessions and their keys": prefix and agent id case-insensitive).
  std::string Respell(const std::string& key) {
    if (!mix_.key_variants || key.rfind("agent:", 0) != 0 || !Chance(15)) return key;
    std::size_t colon = key.find(':', 6);
    std::string agent = key.substr(6, colon - 6);
    for (char& c : agent) c = static_cast<char>(c - 'a' + 'A');
    return (Chance(50) ? "AGENT:" : "Agent:") + agent + key.substr(colon);
  }

  std::string Actor(const SessionName& target) {
    int r = Below(100);
    if (r < 25) return "";
    if (r < 35) return Respell(target.session_key);  // the session acts on itself
    if (r < 40) return "user:alice";
    if (r < 43) return "global";
    return Respell(AnyWatcher());
  }

  std::string Summary() {
    static const char* kSummaries[] = {"human message via telegram",
                                       "goal created",
                                       "child session spawned",
                                       "two\nlines",
                                       "crlf\r\nline",
                                       "cr\ronly",
                                       ""};
    if (Chance(5)) {
      std::string s;  // 3-byte characters across the 512-byte cap
      for (int i = 0; i < 200; ++i) s += "\xE2\x82\xAC";
      return s;
    }
    return kSummaries[Below(7)];
  }

  std::string Payload() {
    static const char* kPayloads[] = {"",
                                      "",
                                      "",
                                      "{\"outcome\":\"error\"}",
                                      "{\"channel\":\"telegram\"}",
                                      "{\"turns\":3}",
                                      "[1,2]",
                                      "\"text\"",
                                      "42"};
    return kPayloads[Below(9)];
  }

  std::string Kind() {
    static const char* kKinds[] = {"human_direct_message",
                                   "upstream_missing",
                                   "goal_changed",
                                   "child_spawned",
                                   "run_completed",
                                   "run_failed",
                                   "compacted",
                                   "adopted",
                                   "created"};
    if (mix_.invalid_inputs && Chance(2)) return "no_such_kind";
    int r = Below(100);
    if (r < 45) return kKinds[Below(3)];  // notifying
    if (r < 60) return "child_spawned";
    return kKinds[4 + Below(5)];
  }

  EventInput Event_() {
    EventInput in;
    SessionName t = RandomTarget();
    if (mix_.invalid_inputs && Chance(2)) t.session_key = "agent:main:";  // malformed
    in.session_key = t.session_key;
    in.agent_id = t.agent_id;
    in.kind = Kind();
    in.actor_type = static_cast<ActorType>(Below(3));
    in.actor_id = Actor(t);
    in.session_id = Chance(30) ? "sid-" + std::to_string(Below(3)) : "";
    in.run_id = Chance(30) ? "run-" + std::to_string(Below(5)) : "";
    if (Chance(50)) in.occurred_at_ms = now_ - Uniform(-2 * kHourMs, 2 * kDayMs);
    in.summary = Summary();
    in.payload_json = Payload();
    if (mix_.dedupe_pool > 0 && Chance(40))
      in.dedupe_key = "dk-" + std::to_string(Below(mix_.dedupe_pool));
    for (int i = Below(4); i > 0; --i) in.watchers.push_back(Respell(AnyWatcher()));
    if (Chance(10)) in.watchers.push_back(t.session_key);  // the target itself: ignored
    if (Chance(5)) in.watchers.push_back("global");        // bare: ignored
    if (mix_.invalid_inputs && Chance(1)) in.watchers.push_back("agent:x");  // malformed
    return in;
  }

  std::mt19937_64 rng_;
  Universe u_;
  OpMix mix_;
  int64_t now_;
};

}  // namespace statewatch::model

#endif  // STATEWATCH_TESTS_ENGINE_MODEL_OPS_H_
