// A changesSince page (semantics.md §4): 200 events of one session out of a journal where
// 20 sessions interleave, read from the middle of the session's history (so the page is
// truncated and the earliest sequence is not the first row read). statewatch and the SQLite
// reference are measured in alternation (InterleavedRun).
//
//   changes_page   counters statewatch_per_s, sqlite_per_s (pages/s), vs_sqlite
#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "bench/sqlite_reference.h"

namespace statewatch::bench {
namespace {

constexpr uint64_t kSessions = 20;
constexpr std::size_t kEventsPerSession = 1000;
constexpr int kPage = 200;
constexpr std::size_t kSkip = 100;  // the page starts after the session's 100th event

Status CheckPage(std::size_t events, bool truncated) {
  if (events == kPage && truncated) return Status::OK();
  return Status::Corruption("expected a full, truncated page, got " + std::to_string(events) +
                            " events");
}

void ChangesPage(benchmark::State& state) {
  TempDir dir;
  auto engine = OpenEngine(dir.Sub("statewatch"), Durability::kBuffered);
  if (!CheckOk(state, engine, "Engine::Open")) return;
  auto ref = SqliteReference::Open(dir.Sub("reference.db"), SqliteSync::kNormal);
  if (!CheckOk(state, ref, "SqliteReference::Open")) return;
  Engine& e = **engine;
  SqliteReference& r = **ref;
  auto fill = StandardBatches(kSessions, 100, kSessions * kEventsPerSession / 100);
  for (const auto& batch : fill)
    if (!CheckOk(state, e.RecordMany(batch), "fill")) return;
  for (const auto& batch : ToRef(fill))
    if (!CheckOk(state, r.RecordBatch(batch), "fill")) return;

  SessionName session{kAgent, SessionKey(0)};
  auto head = e.ChangesSince(session, 0, kPage);
  auto ref_head = r.ChangesSince(session.session_key, kAgent, 0, kPage);
  if (!CheckOk(state, head, "ChangesSince") || !CheckOk(state, ref_head, "ChangesSince")) return;
  if (head->events.size() < kSkip || ref_head->events.size() < kSkip) {
    state.SkipWithError("fill: the session has too few events");
    return;
  }
  Sequence after = head->events[kSkip - 1].sequence;
  int64_t ref_after = ref_head->events[kSkip - 1].sequence;

  InterleavedRun run;
  run.Add("statewatch", [&]() -> Status {
    auto page = e.ChangesSince(session, after, kPage);
    if (!page.ok()) return page.status();
    benchmark::DoNotOptimize(page->events.data());
    return CheckPage(page->events.size(), page->truncated);
  });
  run.Add("sqlite", [&]() -> Status {
    auto page = r.ChangesSince(session.session_key, kAgent, ref_after, kPage);
    if (!page.ok()) return page.status();
    benchmark::DoNotOptimize(page->events.data());
    return CheckPage(page->events.size(), page->truncated);
  });
  run.AddRatio("vs_sqlite", "statewatch", "sqlite");
  run.Run(state);
}

}  // namespace

void RegisterChangesBenchmarks() { Register("changes_page", ChangesPage); }

}  // namespace statewatch::bench
