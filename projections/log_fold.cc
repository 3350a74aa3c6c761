#include "projections/log_fold.h"

namespace statewatch::projections {

void ApplyOp(const LogOp& op, int64_t committed_at, ProjectionState& state, FoldEffects* fx) {
  using T = LogOp::Type;
  switch (op.type) {
    case T::kRegister:
      state.ApplyRegister(op.sequence, committed_at, op.session, op.target, fx);
      break;
    case T::kAck:
      state.ApplyAck(op.sequence, committed_at, op.session, op.refs, fx);
      break;
    case T::kReset:
      state.ApplyReset(op.sequence, op.session, fx);
      break;
    case T::kDelete:
      state.ApplyDelete(op.sequence, op.session, fx);
      break;
    case T::kPrune:
      state.ApplyPrune(op.sequence, op.cursor_cutoff, op.raises, fx);
      break;
    case T::kSweep:
      state.ApplySweep(op.sequence, committed_at, fx);
      break;
    case T::kUnregister:
      state.ApplyUnregister(op.sequence, op.session, op.target, fx);
      break;
  }
}

}  // namespace statewatch::projections
