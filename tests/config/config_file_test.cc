// The daemon's configuration file: the example in docs/session-tools.md, "Tool policy"
// parses into the policy it describes; every unknown key and bad value is refused with its
// path; the effective policy prints per agent.
#include "config/config_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "status_matchers.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;

constexpr char kExample[] = R"({
  // comments and trailing commas are allowed
  "tools": {
    "profile": "coding",
    "alsoAllow": ["sessions_spawn"],
    "deny": ["sessions_send"],
    "sessions": {"visibility": "agent"},
    "agentToAgent": {"enabled": true, "allow": ["main", "ops*"]},
    "subagents": {"tools": {"allow": ["session_status"], "deny": ["subagents"]}},
  },
  "agents": {
    "defaults": {"subagents": {"maxSpawnDepth": 2, "maxChildrenPerAgent": 3,
                               "allowAgents": ["research"]}},
    "list": [{"id": "Ops", "tools": {"profile": "messaging"},
              "subagents": {"maxSpawnDepth": 1}}]
  },
  "session": {"agentToAgent": {"maxPingPongTurns": 2}},
  "upstream": {"firstTickMs": 1000, "intervalMs": 5000, "roots": ["/srv/transcripts"]}
})";

Status Apply(std::string_view text, tools::DaemonConfig* c = nullptr) {
  tools::DaemonConfig scratch;
  return tools::ApplyConfigText(text, c ? c : &scratch);
}

TEST(ConfigFileTest, TheExampleParsesIntoItsPolicy) {
  tools::DaemonConfig c;
  ASSERT_OK(Apply(kExample, &c));
  const tools::ToolPolicy& t = c.tool_policy;
  EXPECT_EQ(t.profile, tools::ToolProfile::kCoding);
  EXPECT_EQ(t.also_allow, std::vector<std::string>{"sessions_spawn"});
  EXPECT_EQ(t.deny, std::vector<std::string>{"sessions_send"});
  EXPECT_EQ(c.sessions.visibility, tools::Visibility::kAgent);
  EXPECT_TRUE(c.sessions.agent_to_agent.enabled);
  EXPECT_EQ(c.sessions.agent_to_agent.allow, (std::vector<std::string>{"main", "ops*"}));
  EXPECT_EQ(t.subagent_allow, std::vector<std::string>{"session_status"});
  EXPECT_EQ(t.subagent_deny, std::vector<std::string>{"subagents"});
  EXPECT_EQ(t.max_spawn_depth, 2);
  EXPECT_EQ(t.max_children_per_agent, 3);
  EXPECT_EQ(t.allow_agents, std::vector<std::string>{"research"});
  ASSERT_EQ(t.agents.size(), 1u);
  EXPECT_EQ(t.agents[0].id, "ops");  // agent ids are lower-cased
  EXPECT_EQ(t.agents[0].profile, tools::ToolProfile::kMessaging);
  EXPECT_EQ(t.agents[0].max_spawn_depth, 1);
  EXPECT_EQ(c.max_ping_pong_turns, 2);
  EXPECT_EQ(c.upstream_first_tick_ms, 1000);
  EXPECT_EQ(c.upstream_interval_ms, 5000);
  EXPECT_EQ(c.upstream_roots, std::vector<std::string>{"/srv/transcripts"});

  json::object effective = tools::DaemonConfigToJson(c);
  const json::object& resolved = effective.at("resolved").as_object();
  EXPECT_EQ(resolved.at("profile"), "coding");
  EXPECT_EQ(resolved.at("agents").at("ops").at("profile"), "messaging");
  EXPECT_EQ(json::serialize(resolved.at("agents").at("ops").at("sessionToolsBySpawnDepth")),
            R"({"0":["session_status","sessions_list","sessions_history","sessions_spawn"],)"
            R"("1":["session_status"]})");  // alsoAllow and deny are the defaults' here
}

TEST(ConfigFileTest, AKeyTheFileLeavesOutKeepsItsValue) {
  tools::DaemonConfig c;
  c.max_ping_pong_turns = 7;
  c.sessions.visibility = tools::Visibility::kAll;
  ASSERT_OK(Apply(R"({"tools": {"profile": "minimal"}})", &c));
  EXPECT_EQ(c.max_ping_pong_turns, 7);
  EXPECT_EQ(c.sessions.visibility, tools::Visibility::kAll);
  EXPECT_EQ(c.tool_policy.profile, tools::ToolProfile::kMinimal);
  ASSERT_OK(Apply("{}", &c));
}

