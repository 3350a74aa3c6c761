// Engine::Backup (a RocksDB checkpoint while the engine is open) and Engine::ForEachEvent
// (the export walk): a backup opens as the same database — journal, heads, cursors, pending
// notices — refuses an existing target, and the walk sees exactly the retained events.
#include <algorithm>
#include <filesystem>

#include "engine_fixture.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

constexpr char kParent[] = "agent:main:main";
constexpr char kChild[] = "agent:main:subagent:a1";

class BackupTest : public EngineTest {};

TEST_F(BackupTest, ABackupOpensAsTheSameDatabase) {
  Sequence seed = Spawn(kParent, kChild);
  Sequence human = Human(kChild);
  std::string backup = dir_ + "-backup";
  ASSERT_OK(engine_->Backup(backup));
  Human(kChild);  // after the backup: not in it

  auto copy = Engine::Open(options_, backup);
  ASSERT_OK(copy);
  auto version = (*copy)->StateVersion(Name(kChild));
  ASSERT_OK(version);
  EXPECT_EQ(*version, human);
  auto notices = (*copy)->PendingNotices(kParent);
  ASSERT_OK(notices);
  ASSERT_EQ(notices->size(), 1u);
  EXPECT_NE(notices->front().text.find("changesSince " + std::to_string(seed)), std::string::npos);
  auto report = (*copy)->Verify();
  ASSERT_OK(report);
  EXPECT_TRUE(report->ok);
  copy->reset();
  std::filesystem::remove_all(backup);
}

TEST_F(BackupTest, AnExistingTargetIsRefusedAndLeftAlone) {
  Human(kChild);
  std::string target = dir_ + "-taken";
  std::filesystem::create_directories(target);
  Status s = engine_->Backup(target);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find(target), std::string::npos) << s.message();
  EXPECT_TRUE(std::filesystem::is_empty(target));
  std::filesystem::remove_all(target);
  EXPECT_TRUE(engine_->Backup("").IsInvalidArgument());
}

TEST_F(BackupTest, ForEachEventWalksEveryRetainedEvent) {
  Sequence a = Spawn(kParent, kChild);
  Sequence b = Human(kChild);
  Sequence c = Human(kParent);
  std::vector<Sequence> seen;
  ASSERT_OK(engine_->ForEachEvent([&](const Event& e) {
    seen.push_back(e.sequence);
    return Status::OK();
  }));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<Sequence>{a, b, c}));
  // A sink's error stops the walk and comes back.
  int calls = 0;
  Status s = engine_->ForEachEvent([&](const Event&) {
    ++calls;
    return Status::IOError("stdout closed");
  });
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace statewatch::testing
