// X-Request-Id deduplication (server/request_ledger.h) through Api::Handle over a real
// engine on a manual clock: a repeat gets the first answer and applies nothing; another
// request under the same id is 422; a malformed id is 400; a refused request may be sent
// again, and one that applied nothing keeps no record; the window is 15 minutes; the record
// survives a reopen; a request applied whose answer was lost is 409; a duplicate while the first
// runs is 409 request_in_progress.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <array>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_fixture.h"
#include "server/api.h"
#include "server/handlers.h"
#include "server/request_ledger.h"
#include "statewatch/request_ids.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "test_server.h"
#include "tools/session_messaging.h"
#include "webhooks/dispatcher.h"
#include "webhooks/sender.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;

const std::string kEvent =
    R"({"sessionKey":"agent:main:a","kind":"human_direct_message","actorType":"human","summary":"hi"})";

// An Api over `engine` with the session tools (every session visible, two ping-pong turns)
// and two registered sessions, a and b.
struct MessagingApi {
  explicit MessagingApi(Engine* engine) {
    tools::MessagingOptions mo;
    mo.sessions.visibility = tools::Visibility::kAll;
    mo.max_ping_pong_turns = 2;
    auto opened = tools::SessionMessaging::Open(engine, std::move(mo));
    EXPECT_OK(opened);
    if (!opened.ok()) return;
    messaging = std::move(*opened);
    server::ApiServices services;
    services.engine = engine;
    services.metrics = &metrics;
    services.messaging = messaging.get();
    server::ServerOptions options = TestOptions();
    options.manual_clock = false;
    api = std::make_unique<server::Api>(services, options);
    for (const SessionName& n : {a, b}) {
      const std::string target = "/v1/sessions/" + n.session_key;
      server::ApiRequest r;
      r.method = "PUT";
      r.target = target;
      r.body = "{}";
      EXPECT_EQ(api->Handle(r).status, 200);
    }
  }
  // `tool` called by a with `params`, under X-Request-Id `id`.
  server::ApiResponse Tool(const std::string& tool, const std::string& params,
                           const std::string& id) {
    const std::string target = "/v1/tools/" + tool;
    server::ApiRequest r;
    r.method = "POST";
    r.target = target;
    r.body = params;
    r.session_key = a.session_key;
    r.header = [id](std::string_view name) -> std::string_view {
      return name == "X-Request-Id" ? std::string_view(id) : std::string_view();
    };
    return api->Handle(r);
  }

  const SessionName a{"main", "agent:main:a"}, b{"main", "agent:main:b"};
  server::Metrics metrics;
  std::unique_ptr<tools::SessionMessaging> messaging;
  std::unique_ptr<server::Api> api;
};

class RequestIdTest : public TempDirTest {
 protected:
  RequestIdTest() : TempDirTest("statewatch-request-id") {}
  void SetUp() override {
    TempDirTest::SetUp();
    clock_ = std::make_shared<ManualClock>(kStartMs);
    Open();
  }
  void TearDown() override {
    api_.reset();
    engine_.reset();
    TempDirTest::TearDown();
  }
  void Open() {
    api_.reset();
    engine_.reset();
    EngineOptions eo;
    eo.clock = clock_;
    eo.durability = Durability::kBuffered;
    auto e = Engine::Open(eo, root_ + "/data");
    ASSERT_OK(e);
    engine_ = std::move(*e);
    api_ = std::make_unique<EngineApi>(engine_.get());
  }
  server::ApiResponse Send(const std::string& method, const std::string& target,
                           const std::string& body, const std::string& id) {
    return SendTo(*api_->api, method, target, body, id);
  }
  static server::ApiResponse SendTo(server::Api& api, const std::string& method,
                                    const std::string& target, const std::string& body,
                                    const std::string& id) {
    server::ApiRequest r;
    r.method = method;
    r.target = target;
    r.body = body;
    r.header = [id](std::string_view name) -> std::string_view {
      return name == "X-Request-Id" ? std::string_view(id) : std::string_view();
    };
    return api.Handle(r);
  }
  size_t Events(const std::string& key) {
    auto page = engine_->ChangesSince(SessionName{"main", key}, 0);
    EXPECT_OK(page);
    return page.ok() ? page->events.size() : 0;
  }
  uint64_t Groups() { return engine_->Stats()->commit_groups; }
  // The answer the record of `id` keeps, or "(none)".
  std::string Answered(const std::string& id) {
    auto r = RequestIds(*engine_).Get(id);
    EXPECT_OK(r);
    return r.ok() && r->has_value() && (*r)->answered ? (*r)->body : std::string("(none)");
  }
  static bool Replayed(const server::ApiResponse& a) {
    for (const auto& [name, value] : a.headers) {
      if (name == "X-Statewatch-Replayed" && value == "true") return true;
    }
    return false;
  }
  static std::string Code(const server::ApiResponse& a) {
    auto v = json::parse(a.body);
    return std::string(v.at("error").at("code").as_string());
  }

  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<EngineApi> api_;
};

