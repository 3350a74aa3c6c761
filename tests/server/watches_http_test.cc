// POST /v1/watches with an array: many registrations in one atomic step, as an array of
// events is one batch. Every pair is watched afterwards, or, when one item is refused (a
// wrong shape, or a registration the single form answers watched: false), the request is
// refused naming the item and nothing is registered. POST /v1/watches/remove takes the same
// body and removes the pairs' cursors, with their pending notices, in one step, or nothing.
#include <gtest/gtest.h>

#include <string>

#include "http_helpers.h"
#include "test_client.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

const std::string kWatcher = "agent:main:coordinator";
const std::string kOther = "agent:main:reviewer";
const std::string kA = "agent:main:subagent:a";
const std::string kB = "agent:main:subagent:b";

json::object Watch(const std::string& watcher, const std::string& target) {
  return json::object{{"watcher", watcher}, {"target", target}};
}

class WatchesHttpTest : public ServerTest {
 protected:
  void SetUp() override { StartServer(); }

  // Whether `watcher` holds a cursor on `target` (GET /v1/cursors: 200, or 404 for none).
  bool HasCursor(const std::string& watcher, const std::string& target) {
    HttpResult r = http_->Get("/v1/cursors?watcher=" + watcher + "&target=" + target);
    EXPECT_TRUE(r.status == 200 || r.status == 404) << r.body;
    return r.status == 200;
  }

  void ExpectRefused(const json::value& body, const std::string& message) {
    HttpResult r = http_->Post("/v1/watches", body);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.error_code(), "invalid_argument") << r.body;
    EXPECT_EQ(r.error_message().rfind(message, 0), 0u) << r.error_message();
  }
};

TEST_F(WatchesHttpTest, AnArrayRegistersEveryWatchAndEachWatcherGetsItsNotice) {
  ASSERT_EQ(http_->Post("/v1/watches", Watch(kWatcher, kA)).status, 200);
  HttpResult r = http_->Post(
      "/v1/watches", json::array{Watch(kWatcher, kA), Watch(kWatcher, kB), Watch(kOther, kA),
                                 Watch(kWatcher, kB)});
  ASSERT_EQ(r.status, 200) << r.body;
  // Three distinct pairs are watched; two of them are new cursors.
  EXPECT_EQ(r.body, R"({"watched":true,"watches":3,"created":2})" "\n");
  EXPECT_TRUE(HasCursor(kWatcher, kB));
  EXPECT_TRUE(HasCursor(kOther, kA));

  Record(*http_, HumanMessage(kA));
  Record(*http_, HumanMessage(kB));
  EXPECT_EQ(Notices(*http_, kWatcher).size(), 2u);
  EXPECT_EQ(Notices(*http_, kOther).size(), 1u);

  HttpResult empty = http_->Post("/v1/watches", json::array{});
  ASSERT_EQ(empty.status, 200) << empty.body;
  EXPECT_EQ(empty.body, R"({"watched":true,"watches":0,"created":0})" "\n");
}

TEST_F(WatchesHttpTest, OneRefusedItemRefusesTheArrayAndRegistersNothing) {
  const json::object ok = Watch(kWatcher, kA);
  ExpectRefused(json::array{ok, Watch(kWatcher, kWatcher)},
                "watches[1]: watcher \"" + kWatcher + "\" is its own target");
  ExpectRefused(json::array{ok, Watch("global", kA)},
                "watches[1]: watcher \"global\" is not agent-scoped");
  ExpectRefused(json::array{ok, Watch(kWatcher, "agent::x")},
                "watches[1]: target \"agent::x\" is malformed");
  ExpectRefused(json::array{ok, json::object{{"watcher", 5}, {"target", kA}}},
                "watches[1]: watcher must be a non-empty string");
  ExpectRefused(json::array{ok, json::object{{"target", kA}}}, "watches[1]: watcher is required");
  ExpectRefused(json::array{ok, 7}, "watches[1]: a watch must be a JSON object (got 7)");
  ExpectRefused(json::array{ok, json::object{{"watcher", kWatcher}, {"target", kB},
                                             {"targetAgent", "main"}}},
                "watches[1]: unknown field targetAgent (known: watcher, target, targetAgentId)");
  ExpectRefused(json::value("x"),
                "the request body must be a watch (a JSON object) or an array of watches");
  EXPECT_FALSE(HasCursor(kWatcher, kA));
  EXPECT_FALSE(HasCursor(kWatcher, kB));

  // The single form still answers a refused registration with watched: false.
  HttpResult single = http_->Post("/v1/watches", Watch(kWatcher, kWatcher));
  ASSERT_EQ(single.status, 200) << single.body;
  EXPECT_EQ(single.body, R"({"watched":false})" "\n");
}

