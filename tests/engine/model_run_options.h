// The options of a run that the ReferenceModel checks (the seeded model runs in tests/engine
// and the crash, crash-point and fault-injection runs in tests/recovery): the engine's, the
// model's and the operation generator's, which must agree on the retention and the row cap
// or the model and the engine part ways at the first prune.
#ifndef STATEWATCH_TESTS_ENGINE_MODEL_RUN_OPTIONS_H_
#define STATEWATCH_TESTS_ENGINE_MODEL_RUN_OPTIONS_H_

#include <memory>
#include <utility>

#include "engine/model/ops.h"
#include "engine/reference_model.h"
#include "statewatch/clock.h"
#include "statewatch/options.h"

namespace statewatch::model {

// Engine options that read `clock`, write with `durability` and prune only when an operation
// asks for it (never at open, no interval): the model then knows every state change. The
// retention, the row cap and the checkpoint spacing keep their defaults for the caller to set.
inline EngineOptions ModelRunOptions(std::shared_ptr<Clock> clock, Durability durability) {
  EngineOptions o;
  o.clock = std::move(clock);
  o.durability = durability;
  o.prune_on_open = false;
  o.prune_interval_ms = int64_t{1} << 60;
  return o;
}

// The model options that agree with `options` on the retention and the row cap.
inline ModelOptions ModelOptionsFor(const EngineOptions& options) {
  ModelOptions m;
  m.retention_ms = options.retention_ms;
  m.max_rows = options.max_rows;
  return m;
}

// The default operation mix, its clock steps "past the retention" measured against the
// retention of `options`.
inline OpMix OpMixFor(const EngineOptions& options) {
  OpMix mix;
  mix.retention_ms = options.retention_ms;
  return mix;
}

}  // namespace statewatch::model

#endif  // STATEWATCH_TESTS_ENGINE_MODEL_RUN_OPTIONS_H_
