// One three-server cluster for every test of this binary that does not kill servers (started
// on first use, stopped and deleted after the last test by a global test environment), and
// a fresh stream per test: each test gets partition numbers nobody else used.
#ifndef STATEWATCH_TESTS_LOG_JETSTREAM_JETSTREAM_FIXTURE_H_
#define STATEWATCH_TESTS_LOG_JETSTREAM_JETSTREAM_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "log/jetstream/jetstream_log.h"
#include "log/jetstream/nats_connection.h"
#include "nats_test_cluster.h"
#include "status_matchers.h"

namespace statewatch::log::testing {

class SharedClusterTest : public ::testing::Test {
 public:
  // Hands the shared cluster over for deletion (once, after the last test).
  static NatsTestCluster* cluster_for_teardown() { return std::exchange(cluster_, nullptr); }

 protected:
  static void SetUpTestSuite() {
    if (cluster_ == nullptr) {
      Result<std::unique_ptr<NatsTestCluster>> started = NatsTestCluster::Start({});
      ASSERT_OK(started);
      cluster_ = std::move(*started).release();
    }
  }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    connection_ = Connect();
  }

  static std::shared_ptr<NatsConnection> Connect() {
    NatsConnectionOptions o;
    o.servers = cluster_->Urls();
    Result<std::shared_ptr<NatsConnection>> c = NatsConnection::Connect(o);
    EXPECT_OK(c);
    return c.ok() ? *c : nullptr;
  }
  static uint32_t NewPartition() { return next_partition_++; }
  std::unique_ptr<JetStreamLog> NewLog(uint32_t partition) {
    JetStreamLogOptions o;
    o.partition = partition;
    Result<std::unique_ptr<JetStreamLog>> log = JetStreamLog::Open(connection_, o);
    EXPECT_OK(log);
    return log.ok() ? std::move(*log) : nullptr;
  }

  // Outlives every test suite of the binary; jetstream_fixture.cc deletes it at the end.
  static inline NatsTestCluster* cluster_ = nullptr;
  static inline uint32_t next_partition_ = 1;
  std::shared_ptr<NatsConnection> connection_;
};

}  // namespace statewatch::log::testing

#endif  // STATEWATCH_TESTS_LOG_JETSTREAM_JETSTREAM_FIXTURE_H_
