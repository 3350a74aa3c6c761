// sessions_history against a real engine: resolution by key and session id, visibility
// refusals, tool results, parameter validation; the transcript message codec.
#include "tools/session_history.h"

#include <gtest/gtest.h>

#include "status_matchers.h"
#include "tools/tools_fixture.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;
using tools::SessionsHistory;
using tools::SessionToolsOptions;
using tools::Visibility;

class SessionHistoryTest : public ToolsTest {
 protected:
  void SetUp() override {
    ToolsTest::SetUp();
    Register("agent:main:main");
    Register("agent:main:subagent:kid", "agent:main:main", false, "kid", "sess-kid");
    Register("agent:main:other");
    Register("agent:ops:main");
    Say("agent:main:subagent:kid", "user", "do the thing");
    Say("agent:main:subagent:kid", "assistant",
        "<think>hmm</think>done, key sk-abcdefghij0123456789klmnop");
    Say("agent:main:subagent:kid", "tool", "raw tool output", "bash");
    Say("agent:main:other", "user", "hello");
    Say("agent:ops:main", "user", "ops");
  }

  Result<json::object> History(const std::string& caller, std::string_view params,
                               Visibility v = Visibility::kTree, bool a2a = false) {
    SessionToolsOptions o;
    o.visibility = v;
    o.agent_to_agent.enabled = a2a;
    return SessionsHistory(*engine_, o, Name(caller), Params(params));
  }
};

TEST_F(SessionHistoryTest, ServesTheCleanedTranscriptOfAChild) {
  auto r = History("agent:main:main", R"({"sessionKey": "agent:main:subagent:kid"})");
  ASSERT_OK(r);
  EXPECT_EQ(Str(*r, "sessionKey"), "agent:main:subagent:kid");
  const json::array& m = r->at("messages").as_array();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[1].at("content"), "done, key [REDACTED]");
  EXPECT_EQ(r->at("contentRedacted"), true);
  EXPECT_EQ(r->at("truncated"), false);
  EXPECT_EQ(r->at("droppedMessages"), 0);
  EXPECT_EQ(r->at("contentTruncated"), false);
  EXPECT_EQ(r->at("bytes").to_number<uint64_t>(), json::serialize(m).size());

  auto with_tools = History("agent:main:main",
                            R"({"sessionKey": "agent:main:subagent:kid", "includeTools": true})");
  ASSERT_OK(with_tools);
  EXPECT_EQ(with_tools->at("messages").as_array().size(), 3u);

  auto limited =
      History("agent:main:main", R"({"sessionKey": "agent:main:subagent:kid", "limit": "1"})");
  ASSERT_OK(limited);
  EXPECT_EQ(limited->at("messages").as_array().size(), 0u);  // the last one is a tool result
}

TEST_F(SessionHistoryTest, ResolvesSessionIdsAndCurrent) {
  auto by_id = History("agent:main:main", R"({"sessionKey": "sess-kid"})");
  ASSERT_OK(by_id);
  EXPECT_EQ(Str(*by_id, "sessionKey"), "agent:main:subagent:kid");
  auto self = History("agent:main:subagent:kid", R"({"sessionKey": "current"})");
  ASSERT_OK(self);
  EXPECT_EQ(Str(*self, "sessionKey"), "agent:main:subagent:kid");
}

TEST_F(SessionHistoryTest, UnknownSessionsAreNotFoundWithTheExactMessage) {
  for (const char* key : {"agent:main:nope", "no-such-id", "agent::bad"}) {
    auto r = History("agent:main:main", std::string(R"({"sessionKey": ")") + key + "\"}");
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsNotFound());
    EXPECT_EQ(r.status().message(), std::string("Session not found: ") + key +
                                        " (use the full sessionKey from sessions_list)");
  }
}

