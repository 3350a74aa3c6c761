// Unit tests of tools/visibility.h: the decision table of docs/semantics.md,
// "Session tools" without HTTP (tests/ has no tools/ directory of this issue's own; the
// end-to-end refusals are in session_tools_http_test.cc).
#include "tools/visibility.h"

#include <gtest/gtest.h>

#include "status_matchers.h"

namespace statewatch::tools {
namespace {

const SessionName kCaller{"main", "agent:main:main"};
const SessionName kChild{"main", "agent:main:subagent:c"};
const SessionName kSibling{"main", "agent:main:cron:nightly"};
const SessionName kOther{"ops", "agent:ops:main"};

Status Check(Visibility v, const SessionName& target, std::optional<std::string> parent = {},
             AgentToAgentPolicy policy = {}) {
  return CheckVisibility(SessionAction::kList, kCaller, v, policy, {target, parent});
}

TEST(VisibilityTest, DecisionTable) {
  for (Visibility v :
       {Visibility::kSelf, Visibility::kTree, Visibility::kAgent, Visibility::kAll}) {
    EXPECT_OK(Check(v, kCaller)) << VisibilityName(v);
  }
  EXPECT_FALSE(Check(Visibility::kSelf, kChild, kCaller.session_key).ok());
  EXPECT_OK(Check(Visibility::kTree, kChild, kCaller.session_key));
  EXPECT_FALSE(Check(Visibility::kTree, kSibling).ok());
  EXPECT_OK(Check(Visibility::kAgent, kSibling));
  EXPECT_FALSE(Check(Visibility::kAgent, kOther).ok());
  EXPECT_EQ(Check(Visibility::kTree, kSibling).message(),
            "Session list visibility is restricted to the current session tree "
            "(tools.sessions.visibility=tree).");
  // A child of the caller in another agent (ACP) is in its tree.
  EXPECT_OK(Check(Visibility::kTree, kOther, kCaller.session_key));
}

TEST(VisibilityTest, CrossAgentNeedsAllAndAgentToAgent) {
  EXPECT_EQ(Check(Visibility::kAll, kOther).message(),
            "Agent-to-agent listing is disabled. Set tools.agentToAgent.enabled=true to allow "
            "cross-agent visibility.");
  AgentToAgentPolicy on{true, {}};
  EXPECT_OK(Check(Visibility::kAll, kOther, {}, on));
  AgentToAgentPolicy only_main{true, {"main"}};
  EXPECT_EQ(Check(Visibility::kAll, kOther, {}, only_main).message(),
            "Agent-to-agent listing denied by tools.agentToAgent.allow.");
  AgentToAgentPolicy globbed{true, {"MAIN", "o*s"}};
  EXPECT_OK(Check(Visibility::kAll, kOther, {}, globbed));
}

TEST(VisibilityTest, SandboxClampNeverWidens) {
  EXPECT_EQ(EffectiveVisibility(Visibility::kAll, true), Visibility::kTree);
  EXPECT_EQ(EffectiveVisibility(Visibility::kAgent, true), Visibility::kTree);
  EXPECT_EQ(EffectiveVisibility(Visibility::kSelf, true), Visibility::kSelf);
  EXPECT_EQ(EffectiveVisibility(Visibility::kAll, false), Visibility::kAll);
  EXPECT_EQ(ParseVisibility("TREE"), Visibility::kTree);
  EXPECT_FALSE(ParseVisibility("everyone").has_value());
}

TEST(VisibilityTest, BareCallerOwnsOnlyItsOwnAgentsChildren) {
  SessionName bare{"main", "global"};
  VisibilityTarget mine{{"main", "agent:main:subagent:x"}, std::string("global")};
  VisibilityTarget theirs{{"ops", "agent:ops:subagent:y"}, std::string("global")};
  EXPECT_OK(CheckVisibility(SessionAction::kStatus, bare, Visibility::kTree, {}, mine));
  EXPECT_FALSE(CheckVisibility(SessionAction::kStatus, bare, Visibility::kTree, {}, theirs).ok());
}

}  // namespace
}  // namespace statewatch::tools
