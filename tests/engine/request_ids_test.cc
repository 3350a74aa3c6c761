// X-Request-Id records (include/statewatch/request_ids.h): the seal armed on a thread is
// written in the group of that thread's first engine write — one commit group, one atomic
// write with the effect — and nowhere else; answers are kept across a reopen; records older
// than the window are removed on the manual clock; and under injected write failures the
// effect and the record are either both durable or both absent.
#include "statewatch/request_ids.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "engine/engine_fixture.h"
#include "engine/engine_impl.h"
#include "schema/request_ids_generated.h"
#include "status_matchers.h"
#include "storage/store.h"

namespace statewatch::testing {
namespace {

class RequestIdsTest : public EngineTest {
 protected:
  std::optional<RequestRecord> RecordOf(const std::string& id) {
    auto r = RequestIds(*engine_).Get(id);
    EXPECT_OK(r);
    return r.ok() ? *r : std::nullopt;
  }
  uint64_t Groups() { return engine_->Stats()->commit_groups; }
  size_t Events(const std::string& key) {
    auto page = engine_->ChangesSince(Name(key), 0);
    EXPECT_OK(page);
    return page.ok() ? page->events.size() : 0;
  }
};

TEST_F(RequestIdsTest, TheSealIsWrittenInTheGroupOfTheFirstEffect) {
  const uint64_t before = Groups();
  auto seal = std::make_shared<RequestSeal>("req-1", "digest-1");
  {
    ArmRequestSeal armed(seal);
    Human("agent:main:a");
    EXPECT_TRUE(seal->sealed());
    clock_->Advance(5);
    Human("agent:main:a");  // the second write of the same request writes no record
  }
  EXPECT_EQ(Groups(), before + 2) << "the record took no group of its own";
  auto r = RecordOf("req-1");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->digest, "digest-1");
  EXPECT_EQ(r->created_at_ms, kStart) << "written with the first write, not the second";
  EXPECT_FALSE(r->answered);
  EXPECT_EQ(seal->sealed_at_ms(), kStart);
}

TEST_F(RequestIdsTest, OnlyTheArmedThreadsCommandsCarryTheSeal) {
  auto seal = std::make_shared<RequestSeal>("req-2", "d");
  {
    ArmRequestSeal armed(seal);
    std::thread other([&] { Human("agent:main:other"); });
    other.join();
  }
  EXPECT_FALSE(seal->sealed());
  EXPECT_FALSE(RecordOf("req-2").has_value());
  Human("agent:main:after");  // disarmed: nothing either
  EXPECT_FALSE(RecordOf("req-2").has_value());
}

TEST_F(RequestIdsTest, AnInvalidWriteDoesNotSealAndTheNextValidOneDoes) {
  auto seal = std::make_shared<RequestSeal>("req-3", "d");
  ArmRequestSeal armed(seal);
  EventInput bad = Input("agent:main:a", "no_such_kind");
  EXPECT_FALSE(engine_->Record(bad).ok());
  EXPECT_FALSE(seal->sealed());
  ASSERT_OK(engine_->Watch("agent:main:w", Name("agent:main:a")));
  EXPECT_TRUE(seal->sealed());
}

TEST_F(RequestIdsTest, TheAnswerKeepsTheSealsTimeAndSurvivesAReopen) {
  auto seal = std::make_shared<RequestSeal>("req-4", "d4");
  {
    ArmRequestSeal armed(seal);
    ASSERT_OK(engine_->Drain("agent:main:w"));
  }
  clock_->Advance(1000);
  RequestRecord answer;
  answer.digest = "d4";
  answer.status = 200;
  answer.content_type = "application/json";
  answer.body = "{\"notices\":[]}\n";
  ASSERT_OK(RequestIds(*engine_).PutAnswer("req-4", answer));
  Reopen();
  auto r = RecordOf("req-4");
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->answered);
  EXPECT_EQ(r->created_at_ms, kStart);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, answer.body);
  EXPECT_EQ(r->content_type, "application/json");
}

