// Tool profiles and the visibility × profile matrix: every (profile, visibility, target,
// tool) combination called through SessionMessaging::CallTool against a real engine, with
// the expected refusal text computed from docs/semantics.md, "Session tools"
// independently of the code.
#include "tools/tool_profiles.h"

#include <gtest/gtest.h>

#include "status_matchers.h"
#include "tools/tools_fixture.h"
#include "tools/visibility.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;
using tools::ToolPolicy;
using tools::ToolProfile;
using tools::Visibility;

using Tools = std::vector<std::string>;

TEST(ToolProfilesTest, NameTables) {
  EXPECT_STREQ(tools::VisibilityName(tools::Visibility::kAgent), "agent");
  EXPECT_STREQ(tools::VisibilityName(static_cast<tools::Visibility>(9)), "tree");
  EXPECT_EQ(tools::ParseVisibility("ALL"), tools::Visibility::kAll);
  EXPECT_EQ(tools::ParseVisibility(" all"), std::nullopt);  // no trimming
  EXPECT_STREQ(tools::ToolProfileName(tools::ToolProfile::kCoding), "coding");
  EXPECT_STREQ(tools::ToolProfileName(static_cast<tools::ToolProfile>(9)), "full");
  EXPECT_EQ(tools::ParseToolProfile("Messaging"), tools::ToolProfile::kMessaging);
  EXPECT_EQ(tools::ParseToolProfile("everything"), std::nullopt);
}

TEST(ToolProfilesTest, ProfilesGrantTheirTools) {
  auto allowed = [](ToolProfile p, Tools also = {}, int depth = 0, int max_depth = 1) {
    ToolPolicy policy;
    policy.profile = p;
    policy.also_allow = std::move(also);
    policy.max_spawn_depth = max_depth;
    return tools::AllowedSessionTools(policy, depth);
  };
  const Tools all = {"session_status", "sessions_list",  "sessions_history", "sessions_send",
                     "sessions_spawn", "sessions_yield", "subagents"};
  EXPECT_EQ(allowed(ToolProfile::kMinimal), Tools{"session_status"});
  EXPECT_EQ(allowed(ToolProfile::kCoding), all);
  EXPECT_EQ(allowed(ToolProfile::kFull), all);
  EXPECT_EQ(allowed(ToolProfile::kMessaging),
            (Tools{"session_status", "sessions_list", "sessions_history", "sessions_send"}));
  EXPECT_EQ(allowed(ToolProfile::kMessaging, {"Sessions_Spawn", "browser"}),
            (Tools{"session_status", "sessions_list", "sessions_history", "sessions_send",
                   "sessions_spawn"}));
  EXPECT_EQ(allowed(ToolProfile::kMinimal, {"group:sessions"}), all);
  // Sub-agents: a leaf gets nothing whatever the profile; an orchestrator keeps four.
  EXPECT_TRUE(allowed(ToolProfile::kFull, {"group:sessions"}, 1, 1).empty());
  EXPECT_TRUE(allowed(ToolProfile::kFull, {}, 2, 2).empty());
  EXPECT_EQ(allowed(ToolProfile::kFull, {}, 1, 2),
            (Tools{"sessions_list", "sessions_history", "sessions_spawn", "subagents"}));
  EXPECT_EQ(allowed(ToolProfile::kMessaging, {}, 1, 2),
            (Tools{"sessions_list", "sessions_history"}));
}

TEST(ToolProfilesTest, DenyAndSubagentToolsAdjustWhatEachDepthGets) {
  ToolPolicy p;
  p.max_spawn_depth = 2;
  p.deny = {"Sessions_Send"};
  p.subagent_allow = {"session_status"};
  p.subagent_deny = {"subagents"};
  EXPECT_EQ(tools::AllowedSessionTools(p, 0),
            (Tools{"session_status", "sessions_list", "sessions_history", "sessions_spawn",
                   "sessions_yield", "subagents"}));
  EXPECT_EQ(tools::AllowedSessionTools(p, 1),
            (Tools{"session_status", "sessions_list", "sessions_history", "sessions_spawn"}));
  EXPECT_EQ(tools::AllowedSessionTools(p, 2), Tools{"session_status"});  // a leaf
  EXPECT_EQ(tools::CheckToolAllowed(p, "sessions_send", 0).message(),
            "Tool sessions_send is denied by tools.deny.");
  EXPECT_EQ(tools::CheckToolAllowed(p, "subagents", 1).message(),
            "Tool subagents is denied to sub-agents by tools.subagents.tools.deny.");
  // The profile still decides: a minimal profile grants a leaf nothing beyond session_status.
  p.profile = ToolProfile::kMinimal;
  p.subagent_allow = {"sessions_list"};
  EXPECT_TRUE(tools::AllowedSessionTools(p, 2).empty());
}

