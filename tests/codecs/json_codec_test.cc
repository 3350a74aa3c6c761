// codecs/json_codec: every field out and in, type errors naming field and value, and the
// changesSince parsing table of docs/semantics.md, "Catching up: `changesSince`".
#include "codecs/json_codec.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "status_matchers.h"

namespace statewatch::tools {
namespace {
namespace json = boost::json;

Event FullEvent() {
  Event e;
  e.sequence = 14;
  e.session_key = "agent:main:subagent:abc";
  e.agent_id = "main";
  e.session_id = "sess-1";
  e.kind = "run_failed";
  e.actor_type = ActorType::kAgent;
  e.actor_id = "agent:main:main";
  e.run_id = "run-7";
  e.occurred_at_ms = 1764460800000;
  e.summary = "child run failed";
  e.payload_json = R"({"outcome":"timeout","channel":"slack","turns":3,"secret":"x"})";
  e.dedupe_key = "run-terminal:run-7";
  return e;
}

Event MinimalEvent() {
  Event e;
  e.sequence = 3;
  e.session_key = "global";
  e.agent_id = "ops";
  e.kind = "created";
  e.actor_type = ActorType::kSystem;
  e.occurred_at_ms = 5;
  e.summary = "created";
  return e;
}

TEST(EventToJsonTest, WritesEveryField) {
  json::object o = EventToJson(FullEvent());
  EXPECT_EQ(o.at("sequence").to_number<uint64_t>(), 14u);
  EXPECT_EQ(o.at("sessionKey"), "agent:main:subagent:abc");
  EXPECT_EQ(o.at("agentId"), "main");
  EXPECT_EQ(o.at("sessionId"), "sess-1");
  EXPECT_EQ(o.at("kind"), "run_failed");
  EXPECT_EQ(o.at("actorType"), "agent");
  EXPECT_EQ(o.at("actorId"), "agent:main:main");
  EXPECT_EQ(o.at("runId"), "run-7");
  EXPECT_EQ(o.at("occurredAt").to_number<int64_t>(), 1764460800000);
  EXPECT_EQ(o.at("summary"), "child run failed");
  EXPECT_EQ(o.at("payload"), json::parse(FullEvent().payload_json));
  EXPECT_EQ(o.at("dedupeKey"), "run-terminal:run-7");
  EXPECT_EQ(o.size(), 12u);
}

TEST(EventToJsonTest, OmitsEmptyOptionalFields) {
  json::object o = EventToJson(MinimalEvent());
  for (const char* absent : {"sessionId", "actorId", "runId", "payload", "dedupeKey"}) {
    EXPECT_FALSE(o.contains(absent)) << absent;
  }
  EXPECT_EQ(o.at("actorType"), "system");
  EXPECT_EQ(o.size(), 7u);
}

TEST(EventToJsonTest, OmitsAPayloadThatIsNotAnObject) {
  for (const char* bad : {"[1,2]", "\"text\"", "not json", "{"}) {
    Event e = MinimalEvent();
    e.payload_json = bad;
    EXPECT_FALSE(EventToJson(e).contains("payload")) << bad;
  }
}

TEST(ChangeEventToJsonTest, IsTheReconciliationView) {
  json::object o = ChangeEventToJson(FullEvent());
  EXPECT_EQ(o.at("sequence").to_number<uint64_t>(), 14u);
  EXPECT_EQ(o.at("kind"), "run_failed");
  EXPECT_EQ(o.at("actorType"), "agent");
  EXPECT_EQ(o.at("occurredAt").to_number<int64_t>(), 1764460800000);
  EXPECT_EQ(o.at("summary"), "child run failed");
  EXPECT_EQ(o.at("actorId"), "agent:main:main");
  EXPECT_EQ(o.at("runId"), "run-7");
  EXPECT_EQ(o.at("payload"), json::parse(R"({"outcome":"timeout","channel":"slack","turns":3})"));
  for (const char* absent : {"sessionKey", "agentId", "sessionId", "dedupeKey"}) {
    EXPECT_FALSE(o.contains(absent)) << absent;
  }
}

TEST(ChangeEventToJsonTest, OmitsPayloadWithoutKeptKeys) {
  Event e = MinimalEvent();
  e.payload_json = R"({"message":"hello"})";
  json::object o = ChangeEventToJson(e);
  EXPECT_FALSE(o.contains("payload"));
  EXPECT_FALSE(o.contains("actorId"));
  EXPECT_FALSE(o.contains("runId"));
  EXPECT_EQ(o.size(), 5u);
}

TEST(ChangesPageToJsonTest, WritesEventsAndFlags) {
  ChangesPage page;
  page.state_version = 19;
  page.events = {MinimalEvent(), FullEvent()};
  page.truncated = true;
  page.earliest_available_sequence = 3;
  page.history_gap = true;
  json::object o = ChangesPageToJson(page);
  ASSERT_EQ(o.at("events").as_array().size(), 2u);
  EXPECT_EQ(o.at("events").as_array()[1], ChangeEventToJson(FullEvent()));
  EXPECT_EQ(o.at("truncated"), true);
  EXPECT_EQ(o.at("earliestAvailableSequence").to_number<uint64_t>(), 3u);
  EXPECT_EQ(o.at("historyGap"), true);
  EXPECT_EQ(o.size(), 4u);
}

TEST(RecordResultToJsonTest, MarksDeduplicatedOnlyWhenTrue) {
  RecordResult r{FullEvent(), /*deduplicated=*/false};
  EXPECT_EQ(RecordResultToJson(r), EventToJson(FullEvent()));
  r.deduplicated = true;
  json::object o = RecordResultToJson(r);
  EXPECT_EQ(o.at("deduplicated"), true);
  EXPECT_EQ(o.size(), EventToJson(FullEvent()).size() + 1);
}

TEST(SmallValuesToJsonTest, NoticeCursorStatsPruneVerify) {
  Notice n{"agent:main:main", {"main", "agent:main:subagent:x"}, 4, "session-state:6162", "t"};
  EXPECT_EQ(json::value(NoticeToJson(n)),
            json::parse(R"({"targetSessionKey":"agent:main:subagent:x",
                            "contextKey":"session-state:6162","text":"t"})"));
  CursorState c{1, 2, 3, 4};
  EXPECT_EQ(json::value(CursorToJson(c)),
            json::parse(R"({"lastSeen":1,"notified":2,"material":3,"updatedAt":4})"));
  EngineStats s;
  s.journal_rows = 10;
  s.sessions = 2;
  s.cursors = 3;
  s.pending_notices = 1;
  s.last_sequence = 42;
  s.bytes_on_disk = 4096;
  s.log_records_since_checkpoint = 7;
  s.events_recorded = 4;
  s.wal_bytes = 1000;
  EXPECT_EQ(json::value(StatsToJson(s)),
            json::parse(R"({"rows":10,"sessions":2,"journalSessions":2,"cursors":3,"pendingNotices":1,
                            "lastSequence":42,"bytesOnDisk":4096,"eventsRecorded":4,
                            "walBytes":1000,"walBytesPerEvent":250.0})"));
  // "sessions" is the registry's count when given; "journalSessions" the heads.
  EXPECT_EQ(json::value(StatsToJson(s, 5)).at("sessions"), 5);
  EXPECT_EQ(json::value(StatsToJson(s, 5)).at("journalSessions"), 2);
  s.write_error = "no space left on device";
  EXPECT_EQ(json::value(StatsToJson(s)).at("writeError"), "no space left on device");
  PruneStats p{5, 2, 1};
  EXPECT_EQ(json::value(PruneStatsToJson(p)),
            json::parse(R"({"rowsDeleted":5,"sessionsTouched":2,"cursorsExpired":1})"));
  VerifyReport v{false, 9, 2, 1, {"head x: live 3, rebuilt 4"}, 40};
  EXPECT_EQ(json::value(VerifyReportToJson(v)),
            json::parse(R"({"ok":false,"recordsReplayed":9,"headsChecked":2,"cursorsChecked":1,
                            "rowsChecked":40,"differences":["head x: live 3, rebuilt 4"]})"));
}

// ---- EventInputFromJson ------------------------------------------------------------------

Result<EventInput> Input(const char* text) { return EventInputFromJson(json::parse(text)); }

TEST(EventInputFromJsonTest, ReadsEveryField) {
  auto in = Input(R"({"sessionKey":"agent:main:subagent:x","agentId":"main","sessionId":"s1",
      "kind":"child_spawned","actorType":"agent","actorId":"agent:main:main","runId":"r1",
      "occurredAt":1764460800000,"summary":"child session spawned",
      "payload":{"channel":"slack"},"dedupeKey":"child-spawned:r1",
      "watchers":["agent:main:main","agent:ops:main"]})");
  ASSERT_OK(in);
  EXPECT_EQ(in->session_key, "agent:main:subagent:x");
  EXPECT_EQ(in->agent_id, "main");
  EXPECT_EQ(in->session_id, "s1");
  EXPECT_EQ(in->kind, "child_spawned");
  EXPECT_EQ(in->actor_type, ActorType::kAgent);
  EXPECT_EQ(in->actor_id, "agent:main:main");
  EXPECT_EQ(in->run_id, "r1");
  EXPECT_EQ(in->occurred_at_ms, 1764460800000);
  EXPECT_EQ(in->summary, "child session spawned");
  EXPECT_EQ(json::parse(in->payload_json), json::parse(R"({"channel":"slack"})"));
  EXPECT_EQ(in->dedupe_key, "child-spawned:r1");
  EXPECT_EQ(in->watchers, (std::vector<std::string>{"agent:main:main", "agent:ops:main"}));
}

TEST(EventInputFromJsonTest, NullAndAbsentFieldsAreNotGiven) {
  auto in = Input(R"({"sessionKey":"global","kind":"created","actorType":"human",
      "agentId":null,"occurredAt":null,"payload":null,"watchers":null})");
  ASSERT_OK(in);
  EXPECT_EQ(in->actor_type, ActorType::kHuman);
  EXPECT_EQ(in->agent_id, "");
  EXPECT_FALSE(in->occurred_at_ms.has_value());
  EXPECT_EQ(in->payload_json, "");
  EXPECT_TRUE(in->watchers.empty());
}