// Issue 37: a seal with a renderer writes the answer in the effect's own group — the record
// is whole at once, survives a reopen with no further write, and a retry gets the answer even
// when the process stopped right after the effect.
TEST_F(RequestIdsTest, ARenderedAnswerIsWrittenInTheEffectsGroup) {
  ASSERT_OK(engine_->Watch("agent:main:w", Name("agent:main:a")));
  Human("agent:main:a");
  const uint64_t before = Groups();
  auto seal = std::make_shared<RequestSeal>("req-6", "d6");
  seal->AnswerWith([](const SealedOutcome& outcome) -> std::optional<RequestAnswer> {
    auto* notices = std::get_if<const std::vector<Notice>*>(&outcome);
    if (notices == nullptr) return std::nullopt;
    std::string body = "drained";
    for (const Notice& n : **notices) body += " " + n.target.session_key;
    return RequestAnswer{200, "text/plain", body};
  });
  {
    ArmRequestSeal armed(seal);
    auto drained = engine_->Drain("agent:main:w");
    ASSERT_OK(drained);
    ASSERT_EQ(drained->size(), 1u);
  }
  EXPECT_EQ(Groups(), before + 1) << "the drain, its record and its answer are one group";
  ASSERT_NE(seal->answer_in_group(), nullptr);
  EXPECT_EQ(seal->answer_in_group()->body, "drained agent:main:a");
  Reopen();  // what a crash right after the effect's group leaves
  auto r = RecordOf("req-6");
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->answered);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->content_type, "text/plain");
  EXPECT_EQ(r->body, "drained agent:main:a");
  EXPECT_EQ(r->created_at_ms, kStart);
}

TEST_F(RequestIdsTest, ARendererThatDoesNotRenderTheOutcomeLeavesTheAnswerToPutAnswer) {
  auto seal = std::make_shared<RequestSeal>("req-7", "d7");
  int calls = 0;
  seal->AnswerWith([&calls](const SealedOutcome& outcome) -> std::optional<RequestAnswer> {
    ++calls;
    EXPECT_TRUE(std::holds_alternative<std::monostate>(outcome)) << "a reset has no result";
    return std::nullopt;
  });
  ASSERT_OK(engine_->Watch("agent:main:w", Name("agent:main:a")));
  {
    ArmRequestSeal armed(seal);
    ASSERT_OK(engine_->ResetWatcher("agent:main:w"));
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seal->answer_in_group(), nullptr);
  auto r = RecordOf("req-7");
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->answered);
}

// Issue 37: an operation of several writes answers in its last. The record is written with
// the first write; the answer, once the renderer has it, in the group of the next write, the
// record's time kept; no group of its own, and nothing more once it is written.
TEST_F(RequestIdsTest, AnAnswerKnownBeforeALaterWriteRidesOnIt) {
  auto seal = std::make_shared<RequestSeal>("req-9", "d9");
  bool known = false;
  int calls = 0;
  seal->AnswerWith([&](const SealedOutcome&) -> std::optional<RequestAnswer> {
    ++calls;
    if (!known) return std::nullopt;
    return RequestAnswer{200, "application/json", "{\"ok\":true}\n"};
  });
  const uint64_t before = Groups();
  {
    ArmRequestSeal armed(seal);
    Human("agent:main:a");
    EXPECT_EQ(seal->answer_in_group(), nullptr);
    clock_->Advance(5);
    known = true;
    Human("agent:main:b");
    ASSERT_NE(seal->answer_in_group(), nullptr);
    Human("agent:main:c");
  }
  EXPECT_EQ(Groups(), before + 3) << "the answer took no group of its own";
  EXPECT_EQ(calls, 2) << "rendered once it was known, then never again";
  Reopen();  // what a crash right after the last write leaves
  auto r = RecordOf("req-9");
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->answered);
  EXPECT_EQ(r->body, "{\"ok\":true}\n");
  EXPECT_EQ(r->digest, "d9");
  EXPECT_EQ(r->created_at_ms, kStart) << "the record's time is the first write's";
}

