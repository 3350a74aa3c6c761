// Cluster mode: a write to a session of another partition is answered 421 "misdirected",
// naming the partition that owns it, and changes nothing. The daemon serves partition 0 of 2
// (PartitionOfAgent: main -> 0, research -> 1).
#include <gtest/gtest.h>

#include "http_helpers.h"
#include "test_client.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

const std::string kOwn = "agent:main:main";
const std::string kOther = "agent:research:x";
const std::string kMessage =
    "session agent:research:x (agent research) belongs to partition 1 of 2; this node owns "
    "partition 0: send it to partition 1's owner";

class MisdirectedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions o = TestOptions();
    o.partition = 0;
    o.partitions = 2;
    server_ = std::make_unique<TestServer>(std::move(o));
    http_ = std::make_unique<HttpClient>(server_->port());
  }
  void ExpectMisdirected(const HttpResult& r, const std::string& message) {
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.status, 421) << r.body;
    EXPECT_EQ(r.error_code(), "misdirected") << r.body;
    EXPECT_EQ(r.error_message(), message) << r.body;
  }
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<HttpClient> http_;
};

TEST_F(MisdirectedTest, WritesToAnotherPartitionsSessionAre421AndChangeNothing) {
  auto first = Record(*http_, HumanMessage(kOwn));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0], 2u);  // n * 2 + 0
  ExpectMisdirected(http_->Post("/v1/events", HumanMessage(kOther)), kMessage);
  // One misdirected event refuses the whole call.
  ExpectMisdirected(
      http_->Post("/v1/events", json::array{HumanMessage(kOwn), HumanMessage(kOther)}),
      "events[1]: " + kMessage);
  // A watch whose target lives elsewhere (its cursor would live there).
  ExpectMisdirected(http_->Post("/v1/watches", json::object{{"watcher", kOwn}, {"target", kOther}}),
                    kMessage);
  ExpectMisdirected(http_->Request("DELETE", "/v1/sessions/" + kOther), kMessage);
  // Nothing took a sequence, nothing was watched.
  auto next = Record(*http_, HumanMessage(kOwn));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0], 4u);
  EXPECT_TRUE(Notices(*http_, kOwn).empty());
  // A watcher of another partition may watch this partition's session.
  EXPECT_EQ(http_->Post("/v1/watches", json::object{{"watcher", kOther}, {"target", kOwn}}).status,
            200);
}

}  // namespace
}  // namespace statewatch::testing
