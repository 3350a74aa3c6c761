// The `statewatch` command line: exit codes, JSON answers and the record -> status ->
// changesSince -> notices -> drain flow, in-process through RunCli and through the built
// binary (STATEWATCH_BIN) for real exit codes.
#include "cli/cli.h"

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
#include <vector>

#include "cli_fixture.h"

namespace statewatch::cli {
namespace {
namespace fs = std::filesystem;
namespace json = boost::json;

constexpr int64_t kNow = 1764460800000;  // 2025-11-30T00:00:00Z
constexpr int64_t kDay = 24LL * 3600 * 1000;
constexpr char kParent[] = "agent:main:main";
constexpr char kChild[] = "agent:main:subagent:8f1c";
constexpr char kChangesSinceError[] = "statewatch: changesSince must be a non-negative integer\n";

// As a JSON string, to compare with the "text" field.
json::value NoticeText(const std::string& key, uint64_t since) {
  return json::value("Session \"" + key +
                     "\" changed (other actor). Reconcile before acting: "
                     "session_status sessionKey \"" +
                     key + "\" changesSince " + std::to_string(since) + ".");
}

uint64_t U64(const json::value& v) { return v.to_number<uint64_t>(); }

class CliTest : public CliDataTest {
 protected:
  CliTest() : CliDataTest("cli") {}

  // Runs `statewatch --data <tmp> --now <now> args...` in-process.
  CliOutput Run(std::vector<std::string> args, const std::string& input = "", int64_t now = kNow) {
    args.insert(args.begin(), {"--data", data_, "--create", "--now", std::to_string(now)});
    return RunInProcess(args, input);
  }

  // Records one event and returns its sequence.
  uint64_t Record(const std::string& session, const std::string& kind,
                  const std::string& actor_type, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"record", "--session",    session,   "--kind",
                                  kind,     "--actor-type", actor_type};
    args.insert(args.end(), extra.begin(), extra.end());
    CliOutput r = Run(args);
    EXPECT_EQ(r.code, 0) << r.err;
    if (r.code != 0) return 0;
    return U64(r.Json().at("sequence"));
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
};

// ---- usage errors (2) and runtime errors (1) ------------------------------------------------

TEST_F(CliTest, UsageErrorsExitTwo) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frobnicate"},
      {"stats", "--bogus", "1"},
      {"status"},
      {"status", "--session"},
      {"status", "--session", "global", "--limit", "abc"},
      {"stats", "extra"},
      {"serve", "--threads", "abc"},
      {"serve", "--row-cache-bytes", "-1"},
      {"serve", "--partition", "1"},  // cluster flags need --cluster
      {"serve", "--cluster", "nats://127.0.0.1:1", "--role", "standby"},
      {"serve", "--cluster", "nats://127.0.0.1:1", "--partition", "2", "--partitions", "2"},
      {"serve", "--cluster", "nats://127.0.0.1:1", "--partitions", "0"},
      {"cluster", "follow"},  // needs --cluster
      {"cluster", "follow", "--cluster", "nats://127.0.0.1:1", "--partition", "-1"},
      {"record", "--session", "global", "--actor-type", "human"},
      {"record", "--session", "global", "--kind", "created"},
      {"record", "--session", "global", "--kind", "created", "--actor-type", "robot"},
      {"record", "--session", "global", "--kind", "created", "--actor-type", "human", "--payload",
       "{not json"},
      {"record", "--session", "global", "--kind", "created", "--actor-type", "human",
       "--occurred-at", "soon"},
      {"record", "--batch", "-", "--session", "global"},
      {"status", "--session", "a", "--session", "b"},
      {"watch", "--watcher", kParent},
  };
  for (const auto& args : cases) {
    CliOutput r = Run(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.code, 2) << joined << "\n" << r.err;
    EXPECT_FALSE(r.err.empty()) << joined;
    EXPECT_TRUE(r.out.empty()) << joined;
  }
}

TEST_F(CliTest, BadGlobalOptionValuesExitTwo) {
  EXPECT_EQ(RunInProcess({"--data", data_, "--now", "noon", "stats"}).code, 2);
  EXPECT_EQ(RunInProcess({"--data", data_, "--durability", "maybe", "stats"}).code, 2);
  EXPECT_EQ(RunInProcess({"--data", "", "stats"}).code, 2);
}

