// changesSince pages whose rows sit in SST files, through each read API, beside the SQLite
// reference, measured in alternation (InterleavedRun):
//
//   sqlite        the reference's page (SqliteReference::ChangesSince, strings copied out)
//   page_api      Engine::ChangesSince (owning strings), no row cache
//   lean          Engine::ReadChanges (views, one arena per page), no row cache
//   lean_cached   Engine::ReadChanges with the row cache (the page is read repeatedly, so
//                 after the first read it comes from the cache, as a hot reconcile would)
//   page_cached   Engine::ChangesSince with the row cache
//
// The journal: 300,000 events over 1,000 sessions recorded in random order (batches of 100)
// with a 1 MiB write buffer, so that flushes put the rows in SST files as they go; the
// engine is then reopened (only the last write buffer's rows come back into a memtable) and
// the page — 200 events of the busiest session after its 50th — lies in SST files. The
// block cache and SQLite's page cache are warmed by two reads before timing. The database is
// copied after the fill so that the cached and uncached engines read the same files.
//
//   changes_lean/page200  counters <name>_per_s (pages/s), vs_sqlite_<name>
#include <filesystem>
#include <map>
#include <random>

#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "bench/sqlite_reference.h"
#include "statewatch/changes_view.h"

namespace statewatch::bench {
namespace {

constexpr uint64_t kSessions = 1000;
constexpr std::size_t kBatches = 3000;  // of 100 events
constexpr std::size_t kBatch = 100;
constexpr int kPage = 200;
constexpr int kSkip = 50;

Result<std::unique_ptr<Engine>> Open(const std::string& path, std::size_t row_cache_bytes) {
  EngineOptions o;
  o.durability = Durability::kBuffered;
  o.max_rows = kNoRowCap;
  o.write_buffer_bytes = 1u << 20;
  o.row_cache_bytes = row_cache_bytes;
  return Engine::Open(o, path);
}

Status CheckPage(std::size_t events, bool truncated) {
  if (events == kPage && truncated) return Status::OK();
  return Status::Corruption("expected a full, truncated page, got " + std::to_string(events) +
                            " events");
}

struct Fixture {
  TempDir dir;
  std::unique_ptr<Engine> uncached, cached;
  std::unique_ptr<SqliteReference> ref;
  SessionName session;
  Sequence after = 0;
  int64_t ref_after = 0;
};

Status Fill(Fixture* f, uint64_t* busiest) {
  auto engine = Open(f->dir.Sub("a"), 0);
  if (!engine.ok()) return engine.status();
  std::mt19937_64 rng(42);
  std::map<uint64_t, int> counts;
  for (std::size_t b = 0; b < kBatches; ++b) {
    std::vector<EventInput> batch;
    batch.reserve(kBatch);
    for (std::size_t i = 0; i < kBatch; ++i) {
      uint64_t s = rng() % kSessions;
      ++counts[s];
      batch.push_back(StandardEvent(s));
    }
    SW_RETURN_IF_ERROR((*engine)->RecordMany(batch).status());
    std::vector<RefEventInput> ref_batch;
    for (const EventInput& in : batch) ref_batch.push_back(ToRef(in));
    SW_RETURN_IF_ERROR(f->ref->RecordBatch(ref_batch).status());
  }
  *busiest = counts.begin()->first;
  for (const auto& [s, n] : counts) {
    if (n > counts[*busiest]) *busiest = s;
  }
  return Status::OK();
}

Status Build(Fixture* f) {
  auto ref = SqliteReference::Open(f->dir.Sub("reference.db"), SqliteSync::kNormal);
  if (!ref.ok()) return ref.status();
  f->ref = std::move(*ref);
  uint64_t busiest = 0;
  SW_RETURN_IF_ERROR(Fill(f, &busiest));
  std::error_code ec;
  std::filesystem::copy(f->dir.Sub("a"), f->dir.Sub("b"), std::filesystem::copy_options::recursive,
                        ec);
  if (ec) return Status::IOError("copying the database: " + ec.message());
  auto uncached = Open(f->dir.Sub("a"), 0);
  if (!uncached.ok()) return uncached.status();
  f->uncached = std::move(*uncached);
  auto cached = Open(f->dir.Sub("b"), 8u << 20);
  if (!cached.ok()) return cached.status();
  f->cached = std::move(*cached);
  f->session = SessionName{kAgent, SessionKey(busiest)};
  auto first = f->uncached->ChangesSince(f->session, 0, kSkip);
  auto ref_first = f->ref->ChangesSince(f->session.session_key, kAgent, 0, kSkip);
  if (!first.ok()) return first.status();
  if (!ref_first.ok()) return ref_first.status();
  if (first->events.size() != kSkip || ref_first->events.size() != kSkip) {
    return Status::Corruption("the busiest session has fewer than 50 events");
  }
  f->after = first->events.back().sequence;
  f->ref_after = ref_first->events.back().sequence;
  return Status::OK();
}

std::unique_ptr<Fixture> cached_fixture;

void LeanPage(benchmark::State& state) {
  Fixture* built = BuildOnce(state, &cached_fixture, Build, "building the 300,000-event journal");
  if (built == nullptr) return;
  Fixture& f = *built;
  ChangesView view;
  auto page_api = [&f](Engine& e) -> Status {
    auto page = e.ChangesSince(f.session, f.after, kPage);
    if (!page.ok()) return page.status();
    benchmark::DoNotOptimize(page->events.data());
    return CheckPage(page->events.size(), page->truncated);
  };
  auto lean = [&f, &view](Engine& e) -> Status {
    SW_RETURN_IF_ERROR(e.ReadChanges(f.session, f.after, kPage, nullptr, &view));
    benchmark::DoNotOptimize(view.events().data());
    return CheckPage(view.events().size(), view.truncated);
  };
  auto sqlite = [&f]() -> Status {
    auto page = f.ref->ChangesSince(f.session.session_key, kAgent, f.ref_after, kPage);
    if (!page.ok()) return page.status();
    benchmark::DoNotOptimize(page->events.data());
    return CheckPage(page->events.size(), page->truncated);
  };
  for (int i = 0; i < 2; ++i) {  // warm the caches
    if (!CheckOk(state, sqlite(), "warm") || !CheckOk(state, lean(*f.uncached), "warm") ||
        !CheckOk(state, lean(*f.cached), "warm")) {
      return;
    }
  }
  InterleavedRun run;
  run.Add("sqlite", sqlite);
  run.Add("page_api", [&] { return page_api(*f.uncached); });
  run.Add("lean", [&] { return lean(*f.uncached); });
  run.Add("lean_cached", [&] { return lean(*f.cached); });
  run.Add("page_cached", [&] { return page_api(*f.cached); });
  for (const char* name : {"page_api", "lean", "lean_cached", "page_cached"}) {
    run.AddRatio(std::string("vs_sqlite_") + name, name, "sqlite");
  }
  run.Run(state);
}

}  // namespace

void RegisterChangesLeanBenchmarks() { Register("changes_lean/page200", LeanPage); }

void ReleaseChangesLeanFixtures() { cached_fixture.reset(); }

}  // namespace statewatch::bench
