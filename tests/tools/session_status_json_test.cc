// SessionStatusJson — the daemon's session_status answer written as text from rendered rows —
// is byte for byte json::serialize(SessionStatus(...)), for random pages of random events
// (escapes, non-ASCII text, payloads with and without the kept keys), first read and
// cached read alike, and for the error answers.
#include <gtest/gtest.h>

#include <random>

#include "codecs/json_codec.h"
#include "status_matchers.h"
#include "tools/session_tools.h"
#include "tools/tools_fixture.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;

class SessionStatusJsonTest : public ToolsTest {
 protected:
  std::string Dom(const SessionName& caller, const json::object& params) {
    auto r = tools::SessionStatus(*engine_, {}, caller, params);
    return r.ok() ? json::serialize(*r) : "error: " + r.status().ToString();
  }
  std::string Lean(const SessionName& caller, const json::object& params) {
    auto r = tools::SessionStatusJson(*engine_, {}, caller, params);
    return r.ok() ? *r : "error: " + r.status().ToString();
  }
};

std::string RandomText(std::mt19937_64& rng) {
  static const char* kPieces[] = {"human message via telegram",
                                  "\"quoted\"",
                                  "back\\slash",
                                  "tab\there",
                                  "ctl\x01",
                                  "caf\xc3\xa9",
                                  "\xe2\x9c\x93 done",
                                  "/slash/",
                                  "<tag>",
                                  " ",
                                  "0"};
  std::string s;
  int n = static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) s += kPieces[rng() % std::size(kPieces)];
  return s;
}

std::string RandomPayload(std::mt19937_64& rng) {
  switch (rng() % 5) {
    case 0:
      return "";
    case 1:
      return R"({"channel":"telegram"})";
    case 2:
      return R"({"outcome":"error","turns":3,"secret":"never shown"})";
    case 3:
      return R"({"other":{"nested":[1,2.5,true,null]}})";
    default:
      return R"({"turns":12345678901,"channel":"caf\u00e9 \"x\""})";
  }
}

TEST_F(SessionStatusJsonTest, LeanAnswerEqualsTheDomAnswerForRandomPages) {
  const std::string parent = "agent:main:main";
  const std::string child = "agent:main:subagent:json";
  Register(parent);
  Register(child, parent, /*sandboxed=*/false, "a label");
  std::mt19937_64 rng(7);
  static const char* kKinds[] = {"human_direct_message", "goal_changed", "run_failed",
                                 "run_completed",        "compacted",    "created"};
  for (int i = 0; i < 260; ++i) {
    EventInput in =
        Input(child, kKinds[rng() % std::size(kKinds)], static_cast<ActorType>(rng() % 3));
    if (rng() % 2) in.actor_id = parent;
    if (rng() % 2) in.run_id = "run-" + std::to_string(rng() % 1000);
    in.summary = RandomText(rng);
    in.payload_json = RandomPayload(rng);
    clock_->Advance(static_cast<int64_t>(rng() % 5000));
    Rec(in);
  }
  auto head = engine_->StateVersion(Name(child));
  ASSERT_OK(head);
  for (int round = 0; round < 60; ++round) {
    Sequence since = rng() % (*head + 3);
    json::object params;
    params["sessionKey"] = child;
    if (rng() % 3 == 0) {
      params["changesSince"] = std::to_string(since);  // a numeric string is accepted
    } else {
      params["changesSince"] = since;
    }
    // Lean first (rendering and memoizing rows), then the DOM, then lean again (cached).
    std::string lean = Lean(Name(parent), params);
    ASSERT_EQ(lean, Dom(Name(parent), params)) << "changesSince " << since;
    ASSERT_EQ(Lean(Name(parent), params), lean) << "changesSince " << since << " (cached)";
  }
}

TEST_F(SessionStatusJsonTest, WithoutChangesSinceAndOnErrorsBothAgree) {
  const std::string parent = "agent:main:main";
  Register(parent);
  Human(parent);
  std::vector<std::string> cases = {
      R"({})",
      R"({"changesSince": ""})",
      R"({"changesSince": -1})",
      R"({"changesSince": 0})",
      R"({"sessionKey": "agent:main:subagent:nobody"})",
      R"({"sessionKey": "agent:main:subagent:nobody", "changesSince": 0})",
  };
  for (const std::string& c : cases) {
    EXPECT_EQ(Lean(Name(parent), Params(c)), Dom(Name(parent), Params(c))) << c;
  }
}

TEST(AppendChangesPageJsonTest, EqualsTheSerializedDom) {
  ChangesView empty;
  empty.truncated = true;
  empty.earliest_available_sequence = 9007199254740991u;
  empty.history_gap = true;
  std::string out = "prefix:";
  tools::AppendChangesPageJson(empty, &out);
  EXPECT_EQ(out, "prefix:" + json::serialize(tools::ChangesPageToJson(empty)));
}

}  // namespace
}  // namespace statewatch::testing
