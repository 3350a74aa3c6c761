// A changesSince page of 200 events whose rows are all in the memtable (a session recorded a
// moment ago), through each read API. The journal: one session of 300 events (a third of
// them goal_changed, the rest human messages with a run id and a payload); the page is its
// 200 events after the 50th.
//
//   changes_memtable/page_api     Engine::ChangesSince (owning strings)
//   changes_memtable/lean         Engine::ReadChanges into one reused page, no row cache
//   changes_memtable/lean_cached  Engine::ReadChanges with the row cache
//
// counters pages_per_s. Instruction counts are the repeatable figure on a shared machine:
//   valgrind --tool=callgrind --toggle-collect='*EngineImpl::ReadChanges*' (or
//     '*EngineImpl::ChangesSince*') statewatch_bench --benchmark_filter=changes_memtable/lean
#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "statewatch/changes_view.h"

namespace statewatch::bench {
namespace {

constexpr int kEvents = 300;
constexpr int kPage = 200;
constexpr int kSkip = 50;

SessionName Session() { return {kAgent, SessionKey(0)}; }

Result<std::unique_ptr<Engine>> OpenFilled(const std::string& path, std::size_t row_cache_bytes) {
  EngineOptions o;
  o.durability = Durability::kBuffered;
  o.max_rows = kNoRowCap;
  o.row_cache_bytes = row_cache_bytes;
  auto engine = Engine::Open(o, path);
  if (!engine.ok()) return engine;
  for (int i = 0; i < kEvents; ++i) {
    EventInput in = StandardEvent(0);
    if (i % 3 == 0) in.kind = "goal_changed";
    in.run_id = "run-" + std::to_string(i);
    in.summary = "human message via telegram (turn " + std::to_string(i) + ")";
    in.payload_json = R"({"channel":"telegram","turns":2})";
    SW_RETURN_IF_ERROR((*engine)->Record(in).status());
  }
  return engine;
}

Status CheckPage(std::size_t events) {
  if (events == kPage) return Status::OK();
  return Status::Corruption("expected a page of " + std::to_string(kPage) + " events, got " +
                            std::to_string(events));
}

void PageApi(benchmark::State& state) {
  TempDir dir;
  auto engine = OpenFilled(dir.Sub("db"), EngineOptions().row_cache_bytes);
  if (!CheckOk(state, engine, "fill")) return;
  for (auto _ : state) {
    auto page = (*engine)->ChangesSince(Session(), kSkip, kPage);
    if (!CheckOk(state, page, "ChangesSince")) return;
    if (!CheckOk(state, CheckPage(page->events.size()), "ChangesSince")) return;
  }
  state.counters["pages_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void Lean(benchmark::State& state, std::size_t row_cache_bytes) {
  TempDir dir;
  auto engine = OpenFilled(dir.Sub("db"), row_cache_bytes);
  if (!CheckOk(state, engine, "fill")) return;
  ChangesView view;
  for (auto _ : state) {
    Status st = (*engine)->ReadChanges(Session(), kSkip, kPage, nullptr, &view);
    if (!CheckOk(state, st, "ReadChanges")) return;
    if (!CheckOk(state, CheckPage(view.events().size()), "ReadChanges")) return;
  }
  state.counters["pages_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

void RegisterChangesMemtableBenchmarks() {
  Register("changes_memtable/page_api", PageApi);
  Register("changes_memtable/lean", [](benchmark::State& s) { Lean(s, 0); });
  Register("changes_memtable/lean_cached",
           [](benchmark::State& s) { Lean(s, EngineOptions().row_cache_bytes); });
}

}  // namespace statewatch::bench
