// The engine's commit path on a partition stream of a real three-server JetStream cluster
// (docs/cluster-internals.md, "The owner: append, then apply" and
// "Fencing and `statewatch takeover --partition p`"): every acknowledged write is on the
// stream, a second node takes the partition over from the stream alone, and the old
// owner's next append is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cluster/checkpoint_codec.h"
#include "cluster/replicated_log.h"
#include "engine/engine_fixture.h"
#include "log/chain_verifier.h"
#include "log/jetstream/jetstream_checkpoints.h"
#include "log/jetstream/jetstream_log.h"
#include "log/jetstream/nats_connection.h"
#include "nats_test_cluster.h"
#include "statewatch/engine.h"
#include "status_matchers.h"

namespace statewatch::cluster {
namespace {

constexpr int64_t kStart = 1764460800000;
constexpr uint32_t kPartition = 0;  // P = 1: the engine numbers sequences densely

class EngineOnJetStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = log::testing::NatsTestCluster::Start({});
    ASSERT_OK(started);
    cluster_ = std::move(*started);
    clock_ = std::make_shared<ManualClock>(kStart);
  }
  void TearDown() override {
    for (const auto& d : dirs_) std::filesystem::remove_all(d);
  }

  // A connection of its own to the test cluster; null (after a failed EXPECT) when none.
  std::shared_ptr<log::NatsConnection> Connect() {
    log::NatsConnectionOptions co;
    co.servers = cluster_->Urls();
    auto connection = log::NatsConnection::Connect(co);
    EXPECT_OK(connection);
    return connection.ok() ? *connection : nullptr;
  }
  // `Store` (JetStreamLog or JetStreamCheckpoints) opened for the partition on a connection
  // of its own, as the interface `Base`; null (after a failed EXPECT) when it cannot be.
  template <typename Base, typename Store, typename Options>
  std::shared_ptr<Base> OpenOnOwnConnection() {
    std::shared_ptr<log::NatsConnection> connection = Connect();
    if (!connection) return nullptr;
    Options o;
    o.partition = kPartition;
    auto opened = Store::Open(connection, o);
    EXPECT_OK(opened);
    return opened.ok() ? std::shared_ptr<Base>(std::move(*opened)) : nullptr;
  }
  // A node's view of the partition's stream.
  std::shared_ptr<log::LogBackend> Stream() {
    return OpenOnOwnConnection<log::LogBackend, log::JetStreamLog, log::JetStreamLogOptions>();
  }
  // The partition's checkpoints on SW_CKPT.
  std::shared_ptr<log::CheckpointStore> Checkpoints() {
    return OpenOnOwnConnection<log::CheckpointStore, log::JetStreamCheckpoints,
                               log::JetStreamCheckpointsOptions>();
  }
  // With `checkpoints`: a cluster checkpoint every `every` positions, the engine's own
  // checkpoint as often as it may run.
  std::unique_ptr<Engine> OpenOwner(std::shared_ptr<log::LogBackend> stream,
                                    const std::string& node,
                                    std::shared_ptr<log::CheckpointStore> checkpoints = nullptr,
                                    uint64_t every = 0) {
    EngineOptions o;
    o.clock = clock_;
    o.durability = Durability::kBuffered;
    ReplicatedLogOptions ro;
    ro.partition = kPartition;
    ro.node = node;
    if (checkpoints) {
      ro.checkpoints = std::move(checkpoints);
      ro.checkpoint_every = every;
      ro.checkpoint_in_background = false;  // the tests read the checkpoint right after
      o.checkpoint_min_records = 1;
    }
    o.wrap_log = OwnerLog(std::move(stream), ro);
    auto e = Engine::Open(o, dirs_.emplace_back(statewatch::testing::NewTempDir("js-node")));
    EXPECT_OK(e);
    return e.ok() ? std::move(*e) : nullptr;
  }
  static EventInput Input(int i) {
    EventInput in;
    in.session_key = "agent:main:s" + std::to_string(i % 4);
    in.kind = "human_direct_message";
    in.actor_type = ActorType::kHuman;
    in.summary = "event " + std::to_string(i);
    if (i % 2 == 0) in.dedupe_key = "d" + std::to_string(i);
    return in;
  }
  // Records Input(0) … Input(n - 1) on `owner`, each acknowledged, in order.
  static void RecordInputs(Engine& owner, int n, std::vector<Event>* acknowledged) {
    for (int i = 0; i < n; ++i) {
      auto r = owner.Record(Input(i));
      ASSERT_OK(r);
      acknowledged->push_back(r->event);
    }
  }

