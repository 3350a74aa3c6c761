// The value codec (engine/records.cc): persisted enums are checked, not guessed.
#include "engine/records.h"

#include <gtest/gtest.h>

#include "schema/statewatch_generated.h"

namespace statewatch::engine {
namespace {

namespace fb = statewatch::schema;

std::string EventWithActorType(int8_t actor_type) {
  flatbuffers::FlatBufferBuilder b;
  auto key = b.CreateString("agent:main:main");
  auto agent = b.CreateString("main");
  auto kind = b.CreateString("created");
  fb::EventBuilder eb(b);
  eb.add_sequence(7);
  eb.add_session_key(key);
  eb.add_agent_id(agent);
  eb.add_kind(kind);
  eb.add_actor_type(static_cast<fb::ActorType>(actor_type));
  b.Finish(eb.Finish());
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

TEST(RecordsTest, ActorTypesKeepTheirPersistedValues) {
  EXPECT_EQ(static_cast<int>(ActorType::kHuman), 0);
  EXPECT_EQ(static_cast<int>(ActorType::kAgent), 1);
  EXPECT_EQ(static_cast<int>(ActorType::kSystem), 2);
  for (ActorType t : {ActorType::kHuman, ActorType::kAgent, ActorType::kSystem}) {
    Event e;
    e.sequence = 3;
    e.session_key = "agent:main:main";
    e.agent_id = "main";
    e.kind = "created";
    e.actor_type = t;
    auto back = DecodeEvent(EncodeEvent(e));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->actor_type, t);
  }
}

// Regression: an unknown stored actor type was decoded as kSystem without a word.
TEST(RecordsTest, AnUnknownStoredActorTypeIsCorruption) {
  auto e = DecodeEvent(EventWithActorType(7));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Status::Code::kCorruption);
  EXPECT_EQ(e.status().message(), "event 7 has an unknown actor type 7");
  EXPECT_TRUE(DecodeEvent(EventWithActorType(1)).ok());
}

}  // namespace
}  // namespace statewatch::engine
