// Fan-out (docs/benchmarks.md: coalescing must save work, not only lines). One target
// session watched by 1, 100 or 10,000 watchers (explicit registrations, Engine::Watch):
//
//   fanout/coalesced/<system>/watchers:N   the events after the first: every notice is
//        pending, so each event only moves M (statewatch: ideally once per target; the
//        reference: one cursor read + upsert per watcher). Measured in alternation with the
//        same event on a second target nobody watches, in the same database.
//        counters coalesced_per_s, no_watchers_per_s, coalesced_vs_no_watchers (rate ratio)
//   fanout/first/watchers:N   the first notifying event: opens N notices. After each timed
//        event every watcher drains (untimed), so the next one opens N notices again.
//        counters statewatch_us, sqlite_us (per event), vs_sqlite (rate ratio)
//   drain/watchers:10000   draining (acknowledging) every watcher's notice, one Drain each.
//        counters statewatch_per_s, sqlite_per_s (drains/s), vs_sqlite
//
// Buffered durability (SQLite: synchronous=NORMAL), so the figures show the work, not the
// fsync. The watchers are agent main sessions, so statewatch also schedules their wakes.
#include <map>
#include <memory>

#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "bench/sqlite_reference.h"

namespace statewatch::bench {
namespace {

const std::string kTargetKey = "agent:main:worker";
const std::string kIdleKey = "agent:main:idle";  // nobody watches it

EventInput EventOn(const std::string& key) {
  EventInput in = StandardEvent(0);
  in.session_key = key;
  return in;
}

// The operations a fan-out benchmark needs, on either system.
class FanoutSystem {
 public:
  virtual ~FanoutSystem() = default;
  virtual Status Open(const std::string& dir) = 0;
  virtual Status Watch(const std::string& watcher) = 0;
  virtual Status RecordTarget() = 0;
  virtual Status RecordIdle() = 0;  // the same event on a session nobody watches
  virtual Status Drain(const std::string& watcher) = 0;
  virtual Result<uint64_t> PendingNotices() = 0;
};

class StatewatchFanout final : public FanoutSystem {
 public:
  Status Open(const std::string& dir) override {
    auto opened = OpenEngine(dir, Durability::kBuffered);
    if (!opened.ok()) return opened.status();
    engine_ = std::move(*opened);
    return Status::OK();
  }
  Status Watch(const std::string& watcher) override {
    auto r = engine_->Watch(watcher, target_);
    if (r.ok() && !*r) return Status::InvalidArgument("Watch refused " + watcher);
    return r.status();
  }
  Status RecordTarget() override { return engine_->Record(event_).status(); }
  Status RecordIdle() override { return engine_->Record(idle_).status(); }
  Status Drain(const std::string& watcher) override { return engine_->Drain(watcher).status(); }
  Result<uint64_t> PendingNotices() override {
    auto stats = engine_->Stats();
    if (!stats.ok()) return stats.status();
    return stats->pending_notices;
  }

 private:
  std::unique_ptr<Engine> engine_;
  SessionName target_{kAgent, kTargetKey};
  EventInput event_ = EventOn(kTargetKey);
  EventInput idle_ = EventOn(kIdleKey);
};

class SqliteFanout final : public FanoutSystem {
 public:
  Status Open(const std::string& dir) override {
    auto opened = SqliteReference::Open(dir + "/ref.db", SqliteSync::kNormal);
    if (!opened.ok()) return opened.status();
    ref_ = std::move(*opened);
    return Status::OK();
  }
  Status Watch(const std::string& watcher) override {
    auto r = ref_->Watch(watcher, kTargetKey, kAgent);
    if (r.ok() && !*r) return Status::InvalidArgument("Watch refused " + watcher);
    return r.status();
  }
  Status RecordTarget() override { return ref_->RecordEvent(event_).status(); }
  Status RecordIdle() override { return ref_->RecordEvent(idle_).status(); }
  Status Drain(const std::string& watcher) override { return ref_->Acknowledge(watcher).status(); }
  Result<uint64_t> PendingNotices() override { return uint64_t{ref_->QueuedNotices()}; }

