#include "monitor/upstream_monitor.h"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <unordered_set>

#include "monitor/self_echo.h"
#include "monitor/upstream_links.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"

namespace statewatch::monitor {

// What a tick intends to do with one link once it publishes.
struct LinkPlan {
  UpstreamLink snapshot;  // the link as listed; published only if it is still exactly this
  UpstreamLink updated;   // the link to write (marker, missing_count, last_scanned_at_ms)
  uint64_t human_turns = 0;
  std::optional<int64_t> occurred_at_ms;
  bool missing = false;       // record upstream_missing and remove the link
  bool event_failed = false;  // its event could not be recorded: keep the link as it was
  bool has_event() const { return human_turns > 0 || missing; }
};

namespace {

std::string SessionId(const SessionName& s) { return s.agent_id + '\0' + s.session_key; }

// Sessions with an active run: a RunRecord with status "running" targeting them.
Result<std::unordered_set<std::string>> ActiveRunTargets(const Engine& engine) {
  auto runs = SessionTablesView(engine).ListRuns();
  if (!runs.ok()) return runs.status();
  std::unordered_set<std::string> out;
  for (const RunRecord& r : *runs) {
    if (r.status != "running") continue;
    auto name = ResolveSession(r.target.session_key, r.target.agent_id);
    if (name.ok()) out.insert(SessionId(*name));
  }
  return out;
}

}  // namespace

UpstreamMonitor::UpstreamMonitor(Engine& engine, UpstreamMonitorOptions options)
    : engine_(engine), options_(std::move(options)) {}

UpstreamMonitor::~UpstreamMonitor() { Stop(); }

void UpstreamMonitor::Start(int64_t now_ms) {
  stop_.store(false);
  worker_.ClearInterrupt();
  std::lock_guard lock(cadence_mu_);
  next_tick_at_ = now_ms + options_.first_tick_delay_ms;
}

void UpstreamMonitor::Stop() {
  stop_.store(true);
  worker_.Interrupt();
  {
    std::lock_guard lock(cadence_mu_);
    next_tick_at_.reset();
  }
  std::lock_guard wait_for_tick(tick_mu_);
}

bool UpstreamMonitor::ShouldRunAt(int64_t now_ms) const {
  std::lock_guard lock(cadence_mu_);
  return !stop_.load() && next_tick_at_ && now_ms >= *next_tick_at_;
}

std::optional<int64_t> UpstreamMonitor::NextTickAt() const {
  std::lock_guard lock(cadence_mu_);
  return next_tick_at_;
}

void UpstreamMonitor::MoveCadencePast(int64_t now_ms) {
  std::lock_guard lock(cadence_mu_);
  if (!next_tick_at_ || *next_tick_at_ > now_ms) return;
  int64_t interval = std::max<int64_t>(options_.tick_interval_ms, 1);
  // The next slot of the grid strictly after now: late ticks never queue catch-up ticks.
  *next_tick_at_ += ((now_ms - *next_tick_at_) / interval + 1) * interval;
}

std::optional<TickReport> UpstreamMonitor::RunDueTick(int64_t now_ms) {
  if (!ShouldRunAt(now_ms)) return std::nullopt;
  return RunTick(now_ms);
}

TickReport UpstreamMonitor::RunTick(int64_t now_ms) {
  TickReport report;
  report.at_ms = now_ms;
  std::unique_lock tick(tick_mu_, std::try_to_lock);
  if (!tick.owns_lock()) {
    report.outcome = TickReport::Outcome::kBusy;
    return report;
  }
  if (stop_.load()) {
    report.outcome = TickReport::Outcome::kStopped;
    return report;
  }
  MoveCadencePast(now_ms);
  std::vector<LinkPlan> plans;
  bool completed = ScanAll(now_ms, report, plans) && Publish(plans, report);
  report.outcome = completed ? TickReport::Outcome::kCompleted : TickReport::Outcome::kAborted;
  Account(report);
  if (!completed) spdlog::info("upstream monitor: tick aborted by stop; nothing published");
  return report;
}

// ---- phase 1: scan (provider calls; nothing is written) ------------------------------------

bool UpstreamMonitor::ScanAll(int64_t now_ms, TickReport& report, std::vector<LinkPlan>& plans) {
  auto links = SessionTablesView(engine_).ListUpstreamLinks();
  auto active = ActiveRunTargets(engine_);
  if (!links.ok() || !active.ok()) {
    ++report.errors;
    spdlog::error("upstream monitor: cannot list links or runs: {}",
                  (links.ok() ? active.status() : links.status()).ToString());
    return true;  // nothing to publish; the next tick tries again
  }
  report.links = links->size();
  for (const UpstreamLink& link : *links) {
    if (stop_.load()) return false;
    auto watchers = engine_.WatchersOf(link.session);
    if (!watchers.ok()) ++report.errors;
    if (!watchers.ok() || watchers->empty()) {
      ++report.skipped_unwatched;
      continue;
    }
    if (active->count(SessionId(link.session))) {
      ++report.skipped_active_run;
      continue;
    }
    auto provider = options_.providers.find(link.upstream_kind);
    if (provider == options_.providers.end() || !provider->second) {
      // A configuration gap, not a missing source: never counted towards upstream_missing.
      ++report.errors;
      spdlog::error("upstream monitor: no provider for upstream kind \"{}\" (session {})",
                    link.upstream_kind, link.session.session_key);
      continue;
    }
    if (!ScanOne(link, provider->second, now_ms, report, plans)) return false;
  }
  return true;
}

bool UpstreamMonitor::ScanOne(const UpstreamLink& link,
                              const std::shared_ptr<const UpstreamProvider>& provider,
                              int64_t now_ms, TickReport& report, std::vector<LinkPlan>& plans) {
  struct Answer {
    Status refused;  // the source resolves outside the upstream roots: nothing was read
    SourceCheck check;
    ScanResult scan;
  };
  // The job owns copies of everything it touches: after a timeout it may outlive this call.
  auto answer = std::make_shared<Answer>();
  uint64_t max_bytes = options_.max_scan_bytes;
  auto outcome = worker_.Run(
      [answer, provider, link, max_bytes, roots = options_.roots] {
        // The provider reads the resolved path: a symlink swapped in after this check is
        // not followed out of the roots (a component renamed in between still could be).
        UpstreamLink source = link;
        auto resolved = ResolveUnderRoots(roots, link.upstream_ref);
        if (resolved.ok()) {
          source.upstream_ref = std::move(*resolved);
        } else if (resolved.status().code() == Status::Code::kPermissionDenied) {
          answer->refused = resolved.status();
          return;
        }  // missing or unreadable: the provider's check below says so
        answer->check = provider->CheckSource(source);
        answer->scan.new_marker = link.marker;
        // An idle source (its end is the marker) needs no scan: most links, most ticks.
        if (answer->check.exists() && answer->check.end_marker != link.marker) {
          answer->scan = provider->Scan(source, max_bytes);
        }
      },
      options_.provider_timeout);
  switch (outcome) {
    case BoundedWorker::Outcome::kInterrupted:
      return false;
    case BoundedWorker::Outcome::kTimedOut:
      ++report.timeouts;
      PlanFailure(link,
                  "provider call timed out after " +
                      std::to_string(options_.provider_timeout.count()) + " ms",
                  report, plans);
      return true;
    case BoundedWorker::Outcome::kDone:
      break;
  }
  if (stop_.load()) return false;
  if (!answer->refused.ok()) {
    ++report.errors;
    spdlog::error("upstream monitor: not reading the source of {}: {}", link.session.session_key,
                  answer->refused.message());
  } else if (!answer->check.exists()) {
    PlanFailure(link, answer->check.message, report, plans);
  } else if (!answer->scan.error.ok()) {
    PlanFailure(link, answer->scan.error.ToString(), report, plans);
  } else if (!PlanSuccess(link, std::move(answer->scan), now_ms, report, plans)) {
    ++report.errors;  // self-echo could not be decided: the link waits for the next tick
  }
  return true;
}

void UpstreamMonitor::PlanFailure(const UpstreamLink& link, const std::string& why,
                                  TickReport& report, std::vector<LinkPlan>& plans) {
  ++report.failed_checks;
  LinkPlan p;
  p.snapshot = p.updated = link;
  p.updated.missing_count = link.missing_count + 1;
  p.missing = p.updated.missing_count >= options_.missing_threshold;
  spdlog::warn("upstream monitor: check {}/{} of {} failed: {}", p.updated.missing_count,
               options_.missing_threshold, link.session.session_key, why);
  plans.push_back(std::move(p));
}

bool UpstreamMonitor::PlanSuccess(const UpstreamLink& link, ScanResult scan, int64_t now_ms,
                                  TickReport& report, std::vector<LinkPlan>& plans) {
  ++report.scanned;
  report.bytes_scanned += scan.bytes_scanned;
  if (scan.blocked) {
    report.blocked.push_back(
        BlockedSource{link.session, link.upstream_ref, link.marker, scan.blocked_message});
    spdlog::warn("upstream monitor: {} is blocked: {}", link.session.session_key,
                 scan.blocked_message);
  }
  LinkPlan p;
  p.snapshot = p.updated = link;
  if (!scan.turns.empty()) {
    auto own = RecentOwnUserTexts(engine_, link.session, options_.echo_window);
    if (!own.ok()) {
      spdlog::error("upstream monitor: transcript of {}: {}", link.session.session_key,
                    own.status().ToString());
      return false;
    }
    for (const HumanTurn& t : scan.turns) {
      if (own->count(NormalizeForEcho(t.text))) {
        ++report.echoes;
        continue;
      }
      ++p.human_turns;
      if (t.occurred_at_ms) p.occurred_at_ms = t.occurred_at_ms;  // the newest one wins
    }
    report.human_turns += p.human_turns;
  }
  if (p.human_turns == 0 && scan.new_marker == link.marker && link.missing_count == 0) {
    return true;  // idle: nothing to write (an idle link costs no durable write)
  }
  p.updated.marker = scan.new_marker;
  p.updated.missing_count = 0;
  p.updated.last_scanned_at_ms = now_ms;
  plans.push_back(std::move(p));
  return true;
}

// ---- phase 2: publish (under the link-write lock) -------------------------------------------

namespace {

EventInput BaseEvent(const UpstreamLink& l, const char* kind) {
  EventInput in;
  in.session_key = l.session.session_key;
  in.agent_id = l.session.agent_id;
  in.kind = kind;
  return in;
}

EventInput HumanEvent(const LinkPlan& p) {
  EventInput in = BaseEvent(p.snapshot, "human_direct_message");
  in.actor_type = ActorType::kHuman;
  in.summary = "human message via " + p.snapshot.catalog_id;
  if (p.human_turns > 1) in.payload_json = "{\"turns\":" + std::to_string(p.human_turns) + "}";
  in.occurred_at_ms = p.occurred_at_ms;
  in.dedupe_key = HumanMessageDedupeKey(p.snapshot, p.updated.marker);
  return in;
}

EventInput MissingEvent(const LinkPlan& p) {
  EventInput in = BaseEvent(p.snapshot, "upstream_missing");
  in.actor_type = ActorType::kSystem;
  in.summary = "upstream missing via " + p.snapshot.catalog_id;
  in.payload_json = boost::json::serialize(boost::json::object{{"channel", p.snapshot.catalog_id}});
  in.dedupe_key = MissingDedupeKey(p.snapshot);
  return in;
}

EventInput EventOf(const LinkPlan& p) { return p.missing ? MissingEvent(p) : HumanEvent(p); }

}  // namespace

bool UpstreamMonitor::Publish(std::vector<LinkPlan>& plans, TickReport& report) {
  if (plans.empty()) return !stop_.load();
  auto lock = LockLinkWrites();
  std::vector<LinkPlan*> live, with_event;
  for (LinkPlan& p : plans) {
    auto current = SessionTablesView(engine_).GetUpstreamLink(p.snapshot.session);
    if (!current.ok()) {
      ++report.errors;
      continue;
    }
    if (!current->has_value() || !SameLink(**current, p.snapshot)) {
      ++report.refreshed;  // refreshed or removed during the tick: the change wins
      continue;
    }
    live.push_back(&p);
    if (p.has_event()) with_event.push_back(&p);
  }
  // The last point of no return: from here the tick's events become visible.
  if (stop_.load()) return false;
  RecordEvents(with_event, report);
  WriteLinks(live, report);
  return true;
}

void UpstreamMonitor::RecordEvents(std::vector<LinkPlan*>& with_event, TickReport& report) {
  if (with_event.empty()) return;
  std::vector<EventInput> inputs;
  for (const LinkPlan* p : with_event) inputs.push_back(EventOf(*p));
  // One atomic batch: the tick's events are all published or none is.
  auto all = engine_.RecordMany(inputs);
  std::vector<Result<RecordResult>> results;
  if (all.ok()) {
    for (RecordResult& r : *all) results.emplace_back(std::move(r));
  } else if (all.status().IsInvalidArgument()) {
    // One event was refused before anything was written (e.g. a link stored with a bad
    // field): record the others one by one so a bad link cannot hold back the rest.
    for (const EventInput& in : inputs) results.push_back(engine_.Record(in));
  } else {
    results.assign(inputs.size(), Result<RecordResult>(all.status()));
  }
  for (std::size_t i = 0; i < with_event.size(); ++i) {
    LinkPlan& p = *with_event[i];
    const auto& r = results[i];
    if (!r.ok()) {
      p.event_failed = true;
      ++report.errors;
      spdlog::error("upstream monitor: recording {} for {} failed; its marker stays: {}",
                    inputs[i].kind, p.snapshot.session.session_key, r.status().ToString());
      continue;
    }
    if (r->deduplicated) {
      ++report.deduplicated;
    } else {
      ++report.events_recorded;
      spdlog::info("upstream monitor: {} {} (sequence {})", inputs[i].kind,
                   p.snapshot.session.session_key, r->event.sequence);
    }
  }
}

void UpstreamMonitor::WriteLinks(std::vector<LinkPlan*>& live, TickReport& report) {
  for (LinkPlan* p : live) {
    if (p->event_failed) continue;  // a failed append leaves the marker where it was
    Status st = p->missing ? SessionTables(engine_).DeleteUpstreamLink(p->snapshot.session)
                           : SessionTables(engine_).PutUpstreamLink(p->updated);
    if (!st.ok()) {
      ++report.errors;
      spdlog::error("upstream monitor: writing the link of {} failed: {}",
                    p->snapshot.session.session_key, st.ToString());
      continue;
    }
    if (p->missing) ++report.links_removed;
    if (!p->missing && p->updated.marker != p->snapshot.marker) ++report.markers_advanced;
  }
}

void UpstreamMonitor::Account(const TickReport& r) {
  std::lock_guard lock(stats_mu_);
  MonitorStats& s = stats_;
  if (r.outcome == TickReport::Outcome::kAborted) {
    ++s.ticks_aborted;
  } else {
    ++s.ticks;
    s.blocked_links = r.blocked.size();
    s.last_tick_at_ms = r.at_ms;
  }
  s.links_scanned += r.scanned;
  s.human_turns += r.human_turns;
  s.echoes += r.echoes;
  s.events_recorded += r.events_recorded;
  s.failed_checks += r.failed_checks;
  s.timeouts += r.timeouts;
  s.links_removed += r.links_removed;
  s.blocked += r.blocked.size();
  s.errors += r.errors;
  s.bytes_scanned += r.bytes_scanned;
}

MonitorStats UpstreamMonitor::Stats() const {
  std::lock_guard lock(stats_mu_);
  MonitorStats s = stats_;
  s.abandoned_calls = worker_.abandoned();
  return s;
}

}  // namespace statewatch::monitor
