// Measurements of the upstream monitor, as disabled tests that print
// their figures; they assert only what they measured, never a speed.
//
//   build/tests/monitor_tests --gtest_also_run_disabled_tests --gtest_filter='MonitorMeasure.*'
//
// ScanThroughput: MB/s of JSONL classified by JsonlProvider::Scan in 1 MiB windows over a
// 50 MiB transcript shaped like an agent client's (assistant turns with tool calls, tool
// results, a few human turns), and the same file with every line parsed (no shortcut).
// IdleTick: the cost of one tick over 10,000 linked, watched, idle sessions (each its own
// file), then of a tick in which 100 of them have a new human turn.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "monitor_fixture.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

std::string Words(std::mt19937_64& rng, std::size_t bytes) {
  static const char* kWords[] = {
      "the", "build", "fails", "in",      "storage", "because", "a",       "cursor", "is",  "stale",
      "let", "me",    "check", "journal", "notice",  "watcher", "session", "with",   "and", "test"};
  std::string out;
  while (out.size() < bytes) {
    out += kWords[rng() % (sizeof kWords / sizeof *kWords)];
    out += rng() % 9 == 0 ? ".\n" : " ";
  }
  return out;
}

// One line of a Claude-Code-like transcript; kind 0..19: 9 assistant, 9 tool results, 2 human.
std::string TranscriptLine(std::mt19937_64& rng, int kind, int i) {
  boost::json::object o{{"parentUuid", "p-" + std::to_string(i - 1)},
                        {"isSidechain", false},
                        {"userType", "external"},
                        {"cwd", "/home/dev/project"},
                        {"sessionId", "95e6f011-ec33-4b37-91ad-5d242b40ae3d"},
                        {"version", "2.1.12"},
                        {"gitBranch", "main"},
                        {"uuid", "u-" + std::to_string(i)},
                        {"timestamp", "2025-11-30T00:00:00.000Z"}};
  if (kind < 9) {
    o["type"] = "assistant";
    o["message"] = {{"role", "assistant"},
                    {"model", "claude-opus"},
                    {"content",
                     {{{"type", "text"}, {"text", Words(rng, 600)}},
                      {{"type", "tool_use"},
                       {"id", "toolu_" + std::to_string(i)},
                       {"name", "Bash"},
                       {"input", {{"command", "make test"}}}}}}};
  } else if (kind < 18) {
    o["type"] = "user";
    o["message"] = {{"role", "user"},
                    {"content",
                     {{{"tool_use_id", "toolu_" + std::to_string(i - 1)},
                       {"type", "tool_result"},
                       {"content", Words(rng, 2000)}}}}};
    o["toolUseResult"] = {{"stdout", Words(rng, 200)}, {"stderr", ""}};
  } else {
    o["type"] = "user";
    o["message"] = {{"role", "user"}, {"content", Words(rng, 150)}};
  }
  return boost::json::serialize(o);
}

class MonitorMeasure : public MonitorTest {};

TEST_F(MonitorMeasure, DISABLED_ScanThroughput) {
  const std::string path = File("big.jsonl");
  std::mt19937_64 rng(42);
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; static_cast<uint64_t>(out.tellp()) < (50u << 20); ++i) {
      out << TranscriptLine(rng, i % 20, i) << '\n';
    }
  }
  const uint64_t size = SizeOf(path);
  monitor::JsonlProvider provider;
  UpstreamLink link = Request(kSession, path);
  for (int pass = 0; pass < 3; ++pass) {
    link.marker = 0;
    uint64_t turns = 0, lines = 0;
    auto start = Clock::now();
    while (link.marker < size) {
      monitor::ScanResult r = provider.Scan(link, 1u << 20);
      ASSERT_OK(r.error);
      ASSERT_FALSE(r.blocked);
      turns += r.human_turns();
      lines += r.units;
      link.marker = r.new_marker;
    }
    double s = Seconds(start);
    std::printf("scan pass %d: %.1f MiB, %llu lines, %llu human turns in %.3f s = %.0f MB/s\n",
                pass, size / 1048576.0, static_cast<unsigned long long>(lines),
                static_cast<unsigned long long>(turns), s, size / 1e6 / s);
  }
  // Every line fully parsed (what the scan would cost without its shortcut).
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto start = Clock::now();
  uint64_t turns = 0;
  for (std::size_t pos = 0, nl; (nl = data.find('\n', pos)) != std::string::npos; pos = nl + 1) {
    auto c = monitor::ClassifyJsonlLine(std::string_view(data).substr(pos, nl - pos));
    turns += c.cls == monitor::JsonlLineClass::kHumanTurn;
  }
  double s = Seconds(start);
  std::printf("full parse of every line (in memory): %llu human turns in %.3f s = %.0f MB/s\n",
              static_cast<unsigned long long>(turns), s, size / 1e6 / s);
}

