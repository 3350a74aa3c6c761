// `statewatch replay --until SEQ --out DIR`: the new directory answers as a database fed the
// same commands up to SEQ (status, notices, cursor, stats, verify); the live one is
// untouched and may be held open meanwhile; the errors name their values.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli_fixture.h"
#include "statewatch/engine.h"
#include "status_matchers.h"

namespace statewatch::cli {
namespace {
namespace fs = std::filesystem;
namespace json = boost::json;

constexpr char kBoss[] = "agent:main:main";
constexpr char kChild[] = "agent:main:subagent:a1";

class ReplayTest : public CliDirTest {
 protected:
  ReplayTest() : CliDirTest("replay") {}

  // The incident's commands, in order: one sequence each (the drain acknowledges a notice).
  std::vector<std::vector<std::string>> Commands() const {
    return {
        {"watch", "--watcher", kBoss, "--target", kChild},
        {"record", "--session", kChild, "--kind", "goal_changed", "--actor-type", "human",
         "--summary", "goal: ship it"},
        {"record", "--session", kChild, "--kind", "run_failed", "--actor-type", "system",
         "--summary", "run failed"},
        {"drain", "--watcher", kBoss},
        {"record", "--session", kChild, "--kind", "human_direct_message", "--actor-type", "human",
         "--summary", "retry please"},
        {"record", "--session", kBoss, "--kind", "goal_changed", "--actor-type", "human",
         "--summary", "boss goal"},
    };
  }
  void Feed(const std::string& data, std::size_t count) {
    auto commands = Commands();
    for (std::size_t i = 0; i < count && i < commands.size(); ++i) {
      CliOutput r = Run(data, commands[i]);
      ASSERT_EQ(r.code, 0) << r.err;
    }
  }
  // Everything a reader sees of the two sessions, one line each.
  std::vector<std::string> Observed(const std::string& data) {
    std::vector<std::vector<std::string>> reads = {
        {"status", "--session", kChild, "--changes-since", "0"},
        {"status", "--session", kBoss, "--changes-since", "0"},
        {"notices", "--watcher", kBoss},
        {"cursor", "--watcher", kBoss, "--target", kChild},
        {"versions", "--session", kChild, "--session", kBoss},
    };
    std::vector<std::string> out;
    for (const auto& args : reads) {
      CliOutput r = ReadOnly(data, args);
      EXPECT_EQ(r.code, 0) << r.err;
      out.push_back(r.out);
    }
    json::object stats = ReadOnly(data, {"stats"}).Json().as_object();
    out.push_back("rows=" + json::serialize(stats["rows"]) +
                  " journalSessions=" + json::serialize(stats["journalSessions"]) +
                  " cursors=" + json::serialize(stats["cursors"]) +
                  " pendingNotices=" + json::serialize(stats["pendingNotices"]) +
                  " lastSequence=" + json::serialize(stats["lastSequence"]));
    return out;
  }
};

TEST_F(ReplayTest, EveryPrefixEqualsADatabaseThatStoppedThere) {
  const std::size_t n = Commands().size();
  Feed("live", n);
  const std::vector<std::string> live_before = Observed("live");
  for (std::size_t stop = 1; stop <= n; ++stop) {
    SCOPED_TRACE("after command " + std::to_string(stop));
    const std::string oracle = "oracle" + std::to_string(stop);
    Feed(oracle, stop);
    json::object stats = ReadOnly(oracle, {"stats"}).Json().as_object();
    const std::string until = json::serialize(stats["lastSequence"]);
    const std::string out = (dir_ / ("replayed" + std::to_string(stop))).string();
    CliOutput r = ReadOnly("live", {"replay", "--until", until, "--out", out});
    ASSERT_EQ(r.code, 0) << r.err;
    json::object answer = r.Json().as_object();
    EXPECT_EQ(answer["path"].as_string(), out);
    EXPECT_EQ(json::serialize(answer["lastSequence"]), until);
    EXPECT_EQ(Observed("replayed" + std::to_string(stop)), Observed(oracle));
    EXPECT_EQ(ReadOnly("replayed" + std::to_string(stop), {"verify"}).code, 0);
  }
  EXPECT_EQ(Observed("live"), live_before);  // untouched
}

TEST_F(ReplayTest, WorksWhileAnotherProcessHoldsTheDatabase) {
  Feed("live", 3);
  // An engine holding the database's lock, as `statewatch serve` does.
  EngineOptions options;
  options.prune_on_open = false;
  auto holder = Engine::Open(options, (dir_ / "live").string());
  ASSERT_OK(holder.status());
  EXPECT_EQ(
      Run("live", {"record", "--session", kChild, "--kind", "created", "--actor-type", "system"})
          .code,
      1);  // a writer is refused
  CliOutput r = ReadOnly("live", {"replay", "--until", "2", "--out", (dir_ / "r").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  CliOutput status = ReadOnly("r", {"status", "--session", kChild, "--changes-since", "0"});
  ASSERT_EQ(status.code, 0) << status.err;
  json::object o = status.Json().as_object();
  EXPECT_EQ(o["stateVersion"].as_int64(), 2);
  EXPECT_EQ(o["stateChanges"].as_object()["events"].as_array().size(), 1u);
}

TEST_F(ReplayTest, ErrorsNameTheValue) {
  Feed("live", 3);
  const std::string out = (dir_ / "out").string();
  CliOutput beyond = ReadOnly("live", {"replay", "--until", "40", "--out", out});
  EXPECT_EQ(beyond.code, 1);
  EXPECT_NE(beyond.err.find("sequence 40 is beyond the database's last sequence, 3"),
            std::string::npos)
      << beyond.err;
  EXPECT_FALSE(fs::exists(out));

  fs::create_directories(out);
  CliOutput exists = ReadOnly("live", {"replay", "--until", "2", "--out", out});
  EXPECT_EQ(exists.code, 1);
  EXPECT_NE(exists.err.find("exists"), std::string::npos) << exists.err;
  EXPECT_TRUE(fs::is_empty(out));

  EXPECT_EQ(ReadOnly("live", {"replay", "--until", "-1", "--out", out + "2"}).code, 2);
  EXPECT_EQ(ReadOnly("live", {"replay", "--until", "x", "--out", out + "2"}).code, 2);
  EXPECT_EQ(ReadOnly("live", {"replay", "--until", "2"}).code, 2);  // --out is required
  EXPECT_EQ(ReadOnly("missing", {"replay", "--until", "1", "--out", out + "3"}).code, 1);
}

TEST_F(ReplayTest, BeforeTheCheckpointNamesTheEarliestSequence) {
  Feed("live", 3);
  // Deleting a session whose rows no checkpoint covers checkpoints first: the log before
  // that point is gone.
  ASSERT_EQ(Run("live", {"delete-session", "--session", kChild}).code, 0);
  CliOutput r = ReadOnly("live", {"replay", "--until", "1", "--out", (dir_ / "r").string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("sequence 1 is before the earliest sequence the retained log can "
                       "rebuild, 3"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "r"));
  CliOutput at = ReadOnly("live", {"replay", "--until", "3", "--out", (dir_ / "r3").string()});
  EXPECT_EQ(at.code, 0) << at.err;
}

}  // namespace
}  // namespace statewatch::cli
