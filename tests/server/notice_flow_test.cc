// End to end over real HTTP and WebSocket: the notice scenario of docs/semantics.md, "Cursors" as a
// gateway drives it, historyGap across 30 days with the manual clock, two clients receiving
// the same wake, and a daemon restart with pending notices recovered.
#include <gtest/gtest.h>

#include "http_helpers.h"
#include "statewatch/session_key.h"
#include "test_client.h"
#include "test_keys.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

class NoticeFlowTest : public ServerTest {
 protected:
  void SetUp() override {
    StartWithChild(kMain, {{"kind", "main"}, {"channel", "telegram"}}, kChild,
                   {{"label", "worker"}});
  }

  uint64_t Spawn() {
    auto seqs = Record(*http_, Event(kChild, "child_spawned", "agent",
                                     {{"actorId", kMain},
                                      {"runId", "run-1"},
                                      {"summary", "child session spawned"},
                                      {"dedupeKey", "child-spawned:run-1"},
                                      {"watchers", json::array{json::value(kMain)}}}));
    return seqs.empty() ? 0 : seqs[0];
  }

  // Twenty rapid human changes to the child, each its own request.
  std::vector<uint64_t> TwentyHumanChanges() {
    std::vector<uint64_t> seqs;
    for (int i = 0; i < 20; ++i) {
      auto s = Record(*http_, HumanMessage(kChild));
      if (!s.empty()) seqs.push_back(s[0]);
    }
    return seqs;
  }

  std::unique_ptr<WsClient> Wakes(const std::string& query) {
    std::string error;
    auto ws = WsClient::Connect(server_->port(), "/v1/wakes" + query, {}, &error);
    EXPECT_NE(ws, nullptr) << error;
    return ws;
  }
};

void ExpectWake(WsClient& ws, const std::string& watcher, const std::string& target, int64_t at) {
  auto message = ws.Next();
  ASSERT_TRUE(message.has_value()) << "no wake within the bounded wait";
  json::object wake = WakeJson(*message);
  EXPECT_EQ(wake["watcher"], json::value(watcher)) << *message;
  EXPECT_EQ(wake["reason"], json::value("session-state:" + target)) << *message;
  EXPECT_EQ(wake["at"], json::value(at)) << *message;
}

