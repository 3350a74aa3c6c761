// The scratch directory of the running benchmark-baseline test.
#ifndef STATEWATCH_TESTS_BENCH_TEST_DIRECTORY_H_
#define STATEWATCH_TESTS_BENCH_TEST_DIRECTORY_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace statewatch::bench {

// <temp>/<tag>-<pid>-<test name>, emptied and created: one directory per test and process,
// so that tests running side by side never share one.
inline std::filesystem::path FreshDirectoryForThisTest(const std::string& tag) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      (tag + "-" + std::to_string(::getpid()) + "-" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace statewatch::bench

#endif  // STATEWATCH_TESTS_BENCH_TEST_DIRECTORY_H_