TEST_F(CliTest, HelpExitsZero) {
  CliOutput r = RunInProcess({"help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("usage: statewatch"), std::string::npos);
  EXPECT_EQ(RunInProcess({"status", "--help"}).code, 0);
}

TEST_F(CliTest, InvalidInputFromTheEngineExitsOne) {
  CliOutput r =
      Run({"record", "--session", "global", "--kind", "no_such_kind", "--actor-type", "human"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no_such_kind"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(CliTest, MalformedSessionKeyExitsOne) {
  for (const char* key : {"agent::x", "agent:main", "agent:main:", "agent:main::x"}) {
    CliOutput r = Run({"status", "--session", key});
    EXPECT_EQ(r.code, 1) << key;
    EXPECT_FALSE(r.err.empty()) << key;
  }
}

TEST_F(CliTest, MissingBatchFileExitsOne) {
  CliOutput r = Run({"record", "--batch", (dir_ / "nope.json").string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("nope.json"), std::string::npos);
}

// ---- journal ------------------------------------------------------------------------------

TEST_F(CliTest, RecordStatusChangesSinceRoundTrip) {
  CliOutput r =
      Run({"record", "--session", kChild, "--kind", "human_direct_message", "--actor-type", "human",
           "--summary", "human message via telegram", "--payload",
           R"({"channel":"telegram","text":"secret"})", "--session-id", "s1"});
  ASSERT_EQ(r.code, 0) << r.err;
  json::object first = r.Json().as_object();
  EXPECT_EQ(first.at("sessionKey"), kChild);
  EXPECT_EQ(first.at("agentId"), "main");
  EXPECT_EQ(first.at("sessionId"), "s1");
  EXPECT_EQ(first.at("kind"), "human_direct_message");
  EXPECT_EQ(first.at("actorType"), "human");
  EXPECT_EQ(first.at("occurredAt").to_number<int64_t>(), kNow);
  EXPECT_FALSE(first.contains("deduplicated"));
  uint64_t s1 = U64(first.at("sequence"));
  uint64_t s2 = Record(kChild, "run_failed", "system",
                       {"--run-id", "r1", "--payload", R"({"outcome":"timeout"})"});
  EXPECT_GT(s2, s1);

  r = Run({"status", "--session", kChild});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Json(),
            json::parse(R"({"sessionKey":")" + std::string(kChild) +
                        R"(","agentId":"main","stateVersion":)" + std::to_string(s2) + "}"));

  r = Run({"status", "--session", kChild, "--changes-since", std::to_string(s1)});
  ASSERT_EQ(r.code, 0) << r.err;
  json::object changes = r.Json().at("stateChanges").as_object();
  ASSERT_EQ(changes.at("events").as_array().size(), 1u);
  json::object e = changes.at("events").as_array()[0].as_object();
  EXPECT_EQ(U64(e.at("sequence")), s2);
  EXPECT_EQ(e.at("runId"), "r1");
  EXPECT_EQ(e.at("payload"), json::parse(R"({"outcome":"timeout"})"));
  EXPECT_EQ(changes.at("truncated"), false);
  EXPECT_EQ(changes.at("historyGap"), false);
  EXPECT_EQ(U64(changes.at("earliestAvailableSequence")), s1);

  r = Run({"status", "--session", kChild, "--changes-since", "0", "--limit", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  changes = r.Json().at("stateChanges").as_object();
  ASSERT_EQ(changes.at("events").as_array().size(), 1u);
  EXPECT_EQ(changes.at("events").as_array()[0].at("payload"),
            json::parse(R"({"channel":"telegram"})"));  // message content never leaves
  EXPECT_EQ(changes.at("truncated"), true);
}

TEST_F(CliTest, GlobalOptionsMayFollowTheVerb) {
  CliOutput r = RunInProcess({"record", "--session", "global", "--kind", "created", "--actor-type",
                              "system", "--data", data_, "--create", "--now", std::to_string(kNow)});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Json().at("occurredAt").to_number<int64_t>(), kNow);
  r = RunInProcess({"status", "--session=global", "--data=" + data_, "--durability=buffered"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(U64(r.Json().at("stateVersion")), 1u);
}

TEST_F(CliTest, BareKeysBelongToAgentMainUnlessGiven) {
  uint64_t s = Record("global", "created", "system");
  CliOutput r = Run({"status", "--session", "global"});
  EXPECT_EQ(r.Json().at("agentId"), "main");
  EXPECT_EQ(U64(r.Json().at("stateVersion")), s);
  r = Run({"status", "--session", "global", "--agent", "ops"});
  EXPECT_EQ(r.Json().at("agentId"), "ops");
  EXPECT_EQ(U64(r.Json().at("stateVersion")), 0u);

  r = Run({"versions", "--session", "global", "--session", kChild, "--agent", "ops"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Json(), json::parse(R"({"versions":[
      {"sessionKey":"global","agentId":"ops","stateVersion":0},
      {"sessionKey":")" + std::string(kChild) +
                                  R"(","agentId":"main","stateVersion":0}]})"));
}

TEST_F(CliTest, DedupeReturnsTheExistingEvent) {
  std::vector<std::string> args{"record", "--session",     kChild,
                                "--kind", "child_spawned", "--actor-type",
                                "agent",  "--dedupe",      "child-spawned:r1"};
  CliOutput first = Run(args);
  ASSERT_EQ(first.code, 0) << first.err;
  CliOutput second = Run(args);
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(second.Json().at("deduplicated"), true);
  EXPECT_EQ(second.Json().at("sequence"), first.Json().at("sequence"));
  EXPECT_EQ(second.Json().at("dedupeKey"), "child-spawned:r1");
  CliOutput status = Run({"status", "--session", kChild});
  EXPECT_EQ(status.Json().at("stateVersion"), first.Json().at("sequence"));
}

TEST_F(CliTest, BatchFromAnArrayFile) {
  std::string path = WriteFile("batch.json", R"([
    {"sessionKey":"global","kind":"created","actorType":"system"},
    {"sessionKey":"global","kind":"human_direct_message","actorType":"human",
     "summary":"human message via slack","payload":{"channel":"slack"}}])");
  CliOutput r = Run({"record", "--batch", path});
  ASSERT_EQ(r.code, 0) << r.err;
  json::array results = r.Json().as_array();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_LT(U64(results[0].at("sequence")), U64(results[1].at("sequence")));
  EXPECT_EQ(results[1].at("payload"), json::parse(R"({"channel":"slack"})"));
  EXPECT_EQ(Run({"status", "--session", "global"}).Json().at("stateVersion"),
            results[1].at("sequence"));
}

TEST_F(CliTest, BatchFromJsonLinesAndStdin) {
  std::string lines =
      "{\"sessionKey\":\"global\",\"kind\":\"created\",\"actorType\":\"system\"}\n"
      "\n"
      "{\"sessionKey\":\"global\",\"kind\":\"compacted\",\"actorType\":\"system\","
      "\"dedupeKey\":\"compacted:1\"}\n";
  CliOutput r = Run({"record", "--batch", WriteFile("batch.jsonl", lines)});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Json().as_array().size(), 2u);
  r = Run({"record", "--batch", "-"}, lines);
  ASSERT_EQ(r.code, 0) << r.err;
  json::array again = r.Json().as_array();
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[1].at("deduplicated"), true);
}

TEST_F(CliTest, BadBatchItemWritesNothing) {
  std::string lines =
      "{\"sessionKey\":\"global\",\"kind\":\"created\",\"actorType\":\"system\"}\n"
      "{\"sessionKey\":\"global\",\"kind\":\"created\",\"actorType\":\"system\","
      "\"occurredAt\":\"abc\"}\n";
  CliOutput r = Run({"record", "--batch", "-"}, lines);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "statewatch: batch line 2: occurredAt must be an integer (got \"abc\")\n");
  r = Run({"record", "--batch", "-"}, R"([{"sessionKey":"global","kind":"created",
      "actorType":"system"},{"sessionKey":"global","kind":"bogus","actorType":"system"}])");
  EXPECT_EQ(r.code, 1) << r.out;  // the engine refuses the whole batch
  EXPECT_EQ(U64(Run({"status", "--session", "global"}).Json().at("stateVersion")), 0u);
}

