// Payload validation keeps an already compact JSON object as given instead of re-serialising
// it; whatever it keeps must be exactly what re-serialising would have produced.
#include "engine/event_validation.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace statewatch::engine
