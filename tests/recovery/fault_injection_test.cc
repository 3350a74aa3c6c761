// Fault injection (docs/semantics.md, "Failures never break the gateway"): the Nth file append or
// sync of the database fails, for N over a range, while seeded random operations run.
// Every call either succeeds or returns a non-OK Status; the first failure makes every later
// write fail with FailedPrecondition (sticky) while reads keep working and show exactly the
// acknowledged state; after Heal() and a reopen the acknowledged writes are all there,
// Verify() is clean, and writing works again.
//
// A failed *sync* is not a failed append: the batch already sits in the WAL file when the
// fsync fails, so after a reopen the write that reported the error may be there, whole. The
// test accepts that (and only that) for the one failing call and counts it; a failed append
// must leave no trace.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "engine/engine_fixture.h"
#include "engine/engine_impl.h"
#include "engine/model/ops.h"
#include "engine/model/scratch_dir.h"
#include "engine/model/state_check.h"
#include "engine/model_run_options.h"
#include "engine/reference_model.h"
#include "statewatch/engine.h"
#include "storage/store.h"

namespace statewatch::model {
namespace {

constexpr int64_t kStart = 1764460800000;  // 2025-11-30T00:00:00Z
constexpr int kMaxN = 25;                  // fail the Nth append / sync for N in [0, kMaxN]
constexpr int kOps = 40;                   // operations per case
constexpr int kOpsAfterFailure = 6;        // writes tried after the first failure

enum class Fault { kAppend, kSync, kNoSpace };

OpMix FaultMix(const EngineOptions& options) {
  OpMix mix = OpMixFor(options);
  mix.invalid_inputs = false;  // every operation reaches the write path
  mix.prune = 6;
  mix.sweep = 4;
  mix.big_step_percent = 3;
  mix.dedupe_pool = 6;
  return mix;
}

class FaultCase {
 public:
  // `strict`: the failing call must leave no trace after the reopen, also for a failed sync.
  FaultCase(Fault fault, int n, bool strict = false) : fault_(fault), n_(n), strict_(strict) {
    options_ = ModelRunOptions(clock_, Durability::kSync);
    options_.retention_ms = 2 * kDayMs;
    options_.max_rows = 20;               // the row cap deletes inside write batches
    options_.checkpoint_min_records = 8;  // and checkpoints write too
    model_ = ReferenceModel(ModelOptionsFor(options_));
  }
  ~FaultCase() {
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string Name() const { return std::string(FaultName(fault_)) + " #" + std::to_string(n_); }
  static const char* FaultName(Fault f) {
    return f == Fault::kAppend ? "append" : f == Fault::kSync ? "sync" : "no space";
  }
  bool failed() const { return failed_; }
  bool failed_call_landed() const { return failed_call_landed_; }

  ::testing::AssertionResult Run() {
    if (auto r = Open(); !r) return r;
    if (fault_ == Fault::kAppend) {
      faults_->FailWritesAfter(static_cast<uint64_t>(n_));
    } else if (fault_ == Fault::kSync) {
      faults_->FailSyncsAfter(static_cast<uint64_t>(n_));
    } else {
      faults_->NoSpaceAfter(static_cast<uint64_t>(n_));
    }
    OpGenerator gen(0xfa017 + static_cast<uint64_t>(n_), Universe::Small(), FaultMix(options_),
                    kStart);
    int after_failure = 0;
    for (int i = 0; i < kOps && after_failure < kOpsAfterFailure; ++i) {
      Op op = gen.Next();
      clock_->Set(op.now_ms);
      auto r = failed_ ? StepAfterFailure(op) : Step(op);
      if (!r) return r << "\nat operation " << i << ": " << DescribeOp(op);
      after_failure += failed_ ? 1 : 0;
    }
    if (failed_) {
      auto r = SameState(*engine_, model_, Universe::Small());
      if (!r) return r << "(reads after the refused writes)";
    }
    faults_->Heal();
    if (fault_ == Fault::kNoSpace && failed_) {
      // Space is back: writes resume in the same engine, no reopen — unless the failure hit
      // a log append with every memtable empty, where RocksDB 7.8 cannot switch logs in the
      // process; then the answer says to reopen.
      Status probe = engine_->Stats().ok() ? ProbeWrite() : Status::OK();
      if (probe.ok()) {
        resumed_in_place_ = true;
        if (auto r = SameState(*engine_, model_, Universe::Small()); !r) {
          return r << "(after space was freed, no reopen)";
        }
      } else if (probe.code() != Status::Code::kFailedPrecondition ||
                 probe.message().find("reopen") == std::string::npos) {
        return ::testing::AssertionFailure() << "after space was freed: " << probe.ToString();
      }
    }
    return CheckReopened();
  }

  // One human message on agent:main:main, the clock a second later than the last write.
  Op HumanMessageASecondLater(const std::string& summary) {
    clock_->Advance(1000);
    Op op;
    op.now_ms = clock_->NowMs();
    op.events = {statewatch::testing::HumanEvent("agent:main:main", summary)};
    return op;
  }

  // One write after space came back, applied to the model when it succeeds.
  Status ProbeWrite() {
    Op op = HumanMessageASecondLater("space is back");
    OpResult got = ApplyToEngine(*engine_, op);
    if (!got.ok()) return Status::FailedPrecondition(got.message);
    ApplyToModel(model_, op);
    return Status::OK();
  }

 public:
  bool resumed_in_place() const { return resumed_in_place_; }

 private:
  bool resumed_in_place_ = false;

 private:
  ::testing::AssertionResult Open() {
    engine::EngineTestHooks hooks;
    hooks.faults = faults_;
    auto e = engine::OpenEngineWithHooks(options_, dir_, hooks);
    if (!e.ok()) return ::testing::AssertionFailure() << "open: " << e.status().ToString();
    engine_ = std::move(*e);
    return ::testing::AssertionSuccess();
  }

  // Before the first failure: an OK answer is the model's; a failure is an I/O error
  // (FailedPrecondition when the failure hit the maintenance after an earlier call).
  ::testing::AssertionResult Step(const Op& op) {
    OpResult got = ApplyToEngine(*engine_, op);
    if (got.ok()) {
      OpResult want = ApplyToModel(model_, op);
      if (DescribeResult(got) != DescribeResult(want)) {
        return ::testing::AssertionFailure() << "answer differs\n  engine: " << DescribeResult(got)
                                             << "\n  model:  " << DescribeResult(want);
      }
      return ::testing::AssertionSuccess();
    }
    if (RefusedInput(got, op)) return ::testing::AssertionSuccess();
    failed_ = true;
    if (fault_ == Fault::kNoSpace) {
      // A full disk is reported as such (NoSpace), whether the write or the maintenance
      // after an earlier call hit it.
      if (got.code != Status::Code::kNoSpace) {
        return ::testing::AssertionFailure() << "the first failure is " << got.message;
      }
      failed_op_ = op;
    } else if (got.code == Status::Code::kIOError) {
      failed_op_ = op;
    } else if (got.code != Status::Code::kFailedPrecondition) {
      return ::testing::AssertionFailure() << "the first failure is " << got.message;
    }
    return SameState(*engine_, model_, Universe::Small()) << "(reads after the failure)";
  }

  // Bad input (an unwatch of a pair no registration accepts) is refused before any write,
  // by the engine as by the model, and changes nothing: before the failure and after it.
  bool RefusedInput(const OpResult& got, const Op& op) {
    if (got.code != Status::Code::kInvalidArgument) return false;
    ReferenceModel copy = model_;
    return ApplyToModel(copy, op).code == Status::Code::kInvalidArgument &&
           copy.last_sequence() == model_.last_sequence();
  }

  // After it: writes are refused with FailedPrecondition; only a call that needs no write
  // (a registration refused before it reaches the journal) may still answer OK.
  ::testing::AssertionResult StepAfterFailure(const Op& op) {
    OpResult got = ApplyToEngine(*engine_, op);
    if (got.ok()) {
      ReferenceModel copy = model_;
      OpResult want = ApplyToModel(copy, op);
      if (copy.last_sequence() != model_.last_sequence() ||
          DescribeResult(got) != DescribeResult(want)) {
        return ::testing::AssertionFailure()
               << "a write succeeded after the failure: " << DescribeResult(got);
      }
    } else if (RefusedInput(got, op)) {
      // refused before the journal, as before the failure
    } else if (fault_ == Fault::kNoSpace && got.code == Status::Code::kFailedPrecondition &&
               got.message.find("reopen") != std::string::npos) {
      // The one case RocksDB 7.8 cannot resume in the process (store.h: Resume): said so.
    } else if (got.code != (fault_ == Fault::kNoSpace ? Status::Code::kNoSpace
                                                      : Status::Code::kFailedPrecondition)) {
      return ::testing::AssertionFailure()
             << "after the failure, expected " << (fault_ == Fault::kNoSpace ? "NoSpace" : "FailedPrecondition")
             << ", got " << got.message;
    }
    return ::testing::AssertionSuccess();
  }

  ::testing::AssertionResult CheckReopened() {
    engine_.reset();
    if (auto r = Open(); !r) return r;
    const Universe u = Universe::Small();
    auto same = SameState(*engine_, model_, u);
    if (!same) {
      // Only a failed fsync may leave its call whole: a failed append (also NoSpace) never.
      if (fault_ != Fault::kSync || !failed_op_ || strict_) {
        return same << "(after heal and reopen; the failed call: "
                    << (failed_op_ ? DescribeOp(*failed_op_) : "none") << ")";
      }
      ReferenceModel with = model_;
      ApplyToModel(with, *failed_op_);
      auto same_with = SameState(*engine_, with, u);
      if (!same_with) {
        return same << "\nnor with the failed call (" << DescribeOp(*failed_op_) << "):\n"
                    << same_with.message();
      }
      model_ = with;
      failed_call_landed_ = true;
    }
    auto v = engine_->Verify();
    if (!v.ok()) return ::testing::AssertionFailure() << "Verify: " << v.status().ToString();
    if (!v->ok) {
      auto r = ::testing::AssertionFailure() << "Verify after reopen:";
      for (const std::string& d : v->differences) r << "\n  " << d;
      return r;
    }
    return CheckWritesAgain();
  }

  ::testing::AssertionResult CheckWritesAgain() {
    Op op = HumanMessageASecondLater("after the fault");
    OpResult got = ApplyToEngine(*engine_, op);
    OpResult want = ApplyToModel(model_, op);
    if (DescribeResult(got) != DescribeResult(want)) {
      return ::testing::AssertionFailure()
             << "write after reopen\n  engine: " << DescribeResult(got) << " " << got.message
             << "\n  model:  " << DescribeResult(want);
    }
    return SameState(*engine_, model_, Universe::Small());
  }

  Fault fault_;
  int n_;
  bool strict_;
  std::string dir_ = NewScratchDir("fault");
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(kStart);
  std::shared_ptr<storage::FaultInjector> faults_ = storage::NewFaultInjector();
  EngineOptions options_;
  ReferenceModel model_;
  std::unique_ptr<Engine> engine_;
  bool failed_ = false;
  bool failed_call_landed_ = false;
  std::optional<Op> failed_op_;
};

void RunFaults(Fault fault) {
  int failures = 0, landed = 0, resumed = 0;
  for (int n = 0; n <= kMaxN; ++n) {
    FaultCase c(fault, n);
    EXPECT_TRUE(c.Run()) << c.Name();
    failures += c.failed();
    landed += c.failed_call_landed();
    resumed += c.resumed_in_place();
  }
  if (fault == Fault::kNoSpace) {
    std::cout << "[ faults   ] no space: resumed without a reopen=" << resumed << std::endl;
    EXPECT_GT(resumed, 0);
  }
  std::cout << "[ faults   ] " << FaultCase::FaultName(fault)
            << ": cases=" << kMaxN + 1 << " with a failure=" << failures
            << " failed calls found whole after reopen=" << landed << std::endl;
  EXPECT_GT(failures, kMaxN / 2) << "the faults should hit most cases";
}

TEST(FaultInjectionTest, FailedAppendIsStickyAndLeavesOnlyAcknowledgedWrites) {
  RunFaults(Fault::kAppend);
}

TEST(FaultInjectionTest, FailedSyncIsStickyAndLeavesOnlyAcknowledgedWrites) {
  RunFaults(Fault::kSync);
}

// A full disk on the Nth append — a log write, an SST flush, a MANIFEST update, a
// checkpoint: writes fail with NoSpace (not sticky), reads show the acknowledged state, and
// once space is back writes resume in the same engine; nothing acknowledged is lost.
TEST(FaultInjectionTest, NoSpaceIsRetryableAndLeavesOnlyAcknowledgedWrites) {
  RunFaults(Fault::kNoSpace);
}

}  // namespace
}  // namespace statewatch::model
