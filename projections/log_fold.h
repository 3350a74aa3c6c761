// The folds of the log: one commit group record (engine/records.h decodes it) applied to a
// ProjectionState, entry by entry in sequence order. The same code runs live (after the
// group is durable), in replay at open, and in `verify`.
//
// A group's sequences are first, first + step, ..., first + (ops + events - 1) * step (step
// is the partition count P: 1 on a single node): each op carries its own sequence; the
// events take the sequences left over, in order. An event's fold inputs
// come from its journal row (replay) or from the leader's own copy (live): the caller
// supplies them through a callback.
//
// Thread-safe: pure functions over the state they are given.
#ifndef STATEWATCH_PROJECTIONS_LOG_FOLD_H_
#define STATEWATCH_PROJECTIONS_LOG_FOLD_H_

#include <cstdint>
#include <vector>

#include "projections/projection_state.h"
#include "statewatch/status.h"

namespace statewatch::projections {

// A non-event operation of a commit group, decoded.
struct LogOp {
  enum class Type { kRegister, kAck, kReset, kDelete, kPrune, kSweep, kUnregister };
  Type type = Type::kRegister;
  Seq sequence = 0;
  SessionRef session;            // (un)registration / ack / reset watcher; deleted session
  SessionRef target;             // (un)registration target
  std::vector<SessionRef> refs;  // acknowledged targets
  int64_t cursor_cutoff = 0;     // prune: expire cursors idle since before this (0: none)
  std::vector<WatermarkRaise> raises;  // prune: per-session watermark raises
  Seq row_cap_mark = 0;          // prune: the row-cap mark after it (0: unchanged)
};

// Applies one op. `fx` may be null (replay).
void ApplyOp(const LogOp& op, int64_t committed_at, ProjectionState& state, FoldEffects* fx);

// Walks a group's entries in sequence order: on_op(const LogOp&) for each op, and
// on_event(std::size_t index, Seq sequence) -> Status for each event (index into the
// group's events). Stops at the first error. Corruption when the ops' sequences do not fit
// the group's range. REQUIRES: step >= 1.
template <typename OnEvent, typename OnOp>
Status ForEachEntry(Seq first, Seq step, std::size_t event_count, const std::vector<LogOp>& ops,
                    OnEvent&& on_event, OnOp&& on_op) {
  const Seq end = first + (event_count + ops.size()) * step;
  std::size_t next_op = 0, next_event = 0;
  for (Seq seq = first; seq < end; seq += step) {
    if (next_op < ops.size() && ops[next_op].sequence == seq) {
      on_op(ops[next_op++]);
      continue;
    }
    if (next_event == event_count) {
      return Status::Corruption("commit group at sequence " + std::to_string(first) +
                                ": op sequences do not fit its " +
                                std::to_string(event_count + ops.size()) +
                                " sequences");
    }
    Status st = on_event(next_event++, seq);
    if (!st.ok()) return st;
  }
  if (next_op != ops.size()) {
    return Status::Corruption("commit group at sequence " + std::to_string(first) + ": op at " +
                              std::to_string(ops[next_op].sequence) + " is outside its range");
  }
  return Status::OK();
}

}  // namespace statewatch::projections

#endif  // STATEWATCH_PROJECTIONS_LOG_FOLD_H_
