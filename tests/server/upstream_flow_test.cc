// End to end through the daemon: upstream links over HTTP, and the monitor on the manual
// clock — a JSONL transcript appended to by a separate process wakes a watcher connected on
// /v1/wakes once the clock passes the tick, and a deleted file gives exactly one
// upstream_missing after the third failed tick and removes the link.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "http_helpers.h"
#include "status_matchers.h"
#include "test_client.h"
#include "test_keys.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

const std::string kAdopted = "agent:main:claude:thread-1";
constexpr int64_t kFirstTick = kStartMs + 15000;
constexpr int64_t kInterval = 60000;

class UpstreamFlowTest : public ServerTest {
 protected:
  void SetUp() override {
    root_ = MakeTempDir("statewatch-upstream-root");
    server::ServerOptions options = TestOptions();
    options.upstream.roots = {root_};
    StartServer(options);
    path_ = std::filesystem::canonical(root_).string() + "/transcript.jsonl";
    std::ofstream(path_) << R"({"type":"user","message":{"role":"user","content":"old"}})"
                         << "\n";
    PutSession(*http_, kMain, {{"kind", "main"}});
    PutSession(*http_, kAdopted, {{"kind", "other"}});
    HttpResult w =
        http_->Post("/v1/watches", json::object{{"watcher", kMain}, {"target", kAdopted}});
    ASSERT_EQ(w.status, 200) << w.body;
  }

  HttpResult Link(json::object extra = {}) {
    json::object body = std::move(extra);
    body["sessionKey"] = kAdopted;
    body["catalogId"] = "claude-code";
    body["hostId"] = "laptop";
    body["threadId"] = "thread-1";
    body["upstreamKind"] = "jsonl";
    body["upstreamRef"] = json::object{{"path", path_}};
    return http_->Post("/v1/upstream-links", body);
  }

  json::array Links() {
    HttpResult r = http_->Get("/v1/upstream-links");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.json().at("links").as_array() : json::array();
  }

  // Appends a line from another process, as a client writing its transcript would.
  void AppendFromAnotherProcess(const std::string& text) {
    std::string line = R"({"type":"user","message":{"role":"user","content":")" + text + R"("}})";
    std::string cmd = "printf '%s\\n' '" + line + "' >> '" + path_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  std::vector<statewatch::Event> EventsOf(const std::string& kind) {
    auto page = server_->daemon().engine().ChangesSince({"main", kAdopted}, 0);
    EXPECT_OK(page);
    std::vector<statewatch::Event> out;
    if (!page.ok()) return out;
    for (const statewatch::Event& e : page->events) {
      if (e.kind == kind) out.push_back(e);
    }
    return out;
  }

  void TearDown() override {
    http_.reset();
    server_.reset();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  std::string root_;  // the daemon's --upstream-root
  std::string path_;
};

TEST_F(UpstreamFlowTest, LinkRoutesCreateListRefreshAndDelete) {
  HttpResult r = Link();
  ASSERT_EQ(r.status, 200) << r.body;
  json::object link = r.json().at("link").as_object();
  EXPECT_EQ(link["sessionKey"], json::value(kAdopted));
  uint64_t size = std::filesystem::file_size(path_);
  EXPECT_EQ(link["marker"].to_number<uint64_t>(), size);  // old history is not news
  ASSERT_EQ(Links().size(), 1u);
  // A refresh of the same source keeps the marker, even when the request names one.
  r = Link({{"marker", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().at("link").at("marker").to_number<uint64_t>(), size);

  HttpResult bad = http_->Post("/v1/upstream-links", json::object{{"sessionKey", kAdopted}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(http_->Request("DELETE", "/v1/upstream-links/" + kAdopted).status, 200);
  HttpResult gone = http_->Request("DELETE", "/v1/upstream-links/" + kAdopted);
  EXPECT_EQ(gone.status, 404) << gone.body;
  EXPECT_TRUE(Links().empty());
}

// Regression: POST /v1/upstream-links accepted /etc/shadow, which the monitor would have
// read as the daemon's user. A source outside every --upstream-root is refused with 403.
TEST_F(UpstreamFlowTest, ALinkOutsideTheUpstreamRootsIsRefused) {
  json::object body{{"sessionKey", kAdopted},
                    {"catalogId", "claude-code"},
                    {"hostId", "laptop"},
                    {"threadId", "thread-1"},
                    {"upstreamKind", "jsonl"},
                    {"upstreamRef", {{"path", "/etc/shadow"}}},
                    {"marker", 0}};
  HttpResult r = http_->Post("/v1/upstream-links", body);
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.error_code(), "forbidden") << r.body;
  EXPECT_NE(r.error_message().find("upstream source /etc/shadow is outside the upstream roots"),
            std::string::npos)
      << r.body;
  EXPECT_TRUE(Links().empty());
}

TEST_F(UpstreamFlowTest, AppendByAnotherProcessWakesTheWatcherAtTheTick) {
  ASSERT_EQ(Link().status, 200);
  std::string error;
  auto ws = WsClient::Connect(server_->port(), "/v1/wakes?watcher=" + kMain, {}, &error);
  ASSERT_NE(ws, nullptr) << error;
  AppendFromAnotherProcess("did you fix it?");
  AppendFromAnotherProcess("hello?");

  SetClock(*http_, kFirstTick - 1);  // not yet due
  EXPECT_TRUE(EventsOf("human_direct_message").empty());
  SetClock(*http_, kFirstTick);  // answered once the tick has finished
  auto events = EventsOf("human_direct_message");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].summary, "human message via claude-code");
  EXPECT_EQ(events[0].payload_json, R"({"turns":2})");

  auto wake = ws->Next();
  ASSERT_TRUE(wake.has_value()) << "no wake within the bounded wait";
  json::object w = WakeJson(*wake);
  EXPECT_EQ(w["watcher"], json::value(kMain)) << *wake;
  EXPECT_EQ(w["reason"], json::value("session-state:" + kAdopted)) << *wake;
  EXPECT_EQ(Notices(*http_, kMain).size(), 1u);

  HttpResult metrics = http_->Get("/metrics");
  EXPECT_NE(metrics.body.find("statewatch_upstream_ticks_total 1"), std::string::npos);
  EXPECT_NE(metrics.body.find("statewatch_upstream_human_turns_total 2"), std::string::npos);
}

TEST_F(UpstreamFlowTest, DeletedFileGivesOneUpstreamMissingAfterTheThirdTick) {
  ASSERT_EQ(Link().status, 200);
  std::filesystem::remove(path_);
  SetClock(*http_, kFirstTick);
  SetClock(*http_, kFirstTick + kInterval);
  EXPECT_TRUE(EventsOf("upstream_missing").empty());
  EXPECT_EQ(Links().size(), 1u);
  SetClock(*http_, kFirstTick + 2 * kInterval);
  auto missing = EventsOf("upstream_missing");
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].payload_json, R"({"channel":"claude-code"})");
  EXPECT_TRUE(Links().empty());
  SetClock(*http_, kFirstTick + 3 * kInterval);
  EXPECT_EQ(EventsOf("upstream_missing").size(), 1u);
}

}  // namespace
}  // namespace statewatch::testing
