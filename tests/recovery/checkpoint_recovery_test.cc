// Recovery between a WAL write and a checkpoint (docs/design.md, "The log-centric core"):
// a commit group is durable once its record and rows are in the WAL, while the projections
// reach the disk only with the next checkpoint. A crash anywhere in between must reopen to
// exactly the acknowledged state — the projections after open are the checkpoint with the
// log after it folded in — and `verify` must be clean.
//
// The engine runs seeded random operations with a checkpoint every few records and a small
// row cap. At every crash point it reaches — each commit group in the WAL but not yet folded
// ("appended"), each checkpoint written but the log not yet purged ("checkpointed") — the
// test copies the database directory: what a kill -9 at that instant would leave (the WAL is
// handed to the OS at every write; the memtables are far from full, so no flush runs). Each
// copy is then opened and compared with the reference model at that point.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_impl.h"
#include "engine/model/ops.h"
#include "engine/model/scratch_dir.h"
#include "engine/model/state_check.h"
#include "engine/model_run_options.h"
#include "engine/reference_model.h"
#include "statewatch/engine.h"
#include "status_matchers.h"

namespace statewatch::model {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kStart = 1764460800000;  // 2025-11-30T00:00:00Z
constexpr int kOps = 120;

struct CrashImage {
  std::string dir;
  std::string point;
  std::size_t model_index;  // the reference state it must reopen to (after that many ops)
};

EngineOptions Options(std::shared_ptr<ManualClock> clock) {
  EngineOptions o = ModelRunOptions(std::move(clock), Durability::kBuffered);
  o.retention_ms = 2 * kDayMs;
  o.max_rows = 15;               // the row cap moves its mark inside groups
  o.checkpoint_min_records = 5;  // checkpoints every few records
  return o;
}

OpMix Mix() {
  OpMix mix = OpMixFor(Options(nullptr));
  mix.invalid_inputs = false;
  mix.prune = 5;
  mix.remove = 4;
  mix.sweep = 4;
  mix.big_step_percent = 4;
  mix.dedupe_pool = 5;
  return mix;
}

class CrashPoints : public ::testing::TestWithParam<uint64_t> {
 protected:
  void TearDown() override {
    for (const CrashImage& c : images_) fs::remove_all(c.dir);
    fs::remove_all(dir_);
  }

  // Runs the operations, taking a crash image at every point the engine reports.
  void Run() {
    auto clock = std::make_shared<ManualClock>(kStart);
    models_.push_back(ReferenceModel(ModelOptionsFor(Options(clock))));
    std::size_t op_index = 0;
    bool appended_in_op = false;
    engine::EngineTestHooks hooks;
    hooks.crash_point = [&](const char* point) {
      std::string copy = NewScratchDir("crash-image");
      fs::remove_all(copy);
      fs::copy(dir_, copy, fs::copy_options::recursive);
      bool after_op = appended_in_op || std::string(point) == "appended";
      appended_in_op = appended_in_op || std::string(point) == "appended";
      // A checkpoint before the op's own group (a delete or prune checkpoints first) holds
      // the state before the op; anything after its group holds the state after it.
      images_.push_back(CrashImage{copy, point, after_op ? op_index + 1 : op_index});
    };
    auto opened = engine::OpenEngineWithHooks(Options(clock), dir_, hooks);
    ASSERT_OK(opened);
    std::unique_ptr<Engine> engine = std::move(*opened);
    OpGenerator gen(GetParam(), Universe::Small(), Mix(), kStart);
    for (; op_index < kOps; ++op_index) {
      Op op = gen.Next();
      clock->Set(op.now_ms);
      appended_in_op = false;
      OpResult got = ApplyToEngine(*engine, op);
      ReferenceModel next = models_.back();
      OpResult want = ApplyToModel(next, op);
      ASSERT_EQ(DescribeResult(got), DescribeResult(want)) << DescribeOp(op);
      models_.push_back(std::move(next));
    }
    engine.reset();
  }

  // Opens one image and checks it against the model at its point.
  void CheckImage(const CrashImage& image) {
    auto clock = std::make_shared<ManualClock>(kStart);
    auto opened = Engine::Open(Options(clock), image.dir);
    ASSERT_OK(opened) << image.point;
    Engine& engine = **opened;
    replayed_ += (*engine.Stats()).log_records_since_checkpoint > 0;
    EXPECT_TRUE(SameState(engine, models_[image.model_index], Universe::Small()))
        << "crash image at \"" << image.point << "\" after " << image.model_index << " ops";
    auto v = engine.Verify();
    ASSERT_OK(v);
    EXPECT_TRUE(v->ok) << (v->differences.empty() ? "" : v->differences.front());
  }

  std::string dir_ = NewScratchDir("crash-points");
  std::vector<ReferenceModel> models_;
  std::vector<CrashImage> images_;
  int replayed_ = 0;
};

TEST_P(CrashPoints, EveryImageReopensToTheAcknowledgedStateAndVerifies) {
  ASSERT_NO_FATAL_FAILURE(Run());
  int checkpoints = 0;
  for (const CrashImage& image : images_) {
    checkpoints += image.point == "checkpointed";
    ASSERT_NO_FATAL_FAILURE(CheckImage(image));
  }
  std::cout << "[ crash    ] seed=" << GetParam() << " images=" << images_.size()
            << " at a checkpoint=" << checkpoints << " with a log to replay=" << replayed_
            << std::endl;
  // Both kinds of point were reached: the test is not vacuous.
  EXPECT_GE(checkpoints, 3);
  EXPECT_GT(replayed_, static_cast<int>(images_.size()) / 2);
}

INSTANTIATE_TEST_SUITE_P(Seeds, CrashPoints, ::testing::Values(0xc4a51u, 0xc4a52u, 0xc4a53u));

}  // namespace
}  // namespace statewatch::model
