// ASSERT_OK(expr) and EXPECT_OK(expr): expect a statewatch::Status or Result<T> to be OK and,
// when it is not, print what it holds ("<code name>: <message>") instead of `false`.
//
//   ASSERT_OK(engine->Open(dir));
//   auto rows = engine->ChangesSince(cursor);
//   ASSERT_OK(rows) << "after " << n << " writes";
//
// The expression is evaluated once; both macros take a streamed message like ASSERT_TRUE.
// Anything else with an `ok()` (e.g. rocksdb::Status) works too and prints its ToString().
#ifndef STATEWATCH_TESTS_STATUS_MATCHERS_H_
#define STATEWATCH_TESTS_STATUS_MATCHERS_H_

#include <gtest/gtest.h>

#include <string>

#include "statewatch/status.h"

namespace statewatch::testing {

// What a failed ok() holds, as text.
template <typename T>
std::string DescribeNotOk(const T& value) {
  if constexpr (requires { value.status().ToString(); }) {
    return value.status().ToString();  // Result<T>
  } else if constexpr (requires { value.ToString(); }) {
    return value.ToString();  // Status, rocksdb::Status
  } else {
    return "not OK";
  }
}

// The predicate-formatter behind ASSERT_OK / EXPECT_OK.
template <typename T>
::testing::AssertionResult IsOk(const char* expr_text, const T& value) {
  if (value.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expr_text << " is not OK: " << DescribeNotOk(value);
}

}  // namespace statewatch::testing

#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::statewatch::testing::IsOk, expr)
#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::statewatch::testing::IsOk, expr)

#endif  // STATEWATCH_TESTS_STATUS_MATCHERS_H_
