// End to end over HTTP: session_status and sessions_list — visibility refusals (byte-exact
// texts of docs/semantics.md, "Session tools"), every parameter error, the list
// filters and stateVersion rows.
#include <gtest/gtest.h>

#include "http_helpers.h"
#include "test_client.h"
#include "test_keys.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

const std::string kSandboxed = "agent:main:subagent:sb";
const std::string kGroup = "agent:main:telegram:group:g1";

std::string Refusal(const std::string& action, const std::string& setting) {
  if (setting == "self") {
    return "Session " + action +
           " visibility is restricted to the current session (tools.sessions.visibility=self).";
  }
  if (setting == "tree") {
    return "Session " + action +
           " visibility is restricted to the current session tree "
           "(tools.sessions.visibility=tree).";
  }
  return "Session " + action +
         " visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent "
         "access.";
}

class SessionToolsHttpTest : public ServerTest {
 protected:
  // The sub-agents of these tests (kChild, kSandboxed) are leaves; they get session_status
  // and sessions_list through tools.subagents.tools.allow, so that the visibility rules can
  // be checked from their side too (LeafSubAgentsGetNoSessionToolByDefault checks without).
  void StartServer(tools::Visibility visibility, bool a2a = false,
                   std::vector<std::string> allow = {},
                   std::vector<std::string> subagent_tools = {"session_status", "sessions_list"}) {
    server::ServerOptions o = TestOptions();
    o.tools.visibility = visibility;
    o.tools.agent_to_agent.enabled = a2a;
    o.tools.agent_to_agent.allow = std::move(allow);
    o.messaging.tool_policy.subagent_allow = std::move(subagent_tools);
    ServerTest::StartServer(std::move(o));
    PutSession(*http_, kMain, {{"kind", "main"}, {"channel", "telegram"}, {"model", "opus"}});
    PutSession(*http_, kChild, {{"parentSessionKey", kMain}, {"label", "researcher"}});
    PutSession(*http_, kSandboxed, {{"parentSessionKey", kMain}, {"sandboxed", true}});
    PutSession(*http_, kGroup,
               {{"kind", "group"},
                {"channel", "telegram"},
                {"label", "ops room"},
                {"updatedAt", kStartMs - 2 * 3600 * 1000},
                {"contextTokens", 1200},
                {"totalTokens", 5400}});
    PutSession(*http_, kOps, {{"kind", "main"}});
  }

  HttpResult Status(const std::string& caller, const std::string& target) {
    return Tool(*http_, "session_status", caller, json::object{{"sessionKey", target}});
  }

  std::vector<std::string> ListKeys(const std::string& caller, json::object params = {}) {
    HttpResult r = Tool(*http_, "sessions_list", caller, params);
    EXPECT_EQ(r.status, 200) << r.body;
    std::vector<std::string> keys;
    if (r.status != 200) return keys;
    json::value body = r.json();
    for (const auto& row : body.at("sessions").as_array()) {
      keys.emplace_back(row.at("key").as_string());
    }
    std::sort(keys.begin(), keys.end());
    return keys;
  }

  void ExpectRefused(const HttpResult& r, const std::string& message) {
    EXPECT_EQ(r.status, 403) << r.body;
    EXPECT_EQ(r.error_code(), "forbidden");
    EXPECT_EQ(r.error_message(), message);
  }
};

TEST_F(SessionToolsHttpTest, TreeIsTheDefault) {
  StartServer(tools::Visibility::kTree);
  EXPECT_EQ(Status(kMain, "current").status, 200);
  EXPECT_EQ(Status(kMain, kChild).status, 200);  // its child
  ExpectRefused(Status(kMain, kGroup), Refusal("status", "tree"));
  ExpectRefused(Status(kMain, kOps), Refusal("status", "agent"));
  ExpectRefused(Status(kChild, kMain), Refusal("status", "tree"));  // not the parent's child
  EXPECT_EQ(ListKeys(kMain), (std::vector<std::string>{kMain, kChild, kSandboxed}));
}