// A misspelt field must not answer 200 and register no watch.
TEST(EventInputFromJsonTest, RefusesAnUnknownFieldNamingTheKnownOnes) {
  auto in = Input(R"({"sessionKey":"global","actorType":"human","wacthers":["agent:a:main"]})");
  ASSERT_FALSE(in.ok());
  EXPECT_TRUE(in.status().IsInvalidArgument());
  EXPECT_EQ(in.status().message(),
            "unknown field wacthers (known: sessionKey, agentId, sessionId, kind, actorType, "
            "actorId, runId, occurredAt, summary, payload, dedupeKey, traceparent, watchers)");
}

TEST(EventInputFromJsonTest, DropsAPayloadThatIsNotAnObject) {
  for (const char* payload : {"[1]", "\"{}\"", "3", "true"}) {
    std::string text = std::string(R"({"actorType":"system","payload":)") + payload + "}";
    auto in = Input(text.c_str());
    ASSERT_OK(in) << payload;
    EXPECT_EQ(in->payload_json, "") << payload;
  }
}

TEST(EventInputFromJsonTest, AcceptsAnIntegralDoubleForOccurredAt) {
  auto in = Input(R"({"actorType":"system","occurredAt":1.5e3})");
  ASSERT_OK(in);
  EXPECT_EQ(in->occurred_at_ms, 1500);
}

