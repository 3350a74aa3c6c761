// Session key parsing (docs/semantics.md, "Sessions and their keys") and the notice context
// key codec ("One notice, not many").
#include "statewatch/session_key.h"

#include <gtest/gtest.h>

#include "status_matchers.h"

namespace statewatch {
namespace {

TEST(SessionKeyTest, AgentScopedKeysParseStrictly) {
  auto k = ParseSessionKey("Agent: Main :slack:channel:c123:thread:1710000000.9999");
  ASSERT_OK(k);
  EXPECT_TRUE(k->agent_scoped);
  EXPECT_EQ(k->agent_id, "main");
  EXPECT_EQ(k->rest, "slack:channel:c123:thread:1710000000.9999");
  EXPECT_EQ(k->canonical, "agent:main:slack:channel:c123:thread:1710000000.9999");
  for (const char* bad : {"agent::x", "agent:main", "agent:main:", "agent:main::x",
                          "agent:bad id:x", "agent:-x:y", ""}) {
    EXPECT_FALSE(ParseSessionKey(bad).ok()) << bad;
  }
  EXPECT_OK(ParseSessionKey(std::string("agent:") + std::string(64, 'a') + ":x"));
  EXPECT_FALSE(ParseSessionKey(std::string("agent:") + std::string(65, 'a') + ":x").ok());
}

TEST(SessionKeyTest, BareKeys) {
  auto k = ParseSessionKey("global");
  ASSERT_OK(k);
  EXPECT_FALSE(k->agent_scoped);
  auto s = ResolveSession("global", "");
  ASSERT_OK(s);
  EXPECT_EQ(s->agent_id, "main");
  EXPECT_EQ(ResolveSession("global", "OPS")->agent_id, "ops");
  EXPECT_FALSE(ResolveSession("agent:main:x", "ops").ok());  // conflicting agent
}

TEST(SessionKeyTest, SubagentDepthAndThreads) {
  auto k = *ParseSessionKey("agent:main:subagent:a:subagent:b");
  EXPECT_TRUE(IsSubagentKey(k));
  EXPECT_EQ(SubagentDepth(k), 2);
  EXPECT_FALSE(IsSubagentKey(*ParseSessionKey("agent:main:main")));
  EXPECT_EQ(ThreadParentKey("agent:main:slack:channel:c1:THREAD:17.9"),
            "agent:main:slack:channel:c1");
  EXPECT_EQ(ThreadParentKey("agent:ops:telegram:group:-1:topic:5"), "agent:ops:telegram:group:-1");
  EXPECT_FALSE(ThreadParentKey("agent:main:main").has_value());
}

TEST(SessionKeyTest, ContextKeyRoundTripAndStrictDecoding) {
  std::string key = "agent:main:subagent:é";
  std::string ctx = EncodeContextKey(key);
  EXPECT_EQ(ctx.rfind("session-state:", 0), 0u);
  EXPECT_EQ(DecodeContextKey(ctx), key);
  EXPECT_EQ(EncodeContextKey("ab"), "session-state:6162");
  EXPECT_FALSE(DecodeContextKey("session-state:").has_value());
  EXPECT_FALSE(DecodeContextKey("session-state:616").has_value());
  EXPECT_FALSE(DecodeContextKey("session-state:zz").has_value());
  EXPECT_FALSE(DecodeContextKey("session-state:c328").has_value());  // invalid UTF-8
  EXPECT_FALSE(DecodeContextKey("other:6162").has_value());
  EXPECT_EQ(DecodeContextKey("session-state:efbbbf61"), "\xEF\xBB\xBF" "a");  // BOM kept
}

TEST(SessionKeyTest, NoticeTextIsByteExact) {
  EXPECT_EQ(NoticeText("agent:main:main", 14),
            "Session \"agent:main:main\" changed (other actor). Reconcile before acting: "
            "session_status sessionKey \"agent:main:main\" changesSince 14.");
}

}  // namespace
}  // namespace statewatch