// Regression: session_status and sessions_list bypassed the profile check, so a leaf sub-agent
// (depth 1, maxSpawnDepth 1) got both although "Session tools" gives leaves no session tool.
TEST_F(SessionToolsHttpTest, LeafSubAgentsGetNoSessionToolByDefault) {
  StartServer(tools::Visibility::kTree, false, {}, /*subagent_tools=*/{});
  for (const char* tool : {"session_status", "sessions_list"}) {
    ExpectRefused(Tool(*http_, tool, kChild, json::object{}),
                  std::string("Tool ") + tool +
                      " is not available to leaf sub-agents (spawn depth 1, "
                      "agents.defaults.subagents.maxSpawnDepth=1).");
  }
  EXPECT_EQ(Status(kMain, kChild).status, 200);  // the parent still sees its child
}

TEST_F(SessionToolsHttpTest, SelfAgentAndAll) {
  StartServer(tools::Visibility::kSelf);
  ExpectRefused(Status(kMain, kChild), Refusal("status", "self"));
  EXPECT_EQ(Status(kMain, kMain).status, 200);
  EXPECT_EQ(ListKeys(kMain), (std::vector<std::string>{kMain}));

  StartServer(tools::Visibility::kAgent);
  EXPECT_EQ(Status(kMain, kGroup).status, 200);
  ExpectRefused(Status(kMain, kOps), Refusal("status", "agent"));
  EXPECT_EQ(ListKeys(kMain), (std::vector<std::string>{kMain, kChild, kSandboxed, kGroup}));

  StartServer(tools::Visibility::kAll);  // agent-to-agent off
  ExpectRefused(Status(kMain, kOps),
                "Agent-to-agent status is disabled. Set tools.agentToAgent.enabled=true to allow "
                "cross-agent access.");
  EXPECT_EQ(ListKeys(kMain).size(), 4u);  // the other agent's session is left out

  StartServer(tools::Visibility::kAll, /*a2a=*/true, {"main"});
  ExpectRefused(Status(kMain, kOps), "Agent-to-agent status denied by tools.agentToAgent.allow.");

  StartServer(tools::Visibility::kAll, /*a2a=*/true, {"main", "op*"});
  EXPECT_EQ(Status(kMain, kOps).status, 200);
  EXPECT_EQ(ListKeys(kMain).size(), 5u);
}

TEST_F(SessionToolsHttpTest, SandboxedCallerIsClampedToTree) {
  StartServer(tools::Visibility::kAll, /*a2a=*/true);
  EXPECT_EQ(Status(kMain, kGroup).status, 200);
  ExpectRefused(Status(kSandboxed, kGroup), Refusal("status", "tree"));
  ExpectRefused(Status(kSandboxed, kMain), Refusal("status", "tree"));
  EXPECT_EQ(ListKeys(kSandboxed), (std::vector<std::string>{kSandboxed}));
}

TEST_F(SessionToolsHttpTest, SessionStatusCardAndUnknownSession) {
  StartServer(tools::Visibility::kAgent);
  HttpResult r = Status(kMain, kGroup);
  ASSERT_EQ(r.status, 200) << r.body;
  json::value card = r.json();
  EXPECT_EQ(card.at("sessionKey"), json::value(kGroup));
  EXPECT_EQ(card.at("agentId"), json::value("main"));
  EXPECT_EQ(card.at("kind"), json::value("group"));
  EXPECT_EQ(card.at("label"), json::value("ops room"));
  EXPECT_EQ(card.at("contextTokens"), json::value(1200));
  EXPECT_EQ(card.at("stateVersion"), json::value(0));
  EXPECT_FALSE(card.as_object().contains("stateChanges"));

  HttpResult unknown = Status(kMain, "agent:main:nope");
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_EQ(unknown.error_code(), "unknown_session");
  EXPECT_EQ(unknown.error_message(), "Unknown sessionKey: agent:main:nope");
  EXPECT_EQ(Status(kMain, "agent::x").error_message(), "Unknown sessionKey: agent::x");

  // "current", absent and blank all mean the caller; a bare key is of the caller's agent.
  HttpResult self = Tool(*http_, "session_status", kMain, json::object{{"sessionKey", " "}});
  EXPECT_EQ(self.json().at("sessionKey"), json::value(kMain));
  uint64_t global_seq = Record(*http_, HumanMessage("global")).at(0);
  HttpResult bare = Status(kMain, "global");
  ASSERT_EQ(bare.status, 200) << bare.body;
  EXPECT_EQ(bare.json().at("agentId"), json::value("main"));
  EXPECT_EQ(bare.json().at("stateVersion"), json::value(global_seq));

  // A bare caller names its agent in X-Agent-Id; another agent's `global` is another session.
  HttpResult ops_global =
      http_->Post("/v1/tools/session_status", json::object{}, As("global", "ops"));
  ASSERT_EQ(ops_global.status, 200) << ops_global.body;
  EXPECT_EQ(ops_global.json().at("agentId"), json::value("ops"));
  EXPECT_EQ(ops_global.json().at("stateVersion"), json::value(0));
}

