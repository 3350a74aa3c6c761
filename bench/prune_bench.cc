// Pruning at the row cap (docs/semantics.md, "Retention":
// "it must keep up with the append rate at the row cap"), like with like.
//
// statewatch enforces EngineOptions::max_rows on every commit group, in the same atomic
// batch as the appends that overflow it. Two engines are filled alike with 50,000 rows (the
// default cap) over 1,000 sessions; one is capped at 50,000, one uncapped, so at the cap
// every append retires as many old rows as it adds and the other engine gives the same
// append without pruning.
//
// The reference design prunes in a separate pass, once an hour. An hour of appends at the
// rates measured here is 10^7 rows and more — beyond a benchmark, and a table that large
// only makes SQLite's appends dearer. So the reference runs its prune pass once per 50,000
// appends (the cap: an hour at ~14 events/s): its table grows from 50,000 to 100,000 rows
// and the pass cuts it back. A pass costs a fixed part (the OFFSET scan over the 50,000
// newest rows, the age pass over the time index) plus a part per deleted row (the row and
// its two index entries, once per session the watermark update); at 50,000 rows per pass the
// fixed part is already spread thin, and a longer interval would lower it further only
// while raising every append's cost. The measured cost per append includes the pass: a
// repetition runs whole cycles (iterations = cycles x 50,000 events), timing the pass inside
// the append call that triggers it.
//
// Buffered durability / synchronous=NORMAL throughout (the work, not the fsync). All three
// run in alternation (InterleavedRun).
//
//   prune/<single|batch100>
//     counters at_cap_per_s, no_cap_per_s, sqlite_hourly_per_s (events/s, SQLite's including
//              its prune passes), at_cap_vs_no_cap (< 1 = pruning costs statewatch),
//              vs_sqlite (statewatch at the cap / SQLite with its passes),
//              sqlite_prune_share (share of SQLite's time spent in its passes),
//              sqlite_pass_ms (one pass), capped_journal_rows
#include <algorithm>
#include <chrono>

#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "bench/sqlite_reference.h"

namespace statewatch::bench {
namespace {

constexpr uint64_t kSessions = 1000;
// The row cap, 50,000 (the default), and the reference's pass interval in appends, the same
// number. BENCH_SCALE shrinks both alike, so a short run still covers whole cycles.
int64_t Cap() { return std::max<int64_t>(100, Scaled(50000) / 100 * 100); }
constexpr int64_t kRetentionMs = 30LL * 24 * 3600 * 1000;

// One system's appends: the next batch of the shared session sequence, set up untimed.
struct Appender {
  SessionPicker pick{kSessions};
  std::vector<EventInput> batch;
  std::vector<RefEventInput> ref_batch;
  explicit Appender(std::size_t n) : batch(n, StandardEvent(0)), ref_batch(n, StandardRefEvent(0)) {}
  Status Prepare() {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      uint64_t s = pick.Next();
      SetSession(s, &batch[i]);
      SetSession(s, &ref_batch[i]);
    }
    return Status::OK();
  }
  Status AppendTo(Engine& e) const {
    return batch.size() == 1 ? e.Record(batch[0]).status() : e.RecordMany(batch).status();
  }
};

// The three systems, filled to the cap with the same events.
struct Systems {
  std::unique_ptr<Engine> capped, uncapped;
  std::unique_ptr<SqliteReference> ref;
};

Status Fill(const TempDir& dir, Systems* s) {
  auto capped = OpenEngine(dir.Sub("capped"), Durability::kBuffered, Cap());
  if (!capped.ok()) return capped.status();
  auto uncapped = OpenEngine(dir.Sub("uncapped"), Durability::kBuffered, kNoRowCap);
  if (!uncapped.ok()) return uncapped.status();
  auto ref = SqliteReference::Open(dir.Sub("reference.db"), SqliteSync::kNormal);
  if (!ref.ok()) return ref.status();
  s->capped = std::move(*capped);
  s->uncapped = std::move(*uncapped);
  s->ref = std::move(*ref);
  Appender fill(100);
  for (int64_t done = 0; done < Cap(); done += 100) {
    SW_RETURN_IF_ERROR(fill.Prepare());
    SW_RETURN_IF_ERROR(fill.AppendTo(*s->capped));
    SW_RETURN_IF_ERROR(fill.AppendTo(*s->uncapped));
    SW_RETURN_IF_ERROR(s->ref->RecordBatch(fill.ref_batch).status());
  }
  return Status::OK();
}

void Prune(benchmark::State& state, std::size_t batch_size) {
  TempDir dir;
  Systems s;
  if (!CheckOk(state, Fill(dir, &s), "fill to the cap")) return;
  Appender capped(batch_size), uncapped(batch_size), ref(batch_size);
  int64_t cutoff = NowMs() - kRetentionMs;
  int64_t appended = 0, passes = 0;
  double pass_seconds = 0;
  InterleavedRun run;
  InterleavedRun::OpOptions opts{.items = static_cast<double>(batch_size)};
  opts.before = [&] { return capped.Prepare(); };
  run.Add("at_cap", [&] { return capped.AppendTo(*s.capped); }, opts);
  opts.before = [&] { return uncapped.Prepare(); };
  run.Add("no_cap", [&] { return uncapped.AppendTo(*s.uncapped); }, opts);
  opts.before = [&] { return ref.Prepare(); };
  run.Add(
      "sqlite_hourly",
      [&]() -> Status {
        SW_RETURN_IF_ERROR(s.ref->RecordBatch(ref.ref_batch).status());
        appended += static_cast<int64_t>(batch_size);
        if (appended % Cap() != 0) return Status::OK();
        auto t0 = std::chrono::steady_clock::now();
        Status st = s.ref->Prune(cutoff, Cap()).status();
        pass_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++passes;
        return st;
      },
      opts);
  run.AddRatio("at_cap_vs_no_cap", "at_cap", "no_cap");
  run.AddRatio("vs_sqlite", "at_cap", "sqlite_hourly");
  run.Run(state);
  double sqlite_seconds = run.Seconds("sqlite_hourly");
  state.counters["sqlite_prune_passes"] = static_cast<double>(passes);
  state.counters["sqlite_pass_ms"] = passes > 0 ? pass_seconds * 1e3 / passes : 0;
  state.counters["sqlite_prune_share"] = sqlite_seconds > 0 ? pass_seconds / sqlite_seconds : 0;
  auto stats = s.capped->Stats();
  if (stats.ok()) state.counters["capped_journal_rows"] = static_cast<double>(stats->journal_rows);
}

}  // namespace

void RegisterPruneBenchmarks() {
  for (std::size_t batch : {std::size_t{1}, std::size_t{100}}) {
    std::string mode = batch == 1 ? "single" : "batch100";
    // Whole cycles of the reference's schedule: one for single events, two for batches.
    int64_t cycles = batch == 1 ? 1 : 2;
    Register("prune/" + mode, [=](benchmark::State& s) { Prune(s, batch); })
        ->Iterations(cycles * Cap() / static_cast<int64_t>(batch));
  }
}

}  // namespace statewatch::bench
