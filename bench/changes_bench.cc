// A changesSince page (semantics.md §4): 200 events of one session out of a journal where
// 20 sessions interleave, read from the middle of the session's history (so the page is
// truncated and the earliest sequence is not the first row read).
#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "bench/sqlite_reference.h"

namespace statewatch::bench {
namespace {

constexpr uint64_t kSessions = 20;
constexpr std::size_t kEventsPerSession = 1000;
constexpr int kPage = 200;
constexpr std::size_t kSkip = 100;  // the page starts after the session's 100th event

std::vector<std::vector<EventInput>> FillBatches() {
  return StandardBatches(kSessions, 100, kSessions * kEventsPerSession / 100);
}

void ChangesStatewatch(benchmark::State& state) {
  TempDir dir;
  auto opened = OpenEngine(dir.Sub("db"), Durability::kBuffered);
  if (!CheckOk(state, opened, "Engine::Open")) return;
  Engine& engine = **opened;
  for (const auto& batch : FillBatches())
    if (!CheckOk(state, engine.RecordMany(batch), "fill")) return;
  SessionName session{kAgent, SessionKey(0)};
  auto all = engine.ChangesSince(session, 0, kPage);
  if (!CheckOk(state, all, "ChangesSince") || all->events.size() < kSkip) {
    state.SkipWithError("fill: the session has too few events");
    return;
  }
  Sequence after = all->events[kSkip - 1].sequence;
  for (auto _ : state) {
    auto page = engine.ChangesSince(session, after, kPage);
    if (!CheckOk(state, page, "ChangesSince")) break;
    if (page->events.size() != kPage || !page->truncated) {
      state.SkipWithError("ChangesSince: expected a full, truncated page");
      break;
    }
    benchmark::DoNotOptimize(page->events.data());
  }
  state.SetItemsProcessed(state.iterations() * kPage);
}

void ChangesSqlite(benchmark::State& state) {
  TempDir dir;
  auto opened = SqliteReference::Open(dir.Sub("ref.db"), SqliteSync::kNormal);
  if (!CheckOk(state, opened, "SqliteReference::Open")) return;
  SqliteReference& ref = **opened;
  for (const auto& batch : ToRef(FillBatches()))
    if (!CheckOk(state, ref.RecordBatch(batch), "fill")) return;
  std::string key = SessionKey(0);
  auto all = ref.ChangesSince(key, kAgent, 0, kPage);
  if (!CheckOk(state, all, "ChangesSince") || all->events.size() < kSkip) {
    state.SkipWithError("fill: the session has too few events");
    return;
  }
  int64_t after = all->events[kSkip - 1].sequence;
  for (auto _ : state) {
    auto page = ref.ChangesSince(key, kAgent, after, kPage);
    if (!CheckOk(state, page, "ChangesSince")) break;
    if (page->events.size() != kPage || !page->truncated) {
      state.SkipWithError("ChangesSince: expected a full, truncated page");
      break;
    }
    benchmark::DoNotOptimize(page->events.data());
  }
  state.SetItemsProcessed(state.iterations() * kPage);
}

}  // namespace

void RegisterChangesBenchmarks() {
  Register("changes_page/statewatch", ChangesStatewatch);
  Register("changes_page/sqlite_normal", ChangesSqlite);
}

}  // namespace statewatch::bench
