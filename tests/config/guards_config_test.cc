// The `guards` section of the configuration file (config/guards_config.h): defaults on, every
// key applied, and each bad key or value refused naming its path and the value.
#include "config/guards_config.h"

#include <gtest/gtest.h>

#include "config/config_file.h"
#include "status_matchers.h"

namespace statewatch::tools {
namespace {

namespace json = boost::json;

Status Apply(std::string_view text, DaemonConfig* c) { return ApplyConfigText(text, c); }

std::string Refusal(std::string_view text) {
  DaemonConfig c;
  Status s = Apply(text, &c);
  EXPECT_TRUE(s.IsInvalidArgument()) << text << " -> " << s.ToString();
  return s.message();
}

TEST(GuardsConfigTest, DefaultsAreOn) {
  DaemonConfig c;
  ASSERT_OK(Apply("{}", &c));
  EXPECT_TRUE(c.guards.enabled);
  EXPECT_GT(c.guards.send_burst, 0);
  EXPECT_GT(c.guards.repeat_max_identical, 0);
  EXPECT_GT(c.guards.spawn_burst, 0);
  EXPECT_GT(c.guards.max_open_runs_per_session, 0);
  EXPECT_EQ(c.guards, GuardOptions{});
}

TEST(GuardsConfigTest, EveryKeyApplies) {
  DaemonConfig c;
  ASSERT_OK(Apply(R"({"guards": {
      "enabled": false,
      "send": {"perMinute": 120, "burst": 4},
      "repeat": {"maxIdentical": 5, "windowMs": 30000},
      "spawn": {"perMinute": 2, "burst": 0},
      "openRuns": {"maxPerSession": 7},
      "maxTrackedKeys": 500,   // comments and trailing commas, as everywhere in the file
  }})",
                  &c));
  EXPECT_FALSE(c.guards.enabled);
  EXPECT_EQ(c.guards.send_per_minute, 120);
  EXPECT_EQ(c.guards.send_burst, 4);
  EXPECT_EQ(c.guards.repeat_max_identical, 5);
  EXPECT_EQ(c.guards.repeat_window_ms, 30000);
  EXPECT_EQ(c.guards.spawn_per_minute, 2);
  EXPECT_EQ(c.guards.spawn_burst, 0);
  EXPECT_EQ(c.guards.max_open_runs_per_session, 7);
  EXPECT_EQ(c.guards.max_tracked_keys, 500);
  // What `config check` prints is what was applied.
  json::object printed = DaemonConfigToJson(c);
  EXPECT_EQ(json::serialize(printed.at("guards")),
            R"({"enabled":false,"send":{"perMinute":120,"burst":4},)"
            R"("repeat":{"maxIdentical":5,"windowMs":30000},"spawn":{"perMinute":2,"burst":0},)"
            R"("openRuns":{"maxPerSession":7},"maxTrackedKeys":500})");
}

TEST(GuardsConfigTest, AKeyLeftOutKeepsItsValue) {
  DaemonConfig c;
  ASSERT_OK(Apply(R"({"guards": {"send": {"burst": 2}}})", &c));
  EXPECT_EQ(c.guards.send_burst, 2);
  EXPECT_EQ(c.guards.send_per_minute, GuardOptions{}.send_per_minute);
  EXPECT_TRUE(c.guards.enabled);
}

TEST(GuardsConfigTest, ErrorsNameTheKeyAndTheValue) {
  EXPECT_EQ(Refusal(R"({"guards": {"send": {"burst": -1}}})"),
            "guards.send.burst must be an integer from 0 to 100000 (got -1)");
  EXPECT_EQ(Refusal(R"({"guards": {"send": {"perMinute": 0}}})"),
            "guards.send.perMinute must be an integer from 1 to 600000 (got 0)");
  EXPECT_EQ(Refusal(R"({"guards": {"spawn": {"perMinute": "fast"}}})"),
            "guards.spawn.perMinute must be an integer from 1 to 600000 (got \"fast\")");
  EXPECT_EQ(Refusal(R"({"guards": {"repeat": {"maxIdentical": true}}})"),
            "guards.repeat.maxIdentical must be an integer from 0 to 1000 (got true)");
  EXPECT_EQ(Refusal(R"({"guards": {"repeat": {"windowMs": 0}}})"),
            "guards.repeat.windowMs must be an integer from 1 to 604800000 (got 0)");
  EXPECT_EQ(Refusal(R"({"guards": {"openRuns": {"maxPerSession": 100001}}})"),
            "guards.openRuns.maxPerSession must be an integer from 0 to 100000 (got 100001)");
  EXPECT_EQ(Refusal(R"({"guards": {"maxTrackedKeys": 0}})"),
            "guards.maxTrackedKeys must be an integer from 1 to 10000000 (got 0)");
  EXPECT_EQ(Refusal(R"({"guards": {"enabled": "yes"}})"),
            "guards.enabled must be true or false (got \"yes\")");
  EXPECT_EQ(Refusal(R"({"guards": {"send": {"rate": 5}}})"),
            "unknown key guards.send.rate (known: perMinute, burst)");
  EXPECT_EQ(Refusal(R"({"guards": {"loops": {}}})"),
            "unknown key guards.loops (known: enabled, send, repeat, spawn, openRuns, "
            "maxTrackedKeys)");
  EXPECT_EQ(Refusal(R"({"guards": []})"), "guards must be an object (got [])");
  EXPECT_EQ(Refusal(R"({"guards": {"openRuns": 3}})"), "guards.openRuns must be an object (got 3)");
}

TEST(GuardsConfigTest, TheSectionAloneAppliesOntoOptions) {
  GuardOptions o;
  ASSERT_OK(ApplyGuardsSection(json::parse(R"({"send": {"burst": 1}})"), &o));
  EXPECT_EQ(o.send_burst, 1);
  EXPECT_EQ(json::serialize(GuardsSectionToJson(GuardOptions{})),
            R"({"enabled":true,"send":{"perMinute":30,"burst":10},)"
            R"("repeat":{"maxIdentical":3,"windowMs":600000},"spawn":{"perMinute":12,"burst":20},)"
            R"("openRuns":{"maxPerSession":32},"maxTrackedKeys":10000})");
}

}  // namespace
}  // namespace statewatch::tools