// A seal whose answers are held (a route dispatched inside another request, as the MCP
// endpoint's tool calls are) still rides on that route's writes, but keeps none of its
// answer: the outer request's answer is not the inner route's.
TEST_F(RequestIdsTest, AHeldSealRidesOnTheWriteButKeepsNoInnerAnswer) {
  auto seal = std::make_shared<RequestSeal>("req-10", "d10");
  seal->HoldAnswers(true);
  seal->AnswerWith([](const SealedOutcome&) -> std::optional<RequestAnswer> {
    return RequestAnswer{200, "application/json", "{\"inner\":true}\n"};
  });
  {
    ArmRequestSeal armed(seal);
    Human("agent:main:a");
  }
  seal->HoldAnswers(false);
  EXPECT_TRUE(seal->sealed());
  EXPECT_EQ(seal->answer_in_group(), nullptr);
  auto r = RecordOf("req-10");
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->answered);
}

TEST_F(RequestIdsTest, EventsResultsAreTheOutcomeOfARecord) {
  auto seal = std::make_shared<RequestSeal>("req-8", "d8");
  seal->AnswerWith([](const SealedOutcome& outcome) -> std::optional<RequestAnswer> {
    auto* results = std::get_if<const std::vector<RecordResult>*>(&outcome);
    if (results == nullptr) return std::nullopt;
    std::string body;
    for (const RecordResult& r : **results) body += std::to_string(r.event.sequence) + ";";
    return RequestAnswer{201, "text/plain", body};
  });
  std::vector<RecordResult> results;
  {
    ArmRequestSeal armed(seal);
    auto recorded = engine_->RecordMany(
        {Input("agent:main:a", "human_direct_message"), Input("agent:main:b", "human_direct_message")});
    ASSERT_OK(recorded);
    results = *recorded;
  }
  ASSERT_EQ(results.size(), 2u);
  auto r = RecordOf("req-8");
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->answered);
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, std::to_string(results[0].event.sequence) + ";" +
                         std::to_string(results[1].event.sequence) + ";")
      << "the sequences the caller got";
}

TEST_F(RequestIdsTest, RecordsOlderThanTheCutoffAreRemoved) {
  RequestIds ids(*engine_);
  RequestRecord r;
  r.digest = "d";
  r.status = 200;
  ASSERT_OK(ids.PutAnswer("old", r));
  clock_->Advance(RequestIds::kDefaultTtlMs);
  ASSERT_OK(ids.PutAnswer("new", r));
  auto removed = ids.RemoveCreatedBefore(clock_->NowMs() - RequestIds::kDefaultTtlMs + 1);
  ASSERT_OK(removed);
  EXPECT_EQ(*removed, 1u);
  EXPECT_FALSE(RecordOf("old").has_value());
  EXPECT_TRUE(RecordOf("new").has_value());
  auto n = ids.Count();
  ASSERT_OK(n);
  EXPECT_EQ(*n, 1u);
}

// The daemon sweeps once a minute; a client sending more ids than one group's worth per
// minute must not leave a backlog that grows (a cap per call did).
TEST_F(RequestIdsTest, EveryExpiredRecordGoesInOneCallInBoundedGroups) {
  RequestIds ids(*engine_);
  RequestRecord r;
  r.digest = "d";
  r.status = 200;
  for (int i = 0; i < 25; ++i) ASSERT_OK(ids.PutAnswer("old-" + std::to_string(i), r));
  clock_->Advance(RequestIds::kDefaultTtlMs);
  ASSERT_OK(ids.PutAnswer("new", r));
  const uint64_t groups_before = Groups();
  auto removed = ids.RemoveCreatedBefore(clock_->NowMs() - RequestIds::kDefaultTtlMs + 1,
                                         /*group_limit=*/10);
  ASSERT_OK(removed);
  EXPECT_EQ(*removed, 25u);
  EXPECT_EQ(Groups() - groups_before, 3u) << "groups of 10, 10 and 5";
  auto n = ids.Count();
  ASSERT_OK(n);
  EXPECT_EQ(*n, 1u);
  EXPECT_TRUE(RecordOf("new").has_value());
}

