// The fixtures of the replicated-log tests (replicated_log_test.cc, cluster_checkpoint_test.cc):
// an engine on a replicated partition log (cluster/replicated_log.h) with MemLog as the stream.
#ifndef STATEWATCH_TESTS_CLUSTER_REPLICATED_LOG_FIXTURE_H_
#define STATEWATCH_TESTS_CLUSTER_REPLICATED_LOG_FIXTURE_H_

#include "cluster/replicated_log.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/checkpoint_codec.h"
#include "cluster/standby.h"
#include "engine/engine_fixture.h"
#include "engine/records.h"
#include "log/chain_verifier.h"
#include "log/mem_checkpoint_store.h"
#include "log/mem_log.h"
#include "statewatch/engine.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "storage/key_codec.h"
#include "storage/local_log.h"
#include "storage/store.h"
#include "storage/store_replace.h"

namespace statewatch::cluster::replicated_log_testing {

using statewatch::testing::NewTempDir;

constexpr int64_t kStart = 1764460800000;
inline const std::vector<std::string> kSessions = {"agent:main:a", "agent:main:b", "agent:main:c"};

inline SessionName Name(const std::string& key) { return SessionName{"main", key}; }

class ReplicatedLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_ = std::make_shared<ManualClock>(kStart);
    log::MemLogOptions mo;
    mo.clock = clock_;
    remote_ = std::make_shared<log::MemLog>(mo);
  }
  void TearDown() override {
    for (const auto& d : dirs_) std::filesystem::remove_all(d);
  }

  // Opens (or reopens) the node in `dir` as the partition's owner.
  std::unique_ptr<Engine> OpenOwner(const std::string& dir, const std::string& node) {
    auto e = TryOpenOwner(dir, node, nullptr, 0);
    EXPECT_OK(e);
    return e.ok() ? std::move(*e) : nullptr;
  }
  // With `checkpoints`: a cluster checkpoint every `every` stream positions, the engine's own
  // checkpoint as often as it may run.
  Result<std::unique_ptr<Engine>> TryOpenOwner(
      const std::string& dir, const std::string& node,
      std::shared_ptr<log::CheckpointStore> checkpoints, uint64_t every,
      std::shared_ptr<PartitionState> state = nullptr) {
    EngineOptions o;
    o.clock = clock_;
    o.durability = Durability::kBuffered;
    ReplicatedLogOptions ro;
    ro.node = node;
    ro.retry = log::RetryPolicy{20, nullptr};
    ro.state = std::move(state);
    if (checkpoints) {
      ro.checkpoints = std::move(checkpoints);
      ro.checkpoint_every = every;
      ro.checkpoint_in_background = checkpoint_in_background_;
      o.checkpoint_min_records = 1;
    }
    o.wrap_log = OwnerLog(remote_, ro);
    return Engine::Open(o, dir);
  }
  std::string NewDir() { return dirs_.emplace_back(NewTempDir("cluster")); }

  static EventInput Input(const std::string& key, const std::string& dedupe = "") {
    EventInput in;
    in.session_key = key;
    in.kind = "human_direct_message";
    in.actor_type = ActorType::kHuman;
    in.summary = "hello " + key;
    in.dedupe_key = dedupe;
    return in;
  }

  // Journal, notices, registry and transcripts as text: equal digests, equal state.
  // A read-only engine on `dir` holds what `owner` serves, and verifies clean.
  void ExpectSameAsOwner(const std::string& dir, Engine& owner) {
    EngineOptions ro;
    ro.clock = clock_;
    ro.read_only = true;
    auto view = Engine::Open(ro, dir);
    ASSERT_OK(view);
    EXPECT_EQ(Digest(**view), Digest(owner));
    auto report = (*view)->Verify();
    ASSERT_OK(report);
    EXPECT_TRUE(report->ok);
  }

  static std::string Digest(Engine& e) {
    std::string out;
    for (const auto& key : kSessions) {
      auto page = e.ChangesSince(Name(key), 0, 1000);
      EXPECT_OK(page);
      if (!page.ok()) continue;
      out += key + " v" + std::to_string(page->state_version) + ":";
      for (const Event& ev : page->events) out += " " + std::to_string(ev.sequence) + ev.summary;
      auto notices = e.PendingNotices(key);
      if (notices.ok()) {
        for (const Notice& n : *notices) out += " |" + n.text;
      }
      auto transcript = SessionTablesView(e).RecentTranscript(Name(key), 100);
      if (transcript.ok()) {
        for (const auto& m : *transcript) out += " t" + std::to_string(m.index) + m.content_json;
      }
      out += "\n";
    }
    auto entry = SessionTablesView(e).GetSession(Name(kSessions[2]));  // the registry, a side table
    if (entry.ok() && entry->has_value()) out += "label " + (*entry)->label.value_or("-");
    return out;
  }

  // Events in every session, a watch, a registry entry and a transcript: each kind of write
  // a commit group carries.
  static void Work(Engine& e, int round) {
    for (const auto& key : kSessions) {
      auto r = e.Record(Input(key, round % 2 ? key + "/" + std::to_string(round) : ""));
      ASSERT_OK(r);
    }
    ASSERT_OK(e.Watch(kSessions[0], Name(kSessions[1])));
    SessionRecord rec;
    rec.name = Name(kSessions[2]);
    rec.label = "round " + std::to_string(round);
    ASSERT_OK(SessionTables(e).UpsertSession(rec));
    TranscriptMessage m;
    m.role = "user";
    m.content_json = "\"message " + std::to_string(round) + "\"";
    ASSERT_OK(SessionTables(e).AppendTranscript(Name(kSessions[2]), {m}));
  }

  std::shared_ptr<ManualClock> clock_;
  // Inline by default, so that a test sees each checkpoint as soon as its writes return.
  bool checkpoint_in_background_ = false;
  std::shared_ptr<log::MemLog> remote_;
  std::vector<std::string> dirs_;
};

