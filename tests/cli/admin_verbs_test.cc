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
#include "cli_fixture.h"

namespace statewatch::cli {
namespace {
namespace fs = std::filesystem;
namespace json = boost::json;

class AdminVerbsTest : public CliDirTest {
 protected:
  AdminVerbsTest() : CliDirTest("admin") {}

  void Record(const std::string& data, const std::string& kind) {
    CliOutput r = Run(data, {"record", "--session", "agent:main:subagent:a1", "--kind", kind,
                             "--actor-type", "human"});
    ASSERT_EQ(r.code, 0) << r.err;
  }
};

TEST_F(AdminVerbsTest, ABackupRestoresIntoAnAbsentDirectory) {
  Record("live", "created");
  Record("live", "human_direct_message");
  std::string backup = (dir_ / "backup").string();
  CliOutput b = Run("live", {"backup", "--to", backup});
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(json::parse(b.out).at("path").as_string(), backup);
  EXPECT_EQ(Run("live", {"backup", "--to", backup}).code, 1);  // never overwrites

  CliOutput r = Run("restored", {"restore", "--from", backup});
  ASSERT_EQ(r.code, 0) << r.err;
  CliOutput original =
      Run("live", {"status", "--session", "agent:main:subagent:a1", "--changes-since", "0"});
  CliOutput copy =
      Run("restored", {"status", "--session", "agent:main:subagent:a1", "--changes-since", "0"});
  EXPECT_EQ(copy.out, original.out);
  EXPECT_EQ(Run("restored", {"verify"}).code, 0);
}

TEST_F(AdminVerbsTest, RestoreRefusesANonEmptyTargetAndNonBackups) {
  Record("live", "created");
  std::string backup = (dir_ / "backup").string();
  ASSERT_EQ(Run("live", {"backup", "--to", backup}).code, 0);
  CliOutput taken = Run("live", {"restore", "--from", backup});
  EXPECT_EQ(taken.code, 1);
  EXPECT_NE(taken.err.find("is not empty"), std::string::npos) << taken.err;
  fs::create_directories(dir_ / "empty");
  EXPECT_EQ(Run("empty", {"restore", "--from", backup}).code, 0);
  fs::create_directories(dir_ / "junk");
  std::ofstream(dir_ / "junk" / "file") << "x";
  CliOutput junk = Run("fresh", {"restore", "--from", (dir_ / "junk").string()});
  EXPECT_EQ(junk.code, 1);
  EXPECT_NE(junk.err.find("is not a backup"), std::string::npos) << junk.err;
  EXPECT_FALSE(fs::exists(dir_ / "fresh"));
}

TEST_F(AdminVerbsTest, ExportPrintsOneEventALine) {
  Record("live", "created");
  Record("live", "human_direct_message");
  CliOutput r = Run("live", {"export"});
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
