// Fixture for the session tools tests: a real engine in a temporary directory on a
// ManualClock (tests/engine/engine_fixture.h), plus helpers to register sessions, append
// transcripts and read JSON results.
#ifndef STATEWATCH_TESTS_TOOLS_TOOLS_FIXTURE_H_
#define STATEWATCH_TESTS_TOOLS_TOOLS_FIXTURE_H_

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine_fixture.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "tools/session_messaging.h"

namespace statewatch::testing {

// The session most tool tests call as.
inline constexpr char kMain[] = "agent:main:main";
// A valid W3C traceparent for the calls that carry one.
inline constexpr char kTraceparent[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

// The string at `key`, or "" when absent / not a string.
inline std::string Str(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

class ToolsTest : public EngineTest {
 protected:
  // Registers a session (and its parent / sandbox flag / label) in the registry.
  void Register(const std::string& key, std::optional<std::string> parent = std::nullopt,
                bool sandboxed = false, std::optional<std::string> label = std::nullopt,
                std::optional<std::string> session_id = std::nullopt) {
    SessionRecord r;
    r.name = Name(key);
    r.parent_session_key = std::move(parent);
    r.sandboxed = sandboxed;
    r.label = std::move(label);
    r.session_id = std::move(session_id);
    ASSERT_OK(SessionTables(*engine_).UpsertSession(r));
  }

  // A registry record of `key` whose last delivery route (where the gateway last talked to
  // it) is `route`; an empty part of the route stays unset, as SessionRecord::route() reads
  // it. The caller may set more fields before upserting it.
  static SessionRecord WithLastRoute(const std::string& key, const DeliveryRoute& route) {
    auto part = [](const std::string& s) {
      return s.empty() ? std::nullopt : std::optional<std::string>(s);
    };
    SessionRecord r;
    r.name = Name(key);
    r.last_channel = part(route.channel);
    r.last_to = part(route.to);
    r.last_account_id = part(route.account_id);
    r.last_thread_id = part(route.thread_id);
    return r;
  }

  void Say(const std::string& key, const std::string& role, const boost::json::value& content,
           const std::string& tool = "") {
    TranscriptMessage m;
    m.role = role;
    m.content_json = boost::json::serialize(content);
    m.tool_name = tool;
    ASSERT_OK(SessionTables(*engine_).AppendTranscript(Name(key), {m}));
  }

  static boost::json::object Params(std::string_view json_text) {
    return boost::json::parse(json_text).as_object();
  }

  std::vector<Delivery> Deliveries(const std::string& agent = "") {
    auto d = SessionTablesView(*engine_).PendingDeliveries(agent);
    EXPECT_OK(d);
    return d.ok() ? *d : std::vector<Delivery>{};
  }
};

// A ToolsTest with a SessionMessaging whose published deliveries are recorded, and helpers
// that play the gateway: simulated agents acting on their pending deliveries.
class MessagingTest : public ToolsTest {
 protected:
  void SetUp() override {
    ToolsTest::SetUp();
    OpenMessaging();
  }
  void TearDown() override {
    messaging_.reset();
    ToolsTest::TearDown();
  }
  void OpenMessaging() {
    messaging_.reset();
    tools::MessagingOptions o = options_messaging_;
    o.on_delivery = [this](const Delivery& d) {
      published_.push_back(d);
      if (on_published_) on_published_(d);
    };
    auto m = tools::SessionMessaging::Open(engine_.get(), std::move(o));
    ASSERT_OK(m);
    messaging_ = std::move(*m);
  }
  // A daemon restart: the engine and the messaging layer both reopen.
  void Restart() {
    messaging_.reset();
    Reopen();
    OpenMessaging();
  }

  // The pending deliveries addressed to `session_key`, oldest first.
  std::vector<Delivery> For(const std::string& session_key) {
    std::vector<Delivery> out;
    for (Delivery& d : Deliveries()) {
      if (d.session_key == session_key) out.push_back(std::move(d));
    }
    return out;
  }

  // The simulated agent of `session_key`: takes its oldest pending delivery, acknowledges it
  // and returns it (nullopt when there is none).
  std::optional<Delivery> Take(const std::string& session_key) {
    auto pending = For(session_key);
    if (pending.empty()) return std::nullopt;
    auto acked = SessionTables(*engine_).AckDelivery(pending[0].id);
    EXPECT_OK(acked);
    EXPECT_TRUE(acked.ok() && *acked) << "delivery " << pending[0].id << " was not pending";
    return pending[0];
  }

  tools::RunUpdate Reply(const std::string& run_id, const std::string& text) {
    auto u = messaging_->OnReply(run_id, text);
    EXPECT_OK(u);
    return u.ok() ? *u : tools::RunUpdate{};
  }

  tools::ToolAnswer Call(const std::string& tool, const std::string& caller,
                         std::string_view params, tools::CallCompletion done = {}) {
    auto a = messaging_->CallTool(tool, Name(caller), Params(params), std::move(done));
    EXPECT_OK(a) << tool;
    return a.ok() ? *a : tools::ToolAnswer{};
  }
  // The result object of `tool` called by `caller` (empty when the call fails).
  boost::json::object ResultOf(const std::string& tool, std::string_view params,
                               const std::string& caller = kMain) {
    return Call(tool, caller, params).result;
  }
  // A tool call carrying the caller's W3C traceparent, its result as it is (a refusal too).
  Result<tools::ToolAnswer> CallTraced(const std::string& tool, const std::string& caller,
                                       std::string_view params, std::string_view traceparent) {
    return messaging_->CallTool(tool, Name(caller), Params(params), {}, tools::AnswerForm::kObject,
                                traceparent);
  }
  Status CallError(const std::string& tool, const std::string& caller, std::string_view params) {
    auto a = messaging_->CallTool(tool, Name(caller), Params(params));
    EXPECT_FALSE(a.ok()) << tool << " unexpectedly answered " << boost::json::serialize(a->result);
    return a.ok() ? Status::OK() : a.status();
  }
  // sessions_spawn called by `caller`: {runId, childSessionKey}.
  std::pair<std::string, std::string> Spawn(const std::string& caller, const std::string& params) {
    tools::ToolAnswer a = Call("sessions_spawn", caller, params);
    return {Str(a.result, "runId"), Str(a.result, "childSessionKey")};
  }
  // Every event in `key`'s journal, oldest first.
  std::vector<Event> Journal(const std::string& key) {
    auto page = engine_->ChangesSince(Name(key), 0);
    EXPECT_OK(page);
    return page.ok() ? page->events : std::vector<Event>{};
  }

  tools::MessagingOptions options_messaging_;
  std::unique_ptr<tools::SessionMessaging> messaging_;
  std::vector<Delivery> published_;
  std::function<void(const Delivery&)> on_published_;
};

// A MessagingTest in which kMain is registered.
class MainSessionTest : public MessagingTest {
 protected:
  void SetUp() override {
    MessagingTest::SetUp();
    Register(kMain);
  }
};

// A MessagingTest whose sessions see the other sessions of their agent (Visibility::kAgent),
// with `sessions` registered and at most `max_ping_pong_turns` turns a sessions_send run.
class AgentPeersTest : public MessagingTest {
 protected:
  AgentPeersTest(std::vector<std::string> sessions, int max_ping_pong_turns)
      : sessions_(std::move(sessions)), max_ping_pong_turns_(max_ping_pong_turns) {}
  void SetUp() override {
    options_messaging_.sessions.visibility = tools::Visibility::kAgent;
    options_messaging_.max_ping_pong_turns = max_ping_pong_turns_;
    MessagingTest::SetUp();
    for (const std::string& key : sessions_) Register(key);
  }

 private:
  const std::vector<std::string> sessions_;
  const int max_ping_pong_turns_;
};

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_TOOLS_TOOLS_FIXTURE_H_
