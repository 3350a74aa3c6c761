// Fan-out (architecture.md §4: "coalescing must save work, not only lines"). One target
// session watched by 1, 100 or 10,000 watchers (explicit registrations, Engine::Watch):
//
//   fanout/<system>/first/watchers:N      the first notifying event: opens N notices.
//                                         Between iterations (untimed) every watcher drains,
//                                         so each timed event opens N notices again.
//   fanout/<system>/coalesced/watchers:N  the events after it: every notice is pending, so
//                                         each event only moves M (statewatch: ideally once
//                                         per target; the reference: one upsert per watcher).
//   fanout/<system>/no_watchers           the same event on a target nobody watches.
//   drain/<system>/watchers:10000         draining (acknowledging) every watcher's notice.
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

EventInput TargetEvent() {
  EventInput in = StandardEvent(0);
  in.session_key = kTargetKey;
  return in;
}

// The operations a fan-out benchmark needs, on either system.
class FanoutSystem {
 public:
  virtual ~FanoutSystem() = default;
  virtual Status Open(const std::string& dir) = 0;
  virtual Status Watch(const std::string& watcher) = 0;
  virtual Status RecordTarget() = 0;
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
  Status Drain(const std::string& watcher) override { return engine_->Drain(watcher).status(); }
  Result<uint64_t> PendingNotices() override {
    auto stats = engine_->Stats();
    if (!stats.ok()) return stats.status();
    return stats->pending_notices;
  }

 private:
  std::unique_ptr<Engine> engine_;
  SessionName target_{kAgent, kTargetKey};
  EventInput event_ = TargetEvent();
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
  Status Drain(const std::string& watcher) override { return ref_->Acknowledge(watcher).status(); }
  Result<uint64_t> PendingNotices() override { return uint64_t{ref_->QueuedNotices()}; }

 private:
  std::unique_ptr<SqliteReference> ref_;
  RefEventInput event_ = ToRef(TargetEvent());
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

// Fails the benchmark unless exactly `want` notices are pending.
bool CheckPending(benchmark::State& state, Fixture& f, uint64_t want, const char* when) {
  auto pending = f.system->PendingNotices();
  if (!CheckOk(state, pending, "pending notices")) return false;
  if (*pending == want) return true;
  state.SkipWithError((std::string(when) + ": expected " + std::to_string(want) +
                       " pending notices, found " + std::to_string(*pending))
                          .c_str());
  return false;
}

void First(benchmark::State& state, const std::string& system, uint64_t watchers) {
  Fixture f;
  if (!CheckOk(state, Setup(system, watchers, &f), "setup")) return;
  for (auto _ : state) {
    if (!CheckOk(state, f.system->RecordTarget(), "record")) break;
    state.PauseTiming();
    bool ok = CheckPending(state, f, watchers, "after the first event") &&
              CheckOk(state, DrainAll(f), "drain") && CheckPending(state, f, 0, "after drain");
    state.ResumeTiming();
    if (!ok) break;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["notices_per_event"] = static_cast<double>(watchers);
}

// Google Benchmark calls a function several times while it sizes the iteration count; the
// coalesced fixture (10,000 registrations) is kept between those calls. Reusing it is sound:
// further events only keep coalescing into the same pending notices.
std::string cached_key;
std::unique_ptr<Fixture> cached;

Fixture* CachedFixture(const std::string& key, const std::string& system, uint64_t watchers,
                       benchmark::State& state) {
  if (cached_key == key && cached) return cached.get();
  cached.reset();  // removes the previous benchmark's directory first
  auto f = std::make_unique<Fixture>();
  if (!CheckOk(state, Setup(system, watchers, f.get()), "setup")) return nullptr;
  if (watchers > 0 && !CheckOk(state, f->system->RecordTarget(), "opening event")) return nullptr;
  cached = std::move(f);
  cached_key = key;
  return cached.get();
}

void Coalesced(benchmark::State& state, const std::string& system, uint64_t watchers) {
  Fixture* f = CachedFixture(system + "/" + std::to_string(watchers), system, watchers, state);
  if (!f || !CheckPending(state, *f, watchers, "before")) return;
  for (auto _ : state) {
    if (!CheckOk(state, f->system->RecordTarget(), "record")) break;
  }
  state.SetItemsProcessed(state.iterations());
  CheckPending(state, *f, watchers, "after coalesced events");
}

void DrainBench(benchmark::State& state, const std::string& system, uint64_t watchers) {
  Fixture f;
  if (!CheckOk(state, Setup(system, watchers, &f), "setup")) return;
  for (auto _ : state) {
    state.PauseTiming();
    bool ok = CheckOk(state, f.system->RecordTarget(), "record") &&
              CheckPending(state, f, watchers, "before drain");
    state.ResumeTiming();
    if (!ok || !CheckOk(state, DrainAll(f), "drain")) break;
  }
  state.SetItemsProcessed(state.iterations() * watchers);
}

}  // namespace

void ReleaseFanoutFixtures() {
  cached.reset();
  cached_key.clear();
}

void RegisterFanoutBenchmarks() {
  for (std::string system : {"statewatch", "sqlite_normal"}) {
    for (uint64_t n : {1, 100, 10000}) {
      std::string tail = "/watchers:" + std::to_string(n);
      // Fixed iterations: each one drains every watcher untimed.
      int64_t iterations = n == 1 ? 500 : n == 100 ? 50 : 5;
      Register("fanout/" + system + "/first" + tail, [=](benchmark::State& s) {
        First(s, system, n);
      })->Iterations(iterations);
      Register("fanout/" + system + "/coalesced" + tail,
               [=](benchmark::State& s) { Coalesced(s, system, n); });
    }
    Register("fanout/" + system + "/no_watchers",
             [=](benchmark::State& s) { Coalesced(s, system, 0); });
    Register("drain/" + system + "/watchers:10000", [=](benchmark::State& s) {
      DrainBench(s, system, 10000);
    })->Iterations(2);
  }
}

}  // namespace statewatch::bench