struct TypeErrorCase {
  const char* json;
  const char* message;
};

TEST(EventInputFromJsonTest, TypeErrorsNameFieldAndValue) {
  const TypeErrorCase cases[] = {
      {R"({"actorType":"human","occurredAt":"abc"})",
       R"(occurredAt must be an integer (got "abc"))"},
      {R"({"actorType":"human","occurredAt":1.5})", "occurredAt must be an integer (got 1.5E0)"},
      {R"({"actorType":"human","sessionKey":5})", "sessionKey must be a string (got 5)"},
      {R"({"actorType":"human","kind":["a"]})", R"(kind must be a string (got ["a"]))"},
      {R"({"actorType":"robot"})",
       R"(actorType must be one of human, agent, system (got "robot"))"},
      {R"({"actorType":1})", "actorType must be one of human, agent, system (got 1)"},
      {R"({"kind":"created"})", "actorType is required (one of human, agent, system)"},
      {R"({"actorType":"human","watchers":"agent:main:main"})",
       R"(watchers must be an array of strings (got "agent:main:main"))"},
      {R"({"actorType":"human","watchers":["a",1]})",
       R"(watchers must be an array of strings (got ["a",1]))"},
      {R"([1])", "an event must be a JSON object (got [1])"},
  };
  for (const auto& c : cases) {
    auto in = Input(c.json);
    ASSERT_FALSE(in.ok()) << c.json;
    EXPECT_TRUE(in.status().IsInvalidArgument()) << c.json;
    EXPECT_EQ(in.status().message(), c.message) << c.json;
  }
}

