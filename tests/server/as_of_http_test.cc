// GET /v1/sessions/{key}/status?asOf=SEQ and session_status's asOf over real HTTP: the
// answer as of a past sequence (a notice's exact text, cursors, the page of events), the
// live shape without asOf, and the refusals.
#include <gtest/gtest.h>

#include "http_helpers.h"
#include "status_matchers.h"
#include "test_client.h"
#include "test_keys.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

class AsOfHttpTest : public ServerTest {
 protected:
  void SetUp() override {
    StartWithChild(kMain, {{"kind", "main"}}, kChild);
    HttpResult w = http_->Post("/v1/watches", json::object{{"watcher", kMain}, {"target", kChild}});
    ASSERT_EQ(w.status, 200) << w.body;
    first_ = Record(*http_, Event(kChild, "goal_changed", "human", {{"summary", "goal one"}}))[0];
    ASSERT_EQ(Drain(*http_, kMain).size(), 1u);
    Record(*http_, Event(kChild, "run_failed", "system", {{"summary", "failed"}}));
    Record(*http_, Event(kChild, "goal_changed", "human", {{"summary", "goal two"}}));
  }
  json::object StatusOf(const std::string& key, const std::string& query, int want = 200) {
    HttpResult r = http_->Get("/v1/sessions/" + key + "/status" + query);
    EXPECT_EQ(r.status, want) << r.body;
    return r.status == 200 || r.status >= 400 ? r.json().as_object() : json::object();
  }
  uint64_t first_ = 0;
};

TEST_F(AsOfHttpTest, TheWatcherAsItWasRightAfterTheFirstEvent) {
  json::object then = StatusOf(kMain, "?asOf=" + std::to_string(first_));
  EXPECT_EQ(then["asOf"].to_number<uint64_t>(), first_);
  EXPECT_EQ(then["sessionKey"].as_string(), kMain);
  const json::array& notices = then["pendingNotices"].as_array();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].at("text").as_string(), NoticeTextFor(kChild, 0));
  const json::array& watching = then["watching"].as_array();
  ASSERT_EQ(watching.size(), 1u);
  EXPECT_EQ(watching[0].at("targetSessionKey").as_string(), kChild);
  EXPECT_EQ(watching[0].at("lastSeen").to_number<uint64_t>(), 0u);
  EXPECT_EQ(watching[0].at("notified").to_number<uint64_t>(), first_);
  EXPECT_TRUE(watching[0].at("pending").as_bool());

  // Now: drained, and a new notice since the drain.
  json::object now = StatusOf(kMain, "");
  EXPECT_EQ(now["asOf"], now["lastSequence"]);
  const json::array& now_notices = now["pendingNotices"].as_array();
  ASSERT_EQ(now_notices.size(), 1u);
  EXPECT_EQ(now_notices[0].at("text").as_string(), NoticeTextFor(kChild, first_));
}

TEST_F(AsOfHttpTest, TheTargetsEventsArePagedUpToAsOf) {
  json::object then = StatusOf(kChild, "?asOf=" + std::to_string(first_ + 2) + "&limit=1");
  EXPECT_EQ(then["stateVersion"].to_number<uint64_t>(), first_ + 2);
  const json::object& page = then["stateChanges"].as_object();
  ASSERT_EQ(page.at("events").as_array().size(), 1u);
  EXPECT_EQ(page.at("events").as_array()[0].at("summary").as_string(), "goal one");
  EXPECT_TRUE(page.at("truncated").as_bool());
  EXPECT_FALSE(page.at("historyGap").as_bool());
  const json::array& watchers = then["watchers"].as_array();
  ASSERT_EQ(watchers.size(), 1u);
  EXPECT_EQ(watchers[0].at("watcherSessionKey").as_string(), kMain);

  json::object rest = StatusOf(
      kChild, "?asOf=" + std::to_string(first_ + 2) + "&changesSince=" + std::to_string(first_));
  ASSERT_EQ(rest["stateChanges"].as_object().at("events").as_array().size(), 1u);
  EXPECT_EQ(rest["stateChanges"].as_object().at("events").as_array()[0].at("summary").as_string(),
            "failed");
}

TEST_F(AsOfHttpTest, SessionStatusToolTakesAsOf) {
  HttpResult r = Tool(*http_, "session_status", kMain,
                      json::object{{"sessionKey", kChild}, {"asOf", first_}, {"changesSince", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  json::object card = r.json().as_object();
  EXPECT_EQ(card["stateVersion"].to_number<uint64_t>(), first_);
  EXPECT_EQ(card["stateChanges"].as_object().at("events").as_array().size(), 1u);
  const json::object& as_of = card["asOf"].as_object();
  EXPECT_EQ(as_of.at("asOf").to_number<uint64_t>(), first_);
  ASSERT_EQ(as_of.at("watchers").as_array().size(), 1u);
  EXPECT_EQ(as_of.at("watchers").as_array()[0].at("watcherSessionKey").as_string(), kMain);

  HttpResult s = Tool(*http_, "session_status", kMain,
                      json::object{{"sessionKey", kChild}, {"asOf", std::to_string(first_)}});
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_FALSE(s.json().as_object().contains("stateChanges"));

  HttpResult with_model =
      Tool(*http_, "session_status", kMain, json::object{{"asOf", first_}, {"model", "gpt"}});
  EXPECT_EQ(with_model.status, 400) << with_model.body;
  HttpResult bad = Tool(*http_, "session_status", kMain, json::object{{"asOf", -1}});
  EXPECT_EQ(bad.status, 400) << bad.body;
}

TEST_F(AsOfHttpTest, RefusalsNameTheValue) {
  json::object beyond = StatusOf(kChild, "?asOf=999", 400);
  EXPECT_NE(json::serialize(beyond).find("sequence 999 is beyond"), std::string::npos)
      << json::serialize(beyond);
  json::object malformed = StatusOf(kChild, "?asOf=abc", 400);
  EXPECT_NE(json::serialize(malformed).find("asOf"), std::string::npos);
  StatusOf(kChild, "?asOf=1&limit=x", 400);
}

TEST_F(AsOfHttpTest, BeforeTheCheckpointIs410NamingTheEarliest) {
  // Deleting a session with rows no checkpoint covers checkpoints first.
  HttpResult d = http_->Request("DELETE", "/v1/sessions/" + kChild, "");
  ASSERT_EQ(d.status, 200) << d.body;
  json::object now = StatusOf(kMain, "");
  uint64_t earliest = now["earliestAsOf"].to_number<uint64_t>();
  ASSERT_GT(earliest, first_);
  json::object gone = StatusOf(kMain, "?asOf=" + std::to_string(first_), 410);
  EXPECT_EQ(gone["error"].as_object().at("code").as_string(), "as_of_unavailable");
  EXPECT_NE(json::serialize(gone).find(", " + std::to_string(earliest) + " "), std::string::npos)
      << json::serialize(gone);
  json::object at = StatusOf(kChild, "?asOf=" + std::to_string(earliest));
  EXPECT_EQ(at["deletedAt"].to_number<uint64_t>(), earliest + 1);
  EXPECT_TRUE(at["stateChanges"].as_object().at("events").as_array().empty());
}

}  // namespace
}  // namespace statewatch::testing
