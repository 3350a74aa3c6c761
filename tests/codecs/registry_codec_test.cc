// The registry's JSON: null clears, "" is refused, every field round-trips for the gateway,
// createdAt may not follow updatedAt, and the kind and channel derived from a key.
#include "codecs/registry_codec.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "status_matchers.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;

const SessionName kName{"main", "agent:main:main"};

Result<SessionRecord> Read(std::string_view body) {
  return tools::SessionRecordFromJson(json::parse(body), kName);
}

// Regression: {"model": null} kept the old value and {"model": ""} stored an empty model.
TEST(RegistryCodecTest, NullClearsAndEmptyStringsAreRefused) {
  auto r = Read(R"({"model": null, "lastThreadId": null, "inputTokens": null, "label": "x"})");
  ASSERT_OK(r);
  EXPECT_FALSE(r->model);
  EXPECT_EQ(r->label, "x");
  auto has = [&](SessionField f) {
    return std::find(r->clear.begin(), r->clear.end(), f) != r->clear.end();
  };
  EXPECT_TRUE(has(SessionField::kModel));
  EXPECT_TRUE(has(SessionField::kLastThreadId));
  EXPECT_TRUE(has(SessionField::kInputTokens));
  EXPECT_FALSE(has(SessionField::kLabel));
  EXPECT_EQ(Read(R"({"model": ""})").status().message(),
            R"(model must be a non-empty string, or null to clear it (got ""))");
  EXPECT_EQ(Read(R"({"parentSessionKey": ""})").status().message(),
            R"(parentSessionKey must be a non-empty string, or null to clear it (got ""))");
}

TEST(RegistryCodecTest, FieldsAreCheckedAndRoundTrip) {
  auto r = Read(R"({"sessionId": "s1", "kind": "group", "channel": "discord", "label": "ops",
                    "displayName": "Ops room", "model": "opus", "modelOverride": "haiku",
                    "thinking": "low", "runtime": "acp", "contextTokens": 100,
                    "totalTokens": 50, "inputTokens": 30, "outputTokens": 20,
                    "cacheReadTokens": 4, "cacheWriteTokens": 2,
                    "parentSessionKey": "AGENT:Main:main", "sandboxed": true,
                    "createdAt": 5, "updatedAt": 9, "lastChannel": "discord",
                    "lastTo": "c1", "lastAccountId": "bot", "lastThreadId": "t1",
                    "agentId": "main"})");
  ASSERT_OK(r);
  EXPECT_EQ(r->parent_session_key, "agent:main:main");  // canonical
  json::object out = tools::SessionRecordToJson(*r);
  for (const char* field :
       {"sessionId", "displayName", "modelOverride", "thinking", "runtime", "inputTokens",
        "cacheWriteTokens", "lastChannel", "lastTo", "lastAccountId", "lastThreadId"}) {
    EXPECT_TRUE(out.contains(field)) << field;
  }
  // A misspelt field is refused, never stored as nothing.
  EXPECT_EQ(Read(R"({"modle": "opus"})").status().message(),
            "unknown field modle (known: agentId, sessionId, kind, channel, label, displayName, "
            "model, modelOverride, thinking, runtime, parentSessionKey, lastChannel, lastTo, "
            "lastAccountId, lastThreadId, contextTokens, totalTokens, inputTokens, outputTokens, "
            "cacheReadTokens, cacheWriteTokens, sandboxed, createdAt, updatedAt)");
  EXPECT_EQ(Read(R"({"thinking": "max"})").status().message(),
            R"(thinking must be one of off, minimal, low, medium, high, xhigh (got "max"))");
  EXPECT_EQ(Read(R"({"runtime": "docker"})").status().message(),
            R"(runtime must be subagent or acp (got "docker"))");
  EXPECT_EQ(Read(R"({"inputTokens": -1})").status().message(),
            "inputTokens must be a non-negative integer (got -1)");
  EXPECT_EQ(Read(R"({"createdAt": 10, "updatedAt": 9})").status().message(),
            "createdAt (10) is later than updatedAt (9)");
}

TEST(RegistryCodecTest, KindAndChannelAreDerivedFromTheKey) {
  struct Case {
    const char* key;
    const char* kind;
    const char* channel;
  };
  const Case cases[] = {
      {"agent:main:main", "main", "unknown"},
      {"global", "main", "unknown"},
      {"agent:main:discord:group:ops", "group", "discord"},
      {"agent:ops:telegram:group:-1001:topic:9", "group", "telegram"},
      {"agent:main:slack:channel:c123:thread:1710000000.9999", "group", "slack"},
      {"agent:main:matrix:channel:!room:example.org", "group", "matrix"},
      {"agent:main:cron:nightly", "cron", "internal"},
      {"agent:main:hook:deploy", "hook", "internal"},
      {"agent:main:node:7", "node", "internal"},
      {"agent:main:subagent:x", "other", "unknown"},
      {"agent:main:telegram:dm:bob", "other", "unknown"},
      {"agent:main:agent:plugin:slack:channel:x", "group", "unknown"},  // nested: not "agent"
      {"agent:main:Agent:plugin:discord:group:ops", "group", "unknown"},
  };
  for (const Case& c : cases) {
    SessionName name{"main", c.key};
    EXPECT_EQ(tools::DeriveSessionKind(name), c.kind) << c.key;
    EXPECT_EQ(tools::DeriveSessionChannel(name), c.channel) << c.key;
  }
}

}  // namespace
}  // namespace statewatch::testing