TEST_F(RequestIdTest, ARepeatGetsTheFirstAnswerAndAppliesNothing) {
  auto first = Send("POST", "/v1/events", kEvent, "r-1");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_FALSE(Replayed(first));
  clock_->Advance(1000);
  auto again = Send("POST", "/v1/events", kEvent, "r-1");
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body, first.body);
  EXPECT_TRUE(Replayed(again));
  EXPECT_EQ(Events("agent:main:a"), 1u);
  // Without the header, or with another id, the same body is a new request.
  ASSERT_EQ(Send("POST", "/v1/events", kEvent, "r-2").status, 200);
  EXPECT_EQ(Events("agent:main:a"), 2u);
}

TEST_F(RequestIdTest, AnotherRequestUnderTheSameIdIsRefused) {
  ASSERT_EQ(Send("POST", "/v1/events", kEvent, "r-1").status, 200);
  std::string other = kEvent;
  other.replace(other.find("\"hi\""), 4, "\"ho\"");
  auto reused = Send("POST", "/v1/events", other, "r-1");
  EXPECT_EQ(reused.status, 422);
  EXPECT_EQ(Code(reused), "request_id_reused");
  auto elsewhere = Send("POST", "/v1/notices/drain", R"({"watcher":"agent:main:w"})", "r-1");
  EXPECT_EQ(elsewhere.status, 422);
  EXPECT_EQ(Events("agent:main:a"), 1u);
}

TEST_F(RequestIdTest, AMalformedIdIsRefusedNamingTheHeader) {
  auto long_id = Send("POST", "/v1/events", kEvent, std::string(129, 'x'));
  EXPECT_EQ(long_id.status, 400);
  EXPECT_NE(long_id.body.find("X-Request-Id"), std::string::npos) << long_id.body;
  auto control = Send("POST", "/v1/events", kEvent, "a\nb");
  EXPECT_EQ(control.status, 400);
  EXPECT_EQ(Events("agent:main:a"), 0u);
  // A read ignores the header.
  EXPECT_EQ(Send("GET", "/v1/stats", "", std::string(200, 'x')).status, 200);
}

TEST_F(RequestIdTest, ARefusedRequestMayBeSentAgainUnderItsId) {
  std::string bad = kEvent;
  bad.replace(bad.find("human_direct_message"), 20, "no_such_kind");
  EXPECT_EQ(Send("POST", "/v1/events", bad, "r-1").status, 400);
  auto fixed = Send("POST", "/v1/events", kEvent, "r-1");
  EXPECT_EQ(fixed.status, 200) << fixed.body;
  EXPECT_EQ(Events("agent:main:a"), 1u);
}