TEST_F(SessionToolsHttpTest, EveryParameterError) {
  StartServer(tools::Visibility::kTree);
  const std::string kSince = "changesSince must be a non-negative integer";
  for (const json::value& bad :
       {json::value(-1), json::value(1.5), json::value("abc"), json::value("-3"), json::value(true),
        json::value(json::array{1}), json::value(json::object{}), json::value(9007199254740992.0),
        json::value(uint64_t{18446744073709551615ull})}) {
    HttpResult r = Tool(*http_, "session_status", kMain, json::object{{"changesSince", bad}});
    EXPECT_EQ(r.status, 400) << json::serialize(bad) << " " << r.body;
    EXPECT_EQ(r.error_code(), "invalid_parameter");
    EXPECT_EQ(r.error_message(), kSince) << json::serialize(bad);
  }
  // Accepted forms: integer, integral double, numeric string; blank means absent.
  for (const json::value& good : {json::value(0), json::value(2.0), json::value(" 7 ")}) {
    HttpResult r = Tool(*http_, "session_status", kMain, json::object{{"changesSince", good}});
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(r.json().as_object().contains("stateChanges"));
  }
  HttpResult blank = Tool(*http_, "session_status", kMain, json::object{{"changesSince", ""}});
  EXPECT_FALSE(blank.json().as_object().contains("stateChanges"));
  EXPECT_EQ(Tool(*http_, "session_status", kMain, json::object{{"sessionKey", 5}}).error_message(),
            "sessionKey must be a string (got 5)");

  struct Case {
    json::object params;
    std::string message;
  };
  const std::string kLimit = "limit must be a positive integer";
  const std::string kActive = "activeMinutes must be a positive integer";
  const std::string kMessages = "messageLimit must be an integer from 0 to 20";
  const std::string kKinds = "kinds must be an array of main, group, cron, hook, node, other";
  std::vector<Case> cases = {
      {{{"limit", 0}}, kLimit},
      {{{"limit", -1}}, kLimit},
      {{{"limit", 1.5}}, kLimit},
      {{{"limit", "ten"}}, kLimit},
      {{{"limit", true}}, kLimit},
      {{{"activeMinutes", 0}}, kActive},
      {{{"activeMinutes", "x"}}, kActive},
      {{{"messageLimit", 21}}, kMessages},
      {{{"messageLimit", -1}}, kMessages},
      {{{"kinds", json::array{"bogus"}}}, kKinds},
      {{{"kinds", 5}}, kKinds},
      {{{"kinds", json::array{5}}}, kKinds},
      {{{"label", 5}}, "label must be a string (got 5)"},
      {{{"agentId", json::array{}}}, "agentId must be a string (got [])"},
      {{{"search", false}}, "search must be a string (got false)"},
  };
  for (const Case& c : cases) {
    HttpResult r = Tool(*http_, "sessions_list", kMain, c.params);
    EXPECT_EQ(r.status, 400) << json::serialize(c.params);
    EXPECT_EQ(r.error_code(), "invalid_parameter");
    EXPECT_EQ(r.error_message(), c.message) << json::serialize(c.params);
  }
  // The caller is required; the parameters must be an object.
  HttpResult no_caller = http_->Post("/v1/tools/sessions_list", json::object{});
  EXPECT_EQ(no_caller.status, 400);
  EXPECT_EQ(no_caller.error_code(), "invalid_caller");
  HttpResult bad_caller = http_->Post("/v1/tools/sessions_list", json::object{}, As("agent::x"));
  EXPECT_EQ(bad_caller.status, 400);
  HttpResult array = Tool(*http_, "sessions_list", kMain, json::array{});
  EXPECT_EQ(array.status, 400);
  EXPECT_EQ(array.error_code(), "invalid_parameter");
}

