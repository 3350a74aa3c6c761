// Pruning at the row cap (semantics.md §5: "it must keep up with the append rate at the row
// cap"). statewatch enforces EngineOptions::max_rows on every commit group, in the same
// atomic batch as the appends that overflow it. Two engines are filled alike (10,000 rows
// over 1,000 sessions), one capped at 10,000 rows, one uncapped; appends then alternate
// between them (InterleavedRun), so at the cap every append deletes as many old rows as it
// adds, and the other engine gives the same append without pruning.
//
// The SQLite reference prunes in a separate pass; for comparison it runs that pass (Prune
// with the same cap) after every append, which is what keeping up with the append rate at
// the cap takes there. Buffered durability / synchronous=NORMAL throughout.
//
//   prune/<system>/<single|batch100>   counters at_cap_per_s, no_cap_per_s (events/s),
//                                      at_cap_vs_no_cap (rate ratio, < 1 = pruning costs)
#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "bench/sqlite_reference.h"

namespace statewatch::bench {
namespace {

constexpr uint64_t kCap = 10000;
constexpr uint64_t kSessions = 1000;
constexpr int64_t kRetentionMs = 30LL * 24 * 3600 * 1000;

// Appends continue the fill's session cycle, one batch (or single event) per call.
struct Appends {
  std::vector<std::vector<EventInput>> batches;
  std::size_t next = 0;
  Appends(std::size_t batch_size)
      : batches(StandardBatches(kSessions, batch_size, kSessions / batch_size)) {}
  const std::vector<EventInput>& Next() { return batches[next++ % batches.size()]; }
};

Status AppendTo(Engine& engine, const std::vector<EventInput>& batch) {
  return batch.size() == 1 ? engine.Record(batch[0]).status() : engine.RecordMany(batch).status();
}

void PruneStatewatch(benchmark::State& state, std::size_t batch_size) {
  TempDir dir;
  auto capped = OpenEngine(dir.Sub("capped"), Durability::kBuffered, kCap);
  auto uncapped = OpenEngine(dir.Sub("uncapped"), Durability::kBuffered, kNoRowCap);
  if (!CheckOk(state, capped, "Engine::Open") || !CheckOk(state, uncapped, "Engine::Open")) return;
  for (const auto& batch : StandardBatches(kSessions, 100, kCap / 100)) {
    if (!CheckOk(state, (*capped)->RecordMany(batch), "fill") ||
        !CheckOk(state, (*uncapped)->RecordMany(batch), "fill"))
      return;
  }
  Appends a(batch_size), b(batch_size);
  InterleavedRun run;
  run.Add(
      "at_cap", [&] { return AppendTo(**capped, a.Next()); }, batch_size);
  run.Add(
      "no_cap", [&] { return AppendTo(**uncapped, b.Next()); }, batch_size);
  run.AddRatio("at_cap_vs_no_cap", "at_cap", "no_cap");
  run.Run(state);
  auto stats = (*capped)->Stats();
  if (stats.ok()) state.counters["capped_journal_rows"] = static_cast<double>(stats->journal_rows);
}

void PruneSqlite(benchmark::State& state, std::size_t batch_size) {
  TempDir dir;
  auto capped = SqliteReference::Open(dir.Sub("capped.db"), SqliteSync::kNormal);
  auto uncapped = SqliteReference::Open(dir.Sub("uncapped.db"), SqliteSync::kNormal);
  if (!CheckOk(state, capped, "SqliteReference::Open") ||
      !CheckOk(state, uncapped, "SqliteReference::Open"))
    return;
  for (const auto& batch : ToRef(StandardBatches(kSessions, 100, kCap / 100))) {
    if (!CheckOk(state, (*capped)->RecordBatch(batch), "fill") ||
        !CheckOk(state, (*uncapped)->RecordBatch(batch), "fill"))
      return;
  }
  auto batches = ToRef(StandardBatches(kSessions, batch_size, kSessions / batch_size));
  std::size_t i = 0, j = 0;
  int64_t cutoff = NowMs() - kRetentionMs;
  InterleavedRun run;
  run.Add(
      "at_cap",
      [&]() -> Status {
        SW_RETURN_IF_ERROR((*capped)->RecordBatch(batches[i++ % batches.size()]).status());
        return (*capped)->Prune(cutoff, kCap).status();
      },
      batch_size);
  run.Add(
      "no_cap",
      [&]() -> Status { return (*uncapped)->RecordBatch(batches[j++ % batches.size()]).status(); },
      batch_size);
  run.AddRatio("at_cap_vs_no_cap", "at_cap", "no_cap");
  run.Run(state);
}

}  // namespace

void RegisterPruneBenchmarks() {
  for (std::size_t batch : {std::size_t{1}, std::size_t{100}}) {
    std::string mode = batch == 1 ? "/single" : "/batch100";
    Register("prune/statewatch" + mode, [=](benchmark::State& s) { PruneStatewatch(s, batch); });
    Register("prune/sqlite_normal" + mode, [=](benchmark::State& s) { PruneSqlite(s, batch); });
  }
}

}  // namespace statewatch::bench
