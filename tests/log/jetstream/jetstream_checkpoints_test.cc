// JetStreamCheckpoints against three nats-server processes the test starts itself.
#include "log/jetstream/jetstream_checkpoints.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "jetstream_fixture.h"
#include "status_matchers.h"

namespace statewatch::log::testing {
namespace {

class JetStreamCheckpointsTest : public SharedClusterTest {
 protected:
  std::unique_ptr<JetStreamCheckpoints> NewStore(uint32_t partition) {
    JetStreamCheckpointsOptions o;
    o.partition = partition;
    o.chunk_bytes = 64 * 1024;
    Result<std::unique_ptr<JetStreamCheckpoints>> store =
        JetStreamCheckpoints::Open(connection_, o);
    EXPECT_OK(store);
    return store.ok() ? std::move(*store) : nullptr;
  }
  static std::string RandomBytes(std::size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  }
  // Messages of `partition` left in the checkpoint stream.
  uint64_t MessagesOf(uint32_t partition) {
    jsOptions o;
    jsOptions_Init(&o);
    const std::string filter = "sw.p." + std::to_string(partition) + ".ckpt.>";
    o.Stream.Info.SubjectsFilter = filter.c_str();
    jsStreamInfo* si = nullptr;
    EXPECT_EQ(js_GetStreamInfo(&si, connection_->jetstream(), "SW_CKPT", &o, nullptr), NATS_OK);
    uint64_t n = 0;
    if (si != nullptr && si->State.Subjects != nullptr) {
      for (int i = 0; i < si->State.Subjects->Count; ++i) n += si->State.Subjects->List[i].Msgs;
    }
    if (si != nullptr) jsStreamInfo_Destroy(si);
    return n;
  }
};

TEST_F(JetStreamCheckpointsTest, RoundTripsInChunksAndKeepsOnlyTheLatest) {
  const uint32_t p = NewPartition();
  auto store = NewStore(p);
  ASSERT_NE(store, nullptr);
  Result<std::optional<Checkpoint>> none = store->Latest();
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
  ASSERT_OK(store->LatestPosition());
  EXPECT_FALSE(store->LatestPosition()->has_value());

  Checkpoint first{10, RandomBytes(300 * 1024, 1)};  // 5 chunks of 64 KiB
  ASSERT_OK(store->Write(first));
  ASSERT_OK(store->Latest());
  ASSERT_TRUE(store->Latest()->has_value());
  EXPECT_EQ(**store->Latest(), first);
  EXPECT_EQ(MessagesOf(p), 6u);  // 5 chunks + the end marker

  Checkpoint second{20, RandomBytes(100 * 1024, 2)};
  ASSERT_OK(store->Write(second));
  EXPECT_EQ(**store->Latest(), second);
  ASSERT_OK(store->LatestPosition());
  EXPECT_EQ(*store->LatestPosition(), std::optional<LogPosition>(20));  // the end marker only
  EXPECT_EQ(MessagesOf(p), 3u) << "the first checkpoint's messages were purged";

  Status stale = store->Write({15, "late"});
  EXPECT_EQ(stale.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(stale.message(), "checkpoint at position 15 refused: a newer one covers position 20");
  EXPECT_EQ(**store->Latest(), second);

  Checkpoint empty{20, ""};
  ASSERT_OK(store->Write(empty));
  EXPECT_EQ(**store->Latest(), empty);
}

TEST_F(JetStreamCheckpointsTest, TheFirstCheckpointOfAFreshStreamSurvivesItsOwnPurge) {
  // Regression: JetStream 2.9 reads a purge "up to sequence 1" as "purge all that matches",
  // so the first checkpoint of a new stream (chunks from sequence 1) deleted itself.
  // A server of its own, so that SW_CKPT is new.
  NatsTestClusterOptions single;
  single.servers = 1;
  Result<std::unique_ptr<NatsTestCluster>> server = NatsTestCluster::Start(single);
  ASSERT_OK(server);
  NatsConnectionOptions co;
  co.servers = (*server)->Urls();
  Result<std::shared_ptr<NatsConnection>> conn = NatsConnection::Connect(co);
  ASSERT_OK(conn);
  JetStreamCheckpointsOptions o;
  o.replicas = 1;
  Result<std::unique_ptr<JetStreamCheckpoints>> store = JetStreamCheckpoints::Open(*conn, o);
  ASSERT_OK(store);
  ASSERT_OK((*store)->Write({1, "first"}));
  Result<std::optional<Checkpoint>> latest = (*store)->Latest();
  ASSERT_OK(latest);
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ(**latest, (Checkpoint{1, "first"}));
}

TEST_F(JetStreamCheckpointsTest, PartitionsDoNotSeeEachOthersCheckpoints) {
  const uint32_t p = NewPartition(), q = NewPartition();
  auto sp = NewStore(p);
  auto sq = NewStore(q);
  ASSERT_OK(sp->Write({5, "p state"}));
  ASSERT_OK(sq->Write({7, "q state"}));
  ASSERT_OK(sp->Write({6, "p state 2"}));
  EXPECT_EQ(**sp->Latest(), (Checkpoint{6, "p state 2"}));
  EXPECT_EQ(**sq->Latest(), (Checkpoint{7, "q state"}));
}

TEST_F(JetStreamCheckpointsTest, AHalfWrittenCheckpointIsInvisible) {
  // A writer that dies after its chunks and before its end marker: only chunks land.
  const uint32_t p = NewPartition();
  auto store = NewStore(p);
  ASSERT_OK(store->Write({3, "complete"}));
  const std::string subject = "sw.p." + std::to_string(p) + ".ckpt.data";
  jsPubAck* ack = nullptr;
  ASSERT_EQ(js_Publish(&ack, connection_->jetstream(), subject.c_str(), "orphan chunk", 12, nullptr,
                       nullptr),
            NATS_OK);
  jsPubAck_Destroy(ack);
  EXPECT_EQ(**store->Latest(), (Checkpoint{3, "complete"}));
}

}  // namespace
}  // namespace statewatch::log::testing