TEST_F(SessionToolsHttpTest, ListFiltersAndStateVersions) {
  StartServer(tools::Visibility::kAgent);
  uint64_t seq = Record(*http_, HumanMessage(kGroup)).at(0);
  PutSession(*http_, kGroup, {{"updatedAt", kStartMs - 2 * 3600 * 1000}});

  HttpResult r =
      Tool(*http_, "sessions_list", kMain, json::object{{"kinds", json::array{"group"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  json::array rows = r.json().at("sessions").as_array();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("key"), json::value(kGroup));
  EXPECT_EQ(rows[0].at("stateVersion"), json::value(seq));
  EXPECT_EQ(rows[0].at("totalTokens"), json::value(5400));
  EXPECT_EQ(rows[0].at("channel"), json::value("telegram"));

  // Rows without events carry no stateVersion.
  HttpResult main_row = Tool(*http_, "sessions_list", kMain, json::object{{"kinds", "main"}});
  ASSERT_EQ(main_row.json().at("sessions").as_array().size(), 1u);
  EXPECT_FALSE(main_row.json().at("sessions").as_array()[0].as_object().contains("stateVersion"));

  EXPECT_EQ(ListKeys(kMain, {{"label", "ops room"}}), (std::vector<std::string>{kGroup}));
  EXPECT_EQ(ListKeys(kMain, {{"label", "ops"}}), (std::vector<std::string>{}));  // exact
  EXPECT_EQ(ListKeys(kMain, {{"search", "RESEARCH"}}), (std::vector<std::string>{kChild}));
  EXPECT_EQ(ListKeys(kMain, {{"agentId", "main"}}).size(), 4u);
  EXPECT_EQ(ListKeys(kMain, {{"agentId", "ops"}}).size(), 0u);  // not visible under agent
  // The group's registry entry was last updated two hours ago, but it recorded an event now:
  // any activity counts.
  EXPECT_EQ(ListKeys(kMain, {{"activeMinutes", 60}}).size(), 4u);
  const std::string stale = "agent:main:cron:nightly";
  PutSession(*http_, stale, {{"updatedAt", kStartMs - 3 * 3600 * 1000}});
  EXPECT_EQ(ListKeys(kMain, {{"activeMinutes", 60}}).size(), 4u);
  EXPECT_EQ(ListKeys(kMain, {{"activeMinutes", "240"}}).size(), 5u);
  EXPECT_EQ(ListKeys(kMain, {{"limit", 2}, {"messageLimit", 5}}).size(), 2u);
  HttpResult counted = Tool(*http_, "sessions_list", kMain, json::object{{"limit", 1}});
  EXPECT_EQ(counted.json().at("count"), json::value(1));
}

TEST_F(SessionToolsHttpTest, ListMessagesAreTheCleanedTranscriptTail) {
  StartServer(tools::Visibility::kTree);
  json::array messages{
      json::object{{"role", "user"}, {"content", "first"}},
      json::object{{"role", "assistant"}, {"content", "<think>secret plan</think>done"}},
      json::object{{"role", "tool"}, {"content", "output"}, {"toolName", "bash"}},
      json::object{{"role", "user"}, {"content", "third"}}};
  HttpResult appended =
      http_->Post("/v1/sessions/" + kChild + "/messages", json::object{{"messages", messages}});
  ASSERT_EQ(appended.status, 200) << appended.body;
  EXPECT_EQ(appended.json().at("appended"), json::value(4));
  EXPECT_EQ(
      http_->Post("/v1/sessions/" + kChild + "/messages", json::object{{"messages", 7}}).status,
      400);

  HttpResult r = Tool(*http_, "sessions_list", kMain,
                      json::object{{"label", "researcher"}, {"messageLimit", 3}});
  ASSERT_EQ(r.status, 200) << r.body;
  json::value body = r.json();
  const json::array& rows = body.at("sessions").as_array();
  ASSERT_EQ(rows.size(), 1u);
  const json::array& tail = rows[0].at("messages").as_array();
  ASSERT_EQ(tail.size(), 2u) << r.body;  // the last three, tool result left out
  EXPECT_EQ(tail[0].at("role"), json::value("assistant"));
  EXPECT_EQ(tail[0].at("content"), json::value("done"));
  EXPECT_EQ(tail[1].at("content"), json::value("third"));
  HttpResult none = Tool(*http_, "sessions_list", kMain, json::object{{"label", "researcher"}});
  EXPECT_FALSE(none.json().at("sessions").as_array()[0].as_object().contains("messages"));
}

// Regression: PUT {"model": null} kept the old value and {"model": ""} was stored and
// listed as "model": "".
TEST_F(SessionToolsHttpTest, RegistryNullClearsAndEmptyStringsAreRefused) {
  StartServer(tools::Visibility::kTree);
  HttpResult cleared =
      http_->Request("PUT", "/v1/sessions/" + kMain, R"({"model": null, "lastTo": "42"})");
  ASSERT_EQ(cleared.status, 200) << cleared.body;
  EXPECT_FALSE(cleared.json().at("session").as_object().contains("model"));
  EXPECT_EQ(cleared.json().at("session").at("lastTo"), json::value("42"));  // the gateway sees it
  HttpResult empty = http_->Request("PUT", "/v1/sessions/" + kMain, R"({"model": ""})");
  EXPECT_EQ(empty.status, 400);
  EXPECT_EQ(empty.error_message(),
            R"(model must be a non-empty string, or null to clear it (got ""))");
  json::value row = Tool(*http_, "sessions_list", kMain, json::object{{"kinds", "main"}}).json();
  std::string text = json::serialize(row);
  EXPECT_EQ(text.find("\"model\""), std::string::npos) << text;
  EXPECT_EQ(text.find("lastTo"), std::string::npos) << text;  // routes never in rows
}

// Regression: invalid UTF-8 in a tool body was reported as "malformed JSON body: syntax
// error", which hid what was wrong.
TEST_F(SessionToolsHttpTest, InvalidUtf8IsNamedWithItsOffset) {
  StartServer(tools::Visibility::kTree);
  HttpResult r = http_->Post("/v1/tools/session_status",
                             std::string("{\"sessionKey\": \"a\xC3\x28\"}"), As(kMain));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.error_code(), "invalid_json");
  EXPECT_EQ(r.error_message(), "the request body is not valid UTF-8 (byte 0xC3 at offset 17)");
}

// Regression (over HTTP): {"model": "claude-x"} answered 200 and changed nothing; the card
// now shows the override and "default" clears it.
TEST_F(SessionToolsHttpTest, SessionStatusSetsAndClearsTheModelOverride) {
  StartServer(tools::Visibility::kTree);
  HttpResult set = Tool(*http_, "session_status", kMain, json::object{{"model", "haiku"}});
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(set.json().at("model"), json::value("haiku"));
  EXPECT_EQ(set.json().at("modelOverride"), json::value(true));
  EXPECT_EQ(set.json().at("defaultModel"), json::value("opus"));
  HttpResult cleared = Tool(*http_, "session_status", kMain, json::object{{"model", "default"}});
  EXPECT_EQ(cleared.json().at("model"), json::value("opus"));
  HttpResult unknown = Tool(*http_, "session_status", kMain, json::object{{"modle", "x"}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(unknown.error_code(), "invalid_parameter");
}

}  // namespace
}  // namespace statewatch::testing