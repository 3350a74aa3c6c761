// A full disk (issue: SIGABRT from RocksDB's info log writer, at open and during writes):
// writes fail with NoSpace naming "no space left on device", reads keep working, the stats
// say why writes are refused, and writes resume without a reopen once space is freed. No
// acknowledged write is lost. Once with the fault-injection file system (NoSpace on the Nth
// append), once on a real, small tmpfs where the test may mount one.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/engine_fixture.h"
#include "engine/engine_impl.h"
#include "statewatch/engine.h"
#include "status_matchers.h"
#include "storage/store.h"

namespace statewatch {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kStart = 1764460800000;

EventInput Event(int i, std::size_t payload_bytes = 0) {
  EventInput in;
  in.session_key = "agent:main:s" + std::to_string(i % 7);
  in.kind = "human_direct_message";
  in.actor_type = ActorType::kHuman;
  in.summary = "event " + std::to_string(i);
  if (payload_bytes > 0) in.payload_json = "{\"pad\":\"" + std::string(payload_bytes, 'x') + "\"}";
  return in;
}

// Every acknowledged event is present, once, with its summary.
void ExpectAcknowledged(Engine& e, const std::vector<RecordResult>& acked) {
  for (const RecordResult& r : acked) {
    SessionName s{r.event.agent_id, r.event.session_key};
    auto page = e.ChangesSince(s, r.event.sequence - 1, 1);
    ASSERT_OK(page);
    ASSERT_EQ(page->events.size(), 1u) << "sequence " << r.event.sequence;
    EXPECT_EQ(page->events[0].sequence, r.event.sequence);
    EXPECT_EQ(page->events[0].summary, r.event.summary);
  }
}

// ExpectAcknowledged, and the engine's own Verify finds nothing wrong.
void ExpectAcknowledgedAndVerified(Engine& e, const std::vector<RecordResult>& acked) {
  ExpectAcknowledged(e, acked);
  auto v = e.Verify();
  ASSERT_OK(v);
  EXPECT_TRUE(v->ok);
}

// An engine on a fresh directory through the fault-injection file system (faults_).
class FullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::NewTempDir("faults");
    options_.clock = std::make_shared<ManualClock>(kStart);
    hooks_.faults = faults_;
  }
  void TearDown() override { fs::remove_all(dir_); }
  Result<std::unique_ptr<Engine>> Open() {
    return engine::OpenEngineWithHooks(options_, dir_, hooks_);
  }

  std::string dir_;
  EngineOptions options_;
  std::shared_ptr<storage::FaultInjector> faults_ = storage::NewFaultInjector();
  engine::EngineTestHooks hooks_;
};

TEST_F(FullDiskTest, InjectedNoSpaceIsRetryableAndLosesNothing) {
  std::vector<RecordResult> acked;
  {
    auto e = Open();
    ASSERT_OK(e);
    Engine& engine = **e;
    for (int i = 0; i < 20; ++i) {
      auto r = engine.Record(Event(i));
      ASSERT_OK(r);
      acked.push_back(*r);
    }
    faults_->NoSpaceAfter(0);
    for (int i = 20; i < 25; ++i) {
      auto r = engine.Record(Event(i));
      ASSERT_FALSE(r.ok());
      EXPECT_TRUE(r.status().IsNoSpace()) << r.status().ToString();
      EXPECT_NE(r.status().message().find("no space left on device"), std::string::npos)
          << r.status().ToString();
    }
    auto stats = engine.Stats();
    ASSERT_OK(stats);
    EXPECT_NE(stats->write_error.find("no space left on device"), std::string::npos)
        << stats->write_error;
    auto pulse = engine.Pulse();  // what /healthz, /readyz and the console read
    ASSERT_OK(pulse);
    EXPECT_EQ(pulse->write_error, stats->write_error);
    ExpectAcknowledged(engine, acked);  // reads keep working
    faults_->Heal();                    // space is freed: no reopen needed
    for (int i = 25; i < 30; ++i) {
      auto r = engine.Record(Event(i));
      ASSERT_OK(r);
      acked.push_back(*r);
    }
    EXPECT_TRUE(engine.Stats()->write_error.empty());
    EXPECT_TRUE(engine.Pulse()->write_error.empty());
    ExpectAcknowledged(engine, acked);
  }
  auto e = Open();
  ASSERT_OK(e);
  ExpectAcknowledgedAndVerified(**e, acked);
}