TEST(ToolProfilesTest, AgentsListOverridesTheDefaultsAndRefusalsNameItsKey) {
  ToolPolicy p;
  p.profile = ToolProfile::kCoding;
  tools::AgentPolicyOverride ops;
  ops.id = "ops";
  ops.profile = ToolProfile::kMessaging;
  ops.max_spawn_depth = 3;
  tools::AgentPolicyOverride other;
  other.id = "other";
  p.agents = {other, ops};
  ToolPolicy resolved = p.ForAgent("OPS");
  EXPECT_EQ(resolved.profile, ToolProfile::kMessaging);
  EXPECT_EQ(resolved.max_spawn_depth, 3);
  EXPECT_TRUE(resolved.agents.empty());
  EXPECT_EQ(tools::CheckToolAllowed(resolved, "sessions_spawn", 0).message(),
            "Tool sessions_spawn is not allowed by agents.list[1].tools.profile=messaging (add "
            "it to tools.alsoAllow to allow it).");
  EXPECT_EQ(tools::CheckToolAllowed(resolved, "sessions_send", 3).message(),
            "Tool sessions_send is not available to leaf sub-agents (spawn depth 3, "
            "agents.list[1].subagents.maxSpawnDepth=3).");
  ToolPolicy main = p.ForAgent("main");  // no entry: the defaults
  EXPECT_EQ(main.profile, ToolProfile::kCoding);
  EXPECT_OK(tools::CheckToolAllowed(main, "sessions_spawn", 0));
  p.agents[1].max_spawn_depth = 6;
  EXPECT_EQ(tools::ValidateToolPolicy(p).message(),
            "agents.list[1].subagents.maxSpawnDepth must be an integer from 1 to 5 (got 6)");
}

TEST(ToolProfilesTest, RefusalsNameTheSetting) {
  ToolPolicy messaging;
  messaging.profile = ToolProfile::kMessaging;
  EXPECT_EQ(tools::CheckToolAllowed(messaging, "sessions_spawn", 0).message(),
            "Tool sessions_spawn is not allowed by tools.profile=messaging (add it to "
            "tools.alsoAllow to allow it).");
  ToolPolicy full;
  EXPECT_EQ(tools::CheckToolAllowed(full, "sessions_send", 1).message(),
            "Tool sessions_send is not available to leaf sub-agents (spawn depth 1, "
            "agents.defaults.subagents.maxSpawnDepth=1).");
  full.max_spawn_depth = 3;
  EXPECT_EQ(tools::CheckToolAllowed(full, "sessions_send", 2).message(),
            "Tool sessions_send is not available to sub-agents (spawn depth 2, "
            "agents.defaults.subagents.maxSpawnDepth=3).");
  EXPECT_OK(tools::CheckToolAllowed(full, "subagents", 2));
  EXPECT_TRUE(tools::CheckToolAllowed(full, "exec", 0).IsNotFound());
  EXPECT_EQ(tools::ParseToolProfile("Coding"), ToolProfile::kCoding);
  EXPECT_FALSE(tools::ParseToolProfile("admin"));
  full.max_spawn_depth = 0;
  EXPECT_EQ(tools::ValidateToolPolicy(full).message(),
            "agents.defaults.subagents.maxSpawnDepth must be an integer from 1 to 5 (got 0)");
}

// ---- the matrix ---------------------------------------------------------------------------

constexpr char kCaller[] = "agent:main:main";
enum class Target { kSelf, kChild, kSibling, kForeign };
const char* KeyOf(Target t) {
  switch (t) {
    case Target::kSelf:
      return "agent:main:main";
    case Target::kChild:
      return "agent:main:subagent:kid";
    case Target::kSibling:
      return "agent:main:other";
    case Target::kForeign:
      return "agent:ops:main";
  }
  return "";
}

// docs/semantics.md, "Session tools", written out: who sees what, and the refusal that says
// why not.
std::string ExpectedRefusal(Visibility v, Target t, const std::string& action) {
  std::string prefix = "Session " + action + " visibility is restricted";
  if (t == Target::kSelf) return "";
  if (t == Target::kForeign) {
    return v == Visibility::kAll
               ? ""
               : prefix + ". Set tools.sessions.visibility=all to allow cross-agent access.";
  }
  if (v == Visibility::kSelf) {
    return prefix + " to the current session (tools.sessions.visibility=self).";
  }
  if (v == Visibility::kTree && t == Target::kSibling) {
    return prefix + " to the current session tree (tools.sessions.visibility=tree).";
  }
  return "";
}

bool ProfileHas(ToolProfile p, const std::string& tool) {
  if (p == ToolProfile::kMinimal) return tool == "session_status";
  return true;  // messaging, coding and full all have status, history and send
}

class VisibilityProfileMatrixTest : public MessagingTest {
 protected:
  void SetUp() override {
    MessagingTest::SetUp();
    Register(kCaller);
    Register(KeyOf(Target::kChild), std::string(kCaller));
    Register(KeyOf(Target::kSibling));
    Register(KeyOf(Target::kForeign));
  }
  void Configure(ToolProfile p, Visibility v) {
    options_messaging_.tool_policy.profile = p;
    options_messaging_.sessions.visibility = v;
    options_messaging_.sessions.agent_to_agent.enabled = true;
    OpenMessaging();
  }
  // "" when the call went through, else the refusal text (a forbidden send's error).
  std::string Outcome(const std::string& tool, Target t) {
    std::string params = std::string(R"({"sessionKey": ")") + KeyOf(t) + "\"";
    if (tool == "sessions_send") params += R"(, "message": "hi", "timeoutSeconds": 0)";
    params += "}";
    auto a = messaging_->CallTool(tool, Name(kCaller), Params(params));
    if (!a.ok()) {
      EXPECT_EQ(a.status().code(), Status::Code::kPermissionDenied) << a.status().ToString();
      return a.status().message();
    }
    if (tool == "sessions_send" && Str(a->result, "status") == "forbidden") {
      return Str(a->result, "error");
    }
    if (tool == "sessions_send") {
      EXPECT_EQ(Str(a->result, "status"), "accepted");
    }
    return "";
  }
};