TEST_F(SessionHistoryTest, VisibilityRefusalsNameTheSetting) {
  auto tree = History("agent:main:main", R"({"sessionKey": "agent:main:other"})");
  EXPECT_EQ(tree.status().message(),
            "Session history visibility is restricted to the current session tree "
            "(tools.sessions.visibility=tree).");
  auto self =
      History("agent:main:main", R"({"sessionKey": "agent:main:subagent:kid"})", Visibility::kSelf);
  EXPECT_EQ(self.status().message(),
            "Session history visibility is restricted to the current session "
            "(tools.sessions.visibility=self).");
  auto cross =
      History("agent:main:main", R"({"sessionKey": "agent:ops:main"})", Visibility::kAgent);
  EXPECT_EQ(cross.status().message(),
            "Session history visibility is restricted. Set tools.sessions.visibility=all to "
            "allow cross-agent access.");
  EXPECT_OK(
      History("agent:main:main", R"({"sessionKey": "agent:main:other"})", Visibility::kAgent));
  EXPECT_OK(History("agent:main:main", R"({"sessionKey": "agent:ops:main"})", Visibility::kAll,
                    /*a2a=*/true));
}

TEST_F(SessionHistoryTest, SandboxedCallerIsClampedToItsTree) {
  Register("agent:main:main", std::nullopt, /*sandboxed=*/true);
  auto r = History("agent:main:main", R"({"sessionKey": "agent:main:other"})", Visibility::kAll);
  EXPECT_EQ(r.status().code(), Status::Code::kPermissionDenied);
  EXPECT_NE(r.status().message().find("visibility=tree"), std::string::npos);
  EXPECT_OK(
      History("agent:main:main", R"({"sessionKey": "agent:main:subagent:kid"})", Visibility::kAll));
}

TEST_F(SessionHistoryTest, BadParametersAreRefusedBeforeAnyWork) {
  EXPECT_EQ(History("agent:main:main", "{}").status().message(), "sessionKey is required");
  EXPECT_EQ(
      History("agent:main:main", R"({"sessionKey": "current", "limit": 0})").status().message(),
      "limit must be a positive integer");
  EXPECT_EQ(
      History("agent:main:main", R"({"sessionKey": "current", "limit": 1.5})").status().message(),
      "limit must be a positive integer");
  EXPECT_EQ(History("agent:main:main", R"({"sessionKey": "current", "includeTools": "yes"})")
                .status()
                .message(),
            R"(includeTools must be a boolean (got "yes"))");
}

TEST(TranscriptCodecTest, ReadsMessagesAndNamesTheBadField) {
  auto ok = tools::TranscriptMessagesFromJson(json::parse(
      R"({"messages": [{"role": "user", "content": "hi"},
                       {"role": "assistant", "content": [{"type": "text", "text": "yo"}],
                        "toolName": "x", "timestamp": 5},
                       {"role": "assistant", "content": {"type": "text", "text": "one"}}]})"));
  ASSERT_OK(ok);
  ASSERT_EQ(ok->size(), 3u);
  EXPECT_EQ((*ok)[0].content_json, "\"hi\"");
  EXPECT_EQ((*ok)[1].tool_name, "x");
  EXPECT_EQ((*ok)[1].timestamp_ms, 5);
  EXPECT_EQ((*ok)[2].content_json, R"([{"type":"text","text":"one"}])");

  auto single =
      tools::TranscriptMessagesFromJson(json::parse(R"({"role": "user", "content": "x"})"));
  ASSERT_OK(single);
  EXPECT_EQ(single->size(), 1u);

  auto bad = tools::TranscriptMessagesFromJson(
      json::parse(R"([{"role": "user", "content": "a"}, {"role": "user", "content": 7}])"));
  EXPECT_EQ(bad.status().message(),
            "messages[1].content must be a string or an array of content blocks (got 7)");
  auto no_role = tools::TranscriptMessagesFromJson(json::parse(R"([{"content": "a"}])"));
  EXPECT_EQ(no_role.status().message(), "messages[0].role is required");
}

}  // namespace
}  // namespace statewatch::testing