TEST(ConfigFileTest, UnknownKeysAndBadValuesAreRefusedWithTheirPath) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"tool": {}})", "unknown key tool (known: tools, agents, session, upstream, auth, "
                          "retention, webhooks, guards)"},
      {R"({"tools": {"sessions": {"visiblity": "all"}}})",
       "unknown key tools.sessions.visiblity (known: visibility)"},
      {R"({"tools": {"profile": "everything"}})",
       R"(tools.profile must be minimal, coding, messaging or full (got "everything"))"},
      {R"({"tools": {"sessions": {"visibility": "world"}}})",
       R"(tools.sessions.visibility must be self, tree, agent or all (got "world"))"},
      {R"({"tools": {"agentToAgent": {"enabled": "yes"}}})",
       R"(tools.agentToAgent.enabled must be true or false (got "yes"))"},
      {R"({"tools": {"alsoAllow": "sessions_spawn"}})",
       R"(tools.alsoAllow must be an array of strings (got "sessions_spawn"))"},
      {R"({"tools": {"deny": ["ok", ""]}})",
       R"(tools.deny[1] must be a non-empty string (got ""))"},
      {R"({"agents": {"defaults": {"subagents": {"maxSpawnDepth": 9}}}})",
       "agents.defaults.subagents.maxSpawnDepth must be an integer from 1 to 5 (got 9)"},
      {R"({"agents": {"list": [{"id": "a"}, {"id": "b", "subagents": {"maxChildrenPerAgent": 0}}]}})",
       "agents.list[1].subagents.maxChildrenPerAgent must be an integer from 1 to 100 (got 0)"},
      {R"({"agents": {"list": [{"tools": {}}]}})", "agents.list[0].id is required"},
      {R"({"agents": {"list": [{"id": "a"}, {"id": "A"}]}})",
       R"(agents.list[1].id "a" appears twice in agents.list)"},
      {R"({"agents": {"list": [{"id": "a", "tools": {"sessions": {}}}]}})",
       "unknown key agents.list[0].tools.sessions (known: profile, alsoAllow, deny)"},
      {R"({"session": {"agentToAgent": {"maxPingPongTurns": 21}}})",
       "session.agentToAgent.maxPingPongTurns must be an integer from 0 to 20 (got 21)"},
      {R"({"upstream": {"roots": ["relative/dir"]}})",
       R"(upstream.roots[0] must be an absolute path (got "relative/dir"))"},
      {R"({"upstream": {"intervalMs": 0}})",
       "upstream.intervalMs must be an integer from 1 to 86400000 (got 0)"},
      {R"([1])", "must be an object (got [1])"},
      {"{\n  \"tools\": {\n    \"profile\": \"coding\"\n  ", "the configuration is not valid JSON"},
  };
  for (const auto& [text, message] : cases) {
    Status s = Apply(text);
    EXPECT_TRUE(s.IsInvalidArgument()) << text;
    EXPECT_NE(s.message().find(message), std::string::npos) << s.message();
  }
  EXPECT_NE(Apply("{\n \"tools\": {]\n}").message().find("at line 2, column "), std::string::npos)
      << Apply("{\n \"tools\": {]\n}").message();
}

TEST(ConfigFileTest, AccessTokensAreKeptAsDigestsWithTheirScopes) {
  tools::DaemonConfig c;
  // printf %s sha-token | sha256sum
  const std::string digest = auth::Sha256("sha-token");
  std::string hex;
  for (unsigned char b : digest) {
    const char* d = "0123456789ABCDEF";  // either case
    hex += d[b >> 4];
    hex += d[b & 15];
  }
  ASSERT_OK(Apply(R"({"auth": {"openMetrics": true, "tokens": [
      {"name": "gateway", "token": "plain-token", "scope": "write"},
      {"name": "ops", "sha256": ")" + hex + R"(", "scope": "admin"}]}})",
                  &c));
  ASSERT_EQ(c.tokens.size(), 2u);
  EXPECT_EQ(c.tokens[0].name, "gateway");
  EXPECT_EQ(c.tokens[0].sha256, auth::Sha256("plain-token"));
  EXPECT_EQ(c.tokens[0].scope, auth::Scope::kWrite);
  EXPECT_EQ(c.tokens[1].sha256, digest);
  EXPECT_EQ(c.tokens[1].scope, auth::Scope::kAdmin);
  EXPECT_TRUE(c.open_metrics);
  // The effective configuration names tokens and scopes, never a token or a digest.
  std::string printed = json::serialize(tools::DaemonConfigToJson(c));
  EXPECT_NE(printed.find(R"({"name":"gateway","scope":"write"})"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("plain-token"), std::string::npos) << printed;
  EXPECT_EQ(printed.find(hex), std::string::npos) << printed;
  EXPECT_EQ(auth::Sha256("abc").size(), 32u);
}

