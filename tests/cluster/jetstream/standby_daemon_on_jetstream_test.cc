// The standby daemon and its live takeover on a real three-server JetStream cluster
// (docs/cluster-internals.md, "The standby: fold the stream",
// "Fencing and `statewatch takeover --partition p`" and
// "`statewatch serve --cluster … --partition p --role owner|standby`"): the owner and the
// standby each on their own connection to the partition's stream, over HTTP; after the
// takeover the old owner answers neither writes nor reads.
// tests/server/cluster_standby_test.cc runs the same on MemLog.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "cluster/replicated_log.h"
#include "engine/engine_fixture.h"
#include "log/jetstream/jetstream_log.h"
#include "log/jetstream/nats_connection.h"
#include "nats_test_cluster.h"
#include "server/cluster_routes.h"
#include "server/http_helpers.h"
#include "server/standby_daemon.h"
#include "server/test_server.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

std::shared_ptr<log::LogBackend> Stream(log::testing::NatsTestCluster& nats) {
  log::NatsConnectionOptions co;
  co.servers = nats.Urls();
  auto connection = log::NatsConnection::Connect(co);
  EXPECT_OK(connection);
  if (!connection.ok()) return nullptr;
  auto stream = log::JetStreamLog::Open(*connection, log::JetStreamLogOptions{});
  EXPECT_OK(stream);
  return stream.ok() ? std::shared_ptr<log::LogBackend>(std::move(*stream)) : nullptr;
}

TEST(StandbyDaemonOnJetStreamTest, LiveTakeoverFencesTheOwnerOutOfWritesAndReads) {
  auto started = log::testing::NatsTestCluster::Start({});
  ASSERT_OK(started);
  auto nats = std::move(*started);

  auto owner_state = std::make_shared<cluster::PartitionState>(0);
  server::ServerOptions o = TestOptions();
  cluster::ReplicatedLogOptions ro;
  ro.node = "owner-a";
  ro.state = owner_state;
  o.wrap_log = cluster::OwnerLog(Stream(*nats), ro);
  o.gate = std::make_shared<server::ClusterGate>(owner_state, server::ClusterGate::Hooks{});
  TestServer owner(o);
  HttpClient owner_http(owner.port());
  for (int i = 0; i < 10; ++i) {
    Record(owner_http, HumanMessage("agent:main:s" + std::to_string(i % 3)));
  }

  const std::string root = MakeTempDir("statewatch-js-standby");
  server::StandbyDaemonOptions so;
  so.server = TestOptions();
  so.server.data_dir = root + "/data";
  so.remote = Stream(*nats);
  so.log.node = "standby-b";
  auto standby = server::StandbyDaemon::Open(so);
  ASSERT_OK(standby);
  Status run;
  std::thread serving([&] { run = (*standby)->Run(); });
  HttpClient standby_http((*standby)->port());
  Record(owner_http, HumanMessage("agent:main:late"));  // folded while the standby runs
  ASSERT_TRUE(WaitFor([&] {
    return (*standby)->partition()->view().position == owner_state->view().position;
  }));
  EXPECT_EQ(standby_http.Get("/v1/cluster/digest").json().at("digest"),
            owner_http.Get("/v1/cluster/digest").json().at("digest"));
  EXPECT_EQ(standby_http.Post("/v1/events", HumanMessage("agent:main:x")).status, 503);

  HttpResult taken = standby_http.Post("/v1/cluster/takeover", json::object{{"partition", 0}});
  ASSERT_EQ(taken.status, 200) << taken.body;
  EXPECT_EQ(taken.json().at("epoch").as_int64(), 2);
  ASSERT_TRUE(WaitFor([&] { return (*standby)->owner() != nullptr; }));
  HttpClient new_owner((*standby)->port());
  Record(new_owner, HumanMessage("agent:main:s0"));

  HttpResult zombie = owner_http.Post("/v1/events", HumanMessage("agent:main:s1"));
  EXPECT_EQ(zombie.status, 503) << zombie.body;
  EXPECT_NE(zombie.body.find("partition moved"), std::string::npos) << zombie.body;
  HttpResult stale = owner_http.Get("/v1/export");
  EXPECT_EQ(stale.status, 503) << stale.body;
  EXPECT_EQ(stale.error_code(), "partition_moved");

  HttpResult exported = new_owner.Get("/v1/export");
  EXPECT_EQ(std::count(exported.body.begin(), exported.body.end(), '\n'), 12) << exported.body;
  EXPECT_TRUE(new_owner.Get("/v1/verify").json().at("ok").as_bool());

  (*standby)->Shutdown();
  serving.join();
  EXPECT_OK(run);
  standby->reset();
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
}

}  // namespace
}  // namespace statewatch::testing
