// How `statewatch` verbs treat the data directory, through the built binary (STATEWATCH_BIN):
// read-only verbs change nothing, create nothing and work while another process holds the
// database; only writing verbs create one; damage is reported, never silently replaced.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
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

constexpr int64_t kNow = 1764460800000;

struct FileState {
  uintmax_t size;
  fs::file_time_type mtime;
  bool operator==(const FileState&) const = default;
};

std::map<std::string, FileState> Snapshot(const std::string& dir) {
  std::map<std::string, FileState> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    out[e.path().filename()] = FileState{e.file_size(), e.last_write_time()};
  }
  return out;
}

class ReadOnlyVerbsTest : public CliDataTest {
 protected:
  ReadOnlyVerbsTest() : CliDataTest("ro") {}

  // The built binary with `args` (already shell-quoted) on `data`.
  CliOutput Exec(const std::string& args, const std::string& data = "") {
    return ExecBinary(data.empty() ? data_ : data, kNow, args);
  }
  // In-process, for loops of many one-shot commands.
  int Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--data", data_, "--create", "--now", std::to_string(kNow)});
    CliOutput r = RunInProcess(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code;
  }
  void RecordSome() {
    for (const char* key : {"agent:main:subagent:a", "agent:main:subagent:b"}) {
      ASSERT_EQ(Exec(std::string("record --session ") + key +
                     " --kind child_spawned --actor-type agent --actor-id agent:main:main"
                     " --watcher agent:main:main")
                    .code,
                0);
    }
    ASSERT_EQ(Exec("record --session agent:main:subagent:a --kind human_direct_message "
                   "--actor-type human")
                  .code,
              0);
  }

  const std::vector<std::string> kReadOnlyVerbs = {
      "status --session agent:main:subagent:a --changes-since 0",
      "versions --session agent:main:subagent:a --session agent:main:subagent:b",
      "notices --watcher agent:main:main",
      "cursor --watcher agent:main:main --target agent:main:subagent:a",
      "stats",
      "verify",
      "upstream list",
  };
};

// Regression: every read-only verb opened the database for writing — a new empty WAL each
// time (17 -> 47 log files after 30 `status` calls), and "Busy" while `serve` held it.
TEST_F(ReadOnlyVerbsTest, ReadOnlyVerbsChangeNothing) {
  RecordSome();
  auto before = Snapshot(data_);
  for (int round = 0; round < 3; ++round) {
    for (const std::string& verb : kReadOnlyVerbs) {
      CliOutput r = Exec(verb);
      EXPECT_EQ(r.code, 0) << verb << ": " << r.err;
    }
  }
  EXPECT_EQ(Snapshot(data_), before);
}

// Regression: `--data /no/such/dir status` created a database there.
TEST_F(ReadOnlyVerbsTest, NoDatabaseIsNotCreatedByReadingIt) {
  std::string missing = (dir_ / "no" / "such" / "dir").string();
  for (const std::string& verb : kReadOnlyVerbs) {
    CliOutput r = Exec(verb, missing);
    EXPECT_EQ(r.code, 1) << verb;
    EXPECT_EQ(r.err, "statewatch: no database at " + missing + "\n") << verb;
    EXPECT_TRUE(r.out.empty());
  }
  EXPECT_FALSE(fs::exists(dir_ / "no"));
  EXPECT_EQ(Exec("record --session global --kind created --actor-type system", missing).code, 0);
  EXPECT_TRUE(fs::exists(fs::path(missing) / "CURRENT"));
}

TEST_F(ReadOnlyVerbsTest, ReadOnlyVerbsWorkWhileAWriterHoldsTheDatabase) {
  RecordSome();
  EngineOptions o;
  o.durability = Durability::kBuffered;
  o.clock = std::make_shared<ManualClock>(kNow);
  auto writer = Engine::Open(o, data_);  // holds the lock, as `statewatch serve` does
  ASSERT_OK(writer);
  EventInput in;
  in.session_key = "agent:main:subagent:a";
  in.kind = "goal_changed";
  in.actor_type = ActorType::kHuman;
  auto rec = (*writer)->Record(in);
  ASSERT_OK(rec);
  EXPECT_EQ(Exec("record --session global --kind created --actor-type system").code, 1)
      << "a second writer must be refused";
  for (const std::string& verb : kReadOnlyVerbs) {
    CliOutput r = Exec(verb);
    EXPECT_EQ(r.code, 0) << verb << ": " << r.err;
  }
  CliOutput r = Exec("status --session agent:main:subagent:a");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("stateVersion").to_number<uint64_t>(), rec->event.sequence);
}

// Regression: with CURRENT removed, the first command failed and the second created an
// empty database over the old one (exit 0, stateVersion 0, every SST file deleted).
TEST_F(ReadOnlyVerbsTest, AMissingCurrentIsRefusedByEveryVerb) {
  RecordSome();
  fs::remove(fs::path(data_) / "CURRENT");
  auto before = Snapshot(data_);
  for (const std::string& verb :
       {std::string("status --session agent:main:subagent:a"),
        std::string("record --session global --kind created --actor-type system"),
        std::string("verify"), std::string("prune")}) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      CliOutput r = Exec(verb);
      EXPECT_EQ(r.code, 1) << verb;
      EXPECT_NE(r.err.find("Corruption"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("no CURRENT file"), std::string::npos) << r.err;
    }
  }
  EXPECT_EQ(Snapshot(data_), before);
}

// Regression: 88 one-shot `record` calls left 274 SST files (a flush at every open).
TEST_F(ReadOnlyVerbsTest, OneShotWritesLeaveABoundedNumberOfFiles) {
  for (int i = 0; i < 300; ++i) {
    Run({"record", "--session", "agent:main:s" + std::to_string(i % 10), "--kind",
         "human_direct_message", "--actor-type", "human", "--summary", "one-shot " + std::to_string(i)});
  }
  int sst = 0, wal = 0;
  for (const auto& [name, state] : Snapshot(data_)) {
    sst += name.ends_with(".sst");
    wal += name.ends_with(".log");
  }
  EXPECT_LE(wal, 10);
  EXPECT_LE(sst, 40);
  CliOutput r = Exec("stats");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("rows").to_number<uint64_t>(), 300u);
  EXPECT_EQ(Exec("verify").code, 0);
}

}  // namespace
}  // namespace statewatch::cli