TEST_F(RequestIdTest, ARequestThatAppliedNothingKeepsNoRecord) {
  // A read through POST: answered afresh each time, and no write for it.
  const std::string versions = R"({"sessions":["agent:main:a"]})";
  auto before = Send("POST", "/v1/versions", versions, "v-1");
  ASSERT_EQ(before.status, 200) << before.body;
  ASSERT_EQ(Send("POST", "/v1/events", kEvent, "e-1").status, 200);
  auto after = Send("POST", "/v1/versions", versions, "v-1");
  EXPECT_EQ(after.status, 200);
  EXPECT_FALSE(Replayed(after));
  EXPECT_NE(after.body, before.body) << "the version moved with the event";
  auto n = RequestIds(*engine_).Count();
  ASSERT_OK(n);
  EXPECT_EQ(*n, 1u) << "only the event's request";
}

TEST_F(RequestIdTest, TheRecordLastsFifteenMinutesAndIsThenSwept) {
  ASSERT_EQ(Send("POST", "/v1/events", kEvent, "r-1").status, 200);
  clock_->Advance(RequestIds::kDefaultTtlMs - 1);
  EXPECT_TRUE(Replayed(Send("POST", "/v1/events", kEvent, "r-1")));
  EXPECT_EQ(Events("agent:main:a"), 1u);
  clock_->Advance(1);
  auto later = Send("POST", "/v1/events", kEvent, "r-1");
  EXPECT_EQ(later.status, 200);
  EXPECT_FALSE(Replayed(later));
  EXPECT_EQ(Events("agent:main:a"), 2u);
  // The new request's record replaced the expired one; once it expires too, a sweep removes
  // it.
  clock_->Advance(RequestIds::kDefaultTtlMs + 1);
  server::RequestLedger ledger(*engine_);
  auto swept = ledger.Sweep();
  ASSERT_OK(swept);
  EXPECT_EQ(*swept, 1u);
  auto left = RequestIds(*engine_).Count();
  ASSERT_OK(left);
  EXPECT_EQ(*left, 0u);
}

TEST_F(RequestIdTest, AnAnswerSurvivesAReopen) {
  ASSERT_EQ(
      Send("POST", "/v1/watches", R"({"watcher":"agent:main:w","target":"agent:main:a"})", "w-1")
          .status,
      200);
  ASSERT_EQ(Send("POST", "/v1/events", kEvent, "e-1").status, 200);
  auto drained = Send("POST", "/v1/notices/drain", R"({"watcher":"agent:main:w"})", "d-1");
  ASSERT_EQ(drained.status, 200);
  ASSERT_NE(drained.body.find("agent:main:a"), std::string::npos) << drained.body;
  Open();
  auto again = Send("POST", "/v1/notices/drain", R"({"watcher":"agent:main:w"})", "d-1");
  EXPECT_TRUE(Replayed(again));
  EXPECT_EQ(again.body, drained.body) << "the notices the first drain took";
  auto fresh = Send("POST", "/v1/notices/drain", R"({"watcher":"agent:main:w"})", "d-2");
  EXPECT_EQ(fresh.body.find("agent:main:a"), std::string::npos) << fresh.body;
}

