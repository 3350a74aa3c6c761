// The value codec (engine/records.cc): persisted enums are checked, not guessed, and damaged
// records are Corruption, never a crash.
#include "engine/records.h"

#include <gtest/gtest.h>

#include <cstring>

#include "engine/raw_event_row.h"
#include "schema/statewatch_generated.h"
#include "status_matchers.h"

namespace statewatch::engine {
namespace {

namespace fb = statewatch::schema;

std::string EventWithActorType(int8_t actor_type) {
  return testing::RawEventRow(actor_type, "created");
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
    ASSERT_OK(back);
    EXPECT_EQ(back->actor_type, t);
  }
}

// Regression: an unknown stored actor type was decoded as kSystem without a word.
TEST(RecordsTest, AnUnknownStoredActorTypeIsCorruption) {
  auto e = DecodeEvent(EventWithActorType(7));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Status::Code::kCorruption);
  EXPECT_EQ(e.status().message(), "event 7 has an unknown actor type 7");
  EXPECT_OK(DecodeEvent(EventWithActorType(1)));
}

// Regression (found by fuzz/input_fuzz.cc): a log record whose union tag names a body that
// is absent passes the FlatBuffers verifier, and the decoder dereferenced the null body.
TEST(RecordsTest, AGroupOpWithATagButNoBodyIsCorruption) {
  for (fb::LogBody tag :
       {fb::LogBody::EventRecord, fb::LogBody::RegisterRecord, fb::LogBody::AckRecord,
        fb::LogBody::ResetRecord, fb::LogBody::DeleteRecord, fb::LogBody::PruneRecord,
        fb::LogBody::SweepRecord, fb::LogBody::UnregisterRecord}) {
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<fb::LogRecord>> ops = {
        fb::CreateLogRecord(b, /*sequence=*/42, /*committed_at=*/0, tag, /*body=*/0)};
    auto ops_vector = b.CreateVector(ops);
    b.Finish(fb::CreateGroupRecord(b, /*events=*/0, /*committed_at=*/1, ops_vector));
    std::string bytes = testing::BuilderBytes(b);
    GroupRec decoded;
    Status s = DecodeGroup(bytes, &decoded);
    ASSERT_FALSE(s.ok()) << "tag " << static_cast<int>(tag);
    EXPECT_EQ(s.code(), Status::Code::kCorruption);
    EXPECT_NE(s.message().find("log record 42 names body type"), std::string::npos)
        << s.message();
  }
}

TEST(RecordsTest, AGroupWithAPruneOpRoundTrips) {
  GroupRec g;
  g.committed_at = 11;
  g.events = {SessionRef{4}};
  projections::LogOp prune;
  prune.type = projections::LogOp::Type::kPrune;
  prune.sequence = 9;
  prune.cursor_cutoff = 5;
  prune.raises = {projections::WatermarkRaise{SessionRef{3}, 7}};
  g.ops = {prune};
  GroupEncoder encoder;
  GroupRec back;
  ASSERT_OK(DecodeGroup(encoder.Encode(g), &back));
  ASSERT_EQ(back.ops.size(), 1u);
  EXPECT_EQ(back.ops[0].type, projections::LogOp::Type::kPrune);
  EXPECT_EQ(back.ops[0].cursor_cutoff, 5);
  ASSERT_EQ(back.ops[0].raises.size(), 1u);
  EXPECT_EQ(back.ops[0].raises[0].sequence, 7u);
  ASSERT_EQ(back.events.size(), 1u);
  EXPECT_EQ(back.events[0].value, 4u);
}

TEST(RecordsTest, AGroupWithAnUnregisterOpRoundTrips) {
  GroupRec g;
  g.committed_at = 12;
  projections::LogOp unregister;
  unregister.type = projections::LogOp::Type::kUnregister;
  unregister.sequence = 3;
  unregister.session = SessionRef{5};
  unregister.target = SessionRef{6};
  g.ops = {unregister};
  GroupEncoder encoder;
  GroupRec back;
  ASSERT_OK(DecodeGroup(encoder.Encode(g), &back));
  ASSERT_EQ(back.ops.size(), 1u);
  EXPECT_EQ(back.ops[0].type, projections::LogOp::Type::kUnregister);
  EXPECT_EQ(back.ops[0].sequence, 3u);
  EXPECT_EQ(back.ops[0].session.value, 5u);
  EXPECT_EQ(back.ops[0].target.value, 6u);
}

// Regression (found by fuzz/input_fuzz.cc under UBSan): an empty value at an address that
// is not 8-byte aligned was copied with memcpy into a null buffer.
TEST(RecordsTest, AnEmptyValueAtAnyAddressIsCorruption) {
  const std::string buffer = "0123456789";
  for (std::size_t offset = 0; offset < 8; ++offset) {
    std::string_view empty(buffer.data() + offset, 0);
    EXPECT_EQ(DecodeEvent(empty).status().code(), Status::Code::kCorruption);
    GroupRec group;
    EXPECT_EQ(DecodeGroup(empty, &group).code(), Status::Code::kCorruption);
    EXPECT_EQ(DecodeMeta(empty).status().code(), Status::Code::kCorruption);
  }
}

// Regression (found by fuzz/input_fuzz.cc under UBSan): the FlatBuffers verifier checks only
// that a vector's length prefix is 4-byte aligned, so a hostile record can put the 8-byte
// session refs of a [ulong] vector at an address that is 4 mod 8; reading them with
// Vector::Get was a misaligned load. A hand-built GroupRecord with exactly that layout:
TEST(RecordsTest, RefsAtAnAddressFourModEightInsideTheRecordAreReadNotMisloaded) {
  const uint8_t bytes[] = {
      12, 0, 0, 0,              //  0: root table at 12
      6, 0, 8, 0, 4, 0, 0, 0,   //  4: vtable: 6 bytes, 8-byte table, field 0 (events) at +4
      8, 0, 0, 0,               // 12: table: its vtable is 8 bytes back
      8, 0, 0, 0,               // 16: events: the vector is 8 bytes on, at 24
      0, 0, 0, 0,               // 20: padding
      2, 0, 0, 0,               // 24: two elements, from 28 (28 % 8 == 4)
      3, 0, 0, 0, 0, 0, 0, 0,   // 28: ref 3
      5, 1, 0, 0, 0, 0, 0, 0,   // 36: ref 261
  };
  // An 8-byte aligned copy, so the misalignment is the record's own, not the buffer's.
  alignas(8) uint8_t aligned[sizeof bytes];
  std::memcpy(aligned, bytes, sizeof bytes);
  GroupRec group;
  Status s = DecodeGroup(std::string_view(reinterpret_cast<const char*>(aligned), sizeof bytes),
                         &group);
  ASSERT_OK(s);
  ASSERT_EQ(group.events.size(), 2u);
  EXPECT_EQ(group.events[0].value, 3u);
  EXPECT_EQ(group.events[1].value, 261u);
}

TEST(RecordsTest, TruncatedRecordsAreCorruptionNotCrashes) {
  Event e;
  e.sequence = 3;
  e.session_key = "agent:main:main";
  e.kind = "human_direct_message";
  std::string bytes = EncodeEvent(e);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    Result<Event> decoded = DecodeEvent(std::string_view(bytes.data(), n));
    if (!decoded.ok()) {
      EXPECT_EQ(decoded.status().code(), Status::Code::kCorruption);
    }
  }
}

}  // namespace
}  // namespace statewatch::engine