TEST_F(CliTest, ChangesSinceValues) {
  uint64_t s = Record("global", "created", "system");
  for (const char* bad : {"-1", "1.5", "abc", "1e3", "9007199254740992"}) {
    CliOutput r = Run({"status", "--session", "global", "--changes-since", bad});
    EXPECT_EQ(r.code, 1) << bad;
    EXPECT_EQ(r.err, kChangesSinceError) << bad;
    EXPECT_TRUE(r.out.empty()) << bad;
  }
  for (const char* blank : {"", "  "}) {
    CliOutput r = Run({"status", "--session", "global", "--changes-since", blank});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_FALSE(r.Json().as_object().contains("stateChanges"));
  }
  CliOutput r = Run({"status", "--session", "global", "--changes-since", "12"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.Json().at("stateChanges").at("events").as_array().empty());
  EXPECT_EQ(U64(r.Json().at("stateVersion")), s);
}

// ---- watchers -------------------------------------------------------------------------------

TEST_F(CliTest, SpawnNoticeDrainFlow) {
  uint64_t spawn = Record(kChild, "child_spawned", "agent",
                          {"--actor-id", kParent, "--run-id", "r1", "--watcher", kParent});
  CliOutput r = Run({"cursor", "--watcher", kParent, "--target", kChild});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(U64(r.Json().at("lastSeen")), spawn);
  EXPECT_EQ(U64(r.Json().at("notified")), spawn);
  EXPECT_EQ(U64(r.Json().at("material")), spawn);
  EXPECT_TRUE(Run({"notices", "--watcher", kParent}).Json().at("notices").as_array().empty());

  uint64_t e1 = Record(kChild, "human_direct_message", "human");
  uint64_t e2 = Record(kChild, "human_direct_message", "human");
  r = Run({"notices", "--watcher", kParent});
  ASSERT_EQ(r.code, 0) << r.err;
  json::array notices = r.Json().at("notices").as_array();
  ASSERT_EQ(notices.size(), 1u) << r.out;  // coalesced: one, not two
  EXPECT_EQ(notices[0].at("targetSessionKey"), kChild);
  EXPECT_EQ(notices[0].at("text"), NoticeText(kChild, spawn));
  EXPECT_EQ(notices[0].at("contextKey").as_string().subview().substr(0, 14), "session-state:");
  EXPECT_EQ(Run({"notices", "--watcher", kParent}).out, r.out);  // peeking changes nothing

  r = Run({"drain", "--watcher", kParent});
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.Json().at("notices").as_array().size(), 1u);
  EXPECT_EQ(r.Json().at("notices").as_array()[0].at("text"), NoticeText(kChild, spawn));
  // e2 arrived after the notice opened at e1: exactly one new notice, from the frozen mark.
  r = Run({"notices", "--watcher", kParent});
  ASSERT_EQ(r.Json().at("notices").as_array().size(), 1u);
  EXPECT_EQ(r.Json().at("notices").as_array()[0].at("text"), NoticeText(kChild, e1));
  EXPECT_EQ(Run({"drain", "--watcher", kParent}).code, 0);
  EXPECT_TRUE(Run({"notices", "--watcher", kParent}).Json().at("notices").as_array().empty());
  r = Run({"cursor", "--watcher", kParent, "--target", kChild});
  EXPECT_EQ(U64(r.Json().at("lastSeen")), e2);
  EXPECT_EQ(U64(r.Json().at("material")), e2);
}