// Issue 37: the answers of events, drains, watches, appends, resets and deletions are written
// in their effect's own group — one group per request, with an id or without, and the record
// answers at once.
TEST_F(RequestIdTest, AnswersOfOneWriteAreWrittenWithIt) {
  ASSERT_EQ(
      Send("POST", "/v1/watches", R"({"watcher":"agent:main:w","target":"agent:main:a"})", "w-1")
          .status,
      200);
  uint64_t before = Groups();
  auto event = Send("POST", "/v1/events", kEvent, "e-1");
  ASSERT_EQ(event.status, 200) << event.body;
  EXPECT_EQ(Groups(), before + 1) << "the answer took no group of its own";
  EXPECT_EQ(Answered("e-1"), event.body);
  const std::string batch = "[" + kEvent + "," + kEvent + "]";
  before = Groups();
  auto events = Send("POST", "/v1/events", batch, "e-2");
  ASSERT_EQ(events.status, 200) << events.body;
  EXPECT_EQ(Groups(), before + 1);
  EXPECT_EQ(Answered("e-2"), events.body);
  before = Groups();
  auto drained = Send("POST", "/v1/notices/drain", R"({"watcher":"agent:main:w"})", "d-1");
  ASSERT_EQ(drained.status, 200);
  ASSERT_NE(drained.body.find("agent:main:a"), std::string::npos) << drained.body;
  EXPECT_EQ(Groups(), before + 1) << "the cursors' moves and the notices, one group";
  EXPECT_EQ(Answered("d-1"), drained.body);
  // A watch, an array of watches, a removal of watches, a transcript append, a reset and a
  // deletion: one group each, answered at once.
  const std::vector<std::array<std::string, 4>> one_group = {
      {"POST", "/v1/watches", R"({"watcher":"agent:main:w","target":"agent:main:b"})", "w-2"},
      {"POST", "/v1/watches",
       R"([{"watcher":"agent:main:w","target":"agent:main:c"},)"
       R"({"watcher":"agent:main:v","target":"agent:main:c"}])",
       "w-3"},
      {"POST", "/v1/watches/remove",
       R"([{"watcher":"agent:main:v","target":"agent:main:c"},)"
       R"({"watcher":"agent:main:v","target":"agent:main:d"}])",
       "u-1"},
      {"POST", "/v1/sessions/agent:main:b/messages", R"([{"role":"user","content":"hi"}])",
       "m-1"},
      {"POST", "/v1/sessions/agent:main:w/reset", "", "x-1"},
      {"DELETE", "/v1/sessions/agent:main:b", "", "x-2"},
  };
  for (const auto& [method, target, body, id] : one_group) {
    before = Groups();
    auto answer = Send(method, target, body, id);
    ASSERT_EQ(answer.status, 200) << target << ": " << answer.body;
    EXPECT_EQ(Groups(), before + 1) << method << " " << target;
    EXPECT_EQ(Answered(id), answer.body) << method << " " << target;
  }
}

// Issue 37: an upsert answers with the row as its write stored it (merged with what was
// there, dated, its marker chosen), rendered in that write's own group: one group per upsert,
// the record answers at once, and a retry gets that answer — for sessions, webhooks and
// upstream links.
TEST_F(RequestIdTest, AnUpsertIsAnsweredInItsWritesGroup) {
  const std::string up = root_ + "/upstream";
  std::filesystem::create_directories(up);
  const std::string source = std::filesystem::canonical(up).string() + "/t.jsonl";
  std::ofstream(source) << R"({"type":"user","message":{"role":"user","content":"old"}})"
                        << "\n";
  webhooks::WebhookOptions hook_options;
  hook_options.enabled = false;  // registrations only: nothing is delivered
  webhooks::Dispatcher hooks(engine_.get(), clock_.get(), hook_options,
                             webhooks::NewHttpSender(webhooks::UrlPolicy{}));
  server::Metrics metrics;
  server::ApiServices services;
  services.engine = engine_.get();
  services.metrics = &metrics;
  services.webhooks = &hooks;
  server::ServerOptions options = TestOptions();
  options.manual_clock = false;
  options.upstream.roots = {up};
  server::Api api(services, options);

  ASSERT_EQ(SendTo(api, "PUT", "/v1/sessions/agent:main:c", R"({"label":"first"})", "").status,
            200);
  const std::string link = R"({"sessionKey":"agent:main:c","catalogId":"claude-code",)"
                           R"("hostId":"laptop","threadId":"t-1","upstreamKind":"jsonl",)"
                           R"("upstreamRef":{"path":")" + source + R"("}})";
  const std::vector<std::array<std::string, 5>> upserts = {
      // method, target, body, id, what the answer shows that the request did not say
      {"PUT", "/v1/sessions/agent:main:c", R"({"channel":"slack"})", "u-1", R"("first")"},
      {"POST", "/v1/webhooks",
       R"({"watcher":"agent:main:w","url":"https://gw.example/hook","secret":"s3cret"})", "h-1",
       "\"createdAt\":" + std::to_string(kStartMs)},
      {"POST", "/v1/upstream-links", link, "l-1", "\"marker\":"},
  };
  for (const auto& [method, target, body, id, shown] : upserts) {
    uint64_t before = Groups();
    auto answer = SendTo(api, method, target, body, id);
    ASSERT_EQ(answer.status, 200) << target << ": " << answer.body;
    EXPECT_NE(answer.body.find(shown), std::string::npos) << target << ": " << answer.body;
    EXPECT_EQ(Groups(), before + 1) << target << ": the answer took no group of its own";
    EXPECT_EQ(Answered(id), answer.body) << target;
    auto again = SendTo(api, method, target, body, id);
    EXPECT_TRUE(Replayed(again)) << target;
    EXPECT_EQ(again.body, answer.body) << target;
  }
}