TEST(ConfigFileTest, BadTokensAreRefusedWithoutShowingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"auth": {"tokens": [{"token": "t-1", "scope": "read"}]}})",
       "auth.tokens[0].name is required"},
      {R"({"auth": {"tokens": [{"name": "a", "scope": "read"}]}})",
       R"(auth.tokens[0] ("a") needs exactly one of token and sha256)"},
      {R"({"auth": {"tokens": [{"name": "a", "token": "secret value", "scope": "read"}]}})",
       "auth.tokens[0].token must be a non-empty string without spaces (its value is not shown)"},
      {R"({"auth": {"tokens": [{"name": "a", "sha256": "secret-pasted", "scope": "read"}]}})",
       "auth.tokens[0].sha256 must be 64 hexadecimal digits"},
      {R"({"auth": {"tokens": [{"name": "a", "token": "t-1", "scope": "root"}]}})",
       R"(auth.tokens[0].scope must be read, write or admin (got "root"))"},
      {R"({"auth": {"tokens": [{"name": "a", "token": "t-1"}]}})",
       "auth.tokens[0].scope is required (read, write or admin)"},
      {R"({"auth": {"tokens": [{"name": "a", "token": "t-1", "scope": "read"},
                               {"name": "a", "token": "t-2", "scope": "read"}]}})",
       R"(auth.tokens[1].name "a" appears twice in auth.tokens)"},
      {R"({"auth": {"tokens": [{"name": "a", "token": "t-1", "scope": "read"},
                               {"name": "b", "token": "t-1", "scope": "admin"}]}})",
       R"(auth.tokens[1] ("b") is the same token as "a")"},
      {R"({"auth": {"token": []}})", "unknown key auth.token (known: tokens, openMetrics)"},
      // A token in the wrong place: the refusal names the JSON type, never the value.
      {R"({"auth": "secret-token"})", "auth must be an object (got a string; not shown)"},
      {R"({"auth": {"tokens": ["secret-token"]}})",
       "auth.tokens[0] must be an object (got a string; not shown)"},
      {R"({"auth": {"tokens": {"name": "a", "token": "secret-token", "scope": "read"}}})",
       "auth.tokens must be an array of tokens (got an object; not shown)"},
      {R"({"auth": {"openMetrics": "secret-token"}})",
       "auth.openMetrics must be true or false (got a string; not shown)"},
      {R"({"retention": {"ms": 0}})", "retention.ms must be an integer from 1 to"},
      {R"({"retention": {"pruneIntervalMs": 10}})",
       "retention.pruneIntervalMs must be an integer from 1000 to"},
  };
  for (const auto& [text, message] : cases) {
    Status s = Apply(text);
    EXPECT_TRUE(s.IsInvalidArgument()) << text;
    EXPECT_NE(s.message().find(message), std::string::npos) << s.message();
    for (const char* secret : {"secret", "t-1", "t-2"}) {
      EXPECT_EQ(s.message().find(secret), std::string::npos) << s.message();
    }
  }
}

TEST(ConfigFileTest, RetentionIsReadAndPrinted) {
  tools::DaemonConfig c;
  EXPECT_EQ(c.retention_ms, 30LL * 24 * 3600 * 1000);
  ASSERT_OK(Apply(R"({"retention": {"ms": 604800000, "pruneIntervalMs": 60000}})", &c));
  EXPECT_EQ(c.retention_ms, 604800000);
  EXPECT_EQ(c.prune_interval_ms, 60000);
  json::object printed = tools::DaemonConfigToJson(c);
  EXPECT_EQ(printed.at("retention").at("ms"), json::value(604800000));
}

TEST(ConfigFileTest, AFileIsReadOrRefusedByName) {
  std::string path = (std::filesystem::temp_directory_path() / "statewatch-config-test.json");
  {
    std::ofstream out(path);
    out << R"({"tools": {"profile": "messaging"}})";
  }
  tools::DaemonConfig c;
  ASSERT_OK(tools::ApplyConfigFile(path, &c));
  EXPECT_EQ(c.tool_policy.profile, tools::ToolProfile::kMessaging);
  {
    std::ofstream out(path);
    out << R"({"tools": {"profile": 1}})";
  }
  EXPECT_EQ(tools::ApplyConfigFile(path, &c).message(),
            path + ": tools.profile must be minimal, coding, messaging or full (got 1)");
  std::remove(path.c_str());
  EXPECT_TRUE(tools::ApplyConfigFile(path, &c).IsNotFound());
}

}  // namespace
}  // namespace statewatch::testing