// ---- cluster checkpoints (docs/cluster-internals.md, "Checkpoints and purge") --------------

class ClusterCheckpointTest : public ReplicatedLogTest {
 protected:
  // The stream's first retained position: the lowest `from` ReadFrom accepts.
  log::LogPosition FirstRetained() {
    auto tail = remote_->Tail();
    EXPECT_OK(tail);
    for (log::LogPosition p = 1; p <= *tail; ++p) {
      if (remote_->ReadFrom(p, 1).ok()) return p;
    }
    return *tail + 1;
  }
  // An owner on `dir` that checkpoints every 10 positions, after `rounds` rounds of Work.
  std::unique_ptr<Engine> OwnerWithCheckpoints(const std::string& dir, int rounds,
                                               std::shared_ptr<PartitionState> state = nullptr) {
    auto e = TryOpenOwner(dir, "node-a", checkpoints_, 10, std::move(state));
    EXPECT_OK(e);
    if (!e.ok()) return nullptr;
    for (int round = 0; round < rounds; ++round) Work(**e, round);
    return std::move(*e);
  }
  log::Checkpoint Latest() {
    auto latest = checkpoints_->Latest();
    EXPECT_OK(latest);
    EXPECT_TRUE(latest.ok() && latest->has_value()) << "no checkpoint yet";
    return latest.ok() && latest->has_value() ? **latest : log::Checkpoint{};
  }
  // A standby on `dir` that folds the stream to its tail (restoring from the checkpoints
  // when it fell behind the purge), then closes.
  Status FollowInto(const std::string& dir, std::shared_ptr<PartitionState> state = nullptr) {
    FoldOptions fold;
    fold.checkpoints = checkpoints_;
    fold.state = std::move(state);
    auto standby = Standby::Open(dir, remote_, 0, 1, fold);
    if (!standby.ok()) return standby.status();
    return (*standby)->CatchUp();
  }
  // The applied state of a standby directory, opened and closed.
  AppliedState AppliedIn(const std::string& dir) {
    auto standby = Standby::Open(dir, remote_, 0, 1);
    EXPECT_OK(standby);
    return standby.ok() ? (*standby)->applied() : AppliedState{};
  }

  std::shared_ptr<log::MemCheckpointStore> checkpoints_ =
      std::make_shared<log::MemCheckpointStore>();
};

}  // namespace statewatch::cluster::replicated_log_testing

#endif  // STATEWATCH_TESTS_CLUSTER_REPLICATED_LOG_FIXTURE_H_