TEST_F(NoticeFlowTest, SpawnTwentyChangesOneNoticeOneWakeDrainFollowUpSelfSuppression) {
  auto ws_parent = Wakes("?watcher=" + kMain);
  auto ws_all = Wakes("");
  ASSERT_TRUE(ws_parent && ws_all);

  // Spawn seeds the parent's cursor: no notice.
  uint64_t seed = Spawn();
  ASSERT_GT(seed, 0u);
  EXPECT_TRUE(Notices(*http_, kMain).empty());

  // Twenty rapid human changes: one notice, byte-identical, changesSince the seed.
  std::vector<uint64_t> changes = TwentyHumanChanges();
  ASSERT_EQ(changes.size(), 20u);
  json::array notices = Notices(*http_, kMain);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].at("text"), json::value(NoticeTextFor(kChild, seed)));
  EXPECT_EQ(notices[0].at("targetSessionKey"), json::value(kChild));
  EXPECT_EQ(notices[0].at("contextKey"), json::value(EncodeContextKey(kChild)));

  // One wake, on both streams (the filtered one and the unfiltered one).
  ExpectWake(*ws_parent, kMain, kChild, kStartMs);
  ExpectWake(*ws_all, kMain, kChild, kStartMs);

  // Reconcile: exactly the twenty changes since the seed.
  HttpResult status = Tool(*http_, "session_status", kMain,
                           json::object{{"sessionKey", kChild}, {"changesSince", seed}});
  ASSERT_EQ(status.status, 200) << status.body;
  json::value card = status.json();
  EXPECT_EQ(card.at("stateVersion"), json::value(changes.back()));
  const json::object& delta = card.at("stateChanges").as_object();
  ASSERT_EQ(delta.at("events").as_array().size(), 20u);
  EXPECT_EQ(delta.at("events").as_array()[0].at("sequence"), json::value(changes.front()));
  EXPECT_EQ(delta.at("events").as_array()[0].at("kind"), json::value("human_direct_message"));
  EXPECT_EQ(delta.at("events").as_array()[0].at("payload"),
            json::value(json::object{{"channel", "telegram"}}));
  EXPECT_EQ(delta.at("historyGap"), json::value(false));
  EXPECT_EQ(delta.at("truncated"), json::value(false));
  // Reading never moves a cursor: the notice is still pending.
  EXPECT_EQ(Notices(*http_, kMain).size(), 1u);

  // Drain: the one notice comes out; the nineteen changes that arrived after it opened leave
  // exactly one follow-up, changesSince the frozen mark (the first change).
  json::array drained = Drain(*http_, kMain);
  ASSERT_EQ(drained.size(), 1u);
  EXPECT_EQ(drained[0].at("text"), json::value(NoticeTextFor(kChild, seed)));
  notices = Notices(*http_, kMain);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].at("text"), json::value(NoticeTextFor(kChild, changes.front())));

  // The follow-up's wake falls in the 20 s window of the first: it fires at the window's
  // end, once the manual clock gets there.
  SetClock(*http_, kStartMs + 20000);
  ExpectWake(*ws_parent, kMain, kChild, kStartMs + 20000);
  ExpectWake(*ws_all, kMain, kChild, kStartMs + 20000);

  // Draining the follow-up opens nothing more: nothing intervened.
  ASSERT_EQ(Drain(*http_, kMain).size(), 1u);
  EXPECT_TRUE(Notices(*http_, kMain).empty());

  // Self-suppression: the parent's own change to the child notifies nobody.
  Record(*http_,
         Event(kChild, "goal_changed", "agent", {{"actorId", kMain}, {"summary", "goal updated"}}));
  EXPECT_TRUE(Notices(*http_, kMain).empty());

  // Another actor's change opens a new notice from the last acknowledged position.
  uint64_t later = Record(*http_, HumanMessage(kChild)).at(0);
  notices = Notices(*http_, kMain);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].at("text"), json::value(NoticeTextFor(kChild, changes.back())));
  EXPECT_GT(later, changes.back());

  // Its wake is again merged into the window; the streams stay ordered, so receiving it
  // next proves no other wake was sent in between (one wake for twenty changes).
  SetClock(*http_, kStartMs + 40000);
  ExpectWake(*ws_parent, kMain, kChild, kStartMs + 40000);
  ExpectWake(*ws_all, kMain, kChild, kStartMs + 40000);
  EXPECT_EQ(ws_parent->Buffered(), 0u);
}

TEST_F(NoticeFlowTest, TwoGatewayClientsReceiveTheSameWake) {
  auto first = Wakes("?watcher=" + kMain);
  auto second = Wakes("?watcher=" + kMain);
  auto other = Wakes("?watcher=agent:main:someone-else");
  ASSERT_TRUE(first && second && other);
  Spawn();
  Record(*http_, HumanMessage(kChild));
  auto a = first->Next();
  auto b = second->Next();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(WakeJson(*a)["reason"], json::value("session-state:" + kChild));

  // The filtered-out client gets only its own watcher's wakes: make one for it and check it
  // is the first thing it receives.
  const std::string someone = "agent:main:someone-else";
  ASSERT_EQ(http_->Post("/v1/watches", json::object{{"watcher", someone}, {"target", kChild}})
                .json()
                .at("watched"),
            json::value(true));
  Record(*http_, HumanMessage(kChild));
  ExpectWake(*other, someone, kChild, kStartMs);
}