// Builds before 2026-12-07 kept the records in the meta family; an open moves them (in
// batches of 1,000) to the requests family, where retries find them.
TEST_F(RequestIdsTest, RecordsLeftInTheMetaFamilyAreMovedAtOpen) {
  RequestRecord r;
  r.digest = "d";
  r.status = 200;
  r.answered = true;
  r.created_at_ms = kStart;
  r.body = "{}\n";
  constexpr int kOld = 2500;  // three batches
  engine_.reset();
  {
    auto store = storage::Store::Open(dir_, storage::StoreOptions{});
    ASSERT_OK(store);
    storage::Batch b(**store);
    for (int i = 0; i < kOld; ++i) {
      b.Put(storage::Family::kMeta, "Q" + std::to_string(i), EncodeRequestRecord(r));
    }
    ASSERT_OK((*store)->Write(b, /*sync=*/true));
  }
  Reopen();
  auto n = RequestIds(*engine_).Count();
  ASSERT_OK(n);
  EXPECT_EQ(*n, static_cast<std::size_t>(kOld));
  for (int i : {0, 999, 1000, kOld - 1}) {
    auto found = RecordOf(std::to_string(i));
    ASSERT_TRUE(found.has_value()) << i;
    EXPECT_EQ(found->body, "{}\n");
  }
  engine_.reset();
  {
    auto store = storage::Store::Open(dir_, storage::StoreOptions{});
    ASSERT_OK(store);
    auto it = (*store)->NewIterator(storage::Family::kMeta, "Q", "R");
    it->SeekToFirst();
    EXPECT_FALSE(it->Valid()) << "a record was left in the meta family";
    ASSERT_OK(it->status());
  }
  Reopen();
}

TEST(RequestRecordTest, CodecRoundTripsAndRefusesGarbage) {
  RequestRecord r;
  r.digest = std::string("\0\1\2", 3);
  r.created_at_ms = 1764460800123;
  r.answered = true;
  r.status = 422;
  r.content_type = "application/json";
  r.body = "{\"error\":{}}";
  auto back = DecodeRequestRecord(EncodeRequestRecord(r));
  ASSERT_OK(back);
  EXPECT_EQ(back->digest, r.digest);
  EXPECT_EQ(back->created_at_ms, r.created_at_ms);
  EXPECT_TRUE(back->answered);
  EXPECT_EQ(back->status, 422);
  EXPECT_EQ(back->content_type, r.content_type);
  EXPECT_EQ(back->body, r.body);
  EXPECT_FALSE(DecodeRequestRecord("").ok());
  EXPECT_FALSE(DecodeRequestRecord("\x02xyz").ok());
  std::string cut = EncodeRequestRecord(r);
  EXPECT_FALSE(DecodeRequestRecord(cut.substr(0, 10)).ok());
}

// The stored bytes are a FlatBuffer, and a body that is not UTF-8 (an answer is any bytes)
// comes back as it went.
TEST(RequestRecordTest, TheRecordIsAFlatBufferAndKeepsAnyBodyBytes) {
  RequestRecord r;
  r.digest = std::string(32, '\xff');
  r.created_at_ms = 5;
  r.body = std::string("\0\xc3(\xff", 4);
  const std::string bytes = EncodeRequestRecord(r);
  flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  EXPECT_TRUE(verifier.VerifyBuffer<schema::requests::RequestRecord>(nullptr));
  auto back = DecodeRequestRecord(bytes);
  ASSERT_OK(back);
  EXPECT_EQ(back->digest, r.digest);
  EXPECT_EQ(back->body, r.body);
  EXPECT_FALSE(back->answered);
}