TEST_F(CliTest, ExplicitWatchAndReset) {
  const std::string watcher = "agent:ops:main";
  uint64_t head = Record(kChild, "created", "system");
  CliOutput r = Run({"watch", "--watcher", watcher, "--target", kChild});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Json(), json::parse(R"({"watched":true})"));
  EXPECT_EQ(U64(Run({"cursor", "--watcher", watcher, "--target", kChild}).Json().at("lastSeen")),
            head);
  Record(kChild, "created", "system");  // journal-only: no notice, no cursor movement
  // An existing cursor keeps its positions.
  EXPECT_EQ(Run({"watch", "--watcher", watcher, "--target", kChild}).Json().at("watched"), true);
  EXPECT_EQ(U64(Run({"cursor", "--watcher", watcher, "--target", kChild}).Json().at("lastSeen")),
            head);
  EXPECT_EQ(Run({"watch", "--watcher", watcher, "--target", watcher}).Json().at("watched"), false);
  EXPECT_EQ(Run({"watch", "--watcher", watcher, "--target", "global"}).Json().at("watched"), false);
  EXPECT_EQ(Run({"watch", "--watcher", watcher, "--target", "agent::x"}).Json().at("watched"),
            false);
  EXPECT_EQ(Run({"watch", "--watcher", "global", "--target", kChild}).Json().at("watched"), false);
  // Several --target: one atomic registration; a refused one refuses them all, by its index.
  r = Run({"watch", "--watcher", watcher, "--target", kChild, "--target", kParent});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Json(), json::parse(R"({"watched":true,"watches":2,"created":1})"));
  r = Run({"watch", "--watcher", "agent:ops:two", "--target", kChild, "--target", "global"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("watches[1]: target \"global\" is not agent-scoped"), std::string::npos)
      << r.err;
  EXPECT_EQ(Run({"cursor", "--watcher", "agent:ops:two", "--target", kChild}).code, 1);

  // unwatch: the named cursors go, in one step; a refused pair removes nothing.
  r = Run({"unwatch", "--watcher", watcher, "--target", kParent, "--target", "global"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("watches[1]: target \"global\" is not agent-scoped"), std::string::npos)
      << r.err;
  r = Run({"unwatch", "--watcher", watcher, "--target", kParent, "--target", "agent:ops:x"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Json(), json::parse(R"({"watches":2,"removed":1})"));
  EXPECT_EQ(Run({"cursor", "--watcher", watcher, "--target", kParent}).code, 1);
  EXPECT_EQ(Run({"cursor", "--watcher", watcher, "--target", kChild}).code, 0);

  r = Run({"reset-watcher", "--watcher", watcher});
  ASSERT_EQ(r.code, 0) << r.err;
  r = Run({"cursor", "--watcher", watcher, "--target", kChild});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no cursor"), std::string::npos) << r.err;
}

TEST_F(CliTest, SweepReportsReopenedCount) {
  CliOutput r = Run({"sweep"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(U64(r.Json().at("pendingNotices")), 0u);
}

// ---- maintenance ----------------------------------------------------------------------------

TEST_F(CliTest, StatsVerifyRebuild) {
  Record(kChild, "child_spawned", "agent", {"--watcher", kParent});
  Record(kChild, "human_direct_message", "human");
  CliOutput r = Run({"stats"});
  ASSERT_EQ(r.code, 0) << r.err;
  json::object stats = r.Json().as_object();
  for (const char* key :
       {"rows", "sessions", "cursors", "pendingNotices", "lastSequence", "bytesOnDisk"}) {
    EXPECT_TRUE(stats.contains(key)) << key;
  }
  EXPECT_EQ(U64(stats.at("rows")), 2u);
  EXPECT_EQ(U64(stats.at("pendingNotices")), 1u);

  r = Run({"verify"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.Json().at("ok"), true);
  EXPECT_TRUE(r.Json().at("differences").as_array().empty());
  r = Run({"rebuild"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.Json().as_object().contains("recordsReplayed"));
  EXPECT_EQ(Run({"verify"}).code, 0);
}

TEST_F(CliTest, DeleteSessionRemovesEventsHeadAndCursors) {
  Record(kChild, "child_spawned", "agent", {"--watcher", kParent});
  Record(kChild, "human_direct_message", "human");
  CliOutput r = Run({"delete-session", "--session", kChild});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Json(), json::parse(R"({"deleted":true})"));
  EXPECT_EQ(U64(Run({"status", "--session", kChild}).Json().at("stateVersion")), 0u);
  EXPECT_EQ(Run({"cursor", "--watcher", kParent, "--target", kChild}).code, 1);
  EXPECT_TRUE(Run({"notices", "--watcher", kParent}).Json().at("notices").as_array().empty());
  EXPECT_EQ(Run({"verify"}).code, 0);
}

// Regression: after `rebuild` (in an earlier process), `delete-session` removed the journal
// rows but left the session's head and its cursors, and `verify` then failed.
TEST_F(CliTest, DeleteSessionAfterRebuild) {
  Record(kChild, "child_spawned", "agent", {"--watcher", kParent});
  Record(kChild, "human_direct_message", "human");
  ASSERT_EQ(Run({"rebuild"}).code, 0);
  ASSERT_EQ(Run({"delete-session", "--session", kChild}).code, 0);
  EXPECT_EQ(U64(Run({"status", "--session", kChild}).Json().at("stateVersion")), 0u);
  EXPECT_EQ(Run({"cursor", "--watcher", kParent, "--target", kChild}).code, 1);
  CliOutput r = Run({"verify"});
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST_F(CliTest, InspectingNeverPrunesButPruneDoes) {
  uint64_t s = Record("global", "created", "system");
  const int64_t later = kNow + 31 * kDay;  // past the 30-day retention
  CliOutput r = Run({"stats"}, "", later);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(U64(r.Json().at("rows")), 1u);
  r = Run({"status", "--session", "global", "--changes-since", "0"}, "", later);
  EXPECT_EQ(r.Json().at("stateChanges").at("events").as_array().size(), 1u);

  r = Run({"prune"}, "", later);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(U64(r.Json().at("rowsDeleted")), 1u);
  r = Run({"status", "--session", "global", "--changes-since", "0"}, "", later);
  EXPECT_EQ(U64(r.Json().at("stateVersion")), s);  // heads survive pruning
  EXPECT_EQ(r.Json().at("stateChanges").at("historyGap"), true);
}

// ---- the real binary: exit codes and streams ----------------------------------------------

class BinaryTest : public CliTest {
 protected:
  // Runs the built binary through the shell; `args` is already shell-quoted.
  CliOutput Exec(const std::string& args) { return ExecBinary(data_, kNow, args); }
};

TEST_F(BinaryTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Exec("frobnicate").code, 2);
  EXPECT_EQ(Exec("serve").code, 2);
  EXPECT_EQ(Exec("status").code, 2);
  CliOutput r = Exec("stats --what 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--what"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(BinaryTest, RuntimeErrorsExitOne) {
  CliOutput r = Exec("status --session global --changes-since -1");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, kChangesSinceError);
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(Exec("record --session global --kind nope --actor-type human").code, 1);
  EXPECT_EQ(Exec("cursor --watcher agent:main:main --target agent:main:x").code, 1);
}

TEST_F(BinaryTest, RecordThenStatus) {
  CliOutput r = Exec(
      "record --session agent:main:main --kind human_direct_message "
      "--actor-type human --summary 'human message via telegram'");
  ASSERT_EQ(r.code, 0) << r.err;
  uint64_t s = U64(json::parse(r.out).at("sequence"));
  r = Exec("status --session agent:main:main --changes-since ''");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json::parse(R"({"sessionKey":"agent:main:main",
      "agentId":"main","stateVersion":)" + std::to_string(s) +
                                            "}"));
  r = Exec("status --session agent:main:main --changes-since 0");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("stateChanges").at("events").as_array().size(), 1u);
  EXPECT_EQ(Exec("verify").code, 0);
}

// Regression: `statewatch upstream add --path /etc/shadow` stored a link the daemon would
// read. A source must resolve under one of the given --upstream-root directories.
TEST_F(CliTest, UpstreamAddNeedsASourceUnderAnUpstreamRoot) {
  fs::create_directories(dir_ / "transcripts");
  std::string root = fs::canonical(dir_ / "transcripts").string();
  std::string path = WriteFile("transcripts/t.jsonl", "{}\n");
  std::vector<std::string> add{"upstream",  "add",    "--session", "agent:main:adopted",
                               "--catalog", "claude", "--host",    "laptop",
                               "--thread",  "t1",     "--path"};
  auto with = [&](std::vector<std::string> tail) {
    std::vector<std::string> args = add;
    args.insert(args.end(), tail.begin(), tail.end());
    return Run(args);
  };
  CliOutput r = with({path});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no upstream root is configured"), std::string::npos) << r.err;
  r = with({"/etc/passwd", "--upstream-root", root});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("upstream source /etc/passwd is outside the upstream roots (" + root + ")"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Run({"upstream", "list"}).Json().at("links").as_array().size(), 0u);
  r = with({path, "--upstream-root", "/nowhere", "--upstream-root", root});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Json().at("link").at("upstreamRef").at("path"), json::value(root + "/t.jsonl"));
}

}  // namespace
}  // namespace statewatch::cli
