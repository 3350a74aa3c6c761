// An event's W3C traceparent: stored with the row, returned by every read, checked on the way
// in, and absent (not an error) in rows written before the field existed.
#include <gtest/gtest.h>

#include "engine/engine_fixture.h"
#include "engine/raw_event_row.h"
#include "engine/records.h"
#include "schema/statewatch_generated.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

constexpr char kTrace[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

class TraceparentTest : public EngineTest {};

TEST_F(TraceparentTest, StoredAndReturnedByEveryRead) {
  EventInput in = HumanEvent("agent:main:main");
  in.traceparent = kTrace;
  auto recorded = engine_->Record(in);
  ASSERT_OK(recorded);
  EXPECT_EQ(recorded->event.traceparent, kTrace);

  auto page = engine_->ChangesSince(Name("agent:main:main"), 0);
  ASSERT_OK(page);
  ASSERT_EQ(page->events.size(), 1u);
  EXPECT_EQ(page->events[0].traceparent, kTrace);

  Reopen();  // from the row on disk, not from the engine's cache of recent rows
  page = engine_->ChangesSince(Name("agent:main:main"), 0);
  ASSERT_OK(page);
  ASSERT_EQ(page->events.size(), 1u);
  EXPECT_EQ(page->events[0].traceparent, kTrace);
}

TEST_F(TraceparentTest, ALaterVersionIsStoredAsVersion00) {
  EventInput in = HumanEvent("agent:main:main");
  in.traceparent = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future";
  auto recorded = engine_->Record(in);
  ASSERT_OK(recorded);
  EXPECT_EQ(recorded->event.traceparent, kTrace);
}

TEST_F(TraceparentTest, InvalidIsRefusedNamingTheValueAndChangesNothing) {
  EventInput in = HumanEvent("agent:main:main");
  in.traceparent = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
  auto recorded = engine_->Record(in);
  ASSERT_FALSE(recorded.ok());
  EXPECT_TRUE(recorded.status().IsInvalidArgument());
  EXPECT_NE(recorded.status().message().find("traceparent"), std::string::npos);
  EXPECT_NE(recorded.status().message().find("00-00000000000000000000000000000000"),
            std::string::npos);
  auto page = engine_->ChangesSince(Name("agent:main:main"), 0);
  ASSERT_OK(page);
  EXPECT_EQ(page->state_version, 0u);
}

TEST_F(TraceparentTest, AbsentByDefault) {
  auto recorded = engine_->Record(HumanEvent("agent:main:main"));
  ASSERT_OK(recorded);
  EXPECT_EQ(recorded->event.traceparent, "");
}

// A journal row as the schema wrote it before `traceparent` was appended (the generated
// builder leaves the field out): it still decodes, with no trace context.
TEST(TraceparentRowTest, ARowWithoutTheFieldDecodesAsNone) {
  std::string bytes = RawEventRow(static_cast<int8_t>(schema::ActorType::Human),
                                  "human_direct_message", "hello", 1764460800000);

  auto event = engine::DecodeEvent(bytes);
  ASSERT_OK(event);
  EXPECT_EQ(event->sequence, 7u);
  EXPECT_EQ(event->traceparent, "");

  // And a row with it round-trips through both decoders.
  Event e = *event;
  e.traceparent = kTrace;
  std::string encoded = engine::EncodeEvent(e);
  auto back = engine::DecodeEvent(encoded);
  ASSERT_OK(back);
  EXPECT_EQ(back->traceparent, kTrace);
  alignas(8) char aligned[512];
  ASSERT_LE(encoded.size(), sizeof(aligned));
  std::copy(encoded.begin(), encoded.end(), aligned);
  EventView view;
  ASSERT_OK(engine::DecodeEventView(std::string_view(aligned, encoded.size()), &view));
  EXPECT_EQ(view.traceparent, kTrace);
}

}  // namespace
}  // namespace statewatch::testing