TEST_F(NoticeFlowTest, HistoryGapAfterPruningAcrossThirtyDays) {
  const std::string key = "agent:ops:telegram:group:-1001";
  std::vector<uint64_t> old;
  for (int i = 0; i < 3; ++i) old.push_back(Record(*http_, HumanMessage(key)).at(0));

  SetClock(*http_, kStartMs + 31 * kDayMs);
  HttpResult pruned = http_->Post("/v1/prune", std::string());
  ASSERT_EQ(pruned.status, 200) << pruned.body;
  uint64_t fresh = Record(*http_, HumanMessage(key)).at(0);

  auto changes = [&](uint64_t since) {
    HttpResult r =
        Tool(*http_, "session_status", key, json::object{{"changesSince", std::to_string(since)}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  };
  json::value all = changes(0);
  EXPECT_EQ(all.at("stateVersion"), json::value(fresh));
  const json::object& page = all.at("stateChanges").as_object();
  EXPECT_EQ(page.at("historyGap"), json::value(true));
  ASSERT_EQ(page.at("events").as_array().size(), 1u);
  EXPECT_EQ(page.at("events").as_array()[0].at("sequence"), json::value(fresh));
  EXPECT_EQ(page.at("earliestAvailableSequence"), json::value(fresh));
  // The watermark is the last pruned row: reading from it is complete, from before it not.
  EXPECT_EQ(changes(old.back()).at("stateChanges").at("historyGap"), json::value(false));
  EXPECT_EQ(changes(old.front()).at("stateChanges").at("historyGap"), json::value(true));
  // Without changesSince: only the version.
  HttpResult plain = Tool(*http_, "session_status", key, json::object{});
  EXPECT_FALSE(plain.json().as_object().contains("stateChanges"));
  EXPECT_EQ(plain.json().at("stateVersion"), json::value(fresh));
}

TEST_F(NoticeFlowTest, RestartInTheMiddleRecoversPendingNotices) {
  uint64_t seed = Spawn();
  std::vector<uint64_t> changes = TwentyHumanChanges();
  ASSERT_EQ(Notices(*http_, kMain).size(), 1u);

  // Stop the daemon (as SIGTERM does) and start a new one on the same directory.
  RestartServer(kStartMs + 60000);
  auto ws = Wakes("?watcher=" + kMain);

  json::array notices = Notices(*http_, kMain);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].at("text"), json::value(NoticeTextFor(kChild, seed)));

  // Still one pending notice: a further change neither adds a line nor wakes.
  Record(*http_, HumanMessage(kChild));
  EXPECT_EQ(Notices(*http_, kMain).size(), 1u);

  // Drain after the restart: the recovered notice, then one follow-up for the rest. The
  // restart sweep re-opened the pending notice at its material mark (docs/semantics.md,
  // "The transition table": N = M), so the follow-up covers only the change made after the restart.
  ASSERT_EQ(Drain(*http_, kMain).size(), 1u);
  notices = Notices(*http_, kMain);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].at("text"), json::value(NoticeTextFor(kChild, changes.back())));
  // The sweep re-announced the pending notice at start (a wake nobody was connected for), so
  // the follow-up's wake merges into that window and fires at its end. It is the first
  // message on the stream: the extra change above sent none.
  SetClock(*http_, kStartMs + 80000);
  ExpectWake(*ws, kMain, kChild, kStartMs + 80000);

  HttpResult verify = http_->Get("/v1/verify");
  ASSERT_EQ(verify.status, 200);
  EXPECT_EQ(verify.json().at("ok"), json::value(true)) << verify.body;
}

// With the system clock the daemon's own timer fires merged wakes at the window's end (a
// 200 ms window here, so that the bounded wait stays short).
TEST(WakeTimerTest, SystemClockTimerFiresTheMergedWake) {
  server::ServerOptions o = TestOptions();
  o.manual_clock = false;
  o.wake_window_ms = 200;
  TestServer server(o);
  HttpClient http(server.port());
  std::string error;
  auto ws = WsClient::Connect(server.port(), "/v1/wakes?watcher=" + kMain, {}, &error);
  ASSERT_NE(ws, nullptr) << error;
  Record(http, Event(kChild, "child_spawned", "agent",
                     {{"actorId", kMain}, {"watchers", json::array{json::value(kMain)}}}));
  Record(http, HumanMessage(kChild));
  Record(http, HumanMessage(kChild));
  auto first = ws->Next();
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(Drain(http, kMain).size(), 1u);  // reopens for the second change: merged wake
  auto merged = ws->Next();
  ASSERT_TRUE(merged.has_value()) << "the wake timer never fired";
  EXPECT_GE(WakeJson(*merged)["at"].to_number<int64_t>(),
            WakeJson(*first)["at"].to_number<int64_t>() + 200);
}

}  // namespace
}  // namespace statewatch::testing
