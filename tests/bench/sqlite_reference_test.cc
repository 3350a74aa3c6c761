// The SQLite reference does the work the benchmarks charge it with: the transition table of
// docs/semantics.md, "The transition table" (open, coalesce, self-suppress, drain and
// reopen), pages with the exact historyGap, a prune pass run after the table has outgrown
// the cap (the hourly schedule of bench/prune_bench.cc), and contention reported as Busy
// rather than as a failure.
#include "bench/sqlite_reference.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "status_matchers.h"
#include "test_directory.h"

namespace statewatch::bench {
namespace {

const std::string kTarget = "agent:main:subagent:t";
const std::string kWatcher = "agent:main:main";

class SqliteReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDirectoryForThisTest("sqlite-reference-test");
    auto ref = SqliteReference::Open(Path(), SqliteSync::kNormal, /*busy_timeout_ms=*/0);
    ASSERT_OK(ref);
    ref_ = std::move(*ref);
    ref_->SetNowForTesting(1764460800000);
  }
  void TearDown() override {
    ref_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string Path() const { return (dir_ / "reference.db").string(); }

  RefEventInput Event(const std::string& key, const std::string& kind = "human_direct_message") {
    RefEventInput in;
    in.session_key = key;
    in.agent_id = "main";
    in.kind = kind;
    in.actor_type = "human";
    in.occurred_at_ms = 1764460800000;
    in.summary = "human message via telegram";
    return in;
  }
  int64_t Record(const RefEventInput& in) {
    auto r = ref_->RecordEvent(in);
    EXPECT_OK(r);
    return r.ok() ? r->sequence : -1;
  }

  std::filesystem::path dir_;
  std::unique_ptr<SqliteReference> ref_;
};

TEST_F(SqliteReferenceTest, FirstNotifyingEventOpensOneNoticeLaterOnesOnlyMoveMaterial) {
  ASSERT_TRUE(*ref_->Watch(kWatcher, kTarget, "main"));
  int64_t first = Record(Event(kTarget));
  int64_t second = Record(Event(kTarget));
  EXPECT_EQ(ref_->QueuedNotices(), 1u);
  auto cursor = ref_->ReadCursor(kWatcher, kTarget);
  ASSERT_OK(cursor);
  EXPECT_EQ(cursor->last_seen, 0);
  EXPECT_EQ(cursor->notified, first);
  EXPECT_EQ(cursor->material, second);
}

TEST_F(SqliteReferenceTest, DrainAcknowledgesAndReopensOnlyForInterveningChanges) {
  ASSERT_TRUE(*ref_->Watch(kWatcher, kTarget, "main"));
  int64_t first = Record(Event(kTarget));
  int64_t second = Record(Event(kTarget));
  auto drained = ref_->Acknowledge(kWatcher);
  ASSERT_OK(drained);
  ASSERT_EQ(drained->size(), 1u);
  EXPECT_EQ((*drained)[0].text, RefNoticeText(kTarget, 0));
  EXPECT_EQ(ref_->QueuedNotices(), 1u);  // M > N: one new notice, changesSince old N
  auto cursor = ref_->ReadCursor(kWatcher, kTarget);
  EXPECT_EQ(cursor->last_seen, first);
  EXPECT_EQ(cursor->notified, second);
  drained = ref_->Acknowledge(kWatcher);
  ASSERT_EQ(drained->size(), 1u);
  EXPECT_EQ((*drained)[0].since, first);
  EXPECT_EQ(ref_->QueuedNotices(), 0u);
}

TEST_F(SqliteReferenceTest, SelfSuppressionAndJournalOnlyKindsOpenNothing) {
  ASSERT_TRUE(*ref_->Watch(kWatcher, kTarget, "main"));
  RefEventInput own = Event(kTarget);
  own.actor_type = "agent";
  own.actor_id = kWatcher;
  Record(own);
  Record(Event(kTarget, "run_completed"));
  EXPECT_EQ(ref_->QueuedNotices(), 0u);
}

TEST_F(SqliteReferenceTest, PagesAreTruncatedAndGapIsExactAfterAPrunePass) {
  // 30 events on the target, interleaved with 30 elsewhere; the cap keeps the newest 20.
  for (int i = 0; i < 30; ++i) {
    Record(Event(kTarget));
    Record(Event("agent:main:other"));
  }
  auto before = ref_->ChangesSince(kTarget, "main", 0, 10);
  ASSERT_OK(before);
  EXPECT_EQ(before->events.size(), 10u);
  EXPECT_TRUE(before->truncated);
  EXPECT_FALSE(before->history_gap);

  auto pruned = ref_->Prune(/*cutoff_ms=*/0, /*max_rows=*/20);
  ASSERT_OK(pruned);
  EXPECT_EQ(pruned->rows_deleted, 40);
  auto page = ref_->ChangesSince(kTarget, "main", 0, 200);
  ASSERT_OK(page);
  EXPECT_EQ(page->events.size(), 10u);
  EXPECT_TRUE(page->history_gap);
  int64_t earliest = page->earliest_available_sequence;
  EXPECT_EQ(earliest, page->events.front().sequence);
  // The watermark is the highest deleted sequence of this session: after it, no gap.
  auto after_mark = ref_->ChangesSince(kTarget, "main", earliest - 2, 200);
  EXPECT_FALSE(after_mark->history_gap);
  auto inside = ref_->ChangesSince(kTarget, "main", earliest - 3, 200);
  EXPECT_TRUE(inside->history_gap);
}

TEST_F(SqliteReferenceTest, APassAfterTheTableOutgrewTheCapCutsItBackToTheCap) {
  for (int i = 0; i < 50; ++i) Record(Event("agent:main:s" + std::to_string(i % 7)));
  auto pruned = ref_->Prune(0, 20);  // the whole backlog in one pass
  ASSERT_OK(pruned);
  EXPECT_EQ(pruned->rows_deleted, 30);
  EXPECT_EQ(pruned->sessions_touched, 7);
  pruned = ref_->Prune(0, 20);  // nothing left to do
  EXPECT_EQ(pruned->rows_deleted, 0);
}

TEST_F(SqliteReferenceTest, ALockedDatabaseIsBusyAndNothingIsWritten) {
  Record(Event(kTarget));
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(Path().c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto r = ref_->RecordEvent(Event(kTarget));
  EXPECT_EQ(r.status().code(), Status::Code::kBusy) << r.status().ToString();
  EXPECT_NE(r.status().message().find("locked"), std::string::npos) << r.status().message();
  ASSERT_EQ(sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  auto page = ref_->ChangesSince(kTarget, "main", 0, 200);
  EXPECT_EQ(page->events.size(), 1u);
  EXPECT_EQ(Record(Event(kTarget)), page->state_version + 1);  // the lock is free again
}

TEST_F(SqliteReferenceTest, DedupeKeyReturnsTheExistingEvent) {
  RefEventInput in = Event(kTarget);
  in.dedupe_key = "child-spawned:r1";
  int64_t first = Record(in);
  auto again = ref_->RecordEvent(in);
  ASSERT_OK(again);
  EXPECT_TRUE(again->deduplicated);
  EXPECT_EQ(again->sequence, first);
}

}  // namespace
}  // namespace statewatch::bench