 private:
  std::unique_ptr<SqliteReference> ref_;
  RefEventInput event_ = ToRef(EventOn(kTargetKey));
  RefEventInput idle_ = ToRef(EventOn(kIdleKey));
};

std::unique_ptr<FanoutSystem> NewSystem(const std::string& name) {
  if (name == "statewatch") return std::make_unique<StatewatchFanout>();
  return std::make_unique<SqliteFanout>();
}

// A system with `watchers` registered on the target, in its own temporary directory.
struct Fixture {
  TempDir dir;
  std::unique_ptr<FanoutSystem> system;
  std::vector<std::string> watchers;
};

Status Setup(const std::string& system, uint64_t watchers, Fixture* f) {
  f->system = NewSystem(system);
  SW_RETURN_IF_ERROR(f->system->Open(f->dir.path()));
  for (uint64_t i = 0; i < watchers; ++i) {
    f->watchers.push_back(WatcherKey(i));
    SW_RETURN_IF_ERROR(f->system->Watch(f->watchers.back()));
  }
  return Status::OK();
}

Status DrainAll(Fixture& f) {
  for (const std::string& w : f.watchers) SW_RETURN_IF_ERROR(f.system->Drain(w));
  return Status::OK();
}

Status ExpectPending(Fixture& f, uint64_t want, const char* when) {
  auto pending = f.system->PendingNotices();
  if (!pending.ok()) return pending.status();
  if (*pending == want) return Status::OK();
  return Status::Corruption(std::string(when) + ": expected " + std::to_string(want) +
                            " pending notices, found " + std::to_string(*pending));
}

// Google Benchmark calls a function several times while it sizes the iteration count, and
// once per repetition, repetitions of different benchmarks interleaved; each coalesced
// fixture (up to 10,000 registrations) is built once and kept until the end. Reusing it is
// sound: further events only keep coalescing into the same pending notices.
std::map<std::string, std::unique_ptr<Fixture>> cached;

Result<Fixture*> CachedFixture(const std::string& system, uint64_t watchers) {
  std::string key = system + "/" + std::to_string(watchers);
  if (auto it = cached.find(key); it != cached.end()) return it->second.get();
  auto f = std::make_unique<Fixture>();
  SW_RETURN_IF_ERROR(Setup(system, watchers, f.get()));
  SW_RETURN_IF_ERROR(f->system->RecordTarget());  // opens the notices
  return (cached[key] = std::move(f)).get();
}

void Coalesced(benchmark::State& state, const std::string& system, uint64_t watchers) {
  auto fixture = CachedFixture(system, watchers);
  if (!CheckOk(state, fixture, "setup")) return;
  Fixture& f = **fixture;
  if (!CheckOk(state, ExpectPending(f, watchers, "before"), "pending")) return;
  InterleavedRun run;
  run.Add("coalesced", [&] { return f.system->RecordTarget(); });
  run.Add("no_watchers", [&] { return f.system->RecordIdle(); });
  run.AddRatio("coalesced_vs_no_watchers", "coalesced", "no_watchers");
  run.Run(state);
  (void)CheckOk(state, ExpectPending(f, watchers, "after coalesced events"), "pending");
}

// Both systems, each with `watchers` registered on the target.
struct Pair {
  Fixture statewatch, sqlite;
};

Status SetupPair(uint64_t watchers, Pair* p) {
  SW_RETURN_IF_ERROR(Setup("statewatch", watchers, &p->statewatch));
  return Setup("sqlite_normal", watchers, &p->sqlite);
}

// Times statewatch and SQLite NORMAL in alternation on a fresh Pair, `add(run, name, fixture)`
// adding each one's step, and their ratio as vs_sqlite. False when the setup failed (the
// state says so).
template <typename AddStep>
bool RunPairVsSqlite(benchmark::State& state, uint64_t watchers, AddStep add) {
  Pair p;
  if (!CheckOk(state, SetupPair(watchers, &p), "setup")) return false;
  InterleavedRun run;
  for (auto [name, f] : {std::pair{"statewatch", &p.statewatch}, {"sqlite", &p.sqlite}}) {
    add(run, name, f);
  }
  run.AddRatio("vs_sqlite", "statewatch", "sqlite");
  run.Run(state);
  return true;
}

void First(benchmark::State& state, uint64_t watchers) {
  bool ran = RunPairVsSqlite(state, watchers, [watchers](InterleavedRun& run, const char* name,
                                                         Fixture* f) {
    run.Add(
        name, [f] { return f->system->RecordTarget(); },
        {.after = [f, watchers]() -> Status {  // untimed: check, then drain everyone
          SW_RETURN_IF_ERROR(ExpectPending(*f, watchers, "after the first event"));
          SW_RETURN_IF_ERROR(DrainAll(*f));
          return ExpectPending(*f, 0, "after drain");
        }});
  });
  if (ran) state.counters["notices_per_event"] = static_cast<double>(watchers);
}

void DrainBench(benchmark::State& state, uint64_t watchers) {
  RunPairVsSqlite(state, watchers, [watchers](InterleavedRun& run, const char* name,
                                              Fixture* f) {
    run.Add(
        name, [f] { return DrainAll(*f); },
        {.items = static_cast<double>(watchers),
         .before = [f, watchers]() -> Status {  // untimed: open every watcher's notice
           SW_RETURN_IF_ERROR(f->system->RecordTarget());
           return ExpectPending(*f, watchers, "before drain");
         }});
  });
}

}  // namespace

void ReleaseFanoutFixtures() { cached.clear(); }

void RegisterFanoutBenchmarks() {
  for (uint64_t n : {1, 100, 10000}) {
    std::string tail = "/watchers:" + std::to_string(n);
    for (std::string system : {"statewatch", "sqlite_normal"}) {
      Register("fanout/coalesced/" + system + tail,
               [=](benchmark::State& s) { Coalesced(s, system, n); });
    }
    // Fixed iterations: each one drains every watcher of both systems, untimed. Enough
    // events that a repetition's ratio does not hinge on one slow call (a flush, a
    // checkpoint): ~0.5 s per iteration at 10,000 watchers.
    int64_t iterations = Scaled(n == 1 ? 1000 : n == 100 ? 100 : 8);
    Register("fanout/first" + tail, [=](benchmark::State& s) {
      First(s, n);
    })->Iterations(iterations);
  }
  Register("drain/watchers:10000", [](benchmark::State& s) {
    DrainBench(s, 10000);
  })->Iterations(Scaled(4));
}

}  // namespace statewatch::bench
