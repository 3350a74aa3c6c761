// The random configuration of a seeded model run (tests/engine/model_test.cc and
// tests/engine/as_of_test.cc): the engine's options, the ReferenceModel's and the operation
// generator, drawn together so that the engine, the model and the generator always agree on
// the retention and the row cap.
#ifndef STATEWATCH_TESTS_ENGINE_RANDOM_RUN_CONFIG_H_
#define STATEWATCH_TESTS_ENGINE_RANDOM_RUN_CONFIG_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include "engine/model/ops.h"
#include "engine/model_run_options.h"
#include "engine/reference_model.h"
#include "statewatch/clock.h"
#include "statewatch/options.h"

namespace statewatch::model {

struct RandomRunConfig {
  EngineOptions options;
  ModelOptions model;
  std::unique_ptr<OpGenerator> generator;  // over Universe::Small(), from start_ms
};

// Draws the retention, the row cap and the checkpoint spacing from `rng` (three draws, in
// that order, so a seed keeps naming the same run). Pruning runs only when asked (never at
// open), writes are buffered, and the engine reads `clock`. The generator is seeded with
// `generator_seed`.
inline RandomRunConfig DrawRunConfig(std::mt19937_64& rng, std::shared_ptr<Clock> clock,
                                     uint64_t generator_seed, int64_t start_ms) {
  static const int64_t kRetentions[] = {6 * kHourMs, 2 * kDayMs, 30 * kDayMs};
  static const uint64_t kMaxRows[] = {25, 40, 60};
  static const uint64_t kCheckpoints[] = {8, 64, 100000};
  RandomRunConfig c;
  c.options = ModelRunOptions(std::move(clock), Durability::kBuffered);
  c.options.retention_ms = kRetentions[rng() % 3];
  c.options.max_rows = kMaxRows[rng() % 3];
  c.options.checkpoint_min_records = kCheckpoints[rng() % 3];
  c.model = ModelOptionsFor(c.options);
  c.generator = std::make_unique<OpGenerator>(generator_seed, Universe::Small(),
                                              OpMixFor(c.options), start_ms);
  return c;
}

// "seed=… steps=… retention_ms=… max_rows=… checkpoint_min_records=…", for a failure
// message that reproduces the run.
inline std::string DescribeRunConfig(uint64_t seed, int steps, const EngineOptions& options) {
  return "seed=" + std::to_string(seed) + " steps=" + std::to_string(steps) +
         " retention_ms=" + std::to_string(options.retention_ms) +
         " max_rows=" + std::to_string(options.max_rows) +
         " checkpoint_min_records=" + std::to_string(options.checkpoint_min_records);
}

}  // namespace statewatch::model

#endif  // STATEWATCH_TESTS_ENGINE_RANDOM_RUN_CONFIG_H_
