// Errors that lead somewhere, and what `stats` and `--version` say: a database held by a
// daemon names --server, a misspelled --data is refused instead of becoming a new database,
// an unknown option is called one wherever it stands, "sessions" counts the registry.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "net/http_client.h"
#include "status_matchers.h"

extern char** environ;

namespace statewatch::cli {
namespace {
namespace fs = std::filesystem;
namespace json = boost::json;

const std::vector<std::string> kRecord = {"record", "--session", "agent:main:main", "--kind",
                                          "created", "--actor-type", "system"};

std::vector<std::string> With(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

// `statewatch serve` on an ephemeral port: its pid, and its URL once it listens (and so
// holds the database's lock); "" when it did not start.
pid_t StartDaemon(const std::string& data, std::string* url) {
  int out[2];
  if (pipe(out) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args = {STATEWATCH_BIN, "--data", data, "--durability", "buffered",
                                   "serve", "--listen", "127.0.0.1:0"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, STATEWATCH_BIN, &actions, nullptr, argv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  std::string line;  // {"listening", "port"}
  for (char c; pid > 0 && read(out[0], &c, 1) == 1 && c != '\n';) line += c;
  close(out[0]);
  std::error_code ec;
  json::value v = json::parse(line, ec);
  *url = !ec && v.is_object() && v.as_object().contains("port")
             ? "http://127.0.0.1:" + std::to_string(v.at("port").to_number<int>())
             : "";
  return pid;
}

void StopDaemon(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
}

class GuidanceTest : public CliDirTest {
 protected:
  GuidanceTest() : CliDirTest("guidance") {}
};

// Before: `record --data ./dta` (a typo) made a new, empty database in ./dta and recorded there.
TEST_F(GuidanceTest, AWritingVerbRefusesADirectoryWithoutADatabaseUnlessCreate) {
  const std::string typo = (dir_ / "dta").string();
  CliOutput r = RunInProcess(With({"--data", typo}, kRecord));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "statewatch: no statewatch database in \"" + typo +
                       "\" (a misspelled --data?); give --create to make a new one there\n");
  EXPECT_FALSE(fs::exists(typo));  // nothing was created

  fs::create_directories(dir_ / "empty");  // an existing directory holding no database
  r = RunInProcess(With({"--data", (dir_ / "empty").string()}, {"drain", "--watcher", "agent:a:b"}));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no statewatch database in"), std::string::npos) << r.err;

  r = RunInProcess(With({"--data", typo, "--create"}, kRecord));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(fs::path(typo) / "CURRENT"));
  r = RunInProcess(With({"--data", typo}, kRecord));  // now it holds one
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(RunInProcess(With({"--data", typo, "--create", "maybe"}, kRecord)).code, 2);
}

TEST_F(GuidanceTest, ADatabaseHeldByADaemonNamesServer) {
  const std::string data = (dir_ / "served").string();
  std::string url;
  pid_t pid = StartDaemon(data, &url);
  ASSERT_NE(url, "") << "the daemon did not start";

  CliOutput r = RunInProcess(With({"--data", data}, kRecord));
  StopDaemon(pid);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "statewatch: the database in \"" + data +
                       "\" is held by another process (a running `statewatch serve`: RocksDB's "
                       "lock " + data + "/LOCK is taken); run this verb through the daemon "
                       "with --server URL (or STATEWATCH_SERVER)\n");
}

TEST_F(GuidanceTest, AnUnknownOptionIsCalledOneWhereverItStands) {
  CliOutput r = RunInProcess({"stats", "--verbose"});  // was: "option --verbose needs a value"
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("statewatch: unknown option --verbose for 'stats'\n", 0), 0u) << r.err;
  r = RunInProcess({"--bogus", "stats"});  // was: "no verb given" (--bogus took "stats")
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("statewatch: unknown option --bogus\n", 0), 0u) << r.err;
  r = RunInProcess({"stats", "--watcher", "agent:a:b"});  // another verb's option
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("statewatch: unknown option --watcher for 'stats'\n", 0), 0u) << r.err;
  r = RunInProcess({"status", "--session"});  // a known option still needs its value
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("statewatch: option --session needs a value\n", 0), 0u) << r.err;
}

// Before: "sessions" counted the sessions with events (the journal's heads), so sessions
// registered with PUT /v1/sessions/{key} and no event yet were missing from it.
TEST_F(GuidanceTest, StatsCountsRegisteredSessionsAndLabelsJournalSessions) {
  const std::string data = (dir_ / "served").string();
  std::string url;
  pid_t pid = StartDaemon(data, &url);
  ASSERT_NE(url, "") << "the daemon did not start";

  // Three registered sessions; events in two sessions, one of them unregistered.
  for (const char* key : {"agent:main:main", "agent:main:subagent:a", "agent:main:subagent:b"}) {
    auto put = net::HttpRequest(url, "PUT", std::string("/v1/sessions/") + key, "{}", "");
    ASSERT_OK(put);
    ASSERT_EQ(put->status, 200) << put->body;
  }
  for (const char* key : {"agent:main:main", "agent:main:elsewhere"}) {
    CliOutput r = RunInProcess({"--server", url, "record", "--session", key, "--kind", "created",
                                "--actor-type", "system"});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  CliOutput remote = RunInProcess({"--server", url, "stats"});
  CliOutput local = RunInProcess({"--data", data, "stats"});  // read-only, beside the daemon
  StopDaemon(pid);
  for (const CliOutput* r : {&remote, &local}) {
    ASSERT_EQ(r->code, 0) << r->err;
    json::object stats = r->Json().as_object();
    EXPECT_EQ(stats["sessions"].to_number<int>(), 3) << r->out;
    EXPECT_EQ(stats["journalSessions"].to_number<int>(), 2) << r->out;
  }
}

TEST_F(GuidanceTest, VersionNamesTheCommit) {
  CliOutput r = RunInProcess({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(std::regex_match(r.out, std::regex(R"(statewatch \S+ \(commit ([0-9a-f]{4,40}|unknown)\)\n)")))
      << r.out;
  // This suite runs from a git checkout: the commit is a hash, not "unknown".
  if (fs::exists(fs::path(STATEWATCH_BIN).parent_path().parent_path() / ".git")) {
    EXPECT_EQ(r.out.find("unknown"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace statewatch::cli
