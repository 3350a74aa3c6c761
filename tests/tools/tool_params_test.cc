// The shared readers of session-tool parameters: what counts as "not given", which integers
// are accepted, and the byte-exact refusal texts.
#include "tools/tool_params.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/tool_profiles.h"
#include "tools/visibility.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;

json::object Params(std::string_view text) { return json::parse(text).as_object(); }

TEST(ToolParamsTest, TrimAndLower) {
  struct Case {
    std::string_view in, trimmed, lowered;
  };
  const Case cases[] = {
      {"", "", ""},          {" \t\r\n", "", " \t\r\n"},  {"  Main \n", "Main", "  main \n"},
      {"a b", "a b", "a b"}, {"\vX\v", "\vX\v", "\vx\v"},  // only " \t\r\n" is blank
      {"ÄBC", "ÄBC", "Äbc"},                               // ASCII only
  };
  for (const Case& c : cases) {
    EXPECT_EQ(tools::Trim(c.in), c.trimmed) << "[" << c.in << "]";
    EXPECT_EQ(tools::Lower(c.in), c.lowered) << "[" << c.in << "]";
  }
}

TEST(ToolParamsTest, ParamTreatsAbsentNullAndBlankAsNotGiven) {
  const json::object p = Params(R"({"n": null, "b": " \t", "s": " x ", "z": 0, "f": false})");
  EXPECT_EQ(tools::Param(p, "missing"), nullptr);
  EXPECT_EQ(tools::Param(p, "n"), nullptr);
  EXPECT_EQ(tools::Param(p, "b"), nullptr);
  ASSERT_NE(tools::Param(p, "s"), nullptr);
  EXPECT_EQ(tools::Param(p, "s")->as_string(), " x ");  // returned untrimmed
  EXPECT_NE(tools::Param(p, "z"), nullptr);
  EXPECT_NE(tools::Param(p, "f"), nullptr);
}

TEST(ToolParamsTest, IntegerValue) {
  struct Case {
    std::string_view json;
    std::optional<int64_t> want;
  };
  const Case cases[] = {
      {"0", 0},
      {"-7", -7},
      {"12.0", 12},
      {"12.5", std::nullopt},
      {"9007199254740991", int64_t{9007199254740991}},
      {"9007199254740992", int64_t{9007199254740992}},  // an int64 is taken whole
      {"18446744073709551615", std::nullopt},           // a uint64 above 2^53 - 1
      {"9007199254740992.0", std::nullopt},             // a double above 2^53 - 1
      {"1e300", std::nullopt},
      {R"("42")", 42},
      {R"(" 42\n")", 42},
      {R"("999999999999999")", int64_t{999999999999999}},  // 15 digits
      {R"("1000000000000000")", std::nullopt},             // 16 digits
      {R"("-1")", std::nullopt},
      {R"("+1")", std::nullopt},
      {R"("1e3")", std::nullopt},
      {R"("4 2")", std::nullopt},
      {R"("")", std::nullopt},
      {R"("   ")", std::nullopt},
      {"true", std::nullopt},
      {"null", std::nullopt},
      {"[1]", std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(tools::IntegerValue(json::parse(c.json)), c.want) << c.json;
  }
}

TEST(ToolParamsTest, ReadersAndTheirRefusals) {
  struct Case {
    std::string_view params;
    std::string_view error;  // "" = OK
  };
  const auto string_of = [](const json::object& p) { return tools::StringParam(p, "v").status(); };
  const auto bool_of = [](const json::object& p) { return tools::BoolParam(p, "v").status(); };
  const auto int_of = [](const json::object& p) {
    return tools::IntegerParam(p, "v", 1, 20).status();
  };
  const auto int_msg = [](const json::object& p) {
    return tools::IntegerParam(p, "v", 1, 20, "v must be a positive integer").status();
  };
  const auto enum_of = [](const json::object& p) {
    return tools::EnumParam(p, "v", {"list", "kill"}, "action must be list or kill").status();
  };
  struct Reader {
    std::function<Status(const json::object&)> read;
    std::vector<Case> cases;
  };
  const Reader readers[] = {
      {string_of, {{R"({})", ""}, {R"({"v": " a "})", ""}, {R"({"v": 1})", "v must be a string"}}},
      {bool_of,
       {{R"({"v": ""})", ""}, {R"({"v": true})", ""}, {R"({"v": "true"})", "v must be a boolean"}}},
      {int_of,
       {{R"({"v": null})", ""},
        {R"({"v": "20"})", ""},
        {R"({"v": 0})", "v must be an integer from 1 to 20"},
        {R"({"v": 21})", "v must be an integer from 1 to 20"},
        {R"({"v": "x"})", "v must be an integer from 1 to 20"}}},
      {int_msg, {{R"({"v": 1})", ""}, {R"({"v": -1})", "v must be a positive integer"}}},
      {enum_of,
       {{R"({"v": " KILL "})", ""},
        {R"({"v": "steer"})", R"(action must be list or kill (got "steer"))"}}},
  };
  for (const Reader& r : readers) {
    for (const Case& c : r.cases) {
      Status s = r.read(Params(c.params));
      if (c.error.empty()) {
        EXPECT_TRUE(s.ok()) << c.params << ": " << s.ToString();
      } else {
        EXPECT_TRUE(s.IsInvalidArgument()) << c.params;
        EXPECT_EQ(s.message(), c.error) << c.params;
      }
    }
  }
}

TEST(ToolParamsTest, ReadValues) {
  const json::object p = Params(R"({"s": " Hi ", "b": false, "i": "7", "e": "Kill"})");
  EXPECT_EQ(*tools::StringParam(p, "s"), std::optional<std::string>("Hi"));
  EXPECT_EQ(*tools::BoolParam(p, "b"), std::optional<bool>(false));
  EXPECT_EQ(*tools::IntegerParam(p, "i", 0, 10), std::optional<int64_t>(7));
  EXPECT_EQ(*tools::EnumParam(p, "e", {"kill"}, "x"), std::optional<std::string>("kill"));
  EXPECT_EQ(*tools::StringParam(p, "absent"), std::nullopt);

  std::optional<int64_t> out = 3;
  EXPECT_TRUE(tools::Assign(tools::IntegerParam(p, "absent", 0, 1), &out).ok());
  EXPECT_EQ(out, std::nullopt);
  out = 3;
  EXPECT_FALSE(tools::Assign(tools::IntegerParam(p, "i", 0, 1), &out).ok());
  EXPECT_EQ(out, 3);  // untouched on error
}

TEST(ToolParamsTest, NameTables) {
  EXPECT_STREQ(tools::VisibilityName(tools::Visibility::kAgent), "agent");
  EXPECT_STREQ(tools::VisibilityName(static_cast<tools::Visibility>(9)), "tree");
  EXPECT_EQ(tools::ParseVisibility("ALL"), tools::Visibility::kAll);
  EXPECT_EQ(tools::ParseVisibility(" all"), std::nullopt);  // no trimming
  EXPECT_STREQ(tools::ToolProfileName(tools::ToolProfile::kCoding), "coding");
  EXPECT_STREQ(tools::ToolProfileName(static_cast<tools::ToolProfile>(9)), "full");
  EXPECT_EQ(tools::ParseToolProfile("Messaging"), tools::ToolProfile::kMessaging);
  EXPECT_EQ(tools::ParseToolProfile("everything"), std::nullopt);
}

}  // namespace
}  // namespace statewatch::testing