// A removal deletes each named cursor and its pending notice; a pair without one is counted
// and left alone; other cursors keep notifying; a later watch starts again at the head.
TEST_F(WatchesHttpTest, ARemovalDeletesTheNamedCursorsAndTheirNotices) {
  ASSERT_EQ(http_->Post("/v1/watches", json::array{Watch(kWatcher, kA), Watch(kWatcher, kB),
                                                   Watch(kOther, kA)})
                .status,
            200);
  Record(*http_, HumanMessage(kA));
  Record(*http_, HumanMessage(kB));
  ASSERT_EQ(Notices(*http_, kWatcher).size(), 2u);

  HttpResult one = http_->Post("/v1/watches/remove", Watch(kWatcher, kA));
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.body, R"({"watches":1,"removed":1})" "\n");
  EXPECT_FALSE(HasCursor(kWatcher, kA));
  EXPECT_EQ(Notices(*http_, kWatcher).size(), 1u) << "the pending notice went with its cursor";

  HttpResult many = http_->Post(
      "/v1/watches/remove",
      json::array{Watch(kWatcher, kA), Watch(kWatcher, kB), Watch(kWatcher, kB)});
  ASSERT_EQ(many.status, 200) << many.body;
  EXPECT_EQ(many.body, R"({"watches":2,"removed":1})" "\n");
  EXPECT_TRUE(Notices(*http_, kWatcher).empty());
  EXPECT_TRUE(HasCursor(kOther, kA));

  Record(*http_, HumanMessage(kA));
  EXPECT_TRUE(Notices(*http_, kWatcher).empty()) << "an unwatched target notifies no one";
  EXPECT_EQ(Notices(*http_, kOther).size(), 1u);

  HttpResult empty = http_->Post("/v1/watches/remove", json::array{});
  ASSERT_EQ(empty.status, 200) << empty.body;
  EXPECT_EQ(empty.body, R"({"watches":0,"removed":0})" "\n");
  ASSERT_EQ(http_->Post("/v1/watches", Watch(kWatcher, kA)).status, 200);
  EXPECT_TRUE(HasCursor(kWatcher, kA));
}

// Strict input: an item a registration would refuse, in either form, is 400 and removes
// nothing, named by its index in an array.
TEST_F(WatchesHttpTest, OneRefusedItemRefusesTheRemovalAndRemovesNothing) {
  ASSERT_EQ(http_->Post("/v1/watches", Watch(kWatcher, kA)).status, 200);
  auto refused = [&](const json::value& body, const std::string& message) {
    HttpResult r = http_->Post("/v1/watches/remove", body);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.error_code(), "invalid_argument") << r.body;
    EXPECT_EQ(r.error_message().rfind(message, 0), 0u) << r.error_message();
  };
  const json::object ok = Watch(kWatcher, kA);
  refused(json::array{ok, Watch(kWatcher, kWatcher)},
          "watches[1]: watcher \"" + kWatcher + "\" is its own target");
  refused(json::array{ok, Watch("global", kA)}, "watches[1]: watcher \"global\" is not agent-");
  refused(json::array{ok, json::object{{"target", kA}}}, "watches[1]: watcher is required");
  refused(json::array{ok, 7}, "watches[1]: a watch must be a JSON object (got 7)");
  refused(Watch(kWatcher, "agent::x"), "target \"agent::x\" is malformed");
  refused(json::object{{"watcher", kWatcher}, {"target", kA}, {"agent", "main"}},
          "unknown field agent (known: watcher, target, targetAgentId)");
  refused(json::value("x"),
          "the request body must be a watch (a JSON object) or an array of watches");
  EXPECT_TRUE(HasCursor(kWatcher, kA));
}

}  // namespace
}  // namespace statewatch::testing