TEST_F(VisibilityProfileMatrixTest, EveryCombination) {
  const std::pair<std::string, std::string> kTools[] = {
      {"session_status", "status"}, {"sessions_history", "history"}, {"sessions_send", "send"}};
  int cells = 0;
  for (ToolProfile p :
       {ToolProfile::kMinimal, ToolProfile::kCoding, ToolProfile::kMessaging, ToolProfile::kFull}) {
    for (Visibility v :
         {Visibility::kSelf, Visibility::kTree, Visibility::kAgent, Visibility::kAll}) {
      Configure(p, v);
      for (Target t : {Target::kSelf, Target::kChild, Target::kSibling, Target::kForeign}) {
        for (const auto& [tool, action] : kTools) {
          std::string expected = ProfileHas(p, tool)
                                     ? ExpectedRefusal(v, t, action)
                                     : "Tool " + tool + " is not allowed by tools.profile=" +
                                           tools::ToolProfileName(p) +
                                           " (add it to tools.alsoAllow to allow it).";
          EXPECT_EQ(Outcome(tool, t), expected) << "profile=" << tools::ToolProfileName(p)
                                                << " visibility=" << tools::VisibilityName(v)
                                                << " target=" << KeyOf(t) << " tool=" << tool;
          ++cells;
        }
      }
    }
  }
  EXPECT_EQ(cells, 4 * 4 * 4 * 3);
}

TEST_F(VisibilityProfileMatrixTest, SandboxedCallerIsClampedToItsTree) {
  Register(kCaller, std::nullopt, /*sandboxed=*/true);
  for (Visibility v : {Visibility::kAgent, Visibility::kAll}) {
    Configure(ToolProfile::kFull, v);
    EXPECT_EQ(Outcome("sessions_history", Target::kChild), "");
    EXPECT_EQ(Outcome("sessions_history", Target::kSibling),
              ExpectedRefusal(Visibility::kTree, Target::kSibling, "history"));
    EXPECT_EQ(Outcome("sessions_send", Target::kForeign),
              ExpectedRefusal(Visibility::kTree, Target::kForeign, "send"));
  }
}

TEST_F(VisibilityProfileMatrixTest, AgentToAgentNeedsEnablementAndTheAllowList) {
  options_messaging_.sessions.visibility = Visibility::kAll;
  options_messaging_.sessions.agent_to_agent.enabled = false;
  OpenMessaging();
  EXPECT_EQ(Outcome("sessions_history", Target::kForeign),
            "Agent-to-agent history is disabled. Set tools.agentToAgent.enabled=true to allow "
            "cross-agent access.");
  options_messaging_.sessions.agent_to_agent.enabled = true;
  options_messaging_.sessions.agent_to_agent.allow = {"main"};
  OpenMessaging();
  EXPECT_EQ(Outcome("sessions_send", Target::kForeign),
            "Agent-to-agent messaging denied by tools.agentToAgent.allow.");
  options_messaging_.sessions.agent_to_agent.allow = {"main", "op*"};
  OpenMessaging();
  EXPECT_EQ(Outcome("sessions_send", Target::kForeign), "");
}

TEST_F(VisibilityProfileMatrixTest, SubAgentCallersGetOnlyWhatTheirDepthAllows) {
  const std::string kid = KeyOf(Target::kChild);
  for (const char* tool : {"session_status", "sessions_list", "sessions_history", "sessions_send",
                           "sessions_spawn", "sessions_yield", "subagents"}) {
    EXPECT_EQ(CallError(tool, kid, R"({})").message(),
              std::string("Tool ") + tool +
                  " is not available to leaf sub-agents (spawn depth 1, "
                  "agents.defaults.subagents.maxSpawnDepth=1).");
  }
  options_messaging_.tool_policy.max_spawn_depth = 2;
  OpenMessaging();
  EXPECT_EQ(Call("sessions_list", kid, "{}").result.at("count"), 1);  // itself
  EXPECT_EQ(Str(Call("subagents", kid, "{}").result, "status"), "ok");
  EXPECT_EQ(Str(Call("sessions_spawn", kid, R"({"task": "t"})").result, "status"), "accepted");
  EXPECT_EQ(
      CallError("sessions_send", kid, R"({"sessionKey": "current", "message": "x"})").message(),
      "Tool sessions_send is not available to sub-agents (spawn depth 1, "
      "agents.defaults.subagents.maxSpawnDepth=2).");
}

}  // namespace
}  // namespace statewatch::testing
