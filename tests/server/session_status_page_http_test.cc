// The daemon answers session_status with a changesSince page as text written from rows
// rendered once and cached (tools::SessionStatusJson). Over real HTTP, for random pages of
// random events — first read, cached read, and after pruning and deletion — the body must be
// byte for byte what the DOM path writes: JsonResponse(200, SessionStatus(...)).
#include <gtest/gtest.h>

#include <random>

#include "http_helpers.h"
#include "status_matchers.h"
#include "test_client.h"
#include "test_keys.h"
#include "test_server.h"
#include "tools/session_tools.h"

namespace statewatch::testing {
namespace {

std::string RandomSummary(std::mt19937_64& rng) {
  static const char* kPieces[] = {"human message via telegram", "\"quoted\"", "back\\slash",
                                  "tab\there", "caf\xc3\xa9", "\xe2\x9c\x93 done", "<tag>", "0"};
  std::string s;
  for (int n = static_cast<int>(rng() % 4); n > 0; --n) s += kPieces[rng() % std::size(kPieces)];
  return s;
}

json::object RandomEvent(std::mt19937_64& rng) {
  static const char* kKinds[] = {"human_direct_message", "goal_changed", "run_failed",
                                 "run_completed", "compacted"};
  static const char* kActors[] = {"human", "agent", "system"};
  json::object extra;
  extra["summary"] = RandomSummary(rng);
  if (rng() % 2) extra["runId"] = "run-" + std::to_string(rng() % 1000);
  if (rng() % 2) extra["actorId"] = kMain;
  switch (rng() % 3) {
    case 0:
      extra["payload"] = json::object{{"channel", "telegram"}, {"turns", rng() % 100}};
      break;
    case 1:
      extra["payload"] = json::object{{"outcome", "error"}, {"secret", "never shown"}};
      break;
    default:
      break;
  }
  return Event(kChild, kKinds[rng() % std::size(kKinds)], kActors[rng() % 3], std::move(extra));
}

class SessionStatusPageHttpTest : public ServerTest {
 protected:
  void SetUp() override {
    StartWithChild(kMain, {{"kind", "main"}}, kChild);
  }

  // What the DOM path would have answered, with JsonResponse's closing newline.
  std::string Dom(const json::object& params) {
    Engine& engine = server_->daemon().engine();
    auto r = tools::SessionStatus(engine, server_->options().tools, SessionName{"main", kMain},
                                  params);
    EXPECT_OK(r);
    return r.ok() ? json::serialize(*r) + "\n" : "";
  }

  // Reads random pages, each twice over HTTP (the second one comes from the row cache),
  // and compares them with the DOM answer.
  void CompareRandomPages(std::mt19937_64& rng, int rounds) {
    auto head = server_->daemon().engine().StateVersion(SessionName{"main", kChild});
    ASSERT_OK(head);
    for (int round = 0; round < rounds; ++round) {
      json::object params{{"sessionKey", kChild}, {"changesSince", rng() % (*head + 3)}};
      HttpResult first = Tool(*http_, "session_status", kMain, params);
      ASSERT_EQ(first.status, 200) << first.body;
      ASSERT_EQ(first.body, Dom(params)) << json::serialize(params);
      HttpResult again = Tool(*http_, "session_status", kMain, params);
      ASSERT_EQ(again.body, first.body) << json::serialize(params) << " (cached)";
    }
  }
};

TEST_F(SessionStatusPageHttpTest, LeanBodyIsByteIdenticalToTheDomBody) {
  std::mt19937_64 rng(20251130);
  for (int batch = 0; batch < 3; ++batch) {
    json::array events;
    for (int i = 0; i < 90; ++i) events.push_back(RandomEvent(rng));
    Record(*http_, events);
    CompareRandomPages(rng, 25);
  }
}

TEST_F(SessionStatusPageHttpTest, CachedPagesNeverOutliveDeletion) {
  std::mt19937_64 rng(11);
  json::array events;
  for (int i = 0; i < 40; ++i) events.push_back(RandomEvent(rng));
  Record(*http_, events);
  CompareRandomPages(rng, 10);  // fills the row cache
  HttpResult del = http_->Request("DELETE", "/v1/sessions/" + kChild);
  ASSERT_EQ(del.status, 200) << del.body;
  // The session again, with three new events: a page from 0 holds those three only.
  PutSession(*http_, kChild, {{"parentSessionKey", kMain}});
  json::array fresh;
  for (int i = 0; i < 3; ++i) fresh.push_back(RandomEvent(rng));
  Record(*http_, fresh);
  json::object params{{"sessionKey", kChild}, {"changesSince", 0}};
  HttpResult after = Tool(*http_, "session_status", kMain, params);
  ASSERT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.body, Dom(params));
  EXPECT_EQ(after.json().at("stateChanges").at("events").as_array().size(), 3u) << after.body;
}

}  // namespace
}  // namespace statewatch::testing
