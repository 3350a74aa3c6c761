// Pruning at the row cap (semantics.md §5: "it must keep up with the append rate at the row
// cap"). statewatch enforces EngineOptions::max_rows on every commit group, in the same
// atomic batch as the appends that overflow it. Here the journal is pre-filled to the cap
// (10,000 rows over 1,000 sessions), so every append deletes as many old rows as it adds;
// the same appends without a cap give the cost without pruning.
//
// The SQLite reference prunes in a separate pass; for comparison it runs that pass
// (Prune with the same cap) after every append, which is what keeping up with the append
// rate at the cap would take there.
#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "bench/sqlite_reference.h"

namespace statewatch::bench {
namespace {

constexpr uint64_t kCap = 10000;
constexpr uint64_t kSessions = 1000;
constexpr int64_t kRetentionMs = 30LL * 24 * 3600 * 1000;

void PruneStatewatch(benchmark::State& state, std::size_t batch_size, bool at_cap) {
  TempDir dir;
  auto opened = OpenEngine(dir.Sub("db"), Durability::kBuffered, at_cap ? kCap : kNoRowCap);
  if (!CheckOk(state, opened, "Engine::Open")) return;
  Engine& engine = **opened;
  for (const auto& batch : StandardBatches(kSessions, 100, kCap / 100))
    if (!CheckOk(state, engine.RecordMany(batch), "fill")) return;
  // Appends continue the fill's session cycle.
  auto batches = StandardBatches(kSessions, batch_size, kSessions / batch_size);
  std::size_t i = 0;
  for (auto _ : state) {
    const std::vector<EventInput>& batch = batches[i++ % batches.size()];
    Status st =
        batch_size == 1 ? engine.Record(batch[0]).status() : engine.RecordMany(batch).status();
    if (!CheckOk(state, st, "record")) break;
  }
  state.SetItemsProcessed(state.iterations() * batch_size);
  auto stats = engine.Stats();
  if (stats.ok()) state.counters["journal_rows"] = static_cast<double>(stats->journal_rows);
}

void PruneSqlite(benchmark::State& state, std::size_t batch_size, bool at_cap) {
  TempDir dir;
  auto opened = SqliteReference::Open(dir.Sub("ref.db"), SqliteSync::kNormal);
  if (!CheckOk(state, opened, "SqliteReference::Open")) return;
  SqliteReference& ref = **opened;
  for (const auto& batch : ToRef(StandardBatches(kSessions, 100, kCap / 100)))
    if (!CheckOk(state, ref.RecordBatch(batch), "fill")) return;
  auto batches = ToRef(StandardBatches(kSessions, batch_size, kSessions / batch_size));
  int64_t cutoff = NowMs() - kRetentionMs;
  std::size_t i = 0;
  for (auto _ : state) {
    const std::vector<RefEventInput>& batch = batches[i++ % batches.size()];
    Status st =
        batch_size == 1 ? ref.RecordEvent(batch[0]).status() : ref.RecordBatch(batch).status();
    if (!CheckOk(state, st, "record")) break;
    if (at_cap && !CheckOk(state, ref.Prune(cutoff, kCap), "prune")) break;
  }
  state.SetItemsProcessed(state.iterations() * batch_size);
}

}  // namespace

void RegisterPruneBenchmarks() {
  for (std::size_t batch : {std::size_t{1}, std::size_t{100}}) {
    std::string mode = batch == 1 ? "single" : "batch100";
    for (bool at_cap : {true, false}) {
      std::string tail = "/" + mode + (at_cap ? "/at_cap" : "/no_cap");
      Register("prune/statewatch" + tail,
               [=](benchmark::State& s) { PruneStatewatch(s, batch, at_cap); });
      Register("prune/sqlite_normal" + tail,
               [=](benchmark::State& s) { PruneSqlite(s, batch, at_cap); });
    }
  }
}

}  // namespace statewatch::bench
