// W3C Trace Context parsing (base/trace_context.h): what a traceparent header must look like
// to be kept, and how a later version is handed on.
#include "base/trace_context.h"

#include <gtest/gtest.h>

namespace statewatch::trace {
namespace {

constexpr char kValid[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceContextTest, AcceptsVersion00AsIs) {
  EXPECT_EQ(NormalizeTraceparent(kValid), kValid);
  EXPECT_EQ(TraceIdOf(kValid), "4bf92f3577b34da6a3ce929d0e0e4736");
  // Flags other than sampled are kept as sent.
  EXPECT_EQ(NormalizeTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
}

TEST(TraceContextTest, IgnoresSurroundingHttpWhitespace) {
  EXPECT_EQ(NormalizeTraceparent(std::string(" \t") + kValid + " "), kValid);
}

TEST(TraceContextTest, RefusesUpperCaseHex) {
  EXPECT_FALSE(IsValidTraceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"));
  EXPECT_FALSE(IsValidTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01"));
  EXPECT_FALSE(IsValidTraceparent("0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
}

TEST(TraceContextTest, RefusesAllZeroIds) {
  EXPECT_FALSE(IsValidTraceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01"));
  EXPECT_FALSE(IsValidTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"));
}

TEST(TraceContextTest, RefusesVersionFfAndBadShapes) {
  const std::string refused[] = {
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "",
      "garbage",
      // Version 00 is exactly 55 characters: nothing may follow it.
      std::string(kValid) + "-00",
      std::string(kValid).substr(0, 54),
      // Separators where they belong.
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
      // Hex digits where they belong.
      "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
  };
  for (const std::string& t : refused) EXPECT_FALSE(IsValidTraceparent(t)) << "\"" << t << "\"";
}

// The spec's forward compatibility: a later version is read as its first four fields, and
// handed on as version 00 (the version this code speaks).
TEST(TraceContextTest, ReadsALaterVersionAsItsFirstFields) {
  EXPECT_EQ(NormalizeTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            kValid);
  EXPECT_EQ(
      NormalizeTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-next"),
      kValid);
  // ...but only when the fifth field is separated by a dash.
  EXPECT_FALSE(
      IsValidTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x-what-next"));
}

}  // namespace
}  // namespace statewatch::trace