TEST(DescribeJsonTest, CutsLongValuesOnACharacterBoundary) {
  std::string long_text(100, 'x');
  std::string d = DescribeJson(json::value(long_text));
  EXPECT_EQ(d.size(), 64u);
  EXPECT_EQ(d.substr(61), "...");
  std::string utf8;
  for (int i = 0; i < 40; ++i) utf8 += "\xC3\xA9";  // é
  d = DescribeJson(json::value(utf8));
  EXPECT_LE(d.size(), 64u);
  EXPECT_EQ(d.substr(d.size() - 3), "...");
  std::string body = d.substr(1, d.size() - 4);  // after the opening quote
  EXPECT_EQ(body.size() % 2, 0u) << "a UTF-8 sequence was split";
}

// ---- ParseChangesSince (docs/semantics.md, "Catching up: `changesSince`") ------------------

struct SinceCase {
  const char* json;                  // the value, as JSON text
  std::optional<uint64_t> expected;  // when accepted
  bool ok;
};

TEST(ParseChangesSinceTest, Table) {
  const SinceCase cases[] = {
      {"0", 0, true},
      {"12", 12, true},
      {"12.0", 12, true},
      {R"("12")", 12, true},
      {R"(" 12 ")", 12, true},
      {R"("007")", 7, true},
      {"9007199254740991", 9007199254740991ull, true},
      {R"("9007199254740991")", 9007199254740991ull, true},
      {R"("")", std::nullopt, true},
      {R"("   ")", std::nullopt, true},
      {"null", std::nullopt, true},
      {"-1", std::nullopt, false},
      {"1.5", std::nullopt, false},
      {"-0.5", std::nullopt, false},
      {"9007199254740992", std::nullopt, false},
      {"18446744073709551615", std::nullopt, false},
      {"1e300", std::nullopt, false},
      {R"("-1")", std::nullopt, false},
      {R"("1.5")", std::nullopt, false},
      {R"("abc")", std::nullopt, false},
      {R"("12abc")", std::nullopt, false},
      {R"("+12")", std::nullopt, false},
      {R"("9007199254740992")", std::nullopt, false},
      {"true", std::nullopt, false},
      {"false", std::nullopt, false},
      {"[]", std::nullopt, false},
      {"{}", std::nullopt, false},
  };
  for (const auto& c : cases) {
    json::value v = json::parse(c.json);
    auto r = ParseChangesSince(&v);
    ASSERT_EQ(r.ok(), c.ok) << c.json;
    if (c.ok) {
      EXPECT_EQ(*r, c.expected) << c.json;
    } else {
      EXPECT_TRUE(r.status().IsInvalidArgument()) << c.json;
      EXPECT_EQ(r.status().message(), "changesSince must be a non-negative integer") << c.json;
    }
  }
}

TEST(ParseChangesSinceTest, AbsentIsNotGiven) {
  auto r = ParseChangesSince(nullptr);
  ASSERT_OK(r);
  EXPECT_FALSE(r->has_value());
}

TEST(ParseChangesSinceTest, DetailNamesTheValue) {
  EXPECT_EQ(ChangesSinceErrorDetail(json::value("-1")),
            R"(changesSince must be a non-negative integer (got "-1"))");
}

}  // namespace
}  // namespace statewatch::tools