  std::unique_ptr<log::testing::NatsTestCluster> cluster_;
  std::shared_ptr<ManualClock> clock_;
  std::vector<std::string> dirs_;
};

TEST_F(EngineOnJetStreamTest, ATakeoverRebuildsFromTheStreamAndFencesTheOldOwner) {
  auto stream_a = Stream();
  ASSERT_NE(stream_a, nullptr);
  auto a = OpenOwner(stream_a, "node-a");
  ASSERT_NE(a, nullptr);
  std::vector<Event> acknowledged;
  ASSERT_NO_FATAL_FAILURE(RecordInputs(*a, 40, &acknowledged));
  auto b = OpenOwner(Stream(), "node-b");  // takeover while a still runs
  ASSERT_NE(b, nullptr);
  for (const Event& e : acknowledged) {  // every acknowledged event, exactly once
    auto page = b->ChangesSince(SessionName{"main", e.session_key}, e.sequence - 1, 1);
    ASSERT_OK(page);
    ASSERT_EQ(page->events.size(), 1u);
    EXPECT_EQ(page->events[0].sequence, e.sequence);
    EXPECT_EQ(page->events[0].summary, e.summary);
  }
  auto zombie = a->Record(Input(100));
  ASSERT_FALSE(zombie.ok());
  EXPECT_NE(zombie.status().ToString().find("partition moved"), std::string::npos)
      << zombie.status().ToString();
  auto retried = b->Record(Input(0));  // a client's retry on the new owner is deduplicated
  ASSERT_OK(retried);
  EXPECT_TRUE(retried->deduplicated);
  auto fresh = b->Record(Input(41));
  ASSERT_OK(fresh);
  EXPECT_GT(fresh->event.sequence, acknowledged.back().sequence);
  auto chain = log::VerifyLogChain(*stream_a, 1,
                                   log::ChainVerifier(log::GenesisChainState(kPartition, 1, 1)));
  ASSERT_OK(chain);
  EXPECT_EQ(chain->fence_epoch, 2u);
}

TEST_F(EngineOnJetStreamTest, CheckpointsOnSwCkptPurgeTheStreamAndAnEmptyNodeRestoresFromThem) {
  auto stream_a = Stream();
  ASSERT_NE(stream_a, nullptr);
  auto checkpoints = Checkpoints();
  ASSERT_NE(checkpoints, nullptr);
  auto a = OpenOwner(stream_a, "node-a", checkpoints, 20);
  ASSERT_NE(a, nullptr);
  std::vector<Event> acknowledged;
  ASSERT_NO_FATAL_FAILURE(RecordInputs(*a, 60, &acknowledged));
  auto latest = checkpoints->Latest();
  ASSERT_OK(latest);
  ASSERT_TRUE(latest->has_value());
  const log::LogPosition at = (*latest)->position;
  EXPECT_GE(at, 20u);
  EXPECT_EQ(stream_a->ReadFrom(1, 1).status().code(), Status::Code::kNotFound);
  EXPECT_OK(stream_a->ReadFrom(at + 1, 1));
  a.reset();

  auto b = OpenOwner(Stream(), "node-b", Checkpoints(), 20);  // an empty directory
  ASSERT_NE(b, nullptr);
  for (const Event& e : acknowledged) {
    auto page = b->ChangesSince(SessionName{"main", e.session_key}, e.sequence - 1, 1);
    ASSERT_OK(page);
    ASSERT_EQ(page->events.size(), 1u);
    EXPECT_EQ(page->events[0].summary, e.summary);
  }
  auto report = b->Verify();
  ASSERT_OK(report);
  EXPECT_TRUE(report->ok);
  auto retried = b->Record(Input(0));
  ASSERT_OK(retried);
  EXPECT_TRUE(retried->deduplicated);
  auto fresh = b->Record(Input(61));
  ASSERT_OK(fresh);
  auto applied = InspectSnapshot((*latest)->data);
  ASSERT_OK(applied);
  auto chain = log::VerifyLogChain(*stream_a, at + 1, log::ChainVerifier(applied->chain));
  ASSERT_OK(chain);
  EXPECT_EQ(chain->fence_epoch, 2u);
}

}  // namespace
}  // namespace statewatch::cluster
