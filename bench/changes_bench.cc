// A changesSince page (docs/semantics.md, "Catching up: `changesSince`"): 200 events of one
// session, read from the middle of its history (the page is truncated and the earliest
// retained sequence is not the first row read), from a journal of 300,000 events over 1,000
// sessions recorded in random order, so that one session's rows are scattered through the
// journal as a gateway's are.
//
// Two places the rows can be, each measured against SQLite on the same data:
//   sst       an old session: after the fill the engine is closed and its database is
//             compacted offline (every row in an SST, one sorted run per family, as after a
//             long quiet period), then reopened; the block cache is warmed by reading the
//             page once. SQLite holds the same rows (its page cache warm the same way).
//   memtable  a recent session: after the reopen, 100 batches of 100 events (3 of them per
//             batch to this session) — its rows are only in the memtable.
// All four reads are measured in alternation (InterleavedRun). The fixture (a few hundred MB,
// ~30 s to build) is built once and kept across repetitions.
//
//   changes/page200
//     counters statewatch_sst_per_s, sqlite_sst_per_s, statewatch_memtable_per_s,
//              sqlite_memtable_per_s (pages/s), vs_sqlite_sst, vs_sqlite_memtable
#include <algorithm>
#include <map>

#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "bench/rocksdb_inspect.h"
#include "bench/sqlite_reference.h"

namespace statewatch::bench {
namespace {

constexpr uint64_t kSessions = 1000;
constexpr int64_t kJournalEvents = 300000;  // with BENCH_SCALE, sessions scale alike
constexpr std::size_t kBatch = 100;
constexpr int kPage = 200;
constexpr int kSkip = 50;  // the page starts after the session's 50th event
constexpr uint64_t kRecentSession = kSessions;  // not among the fill's sessions
constexpr int kRecentBatches = 100;
constexpr std::size_t kRecentPerBatch = 3;
constexpr std::size_t kRecentStride = kBatch / kRecentPerBatch;  // positions 0, 33, 66

uint64_t FillSessions() { return static_cast<uint64_t>(std::max<int64_t>(10, Scaled(kSessions))); }
// 300 events per session on average, however short BENCH_SCALE makes the run.
int64_t JournalEvents() {
  return std::max<int64_t>(Scaled(kJournalEvents), static_cast<int64_t>(FillSessions()) * 300);
}

Status CheckPage(std::size_t events, bool truncated) {
  if (events == kPage && truncated) return Status::OK();
  return Status::Corruption("expected a full, truncated page of " + std::to_string(kPage) +
                            " events, got " + std::to_string(events) +
                            (truncated ? " (truncated)" : " (not truncated)"));
}

struct Fixture {
  TempDir dir;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<SqliteReference> ref;
  uint64_t old_session = 0;
  Sequence after_old = 0, after_recent = 0;  // statewatch's sequences
  int64_t ref_after_old = 0, ref_after_recent = 0;

  // Records the same batch into both systems.
  Status RecordBoth(const std::vector<EventInput>& batch) {
    SW_RETURN_IF_ERROR(engine->RecordMany(batch).status());
    std::vector<RefEventInput> ref_batch;
    for (const EventInput& in : batch) ref_batch.push_back(ToRef(in));
    return ref->RecordBatch(ref_batch).status();
  }