// A record written by the builds before the FlatBuffers record (2026-12-03) is still read: it
// can answer a retry for 15 minutes after an upgrade.
TEST(RequestRecordTest, ARecordOfThePreFlatBuffersFormatIsStillRead) {
  auto be32 = [](uint32_t v) {
    std::string s;
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>(v >> shift));
    return s;
  };
  std::string old(1, '\x01');
  old += be32(3) + std::string("\0\1\2", 3);                    // the digest
  old += std::string("\0\0\x01\x9a\xd2\x0f\x28\x7b", 8);  // created_at 1764460800123
  old += std::string(1, '\x01') + be32(422);                    // answered, status
  old += be32(16) + "application/json" + "{\"error\":{}}";
  auto back = DecodeRequestRecord(old);
  ASSERT_OK(back);
  EXPECT_EQ(back->digest, std::string("\0\1\2", 3));
  EXPECT_EQ(back->created_at_ms, 1764460800123);
  EXPECT_TRUE(back->answered);
  EXPECT_EQ(back->status, 422);
  EXPECT_EQ(back->content_type, "application/json");
  EXPECT_EQ(back->body, "{\"error\":{}}");
  EXPECT_FALSE(DecodeRequestRecord(old.substr(0, 12)).ok());  // cut inside created_at
}

TEST(RequestIdTest, ValidIdsAreOneTo128PrintableAsciiCharacters) {
  EXPECT_TRUE(IsValidRequestId("a"));
  EXPECT_TRUE(IsValidRequestId("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"));
  EXPECT_TRUE(IsValidRequestId(std::string(128, '~')));
  EXPECT_FALSE(IsValidRequestId(""));
  EXPECT_FALSE(IsValidRequestId(std::string(129, 'a')));
  EXPECT_FALSE(IsValidRequestId("tab\there"));
  EXPECT_FALSE(IsValidRequestId("caf\xc3\xa9"));
}

// Under a write failure at every point of the first group, the event and the record are
// durable together or not at all: after the failure, a reopen finds both or neither.
TEST(RequestIdsFaultTest, TheEffectAndTheRecordAreOneWrite) {
  int both = 0, neither = 0;
  for (uint64_t n = 0; n < 12; ++n) {
    const std::string dir = NewTempDir("request-ids-fault");
    EngineOptions options;
    options.clock = std::make_shared<ManualClock>(1764460800000);
    options.durability = Durability::kSync;
    auto faults = storage::NewFaultInjector();
    {
      engine::EngineTestHooks hooks;
      hooks.faults = faults;
      auto e = engine::OpenEngineWithHooks(options, dir, hooks);
      ASSERT_OK(e);
      faults->FailWritesAfter(n);
      auto seal = std::make_shared<RequestSeal>("req", "d");
      ArmRequestSeal armed(seal);
      (void)(*e)->Record(HumanEvent("agent:main:a"));
      faults->Heal();
    }
    {
      auto e = Engine::Open(options, dir);
      ASSERT_OK(e);
      auto page = (*e)->ChangesSince(SessionName{"main", "agent:main:a"}, 0);
      ASSERT_OK(page);
      auto record = RequestIds(**e).Get("req");
      ASSERT_OK(record);
      const bool event = !page->events.empty();
      EXPECT_EQ(event, record->has_value()) << "fail after " << n << " writes";
      (event ? both : neither)++;
    }
    std::filesystem::remove_all(dir);
  }
  EXPECT_GT(neither, 0) << "the failures never hit the write";
  EXPECT_GT(both, 0) << "the write never got through";
}

}  // namespace
}  // namespace statewatch::testing
