// Fixture for the session tools tests: a real engine in a temporary directory on a
// ManualClock (tests/engine/engine_fixture.h), plus helpers to register sessions, append
// transcripts and read JSON results.
#ifndef STATEWATCH_TESTS_TOOLS_TOOLS_FIXTURE_H_
#define STATEWATCH_TESTS_TOOLS_TOOLS_FIXTURE_H_

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_fixture.h"

namespace statewatch::testing {

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
    ASSERT_TRUE(engine_->UpsertSession(r).ok());
  }

  void Say(const std::string& key, const std::string& role, const boost::json::value& content,
           const std::string& tool = "") {
    TranscriptMessage m;
    m.role = role;
    m.content_json = boost::json::serialize(content);
    m.tool_name = tool;
    ASSERT_TRUE(engine_->AppendTranscript(Name(key), {m}).ok());
  }

  static boost::json::object Params(std::string_view json_text) {
    return boost::json::parse(json_text).as_object();
  }

  std::vector<Delivery> Deliveries(const std::string& agent = "") {
    auto d = engine_->PendingDeliveries(agent);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? *d : std::vector<Delivery>{};
  }
};

// The string at `key`, or "" when absent / not a string.
inline std::string Str(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_TOOLS_TOOLS_FIXTURE_H_
