// Payload validation keeps an already compact JSON object as given instead of re-serialising
// it; whatever it keeps must be exactly what re-serialising would have produced.
#include "engine/event_validation.h"

#include <gtest/gtest.h>

#include <vector>

#include <boost/json.hpp>

#include "status_matchers.h"

namespace statewatch::engine {
namespace {

std::string Stored(const std::string& payload) {
  EventInput in;
  in.session_key = "agent:main:main";
  in.kind = "human_direct_message";
  in.summary = "s";
  in.payload_json = payload;
  auto pe = PrepareEvent(in, KindTable(DefaultKinds()), 1764460800000, 512);
  EXPECT_OK(pe) << payload;
  return pe.ok() ? pe->event.payload_json : "<refused>";
}

TEST(EventValidationTest, PayloadsAreStoredAsReSerialisingWouldStoreThem) {
  const char* cases[] = {
      R"({"channel":"telegram"})",
      R"({"turns":3,"outcome":"error","nested":{"a":[1,2,{"b":null}],"t":true,"f":false}})",
      R"({ "channel" : "telegram" })",
      "{\n\"a\":1}",
      R"({"x":1.5,"y":2e3,"z":-0,"w":-12})",
      R"({"big":123456789012345678901234567890})",
      R"({"esc":"a\"b\\c","uni":"\u00e9","slash":"a\/b","nl":"a\nb"})",
      R"({"dup":1,"dup":2})",
      R"({"s":"caf\u00e9 ☕","k":[]})",
      R"({})",
  };
  for (const char* text : cases) {
    EXPECT_EQ(Stored(text), boost::json::serialize(boost::json::parse(text))) << text;
  }
}

TEST(EventValidationTest, NonObjectsAreDroppedAndBadJsonIsRefused) {
  EXPECT_EQ(Stored("[1,2]"), "");
  EXPECT_EQ(Stored("\"text\""), "");
  EventInput in;
  in.session_key = "agent:main:main";
  in.kind = "human_direct_message";
  in.summary = "s";
  in.payload_json = "{\"a\":";
  auto pe = PrepareEvent(in, KindTable(DefaultKinds()), 1764460800000, 512);
  ASSERT_FALSE(pe.ok());
  EXPECT_NE(pe.status().message().find("payload is not valid JSON"), std::string::npos);
}

// A batch resolves each event's session through one memo: the same key and agent reuse the
// previous answer, anything else is checked and resolved as without it.
TEST(EventValidationTest, TheSessionMemoAnswersAsAFreshResolutionWould) {
  const KindTable kinds(DefaultKinds());
  auto event = [](const std::string& key, const std::string& agent) {
    EventInput in;
    in.session_key = key;
    in.agent_id = agent;
    in.kind = "human_direct_message";
    in.summary = "s";
    return in;
  };
  const std::vector<EventInput> batch = {
      event("agent:Main:one", ""),
      event("agent:Main:one", ""),
      event("agent:main:ONE", ""),
      event("bare-key", "ops"),
      event("bare-key", "ops"),
      event("bare-key", "dev"),
      event("agent:main:one", "other"),  // the agent does not match the key's: refused
      event("bad key\xff", ""),
      event("agent:main:one", "main"),
  };
  SessionMemo memo;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto fresh = PrepareEvent(batch[i], kinds, 1764460800000, 512);
    auto memoized = PrepareEvent(batch[i], kinds, 1764460800000, 512, &memo);
    ASSERT_EQ(fresh.ok(), memoized.ok()) << i;
    if (!fresh.ok()) {
      EXPECT_EQ(fresh.status().ToString(), memoized.status().ToString()) << i;
      continue;
    }
    EXPECT_EQ(fresh->session.agent_id, memoized->session.agent_id) << i;
    EXPECT_EQ(fresh->session.session_key, memoized->session.session_key) << i;
    EXPECT_EQ(fresh->event.session_key, memoized->event.session_key) << i;
  }
}

}  // namespace
}  // namespace statewatch::engine
