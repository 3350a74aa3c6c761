// The one set of JSON field readers (tool parameters and gateway bodies): what counts as "not
// given", which integers are accepted, and the refusal texts.
#include "codecs/json_fields.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/ascii.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;

json::object Params(std::string_view text) { return json::parse(text).as_object(); }

TEST(JsonFieldsTest, TrimAndLower) {
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
    EXPECT_EQ(ascii::AsciiToLower(c.in), c.lowered) << "[" << c.in << "]";
  }
}

TEST(JsonFieldsTest, ParamTreatsAbsentNullAndBlankAsNotGiven) {
  const json::object p = Params(R"({"n": null, "b": " \t", "s": " x ", "z": 0, "f": false})");
  EXPECT_EQ(tools::Param(p, "missing"), nullptr);
  EXPECT_EQ(tools::Param(p, "n"), nullptr);
  EXPECT_EQ(tools::Param(p, "b"), nullptr);
  ASSERT_NE(tools::Param(p, "s"), nullptr);
  EXPECT_EQ(tools::Param(p, "s")->as_string(), " x ");  // returned untrimmed
  EXPECT_NE(tools::Param(p, "z"), nullptr);
  EXPECT_NE(tools::Param(p, "f"), nullptr);
}

TEST(JsonFieldsTest, IntegerValue) {
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
      {"-9007199254740991", int64_t{-9007199254740991}},
      {"9007199254740992", std::nullopt},  // beyond 2^53 - 1: refused, not rounded
      {"-9007199254740992", std::nullopt},
      {"18446744073709551615", std::nullopt},  // a uint64 above 2^53 - 1
      {"9007199254740992.0", std::nullopt},    // a double above 2^53 - 1
      {"1e300", std::nullopt},
      {R"("42")", 42},
      {R"(" 42\n")", 42},
      {R"("999999999999999")", int64_t{999999999999999}},    // 15 digits
      {R"("9007199254740991")", int64_t{9007199254740991}},  // 16 digits
      {R"("9007199254740992")", std::nullopt},               // beyond 2^53 - 1
      {R"("10000000000000000")", std::nullopt},              // 17 digits
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

TEST(JsonFieldsTest, ReadersAndTheirRefusals) {
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
      {string_of,
       {{R"({})", ""}, {R"({"v": " a "})", ""}, {R"({"v": 1})", "v must be a string (got 1)"}}},
      {bool_of,
       {{R"({"v": ""})", ""},
        {R"({"v": true})", ""},
        {R"({"v": "true"})", R"(v must be a boolean (got "true"))"}}},
      {int_of,
       {{R"({"v": null})", ""},
        {R"({"v": "20"})", ""},
        {R"({"v": 0})", "v must be an integer from 1 to 20 (got 0)"},
        {R"({"v": 21})", "v must be an integer from 1 to 20 (got 21)"},
        {R"({"v": "x"})", R"(v must be an integer from 1 to 20 (got "x"))"}}},
      {int_msg, {{R"({"v": 1})", ""}, {R"({"v": -1})", "v must be a positive integer"}}},
      {enum_of,
       {{R"({"v": " KILL "})", ""},
        {R"({"v": "steer"})", R"(action must be list or kill (got "steer"))"}}},
  };
  for (const Reader& r : readers) {
    for (const Case& c : r.cases) {
      Status s = r.read(Params(c.params));
      if (c.error.empty()) {
        EXPECT_OK(s) << c.params;
      } else {
        EXPECT_TRUE(s.IsInvalidArgument()) << c.params;
        EXPECT_EQ(s.message(), c.error) << c.params;
      }
    }
  }
}

