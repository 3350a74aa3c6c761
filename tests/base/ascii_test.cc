// base/ascii.h: locale-free trimming, lower-casing and comparing, and the three space sets.
#include "base/ascii.h"

#include <gtest/gtest.h>

#include <string_view>

namespace statewatch::ascii {
namespace {

TEST(AsciiTest, IsSpaceIsTheCLocaleSetAndIsJsonSpaceTheFourOfJson) {
  for (char c : std::string_view(" \t\n\v\f\r")) EXPECT_TRUE(IsSpace(c)) << int(c);
  for (char c : std::string_view("x0_\xC2\xA0")) EXPECT_FALSE(IsSpace(c)) << int(c);
  EXPECT_TRUE(IsJsonSpace('\n'));
  EXPECT_FALSE(IsJsonSpace('\v'));
  EXPECT_FALSE(IsJsonSpace('\f'));
}

TEST(AsciiTest, TrimTakesTheSetOfTheFormat) {
  EXPECT_EQ(Trim(" \v\tMain\f\n"), "Main");
  EXPECT_EQ(Trim("\vX\v", kJsonSpace), "\vX\v");
  EXPECT_EQ(Trim(" \r\nX\t", kHttpSpace), "\r\nX");
  EXPECT_EQ(Trim(" \t\r\n"), "");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim("a b"), "a b");
}

TEST(AsciiTest, LowerCasesOnlyAToZ) {
  EXPECT_EQ(AsciiToLower("Agent:MAIN:Slack"), "agent:main:slack");
  EXPECT_EQ(AsciiToLower("\xC3\x84"
                         "BC"),
            "\xC3\x84"
            "bc");  // Ä stays, whatever the locale
  EXPECT_EQ(ToLower('Z'), 'z');
  EXPECT_EQ(ToLower('['), '[');
  EXPECT_EQ(ToLower('\xC9'), '\xC9');  // É in Latin-1: not ASCII, not touched
}

TEST(AsciiTest, ComparesWithoutCase) {
  EXPECT_TRUE(EqualsIgnoreCase("Bearer", "bEARER"));
  EXPECT_FALSE(EqualsIgnoreCase("Bearer", "Bearer "));
  EXPECT_FALSE(EqualsIgnoreCase("\xC3\x84", "\xC3\xA4"));  // Ä and ä: not ASCII letters
  EXPECT_TRUE(StartsWithIgnoreCase("[Tool Call: x]", "[tool call:"));
  EXPECT_FALSE(StartsWithIgnoreCase("[Tool", "[tool call:"));
  EXPECT_TRUE(IsAlnum('q') && IsAlnum('Q') && IsAlnum('7'));
  EXPECT_FALSE(IsAlnum('_'));
}

}  // namespace
}  // namespace statewatch::ascii
