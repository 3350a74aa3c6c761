// The control plane's records in etcd (control/cluster_records.h): they round-trip, and a
// record that is not what it should be is Corruption naming what was wrong.
#include "control/cluster_records.h"

#include <gtest/gtest.h>

#include "status_matchers.h"

namespace statewatch::control {
namespace {

TEST(ClusterRecordsTest, KeysLiveUnderTheClusterName) {
  ClusterKeys keys("blue");
  EXPECT_EQ(keys.Root(), "/sw/blue/");
  EXPECT_EQ(keys.Node("n1"), "/sw/blue/nodes/n1");
  EXPECT_EQ(keys.Assign(3), "/sw/blue/assign/3");
  EXPECT_EQ(keys.Move(3), "/sw/blue/requests/move/3");
  EXPECT_EQ(keys.Drain("n2"), "/sw/blue/requests/drain/n2");
  EXPECT_EQ(ClusterKeys::Suffix("/sw/blue/assign/12", keys.AssignPrefix()), "12");
  EXPECT_EQ(ClusterKeys::Suffix("/sw/red/assign/12", keys.AssignPrefix()), std::nullopt);
  EXPECT_EQ(ClusterKeys::PartitionOf("12", 13), 12u);
  EXPECT_EQ(ClusterKeys::PartitionOf("13", 13), std::nullopt);
  EXPECT_EQ(ClusterKeys::PartitionOf("1x", 13), std::nullopt);
  EXPECT_EQ(ClusterKeys::PartitionOf("", 13), std::nullopt);
}

TEST(ClusterRecordsTest, NodeIdsAreShortAndPlain) {
  EXPECT_OK(ValidateNodeId("node-1.a_b"));
  EXPECT_FALSE(ValidateNodeId("").ok());
  EXPECT_FALSE(ValidateNodeId("a/b").ok());
  EXPECT_FALSE(ValidateNodeId(std::string(65, 'a')).ok());
  EXPECT_NE(ValidateNodeId("a b").message().find("\"a b\""), std::string::npos);
}

TEST(ClusterRecordsTest, ANodeRecordRoundTrips) {
  NodeRecord r;
  r.id = "n1";
  r.url = "http://127.0.0.1:7000";
  r.slots.push_back({2, "owner", "http://127.0.0.1:7002", 41, 99});
  r.slots.push_back({5, "standby", "http://127.0.0.1:7005", 7, 3});
  auto back = DecodeNodeRecord(EncodeNodeRecord(r));
  ASSERT_OK(back);
  EXPECT_EQ(back->id, "n1");
  EXPECT_EQ(back->url, r.url);
  ASSERT_EQ(back->slots.size(), 2u);
  ASSERT_NE(back->Slot(5), nullptr);
  EXPECT_EQ(back->Slot(5)->role, "standby");
  EXPECT_EQ(back->Slot(2)->position, 41u);
  EXPECT_EQ(back->Slot(2)->epoch, 99u);
  EXPECT_EQ(back->Slot(3), nullptr);
}

TEST(ClusterRecordsTest, AnAssignmentRoundTripsWithA64BitLease) {
  Assignment a;
  a.owner = "n1";
  a.owner_lease = 7587899311603989765;
  a.standby = "n2";
  auto back = DecodeAssignment(EncodeAssignment(a));
  ASSERT_OK(back);
  EXPECT_EQ(back->owner, "n1");
  EXPECT_EQ(back->owner_lease, 7587899311603989765);
  EXPECT_EQ(back->standby, "n2");
}

TEST(ClusterRecordsTest, DamagedRecordsAreCorruptionNamingWhatIsWrong) {
  auto not_json = DecodeAssignment("{owner");
  ASSERT_FALSE(not_json.ok());
  EXPECT_EQ(not_json.status().code(), Status::Code::kCorruption);
  EXPECT_NE(not_json.status().message().find("assignment is not JSON"), std::string::npos);
  auto no_owner = DecodeAssignment(R"({"ownerLease":"1"})");
  ASSERT_FALSE(no_owner.ok());
  EXPECT_NE(no_owner.status().message().find("\"owner\""), std::string::npos);
  auto bad_lease = DecodeAssignment(R"({"owner":"n1","ownerLease":"-3"})");
  ASSERT_FALSE(bad_lease.ok());
  auto bad_slots = DecodeNodeRecord(R"({"id":"n","url":"u","partitions":{}})");
  ASSERT_FALSE(bad_slots.ok());
  EXPECT_NE(bad_slots.status().message().find("\"partitions\""), std::string::npos);
  auto zero = DecodeClusterConfig(R"({"partitions":0})");
  ASSERT_FALSE(zero.ok());
  auto config = DecodeClusterConfig(EncodeClusterConfig(12));
  ASSERT_OK(config);
  EXPECT_EQ(*config, 12u);
}

TEST(ClusterRecordsTest, RequestsRoundTrip) {
  auto move = DecodeMoveRequest(EncodeMoveRequest(MoveRequest{"n3"}));
  ASSERT_OK(move);
  EXPECT_EQ(move->to, "n3");
  auto drain = DecodeDrainRequest(EncodeDrainRequest(DrainRequest{42}));
  ASSERT_OK(drain);
  EXPECT_EQ(drain->lease, 42);
}

}  // namespace
}  // namespace statewatch::control
