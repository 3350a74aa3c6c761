// The upstream monitor (monitor/upstream_monitor.h) on an agent client's transcripts.
//
//   monitor/scan             JsonlProvider::Scan in 1 MiB windows over a 50 MiB transcript
//                            shaped like a Claude-Code client's (assistant turns with tool
//                            calls, tool results, a few human turns): bytes/s.
//   monitor/full_parse       ClassifyJsonlLine on every line of the same transcript in
//                            memory: what the scan would cost without its shortcut; bytes/s.
//   monitor/idle_tick        one tick over 10,000 linked, watched, idle sessions (each its
//                            own file), durability sync: counter us_per_link.
//   monitor/active_tick      the same with a new human turn in 100 of them before each tick
//                            (appended untimed): counter events_recorded per tick.
//
// BENCH_SCALE scales the transcript's size and the number of links.
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "monitor/jsonl_provider.h"
#include "monitor/upstream_links.h"
#include "monitor/upstream_monitor.h"
#include "statewatch/clock.h"

namespace statewatch::bench {
namespace {

constexpr int64_t kTranscriptMiB = 50;
constexpr int64_t kLinks = 10000;
constexpr int kActivePerTick = 100;
constexpr int64_t kTickMs = 60000;
const std::string kWatcher = "agent:main:main";

std::string Words(std::mt19937_64& rng, std::size_t bytes) {
  static const char* kWords[] = {
      "the", "build", "fails", "in",      "storage", "because", "a",       "cursor", "is",  "stale",
      "let", "me",    "check", "journal", "notice",  "watcher", "session", "with",   "and", "test"};
  std::string out;
  while (out.size() < bytes) {
    out += kWords[rng() % std::size(kWords)];
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

// A human turn as the client writes it (without the newline).
std::string UserLine(const std::string& text) {
  return boost::json::serialize(boost::json::object{
      {"type", "user"}, {"message", {{"role", "user"}, {"content", text}}}, {"uuid", "u-" + text}});
}

void AppendLine(const std::string& path, const std::string& line) {
  std::ofstream(path, std::ios::binary | std::ios::app) << line << '\n';
}

UpstreamLink LinkOf(const std::string& key, const std::string& path) {
  UpstreamLink l;
  l.session = {kAgent, key};
  l.catalog_id = "claude-code";
  l.host_id = "host-1";
  l.thread_id = "thread-" + key;
  l.upstream_kind = "jsonl";
  l.upstream_ref = path;
  return l;
}

// The 50 MiB transcript, written on first use and kept until ReleaseMonitorFixtures().
std::unique_ptr<TempDir> transcript_dir;
std::string Transcript() {
  if (!transcript_dir) transcript_dir = std::make_unique<TempDir>();
  std::string path = transcript_dir->Sub("big.jsonl");
  if (std::filesystem::exists(path)) return path;
  std::mt19937_64 rng(42);
  std::ofstream out(path, std::ios::binary);
  const auto size = static_cast<uint64_t>(Scaled(kTranscriptMiB << 20));
  for (int i = 0; static_cast<uint64_t>(out.tellp()) < size; ++i) {
    out << TranscriptLine(rng, i % 20, i) << '\n';
  }
  return path;
}

void Scan(benchmark::State& state) {
  const std::string path = Transcript();
  const uint64_t size = std::filesystem::file_size(path);
  monitor::JsonlProvider provider;
  UpstreamLink link = LinkOf("agent:main:adopted:claude:abc", path);
  uint64_t turns = 0;
  for (auto _ : state) {
    turns = 0;
    for (link.marker = 0; link.marker < size;) {
      monitor::ScanResult r = provider.Scan(link, 1u << 20);
      if (!CheckOk(state, r.error, "Scan")) return;
      if (r.blocked) return state.SkipWithError(r.blocked_message.c_str());
      turns += r.human_turns();
      link.marker = r.new_marker;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(size) * state.iterations());
  state.counters["human_turns"] = static_cast<double>(turns);
}

void FullParse(benchmark::State& state) {
  std::ifstream in(Transcript(), std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t turns = 0;
  for (auto _ : state) {
    turns = 0;
    for (std::size_t pos = 0, nl; (nl = data.find('\n', pos)) != std::string::npos; pos = nl + 1) {
      auto c = monitor::ClassifyJsonlLine(std::string_view(data).substr(pos, nl - pos));
      turns += c.cls == monitor::JsonlLineClass::kHumanTurn;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(data.size()) * state.iterations());
  state.counters["human_turns"] = static_cast<double>(turns);
}

// An engine (a manual clock) with `links` linked, watched, idle sessions, filled with
// buffered writes and then reopened with sync durability, the default the ticks run with.
struct TickFixture {
  TempDir dir;
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(1764460800000);
  std::unique_ptr<Engine> engine;
  std::unique_ptr<monitor::UpstreamMonitor> monitor;
  int64_t links = 0;

  std::string File(int64_t i) const { return dir.Sub("files/" + std::to_string(i) + ".jsonl"); }
  std::string Key(int64_t i) const { return "agent:main:adopted:" + std::to_string(i); }

  Status Build(int64_t n) {
    links = n;
    std::filesystem::create_directories(dir.Sub("files"));
    SW_RETURN_IF_ERROR(Open(Durability::kBuffered));
    const std::vector<std::string> roots = {dir.Sub("files")};
    for (int64_t i = 0; i < n; ++i) {
      AppendLine(File(i), UserLine("history of " + std::to_string(i)));
      SW_RETURN_IF_ERROR(monitor::CreateOrRefreshLink(*engine, roots, LinkOf(Key(i), File(i)),
                                                      /*marker_given=*/false));
      SW_RETURN_IF_ERROR(engine->Watch(kWatcher, {kAgent, Key(i)}).status());
    }
    SW_RETURN_IF_ERROR(Open(Durability::kSync));
    monitor::UpstreamMonitorOptions mo;
    mo.roots = roots;
    mo.provider_timeout = std::chrono::seconds(20);
    monitor = std::make_unique<monitor::UpstreamMonitor>(*engine, mo);
    return Status::OK();
  }
  Status Open(Durability durability) {
    engine.reset();
    EngineOptions o;
    o.clock = clock;
    o.durability = durability;
    auto opened = Engine::Open(o, dir.Sub("db"));
    if (!opened.ok()) return opened.status();
    engine = std::move(opened).value();
    return Status::OK();
  }
  // Moves the clock one interval on and runs a tick there.
  monitor::TickReport Tick() {
    clock->Advance(kTickMs);
    return monitor->RunTick(clock->NowMs());
  }
};

// Built on first use and kept until ReleaseMonitorFixtures(): the ticks leave every link
// idle again (their markers at the end), so the idle and the active tick share it.
std::unique_ptr<TickFixture> tick_fixture;
Result<TickFixture*> Ticks() {
  if (!tick_fixture) {
    auto f = std::make_unique<TickFixture>();
    SW_RETURN_IF_ERROR(f->Build(Scaled(kLinks)));
    tick_fixture = std::move(f);
  }
  return tick_fixture.get();
}

Status CheckTick(const monitor::TickReport& r, int64_t scanned, uint64_t events) {
  if (r.scanned == static_cast<uint64_t>(scanned) && r.events_recorded == events)
    return Status::OK();
  return Status::Corruption("tick scanned " + std::to_string(r.scanned) + " links and recorded " +
                            std::to_string(r.events_recorded) + " events, expected " +
                            std::to_string(scanned) + " and " + std::to_string(events));
}

void IdleTick(benchmark::State& state) {
  auto fixture = Ticks();
  if (!CheckOk(state, fixture, "links")) return;
  TickFixture& f = **fixture;
  double seconds = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    monitor::TickReport r = f.Tick();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!CheckOk(state, CheckTick(r, f.links, 0), "idle tick")) return;
  }
  const double links = static_cast<double>(f.links);
  state.counters["links"] = links;
  state.counters["us_per_link"] = seconds * 1e6 / (links * static_cast<double>(state.iterations()));
}

void ActiveTick(benchmark::State& state) {
  auto fixture = Ticks();
  if (!CheckOk(state, fixture, "links")) return;
  TickFixture& f = **fixture;
  const int64_t stride = std::max<int64_t>(1, f.links / kActivePerTick);
  const uint64_t active = static_cast<uint64_t>((f.links + stride - 1) / stride);
  int turn = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ++turn;
    for (int64_t i = 0; i < f.links; i += stride) {
      AppendLine(f.File(i), UserLine("new turn " + std::to_string(turn)));
    }
    state.ResumeTiming();
    monitor::TickReport r = f.Tick();
    if (!CheckOk(state, CheckTick(r, f.links, active), "active tick")) return;
  }
  state.counters["links"] = static_cast<double>(f.links);
  state.counters["events_recorded"] = static_cast<double>(active);
}

}  // namespace

void RegisterMonitorBenchmarks() {
  Register("monitor/scan", Scan);
  Register("monitor/full_parse", FullParse);
  Register("monitor/idle_tick", IdleTick);
  Register("monitor/active_tick", ActiveTick);
}

void ReleaseMonitorFixtures() {
  tick_fixture.reset();
  transcript_dir.reset();
}

}  // namespace statewatch::bench
