// What a status as of a past sequence costs (Engine::StatusAt), against a live status of the
// same session in the same run: `make bench-asof` (Release; results in
// bench/results/asof.json).
//
// Fixture: one session ("the target") with 10,000 events and 1,000 watchers holding a cursor
// on it; every 1,000 events a tenth of the watchers drain, so cursors sit at different
// places and some notices are pending at any sequence. No checkpoint is due (the log holds
// ~11,000 sequences, below checkpoint_min_records), so an as-of answer folds the whole log
// from the start: the worst case for this size.
//
//   asof/target/<where>    StatusAt(target, asOf) with the first page of 200 events;
//                          where = mid (half-way), head (the last sequence)
//   asof/watcher/mid       StatusAt(a watcher, asOf mid): its cursor and pending notice
//   live/target            StatusAt(target, now): the same answer from memory
//
// Each as-of benchmark also times a live status of the same session inside the same loop
// (outside the measured time): counters live_us and asof_vs_live.
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "statewatch/engine.h"

namespace statewatch {
namespace {

constexpr int kEvents = 10000;
constexpr int kWatchers = 1000;
constexpr int kBatch = 100;
constexpr int64_t kStart = 1764460800000;

struct Fixture {
  std::string dir;
  std::unique_ptr<Engine> engine;
  SessionName target{"main", "agent:main:target"};
  SessionName watcher0{"main", "agent:main:watcher:0"};
  Sequence mid = 0, head = 0;
  ~Fixture() {
    engine.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

Status Fill(Fixture& f) {
  for (int w = 0; w < kWatchers; ++w) {
    auto watched = f.engine->Watch("agent:main:watcher:" + std::to_string(w), f.target);
    if (!watched.ok()) return watched.status();
  }
  std::vector<EventInput> batch;
  for (int i = 0; i < kEvents; ++i) {
    EventInput in;
    in.session_key = f.target.session_key;
    in.kind = i % 3 == 0 ? "goal_changed" : "run_completed";
    in.actor_type = ActorType::kHuman;
    in.summary = "event " + std::to_string(i) + " of the target";
    batch.push_back(std::move(in));
    if (batch.size() == kBatch) {
      auto r = f.engine->RecordMany(batch);
      if (!r.ok()) return r.status();
      batch.clear();
    }
    if ((i + 1) % 1000 == 0) {
      for (int w = (i / 1000) % 10; w < kWatchers; w += 10) {
        auto d = f.engine->Drain("agent:main:watcher:" + std::to_string(w));
        if (!d.ok()) return d.status();
      }
    }
    if (i + 1 == kEvents / 2) {
      auto stats = f.engine->Stats();
      if (!stats.ok()) return stats.status();
      f.mid = stats->last_sequence;
    }
  }
  auto stats = f.engine->Stats();
  if (!stats.ok()) return stats.status();
  f.head = stats->last_sequence;
  return Status::OK();
}

// Closed by main before exit: RocksDB's own statics must outlive the engine.
std::unique_ptr<Fixture> fixture;
Status built;

Fixture* TheFixture(benchmark::State& state) {
  if (!fixture && built.ok()) {
    auto f = std::make_unique<Fixture>();
    std::random_device rd;
    f->dir =
        (std::filesystem::temp_directory_path() / ("statewatch-asof-bench-" + std::to_string(rd())))
            .string();
    EngineOptions options;
    options.durability = Durability::kBuffered;
    options.clock = std::make_shared<ManualClock>(kStart);
    auto engine = Engine::Open(options, f->dir);
    built = engine.status();
    if (built.ok()) {
      f->engine = std::move(*engine);
      built = Fill(*f);
    }
    if (built.ok()) fixture = std::move(f);
  }
  if (!built.ok()) {
    state.SkipWithError(("fixture: " + built.ToString()).c_str());
    return nullptr;
  }
  return fixture.get();
}

// StatusAt(session, as_of) every iteration; with as_of, also a live status outside the
// measured time.
void RunStatus(benchmark::State& state, bool watcher, std::optional<Sequence> (*where)(Fixture&)) {
  Fixture* f = TheFixture(state);
  if (f == nullptr) return;
  const SessionName& s = watcher ? f->watcher0 : f->target;
  const std::optional<Sequence> as_of = where(*f);
  using Clock = std::chrono::steady_clock;
  Clock::duration asof_time{}, live_time{};
  std::size_t events = 0, watchers = 0, pending = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    auto st = f->engine->StatusAt(s, as_of, 0, 200);
    asof_time += Clock::now() - t0;
    if (!st.ok()) {
      state.SkipWithError(st.status().ToString().c_str());
      return;
    }
    events = st->changes.events.size();
    watchers = st->watchers.size();
    pending = st->pending.size();
    benchmark::DoNotOptimize(st);
    if (as_of) {
      state.PauseTiming();
      auto t1 = Clock::now();
      auto live = f->engine->StatusAt(s, std::nullopt, 0, 200);
      live_time += Clock::now() - t1;
      benchmark::DoNotOptimize(live);
      state.ResumeTiming();
    }
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["watchers"] = static_cast<double>(watchers);
  state.counters["pending"] = static_cast<double>(pending);
  state.counters["as_of"] = static_cast<double>(as_of.value_or(0));
  if (as_of && state.iterations() > 0) {
    double n = static_cast<double>(state.iterations());
    double live_us = std::chrono::duration<double, std::micro>(live_time).count() / n;
    double asof_us = std::chrono::duration<double, std::micro>(asof_time).count() / n;
    state.counters["live_us"] = live_us;
    state.counters["asof_vs_live"] = live_us > 0 ? asof_us / live_us : 0;
  }
}

std::optional<Sequence> Mid(Fixture& f) { return f.mid; }
std::optional<Sequence> Head(Fixture& f) { return f.head; }
std::optional<Sequence> Now(Fixture&) { return std::nullopt; }

void Register(const char* name, bool watcher, std::optional<Sequence> (*where)(Fixture&)) {
  benchmark::RegisterBenchmark(name, [=](benchmark::State& s) { RunStatus(s, watcher, where); })
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

int RegisterAll() {
  Register("asof/target/mid", false, Mid);
  Register("asof/target/head", false, Head);
  Register("asof/watcher/mid", true, Mid);
  Register("live/target", false, Now);
  return 0;
}

}  // namespace
}  // namespace statewatch

int main(int argc, char** argv) {
  statewatch::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  statewatch::fixture.reset();
  return 0;
}
