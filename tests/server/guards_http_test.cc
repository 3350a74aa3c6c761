// Trace context and loop guards over real HTTP (in-process daemon): the traceparent header of
// a write is stored and returned (the answer, the state route, session_status, export) and
// reaches the delivery feed; an invalid header is ignored; a guard refusal is 429 loop_guard,
// journaled on the caller with its traceparent and counted in /metrics.
#include <gtest/gtest.h>

#include "http_helpers.h"
#include "test_client.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;

const std::string kA = "agent:main:alpha";
const std::string kB = "agent:main:beta";
const std::string kTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

class GuardsHttpTest : public ServerTest {
 protected:
  void SetUp() override {
    server::ServerOptions o = TestOptions();
    o.tools.visibility = tools::Visibility::kAgent;
    o.messaging.max_ping_pong_turns = 0;
    o.messaging.guards.send_burst = 3;
    o.messaging.guards.send_per_minute = 60;
    StartServer(std::move(o));
    PutSession(*http_, kA, {});
    PutSession(*http_, kB, {});
  }
  HttpResult Send(const std::string& from, const std::string& to, const std::string& message,
                  const std::string& trace) {
    Headers h = As(from);
    if (!trace.empty()) h.emplace_back("traceparent", trace);
    return http_->Post(
        "/v1/tools/sessions_send",
        json::object{{"sessionKey", to}, {"message", message}, {"timeoutSeconds", 0}}, h);
  }
  json::array StateEvents(const std::string& key) {
    HttpResult r = http_->Get("/v1/sessions/" + key + "/state?changesSince=0");
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) return {};
    return r.json().at("stateChanges").at("events").as_array();
  }
};

TEST_F(GuardsHttpTest, AWritesTraceparentIsStoredAndReturned) {
  HttpResult r = http_->Post("/v1/events", HumanMessage(kA), {{"traceparent", kTrace}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().at("events").at(0).at("traceparent").as_string(), kTrace);

  json::array events = StateEvents(kA);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].at("traceparent").as_string(), kTrace);

  HttpResult status = Tool(*http_, "session_status", kA, json::object{{"changesSince", 0}});
  ASSERT_EQ(status.status, 200) << status.body;
  EXPECT_EQ(status.json().at("stateChanges").at("events").at(0).at("traceparent").as_string(),
            kTrace);

  HttpResult exported = http_->Get("/v1/export");
  ASSERT_EQ(exported.status, 200) << exported.body;
  EXPECT_NE(exported.body.find("\"traceparent\":\"" + kTrace + "\""), std::string::npos)
      << exported.body;
}

// W3C Trace Context: a receiver ignores a traceparent it cannot parse; the write goes on.
TEST_F(GuardsHttpTest, AnInvalidHeaderIsIgnored) {
  for (const std::string& bad :
       {std::string("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"),
        std::string("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
        std::string("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        std::string("nonsense")}) {
    HttpResult r = http_->Post("/v1/events", HumanMessage(kA), {{"traceparent", bad}});
    ASSERT_EQ(r.status, 200) << bad << ": " << r.body;
    EXPECT_FALSE(r.json().at("events").at(0).as_object().contains("traceparent")) << bad;
  }
}

// A traceparent in the event body is data the producer wrote: a bad one is refused by name,
// and a good one wins over the header.
TEST_F(GuardsHttpTest, ABodyTraceparentIsCheckedAndWinsOverTheHeader) {
  json::object bad = HumanMessage(kA);
  bad["traceparent"] = "00-xyz";
  HttpResult r = http_->Post("/v1/events", bad);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.error_message().find("traceparent"), std::string::npos) << r.body;
  EXPECT_NE(r.error_message().find("00-xyz"), std::string::npos) << r.body;

  const std::string own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  json::object good = HumanMessage(kA);
  good["traceparent"] = own;
  r = http_->Post("/v1/events", json::array{good, HumanMessage(kB)}, {{"traceparent", kTrace}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().at("events").at(0).at("traceparent").as_string(), own);
  EXPECT_EQ(r.json().at("events").at(1).at("traceparent").as_string(), kTrace);
}

TEST_F(GuardsHttpTest, TheDeliveryFeedCarriesTheCallersTraceparent) {
  auto feed = WsClient::Connect(server_->port(), "/v1/deliveries?agentId=main");
  ASSERT_TRUE(feed);
  HttpResult r = Send(kA, kB, "hello", kTrace);
  ASSERT_EQ(r.status, 200) << r.body;
  auto message = feed->Next();
  ASSERT_TRUE(message);
  json::object d = json::parse(*message).as_object();
  EXPECT_EQ(d.at("sessionKey").as_string(), kB);
  EXPECT_EQ(d.at("traceparent").as_string(), kTrace);
}

TEST_F(GuardsHttpTest, ARefusalIs429LoopGuardJournaledAndCounted) {
  for (int i = 0; i < 3; ++i) {
    HttpResult r = Send(kA, kB, "m" + std::to_string(i), kTrace);
    ASSERT_EQ(r.status, 200) << r.body;
  }
  HttpResult refused = Send(kA, kB, "m3", kTrace);
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(refused.error_code(), "loop_guard");
  EXPECT_NE(refused.error_message().find("loop guard send_rate"), std::string::npos);
  EXPECT_NE(refused.error_message().find("guards.send.perMinute=60, guards.send.burst=3"),
            std::string::npos)
      << refused.body;

  json::array events = StateEvents(kA);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].at("kind").as_string(), "guard_refused");
  EXPECT_EQ(events[0].at("summary").as_string(),
            "sessions_send to agent:main:beta refused by loop guard send_rate");
  EXPECT_EQ(events[0].at("traceparent").as_string(), kTrace);

  HttpResult metrics = http_->Get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("statewatch_guard_refusals_total{guard=\"send_rate\"} 1\n"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("statewatch_guard_refusals_total{guard=\"spawn_rate\"} 0\n"),
            std::string::npos);

  SetClock(*http_, kStartMs + 1000);  // one token back
  EXPECT_EQ(Send(kA, kB, "m4", kTrace).status, 200);
}

}  // namespace
}  // namespace statewatch::testing
