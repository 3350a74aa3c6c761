// backup, restore and export on the command line: a backup restores into an empty or absent
// directory and answers as the original; restore never overwrites; export prints one JSON
// event a line.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli.h"

namespace statewatch::cli {
namespace {
namespace fs = std::filesystem;
namespace json = boost::json;

constexpr char kNow[] = "1764460800000";

struct Output {
  int code = -1;
  std::string out;
  std::string err;
};

class AdminVerbsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() / ("statewatch_admin_test_" + std::to_string(::getpid()) +
                                        "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Output Run(const std::string& data, std::vector<std::string> args) {
    args.insert(args.begin(), {"--data", (dir_ / data).string(), "--now", kNow});
    std::istringstream in;
    std::ostringstream out, err;
    Output r;
    r.code = RunCli(args, in, out, err);
    r.out = out.str();
    r.err = err.str();
    return r;
  }
  void Record(const std::string& data, const std::string& kind) {
    Output r = Run(data, {"record", "--session", "agent:main:subagent:a1", "--kind", kind,
                          "--actor-type", "human"});
    ASSERT_EQ(r.code, 0) << r.err;
  }

  fs::path dir_;
};

TEST_F(AdminVerbsTest, ABackupRestoresIntoAnAbsentDirectory) {
  Record("live", "created");
  Record("live", "human_direct_message");
  std::string backup = (dir_ / "backup").string();
  Output b = Run("live", {"backup", "--to", backup});
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(json::parse(b.out).at("path").as_string(), backup);
  EXPECT_EQ(Run("live", {"backup", "--to", backup}).code, 1);  // never overwrites

  Output r = Run("restored", {"restore", "--from", backup});
  ASSERT_EQ(r.code, 0) << r.err;
  Output original = Run("live", {"status", "--session", "agent:main:subagent:a1",
                                 "--changes-since", "0"});
  Output copy = Run("restored", {"status", "--session", "agent:main:subagent:a1",
                                 "--changes-since", "0"});
  EXPECT_EQ(copy.out, original.out);
  EXPECT_EQ(Run("restored", {"verify"}).code, 0);
}

TEST_F(AdminVerbsTest, RestoreRefusesANonEmptyTargetAndNonBackups) {
  Record("live", "created");
  std::string backup = (dir_ / "backup").string();
  ASSERT_EQ(Run("live", {"backup", "--to", backup}).code, 0);
  Output taken = Run("live", {"restore", "--from", backup});
  EXPECT_EQ(taken.code, 1);
  EXPECT_NE(taken.err.find("is not empty"), std::string::npos) << taken.err;
  fs::create_directories(dir_ / "empty");
  EXPECT_EQ(Run("empty", {"restore", "--from", backup}).code, 0);
  fs::create_directories(dir_ / "junk");
  std::ofstream(dir_ / "junk" / "file") << "x";
  Output junk = Run("fresh", {"restore", "--from", (dir_ / "junk").string()});
  EXPECT_EQ(junk.code, 1);
  EXPECT_NE(junk.err.find("is not a backup"), std::string::npos) << junk.err;
  EXPECT_FALSE(fs::exists(dir_ / "fresh"));
}

TEST_F(AdminVerbsTest, ExportPrintsOneEventALine) {
  Record("live", "created");
  Record("live", "human_direct_message");
  Output r = Run("live", {"export"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::vector<std::string> kinds;
  for (std::string line; std::getline(lines, line);) {
    kinds.emplace_back(json::parse(line).at("kind").as_string());
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"created", "human_direct_message"}));
}

}  // namespace
}  // namespace statewatch::cli