TEST_F(MonitorMeasure, DISABLED_IdleTick) {
  constexpr int kLinks = 10000;
  monitor_options_.providers = monitor::BuiltinProviders();
  auto key = [](int i) { return "agent:main:adopted:" + std::to_string(i); };
  auto start = Clock::now();
  for (int i = 0; i < kLinks; ++i) {
    std::string path = File(std::to_string(i) + ".jsonl");
    AppendLine(path, UserLine("history of " + std::to_string(i)));
    Link(key(i), path);
    WatchSession(key(i));
  }
  std::printf("setup: %d links + watches in %.1f s (buffered)\n", kLinks, Seconds(start));
  options_.durability = Durability::kSync;  // measure with the default durability
  OpenEngine();

  std::vector<double> ms;
  for (int t = 0; t < 5; ++t) {
    auto begin = Clock::now();
    monitor::TickReport r = Tick();
    ms.push_back(Seconds(begin) * 1000);
    ASSERT_EQ(r.scanned, static_cast<uint64_t>(kLinks));
    ASSERT_EQ(r.markers_advanced + r.events_recorded, 0u);
  }
  std::sort(ms.begin(), ms.end());
  std::printf(
      "idle tick over %d linked, watched sessions: median %.1f ms (min %.1f, max %.1f)"
      " = %.1f us per link\n",
      kLinks, ms[2], ms[0], ms[4], ms[2] * 1000 / kLinks);

  // Where an idle tick's time goes.
  {
    auto t = Clock::now();
    auto links = SessionTablesView(*engine_).ListUpstreamLinks();
    ASSERT_OK(links);
    double list_ms = Seconds(t) * 1000;
    t = Clock::now();
    for (const UpstreamLink& l : *links) ASSERT_OK(engine_->WatchersOf(l.session));
    double watchers_ms = Seconds(t) * 1000;
    monitor::JsonlProvider provider;
    t = Clock::now();
    for (const UpstreamLink& l : *links) {
      ASSERT_TRUE(provider.CheckSource(l).exists());
      ASSERT_OK(provider.Scan(l, 1u << 20).error);
    }
    double provider_ms = Seconds(t) * 1000;
    monitor::BoundedWorker worker;
    t = Clock::now();
    for (int i = 0; i < kLinks; ++i) worker.Run([] {}, std::chrono::seconds(20));
    double handoff_ms = Seconds(t) * 1000;
    std::printf(
        "breakdown for %d links: list %.1f ms, WatchersOf %.1f ms, provider check+scan "
        "%.1f ms, worker hand-offs %.1f ms\n",
        kLinks, list_ms, watchers_ms, provider_ms, handoff_ms);
  }

  for (int i = 0; i < kLinks; i += kLinks / 100) {
    AppendLine(File(std::to_string(i) + ".jsonl"), UserLine("new turn"));
  }
  auto begin = Clock::now();
  monitor::TickReport r = Tick();
  std::printf(
      "tick with 100 of %d sessions active: %.1f ms (%llu events, %llu markers; "
      "durability sync)\n",
      kLinks, Seconds(begin) * 1000, static_cast<unsigned long long>(r.events_recorded),
      static_cast<unsigned long long>(r.markers_advanced));
  EXPECT_EQ(r.events_recorded, 100u);
}

}  // namespace
}  // namespace statewatch::testing