// An acknowledgement of a delivery is one group with its answer; one of an id that is not
// there changed nothing, so the answer of success is not what the group keeps: the 404 is
// written after it, and a retry gets the 404.
TEST_F(RequestIdTest, ADeliveryAckIsAnsweredInItsGroupAndAnUnknownOneGetsItsOwn404) {
  const Delivery d = MessageDelivery("main", "agent:main:a");
  auto id = SessionTables(*engine_).EnqueueDelivery(d);
  ASSERT_OK(id);
  const std::string target = "/v1/deliveries/" + std::to_string(*id) + "/ack";
  uint64_t before = Groups();
  auto acked = Send("POST", target, "", "a-1");
  ASSERT_EQ(acked.status, 200) << acked.body;
  EXPECT_EQ(Groups(), before + 1) << "the answer took no group of its own";
  EXPECT_EQ(Answered("a-1"), acked.body);
  auto unknown = Send("POST", target, "", "a-2");  // acknowledged already
  ASSERT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_EQ(Answered("a-2"), unknown.body);
  auto again = Send("POST", target, "", "a-2");
  EXPECT_EQ(again.status, 404);
  EXPECT_TRUE(Replayed(again));
  EXPECT_EQ(Send("POST", target, "", "a-1").body, acked.body);

  // What a crash right after the group would leave: with the effect, the answer of
  // success; with nothing changed, no answer (a retry is told the answer was lost, never
  // that an unknown id was acknowledged).
  for (bool known : {true, false}) {
    uint64_t ack_id = 424242;
    if (known) {
      auto fresh = SessionTables(*engine_).EnqueueDelivery(d);
      ASSERT_OK(fresh);
      ack_id = *fresh;
    }
    auto seal = std::make_shared<RequestSeal>(known ? "s-1" : "s-2", "digest");
    ArmRequestSeal armed(seal);
    server::AnswerInGroupOnSuccess(server::JsonResponse(200, json::object{{"acked", true}}));
    auto found = SessionTables(*engine_).AckDelivery(ack_id);
    ASSERT_OK(found);
    EXPECT_EQ(*found, known);
    EXPECT_TRUE(seal->sealed());
    EXPECT_EQ(seal->answer_in_group() != nullptr, known);
  }
}

