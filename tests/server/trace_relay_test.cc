// The cluster's request relay (server/partition_router.h) hands a write's W3C trace context
// to the partition owner unchanged: traceparent and tracestate travel with a session tool
// call and with POST /v1/events, so the owner stores and delivers the caller's trace.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/agent_partition.h"
#include "server/partition_router.h"

namespace statewatch::server {
namespace {

constexpr uint32_t kPartitions = 3;
constexpr char kTrace[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
constexpr char kState[] = "congo=t61rcWkgMzE";

std::string SessionOn(uint32_t p) {
  for (int i = 0;; ++i) {
    std::string agent = "worker" + std::to_string(i);
    if (engine::PartitionOfAgent(agent, kPartitions) == p) return "agent:" + agent + ":main";
  }
}

struct Sent {
  std::string url, target;
  net::HeaderList headers;
};

PartitionRouter RouterRecording(std::vector<Sent>* sent) {
  PartitionRouterOptions o;
  o.partitions = kPartitions;
  o.owner = [](uint32_t p, bool) -> std::optional<OwnerAddress> {
    return OwnerAddress{"n" + std::to_string(p), "http://owner" + std::to_string(p)};
  };
  o.send = [sent](const std::string& url, const std::string&, const std::string& target,
                  const std::string&,
                  const net::HttpRequestOptions& options) -> Result<net::HttpAnswer> {
    sent->push_back({url, target, options.headers});
    *options.sent = true;
    net::HttpAnswer a;
    a.status = 200;
    a.body = "{}";
    return a;
  };
  o.sleep = [](std::chrono::milliseconds) {};
  return PartitionRouter(std::move(o));
}

std::string HeaderOf(const net::HeaderList& headers, const std::string& name) {
  for (const auto& [n, v] : headers) {
    if (n == name) return v;
  }
  return "";
}

TEST(TraceRelayTest, AToolCallsTraceContextReachesTheOwner) {
  std::vector<Sent> sent;
  PartitionRouter router = RouterRecording(&sent);
  const std::string caller = SessionOn(2);
  net::ListenerRequest r;
  r.method = "POST";
  r.target = "/v1/tools/sessions_send";
  r.body = R"({"sessionKey": ")" + caller + R"(", "message": "hi"})";
  r.headers = {{"x-session-key", caller}, {"traceparent", kTrace}, {"tracestate", kState}};
  EXPECT_EQ(router.Route(r).status, 200);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].url, "http://owner2");
  EXPECT_EQ(HeaderOf(sent[0].headers, "traceparent"), kTrace);
  EXPECT_EQ(HeaderOf(sent[0].headers, "tracestate"), kState);
}

TEST(TraceRelayTest, AnEventWritesTraceContextReachesTheOwner) {
  std::vector<Sent> sent;
  PartitionRouter router = RouterRecording(&sent);
  net::ListenerRequest r;
  r.method = "POST";
  r.target = "/v1/events";
  r.body = R"({"sessionKey": ")" + SessionOn(1) +
           R"(", "kind": "human_direct_message", "actorType": "human"})";
  r.headers = {{"traceparent", kTrace}};
  EXPECT_EQ(router.Route(r).status, 200);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].url, "http://owner1");
  EXPECT_EQ(HeaderOf(sent[0].headers, "traceparent"), kTrace);
}

}  // namespace
}  // namespace statewatch::server
