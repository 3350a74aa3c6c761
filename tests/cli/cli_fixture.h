// Shared pieces of the command-line tests: RunCli in-process with what it printed captured,
// and a fixture that gives every test a fresh directory.
#ifndef STATEWATCH_TESTS_CLI_CLI_FIXTURE_H_
#define STATEWATCH_TESTS_CLI_CLI_FIXTURE_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli.h"

namespace statewatch::cli {

// What one run of the command line returned and printed.
struct CliOutput {
  int code = -1;
  std::string out;
  std::string err;
  // stdout as one JSON document; fails the test when it is not one.
  boost::json::value Json() const {
    std::error_code ec;
    boost::json::value v = boost::json::parse(out, ec);
    EXPECT_FALSE(ec) << "stdout is not one JSON document: " << out;
    return v;
  }
};

// RunCli(args) in this process, with `input` on stdin.
inline CliOutput RunInProcess(const std::vector<std::string>& args, const std::string& input = "") {
  std::istringstream in(input);
  std::ostringstream out, err;
  CliOutput r;
  r.code = RunCli(args, in, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// A fresh directory for every test (dir_, named after `tag` and unique in this process),
// removed after it.
class CliDirTest : public ::testing::Test {
 protected:
  explicit CliDirTest(std::string tag) : tag_(std::move(tag)) {}
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::temp_directory_path() /
           ("statewatch_" + tag_ + "_test_" + std::to_string(::getpid()) + "_" +
            std::to_string(counter++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // RunInProcess on the database dir_/<data> at the fixed clock kFixedNow:
  // `--data <path> --create --now <kFixedNow> <args>`.
  CliOutput Run(const std::string& data, std::vector<std::string> args) {
    return RunOnData(data, {"--create"}, std::move(args));
  }
  // The same without --create: a read-only verb on a database that must exist.
  CliOutput ReadOnly(const std::string& data, std::vector<std::string> args) {
    return RunOnData(data, {}, std::move(args));
  }

#ifdef STATEWATCH_BIN
  // The built binary with `--data <data> --create --now <now_ms> <args>` through the shell
  // (`args` already shell-quoted): real exit codes; stderr goes through a file in dir_.
  // (--create lets a writing verb start the database; read-only verbs never create one.)
  CliOutput ExecBinary(const std::string& data, int64_t now_ms, const std::string& args) {
    std::string err_path = (dir_ / "stderr.txt").string();
    std::string command = std::string(STATEWATCH_BIN) + " --data '" + data + "' --create --now " +
                          std::to_string(now_ms) + " " + args + " 2>'" + err_path + "'";
    CliOutput r;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return r;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) r.out.append(buf, n);
    int status = ::pclose(pipe);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream err(err_path);
    r.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
    return r;
  }
#endif

  std::filesystem::path dir_;

 private:
  static constexpr char kFixedNow[] = "1764460800000";  // 2025-11-30 00:00 UTC

  CliOutput RunOnData(const std::string& data, std::vector<std::string> flags,
                      std::vector<std::string> args) {
    std::vector<std::string> all = {"--data", (dir_ / data).string()};
    all.insert(all.end(), flags.begin(), flags.end());
    all.insert(all.end(), {"--now", kFixedNow});
    all.insert(all.end(), args.begin(), args.end());
    return RunInProcess(all);
  }

  std::string tag_;
};

// A CliDirTest whose database directory, data_, is `data_name` in dir_ (not created here: the
// first verb run with --create, or a daemon serving it, makes it).
class CliDataTest : public CliDirTest {
 protected:
  explicit CliDataTest(std::string tag, std::string data_name = "data")
      : CliDirTest(std::move(tag)), data_name_(std::move(data_name)) {}
  void SetUp() override {
    CliDirTest::SetUp();
    data_ = (dir_ / data_name_).string();
  }

  std::string data_;

 private:
  std::string data_name_;
};

}  // namespace statewatch::cli

#endif  // STATEWATCH_TESTS_CLI_CLI_FIXTURE_H_