  // The sequence of the session's kSkip-th event, in each system.
  Status FindAfter(uint64_t session, Sequence* sw, int64_t* sq) {
    auto page = engine->ChangesSince({kAgent, SessionKey(session)}, 0, kSkip);
    if (!page.ok()) return page.status();
    auto ref_page = ref->ChangesSince(SessionKey(session), kAgent, 0, kSkip);
    if (!ref_page.ok()) return ref_page.status();
    if (page->events.size() != kSkip || ref_page->events.size() != kSkip)
      return Status::Corruption("session " + std::to_string(session) + " has too few events");
    *sw = page->events.back().sequence;
    *sq = ref_page->events.back().sequence;
    return Status::OK();
  }
};

Status Fill(Fixture* f, std::map<uint64_t, int64_t>* counts) {
  SessionPicker pick(FillSessions());
  std::vector<EventInput> batch(kBatch, StandardEvent(0));
  for (int64_t done = 0; done < JournalEvents(); done += kBatch) {
    for (EventInput& in : batch) {
      uint64_t s = pick.Next();
      ++(*counts)[s];
      SetSession(s, &in);
    }
    SW_RETURN_IF_ERROR(f->RecordBoth(batch));
  }
  return Status::OK();
}

// The recent session's events, interleaved with other sessions' (never the old one's).
Status RecordRecent(Fixture* f) {
  SessionPicker pick(FillSessions(), /*seed=*/7);
  std::vector<EventInput> batch(kBatch, StandardEvent(0));
  for (int b = 0; b < kRecentBatches; ++b) {
    for (std::size_t i = 0; i < kBatch; ++i) {
      bool recent = i % kRecentStride == 0 && i / kRecentStride < kRecentPerBatch;
      uint64_t s = recent ? kRecentSession : pick.Next();
      if (s == f->old_session) s = (s + 1) % FillSessions();
      SetSession(s, &batch[i]);
    }
    SW_RETURN_IF_ERROR(f->RecordBoth(batch));
  }
  return Status::OK();
}

Status Build(Fixture* f) {
  std::string path = f->dir.Sub("statewatch");
  auto engine = OpenEngine(path, Durability::kBuffered);
  if (!engine.ok()) return engine.status();
  f->engine = std::move(*engine);
  auto ref = SqliteReference::Open(f->dir.Sub("reference.db"), SqliteSync::kNormal);
  if (!ref.ok()) return ref.status();
  f->ref = std::move(*ref);

  std::map<uint64_t, int64_t> counts;
  SW_RETURN_IF_ERROR(Fill(f, &counts));
  // The old session: the first with room for a full page after its kSkip-th event.
  bool found = false;
  for (const auto& [session, n] : counts) {
    if (n > kSkip + kPage) {
      f->old_session = session;
      found = true;
      break;
    }
  }
  if (!found) return Status::NotFound("no session has " + std::to_string(kSkip + kPage + 1) +
                                      " events (BENCH_SCALE too small?)");
  f->engine.reset();
  SW_RETURN_IF_ERROR(CompactDatabase(path));
  engine = OpenEngine(path, Durability::kBuffered);
  if (!engine.ok()) return engine.status();
  f->engine = std::move(*engine);
  SW_RETURN_IF_ERROR(RecordRecent(f));
  SW_RETURN_IF_ERROR(f->FindAfter(f->old_session, &f->after_old, &f->ref_after_old));
  return f->FindAfter(kRecentSession, &f->after_recent, &f->ref_after_recent);
}

std::unique_ptr<Fixture> cached;

void ChangesPage(benchmark::State& state) {
  Fixture* built = BuildOnce(state, &cached, Build, "building the 300,000-event journal");
  if (built == nullptr) return;
  Fixture& f = *built;
  SessionName old_name{kAgent, SessionKey(f.old_session)};
  SessionName recent_name{kAgent, SessionKey(kRecentSession)};
  auto statewatch_page = [&f](const SessionName& s, Sequence after) -> Status {
    auto page = f.engine->ChangesSince(s, after, kPage);
    if (!page.ok()) return page.status();
    benchmark::DoNotOptimize(page->events.data());
    return CheckPage(page->events.size(), page->truncated);
  };
  auto sqlite_page = [&f](const SessionName& s, int64_t after) -> Status {
    auto page = f.ref->ChangesSince(s.session_key, s.agent_id, after, kPage);
    if (!page.ok()) return page.status();
    benchmark::DoNotOptimize(page->events.data());
    return CheckPage(page->events.size(), page->truncated);
  };
  // Warm the caches (block cache, SQLite's and the OS's pages) before timing.
  for (int i = 0; i < 2; ++i) {
    if (!CheckOk(state, statewatch_page(old_name, f.after_old), "warm") ||
        !CheckOk(state, sqlite_page(old_name, f.ref_after_old), "warm"))
      return;
  }
  InterleavedRun run;
  run.Add("statewatch_sst", [&] { return statewatch_page(old_name, f.after_old); });
  run.Add("sqlite_sst", [&] { return sqlite_page(old_name, f.ref_after_old); });
  run.Add("statewatch_memtable", [&] { return statewatch_page(recent_name, f.after_recent); });
  run.Add("sqlite_memtable", [&] { return sqlite_page(recent_name, f.ref_after_recent); });
  run.AddRatio("vs_sqlite_sst", "statewatch_sst", "sqlite_sst");
  run.AddRatio("vs_sqlite_memtable", "statewatch_memtable", "sqlite_memtable");
  run.Run(state);
}

}  // namespace

void RegisterChangesBenchmarks() { Register("changes/page200", ChangesPage); }

void ReleaseChangesFixture() { cached.reset(); }

}  // namespace statewatch::bench