// Issue 37: a run's reply and its end are each one group — the run, the turn a reply
// forwards (its transcript message and delivery), a spawn's announcement — and their answer,
// the update with the ids its deliveries got, is written in that group: no group of its own,
// and a retry gets it. A spawn's end journals the child's event first, without the record: a
// retry after a crash between the two journals nothing again (the event is deduplicated, no
// group) and is answered.
TEST_F(RequestIdTest, ARunsReplyAndEndAreAnsweredInTheirGroup) {
  MessagingApi m(engine_.get());
  ASSERT_TRUE(m.messaging);
  server::Api& api = *m.api;
  const SessionName a = m.a, b = m.b;
  auto sent = m.messaging->CallTool("sessions_send", a,
                                     json::object{{"sessionKey", b.session_key},
                                                  {"message", "status?"},
                                                  {"timeoutSeconds", 30}});
  ASSERT_OK(sent);
  ASSERT_TRUE(sent->pending);
  const std::string run = sent->run_id;
  auto spawned = m.messaging->CallTool("sessions_spawn", a, json::object{{"task", "t"}});
  ASSERT_OK(spawned);
  const std::string spawn_run(spawned->result.at("runId").as_string());
  const std::string child(spawned->result.at("childSessionKey").as_string());
  // What a crash after the child's event and before the finish's group leaves.
  EventInput ended;
  ended.session_key = child;
  ended.agent_id = "main";
  ended.kind = "run_completed";
  ended.actor_type = ActorType::kAgent;
  ended.run_id = spawn_run;
  ended.summary = "child run completed";
  ended.dedupe_key = "run-terminal:" + spawn_run;
  ASSERT_OK(engine_->Record(ended));

  const std::vector<std::array<std::string, 3>> steps = {
      // target, body, id
      {"/v1/runs/" + run + "/reply", R"({"text":"all green"})", "r-1"},  // forwards a turn
      {"/v1/runs/" + run + "/finish", R"({"status":"error"})", "r-2"},
      {"/v1/runs/" + spawn_run + "/finish", R"({"status":"ok","result":"done"})", "r-3"},
  };
  for (const auto& [target, body, id] : steps) {
    uint64_t before = Groups();
    auto answer = SendTo(api, "POST", target, body, id);
    ASSERT_EQ(answer.status, 200) << target << ": " << answer.body;
    json::object o = json::parse(answer.body).as_object();
    EXPECT_EQ(o.at("applied"), json::value(true)) << target;
    EXPECT_EQ(Groups(), before + 1) << target << ": the step or its answer took more groups";
    EXPECT_EQ(Answered(id), answer.body) << target;
    if (id != "r-2") {  // the reply's turn to a, the spawn's announcement: each an id here
      ASSERT_EQ(o.at("deliveries").as_array().size(), 1u) << answer.body;
      EXPECT_NE(o.at("deliveries").as_array()[0], json::value(0)) << answer.body;
    }
    auto again = SendTo(api, "POST", target, body, id);
    EXPECT_TRUE(Replayed(again)) << target;
    EXPECT_EQ(again.body, answer.body) << target;
  }
  auto journal = engine_->ChangesSince(SessionName{"main", child}, 0);
  ASSERT_OK(journal);
  size_t completed = 0;
  for (const Event& e : journal->events) completed += e.kind == "run_completed";
  EXPECT_EQ(completed, 1u);
}