TEST(JsonFieldsTest, ReadValues) {
  const json::object p = Params(R"({"s": " Hi ", "b": false, "i": "7", "e": "Kill"})");
  EXPECT_EQ(*tools::StringParam(p, "s"), std::optional<std::string>("Hi"));
  EXPECT_EQ(*tools::BoolParam(p, "b"), std::optional<bool>(false));
  EXPECT_EQ(*tools::IntegerParam(p, "i", 0, 10), std::optional<int64_t>(7));
  EXPECT_EQ(*tools::EnumParam(p, "e", {"kill"}, "x"), std::optional<std::string>("kill"));
  EXPECT_EQ(*tools::StringParam(p, "absent"), std::nullopt);

  std::optional<int64_t> out = 3;
  EXPECT_OK(tools::Assign(tools::IntegerParam(p, "absent", 0, 1), &out));
  EXPECT_EQ(out, std::nullopt);
  out = 3;
  EXPECT_FALSE(tools::Assign(tools::IntegerParam(p, "i", 0, 1), &out).ok());
  EXPECT_EQ(out, 3);  // untouched on error
}

TEST(JsonFieldsTest, BodyFieldsKeepEmptyStringsAndRefuseStringIntegers) {
  json::object o = Params(R"({"s": "", "n": null, "i": "12", "b": 1, "k": 7})");
  EXPECT_EQ(*tools::StringField(o, "s"), std::optional<std::string>(""));  // a value
  EXPECT_EQ(*tools::StringField(o, "n"), std::nullopt);                    // null: not given
  EXPECT_EQ(tools::RequiredStringField(o, "s").status().message(),
            R"(s must be a non-empty string (got ""))");
  EXPECT_EQ(tools::RequiredStringField(o, "absent").status().message(), "absent is required");
  EXPECT_EQ(tools::IntegerField(o, "i", 0, 100, "a non-negative integer").status().message(),
            R"(i must be a non-negative integer (got "12"))");
  EXPECT_EQ(*tools::IntegerField(o, "k", 0, 100, "a count"), std::optional<int64_t>(7));
  EXPECT_EQ(tools::BoolField(o, "b").status().message(), "b must be a boolean (got 1)");
}

TEST(JsonFieldsTest, UnknownParametersAreNamed) {
  json::object o = Params(R"({"sessionKey": "x", "modle": "y"})");
  EXPECT_OK(tools::CheckKnownParams(o, "t", {"sessionKey", "modle"}));
  EXPECT_EQ(tools::CheckKnownParams(o, "session_status", {"sessionKey", "changesSince"}).message(),
            "Unknown parameter for session_status: modle (session_status takes sessionKey, "
            "changesSince)");
  EXPECT_EQ(tools::CheckKnownParams(o, "sessions_yield", {}).message(),
            "Unknown parameter for sessions_yield: sessionKey (sessions_yield takes no "
            "parameters)");
}

TEST(JsonFieldsTest, UnknownBodyFieldsAreNamedWithTheKnownOnes) {
  json::object o = Params(R"({"url": "x", "secert": "y"})");
  EXPECT_OK(tools::CheckKnownFields(o, {"url", "secert"}));
  EXPECT_EQ(tools::CheckKnownFields(o, {"url", "secret"}).message(),
            "unknown field secert (known: url, secret)");
  EXPECT_EQ(tools::CheckKnownFields(o, {}).message(), "unknown field url (known: none)");
  EXPECT_EQ(tools::CheckKnownFields(o, {"url"}, "upstreamRef").message(),
            "unknown field upstreamRef.secert (known: url)");
  // A name that is not a plain identifier is quoted, and a long one shortened.
  EXPECT_EQ(tools::CheckKnownFields(Params(R"({"a b\n": 1})"), {"url"}).message(),
            R"(unknown field "a b\n" (known: url))");
  const std::string long_name(100, 'x');
  std::string message =
      tools::CheckKnownFields(json::object{{long_name, 1}}, {"url"}).message();
  EXPECT_LT(message.size(), 100u) << message;
  EXPECT_NE(message.find("... (known: url)"), std::string::npos) << message;
}

}  // namespace
}  // namespace statewatch::testing