// A failed fsync is not a full disk: it stays sticky until the engine is reopened.
TEST_F(FullDiskTest, AFailedSyncStaysSticky) {
  auto e = Open();
  ASSERT_OK(e);
  faults_->FailSyncsAfter(0);
  EXPECT_FALSE((*e)->Record(Event(1)).ok());
  faults_->Heal();
  auto r = (*e)->Record(Event(2));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kFailedPrecondition) << r.status().ToString();
}

// A real full disk: a small tmpfs. Needs mount(2) (root with CAP_SYS_ADMIN).
class TmpfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mount_ = testing::NewTempDir("tmpfs");
    if (::mount("tmpfs", mount_.c_str(), "tmpfs", 0, "size=3m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno)
                   << "): the real full-disk case is not tested on this machine";
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) ::umount(mount_.c_str());
    fs::remove_all(mount_);
  }
  // Fills the file system but `leave` bytes.
  void Fill(std::size_t leave) {
    std::ofstream f(mount_ + "/filler", std::ios::binary);
    std::string chunk(4096, 'f');
    while (fs::space(mount_).available > leave + chunk.size() && f.write(chunk.data(), chunk.size())) {
    }
  }
  std::string mount_;
  bool mounted_ = false;
};

TEST_F(TmpfsTest, WritesFailWithNoSpaceAndResumeOnceSpaceIsFreed) {
  std::string dir = mount_ + "/data";
  EngineOptions o;
  o.clock = std::make_shared<ManualClock>(kStart);
  o.write_buffer_bytes = 256 << 10;
  std::vector<RecordResult> acked;
  auto e = Engine::Open(o, dir);
  ASSERT_OK(e);
  Fill(64 << 10);
  Status failure;
  for (int i = 0; i < 2000 && failure.ok(); ++i) {
    auto r = (*e)->Record(Event(i, 1024));
    if (r.ok()) acked.push_back(*r);
    failure = r.status();
  }
  ASSERT_TRUE(failure.IsNoSpace()) << failure.ToString();
  EXPECT_NE(failure.message().find("no space left on device"), std::string::npos);
  ExpectAcknowledged(**e, acked);
  // A read-only open on the full disk works (it writes nothing).
  EngineOptions ro = o;
  ro.read_only = true;
  {
    auto reader = Engine::Open(ro, dir);
    ASSERT_OK(reader);
    EXPECT_OK((*reader)->StateVersion({"main", "agent:main:s0"}));
  }
  fs::remove(mount_ + "/filler");
  auto r = (*e)->Record(Event(9999));
  ASSERT_OK(r);
  acked.push_back(*r);
  e->reset();
  auto reopened = Engine::Open(o, dir);
  ASSERT_OK(reopened);
  ExpectAcknowledgedAndVerified(**reopened, acked);
}

TEST_F(TmpfsTest, OpeningForWritesOnAFullDiskFailsCleanly) {
  std::string dir = mount_ + "/data";
  EngineOptions o;
  o.clock = std::make_shared<ManualClock>(kStart);
  {
    auto e = Engine::Open(o, dir);
    ASSERT_OK(e);
    ASSERT_OK((*e)->Record(Event(1)));
  }
  Fill(0);
  auto e = Engine::Open(o, dir);
  if (!e.ok()) {
    EXPECT_TRUE(e.status().IsNoSpace()) << e.status().ToString();
  }
  EngineOptions ro = o;
  ro.read_only = true;
  auto reader = Engine::Open(ro, dir);
  ASSERT_OK(reader);
  EXPECT_EQ(*(*reader)->StateVersion({"main", "agent:main:s1"}), 1u);
}

}  // namespace
}  // namespace statewatch