// Issue 37: a tool that knows its answer before its last write has the answer ride on it.
// A sessions_send that does not wait: the run, the message's transcript entry and its
// delivery are one group with the record and the answer; with watch: true the watch and the
// run's watched flag follow, the answer on the last. A sessions_spawn: the child, its run,
// its event, then the task (its transcript entry and delivery, one group) with the answer.
// A steer: one group, its answer made inside it. A yield: its mark, answer in it. No group
// of its own for the answer, and a retry gets it.
TEST_F(RequestIdTest, AToolThatKnowsItsAnswerBeforeItsLastWriteIsAnsweredInIt) {
  MessagingApi m(engine_.get());
  ASSERT_TRUE(m.messaging);
  const std::vector<std::array<std::string, 4>> calls = {
      // tool, params, id, groups written
      {"sessions_send", R"({"sessionKey":"agent:main:b","message":"fyi","timeoutSeconds":0})",
       "s-1", "1"},
      {"sessions_send",
       R"({"sessionKey":"agent:main:b","message":"fyi","timeoutSeconds":0,"watch":true})", "s-2",
       "3"},
      {"sessions_spawn", R"({"task":"t"})", "s-3", "4"},
  };
  for (const auto& [tool, params, id, groups] : calls) {
    uint64_t before = Groups();
    auto answer = m.Tool(tool, params, id);
    ASSERT_EQ(answer.status, 200) << answer.body;
    EXPECT_EQ(json::parse(answer.body).at("status"), json::value("accepted")) << answer.body;
    EXPECT_EQ(Groups(), before + std::stoull(groups)) << params;
    EXPECT_EQ(Answered(id), answer.body) << params;
    auto again = m.Tool(tool, params, id);
    EXPECT_TRUE(Replayed(again)) << params;
    EXPECT_EQ(again.body, answer.body) << params;
  }
  // A steer of the spawned child: the run's steer time, the message's transcript entry and
  // its delivery are one group, and the answer names the delivery's id, assigned in it.
  auto children = m.messaging->CallTool("subagents", m.a, json::object{{"action", "list"}});
  ASSERT_OK(children);
  const json::array& active = children->result.at("active").as_array();
  ASSERT_EQ(active.size(), 1u) << json::serialize(children->result);
  const std::string steer = R"({"action":"steer","target":")" +
                            std::string(active[0].at("sessionKey").as_string()) +
                            R"(","message":"focus"})";
  uint64_t before = Groups();
  auto steered = m.Tool("subagents", steer, "s-4");
  ASSERT_EQ(steered.status, 200) << steered.body;
  EXPECT_NE(json::parse(steered.body).at("deliveryId"), json::value(0)) << steered.body;
  EXPECT_EQ(Groups(), before + 1);
  EXPECT_EQ(Answered("s-4"), steered.body);
  auto again = m.Tool("subagents", steer, "s-4");
  EXPECT_TRUE(Replayed(again));
  EXPECT_EQ(again.body, steered.body);
  // A yield while the child runs: its record (the yield mark) is its one write, answer in it.
  before = Groups();
  auto yielded = m.Tool("sessions_yield", "{}", "s-5");
  ASSERT_EQ(yielded.status, 200) << yielded.body;
  EXPECT_EQ(json::parse(yielded.body).at("waitingFor"), json::value(1)) << yielded.body;
  EXPECT_EQ(Groups(), before + 1);
  EXPECT_EQ(Answered("s-5"), yielded.body);
  EXPECT_EQ(m.Tool("sessions_yield", "{}", "s-5").body, yielded.body);
  auto pending = SessionTablesView(*engine_).PendingDeliveries("main");
  ASSERT_OK(pending);
  EXPECT_EQ(pending->size(), 4u) << "each call delivered once";
}

TEST_F(RequestIdTest, AnAppliedRequestWhoseAnswerWasLostIsNotAppliedAgain) {
  // What a crash between the two writes leaves: the record sealed with the effect, no answer.
  {
    server::ApiRequest r;
    r.method = "POST";
    r.target = "/v1/events";
    r.body = kEvent;
    auto seal = std::make_shared<RequestSeal>("r-1", server::RequestLedger::Digest(r));
    ArmRequestSeal armed(seal);
    EventInput in;
    in.session_key = "agent:main:a";
    in.kind = "human_direct_message";
    in.actor_type = ActorType::kHuman;
    in.summary = "hi";
    ASSERT_OK(engine_->Record(in));
  }
  Open();
  auto retry = Send("POST", "/v1/events", kEvent, "r-1");
  EXPECT_EQ(retry.status, 409);
  EXPECT_EQ(Code(retry), "request_answer_lost");
  EXPECT_EQ(Events("agent:main:a"), 1u);
}

TEST_F(RequestIdTest, ADuplicateWhileTheFirstRunsIsRefused) {
  server::RequestLedger ledger(*engine_);
  server::ApiRequest r;
  r.method = "POST";
  r.target = "/v1/prune";
  const std::string id = "r-1";
  r.header = [&](std::string_view name) {
    return name == "X-Request-Id" ? std::string_view(id) : std::string_view();
  };
  server::ApiResponse inner;
  auto outer = ledger.Run(r, [&](const server::ApiRequest& req) {
    inner = ledger.Run(req, [](const server::ApiRequest&) {
      ADD_FAILURE() << "the duplicate ran";
      return server::ApiResponse{};
    });
    return server::ApiResponse{};
  });
  EXPECT_EQ(outer.status, 200);
  EXPECT_EQ(inner.status, 409);
  EXPECT_EQ(Code(inner), "request_in_progress");
}

}  // namespace
}  // namespace statewatch::testing
