// The upstream monitor (docs/semantics.md, "Upstream monitor (adopted sessions)") on real
// JSONL files, driven by a ManualClock and explicit ticks: human turns, notices, self-echo,
// partial and oversized lines, missing sources, refreshes during a scan, active runs,
// failed appends, stop, unwatched links.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "engine/engine_impl.h"
#include "monitor/upstream_links.h"
#include "monitor_fixture.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "storage/store.h"

namespace statewatch::testing {
namespace {

using monitor::TickReport;
using Outcome = TickReport::Outcome;

class UpstreamMonitorTest : public MonitorTest {
 protected:
  // A watched session linked to a transcript that already holds some history.
  std::string LinkedTranscript(const std::string& key = kSession) {
    std::string path = File("t-" + std::to_string(std::hash<std::string>{}(key)) + ".jsonl");
    AppendLine(path, UserLine("old history typed by a person"));
    AppendLine(path, AssistantLine("old answer"));
    Link(key, path);
    WatchSession(key);
    return path;
  }

  // The next tick records the one turn waiting in `path` and moves kSession's marker to its
  // end: what a test whose scan was held back (a partial line, an active run, a fault, a
  // refresh) expects once the cause is gone.
  void ExpectTheNextTickRecordsTheTurn(const std::string& path) {
    TickReport r = Tick();
    EXPECT_EQ(r.events_recorded, 1u);
    EXPECT_EQ(MarkerOf(kSession), SizeOf(path));
  }
};

TEST_F(UpstreamMonitorTest, OldHistoryIsNotNews) {
  std::string path = LinkedTranscript();
  EXPECT_EQ(MarkerOf(kSession), SizeOf(path));
  TickReport r = Tick();
  EXPECT_EQ(r.outcome, Outcome::kCompleted);
  EXPECT_EQ(r.scanned, 1u);
  EXPECT_EQ(r.events_recorded, 0u);
  EXPECT_TRUE(Events(kSession).empty());
}

TEST_F(UpstreamMonitorTest, HumanAppendsGiveOneEventPerTickWithTurns) {
  std::string path = LinkedTranscript();
  AppendLine(path, UserLine("please also check the logs"));
  TickReport r = Tick();
  EXPECT_EQ(r.events_recorded, 1u);
  EXPECT_EQ(r.human_turns, 1u);
  auto events = Events(kSession);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, "human_direct_message");
  EXPECT_EQ(events[0].actor_type, ActorType::kHuman);
  EXPECT_EQ(events[0].summary, "human message via claude-code");
  EXPECT_EQ(events[0].payload_json, "");  // one turn: no payload
  EXPECT_EQ(events[0].dedupe_key, "upstream:" + std::string(kSession) + ":" +
                                      monitor::SourceHash(Request(kSession, path)) + ":" +
                                      std::to_string(SizeOf(path)));
  EXPECT_EQ(MarkerOf(kSession), SizeOf(path));

  // Three human turns among an answer and a tool result: one event, turns 3.
  AppendLine(path, UserLine("first"));
  AppendLine(path, AssistantLine("ok"));
  AppendLine(path, ToolResultLine());
  AppendLine(path, UserLine("second"));
  AppendLine(path, UserLine("third"));
  r = Tick();
  EXPECT_EQ(r.events_recorded, 1u);
  EXPECT_EQ(r.human_turns, 3u);
  events = Events(kSession);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].payload_json, R"({"turns":3})");
  EXPECT_EQ(MarkerOf(kSession), SizeOf(path));

  // Nothing new: nothing recorded.
  r = Tick();
  EXPECT_EQ(r.events_recorded, 0u);
  EXPECT_EQ(Events(kSession).size(), 2u);
}

TEST_F(UpstreamMonitorTest, ZeroHumanTurnsOnlyAdvanceTheMarker) {
  std::string path = LinkedTranscript();
  AppendLine(path, AssistantLine("thinking out loud"));
  AppendLine(path, ToolResultLine());
  AppendLine(path, R"({"type":"user","isMeta":true,"message":{"role":"user","content":"note"}})");
  TickReport r = Tick();
  EXPECT_EQ(r.events_recorded, 0u);
  EXPECT_EQ(r.markers_advanced, 1u);
  EXPECT_TRUE(Events(kSession).empty());
  EXPECT_EQ(MarkerOf(kSession), SizeOf(path));
}

TEST_F(UpstreamMonitorTest, TheWatcherGetsOneNotice) {
  std::string path = LinkedTranscript();
  AppendLine(path, UserLine("stop, use the other branch"));
  Tick();
  auto pending = Pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].target.session_key, kSession);
  EXPECT_EQ(pending[0].text, NoticeText(kSession, 0));
  // More human turns on later ticks: still the one pending notice.
  AppendLine(path, UserLine("and rebase it"));
  Tick();
  AppendLine(path, UserLine("thanks"));
  Tick();
  EXPECT_EQ(Events(kSession).size(), 3u);
  EXPECT_EQ(Pending().size(), 1u);
}

TEST_F(UpstreamMonitorTest, UpstreamTimestampIsUsedAndClamped) {
  std::string path = LinkedTranscript();
  AppendLine(path, UserLine("an hour ago", "2025-11-30T00:00:00.250Z"));  // kStart + 250 ms
  clock_->Set(kStart + 3600 * 1000);
  ASSERT_EQ(Monitor().RunTick(clock_->NowMs()).events_recorded, 1u);
  AppendLine(path, UserLine("two days ago", "2025-11-28T00:00:00Z"));
  clock_->Advance(60000);
  ASSERT_EQ(Monitor().RunTick(clock_->NowMs()).events_recorded, 1u);
  auto events = Events(kSession);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].occurred_at_ms, kStart + 250);
  EXPECT_EQ(events[1].occurred_at_ms, clock_->NowMs() - 24 * 3600 * 1000);  // clamped
}

TEST_F(UpstreamMonitorTest, AnEchoOfTheSessionsOwnMessageIsNotHuman) {
  std::string path = LinkedTranscript();
  ASSERT_OK(SessionTables(*engine_).AppendTranscript(
      Name(kSession),
      {Msg("user", R"("Run  the tests\nplease ")"), Msg("assistant", R"("Done.")")}));
  AppendLine(path, UserLine("  Run the tests please"));  // the gateway's own message, mirrored
  AppendLine(path, AssistantLine("Done."));
  TickReport r = Tick();
  EXPECT_EQ(r.echoes, 1u);
  EXPECT_EQ(r.human_turns, 0u);
  EXPECT_EQ(r.events_recorded, 0u);
  EXPECT_TRUE(Events(kSession).empty());
  EXPECT_TRUE(Pending().empty());
  EXPECT_EQ(MarkerOf(kSession), SizeOf(path));  // consumed all the same
}

TEST_F(UpstreamMonitorTest, OnlyTheTenMostRecentOwnUserMessagesCount) {
  std::string path = LinkedTranscript();
  std::vector<TranscriptMessage> own;
  for (int i = 0; i < 11; ++i) {
    own.push_back(Msg("user", "\"own " + std::to_string(i) + "\""));
    own.push_back(Msg("assistant", R"([{"type":"text","text":"ack"}])"));
  }
  ASSERT_OK(SessionTables(*engine_).AppendTranscript(Name(kSession), own));
  AppendLine(path, UserLine("own 0"));   // the 11th most recent: a person typed it again
  AppendLine(path, UserLine("own 1"));   // the 10th: an echo
  AppendLine(path, UserLine("own 10"));  // the newest: an echo
  TickReport r = Tick();
  EXPECT_EQ(r.echoes, 2u);
  EXPECT_EQ(r.human_turns, 1u);
  EXPECT_EQ(r.events_recorded, 1u);
}

TEST_F(UpstreamMonitorTest, APartialLastLineWaitsForItsNewline) {
  std::string path = LinkedTranscript();
  uint64_t before = SizeOf(path);
  std::string line = UserLine("typed slowly");
  Append(path, line.substr(0, 20));
  TickReport r = Tick();
  EXPECT_EQ(r.events_recorded, 0u);
  EXPECT_EQ(MarkerOf(kSession), before);
  Append(path, line.substr(20));  // complete, but no newline yet
  Tick();
  EXPECT_EQ(MarkerOf(kSession), before);
  EXPECT_TRUE(Events(kSession).empty());
  Append(path, "\n");
  ExpectTheNextTickRecordsTheTurn(path);
}

TEST_F(UpstreamMonitorTest, ALineOverOneMebibyteBlocksAndIsReported) {
  std::string path = LinkedTranscript();
  AppendLine(path, UserLine("before the big one"));
  uint64_t big_at = SizeOf(path);
  AppendLine(path, UserLine(std::string((1u << 20) + 10, 'x')));
  AppendLine(path, UserLine("after the big one"));

  TickReport r = Tick();  // consumes the line before it; the window ends inside the big line
  EXPECT_EQ(r.events_recorded, 1u);
  EXPECT_EQ(MarkerOf(kSession), big_at);
  for (int i = 0; i < 3; ++i) {
    r = Tick();
    ASSERT_EQ(r.blocked.size(), 1u);
    EXPECT_EQ(r.blocked[0].session.session_key, kSession);
    EXPECT_EQ(r.blocked[0].marker, big_at);
    EXPECT_NE(r.blocked[0].message.find("longer than the scan cap"), std::string::npos);
    EXPECT_EQ(MarkerOf(kSession), big_at);  // never skipped
    EXPECT_EQ(r.failed_checks, 0u);         // blocked is not missing
  }
  EXPECT_EQ(Events(kSession).size(), 1u);
  auto stats = Monitor().Stats();
  EXPECT_EQ(stats.blocked_links, 1u);
  EXPECT_EQ(stats.blocked, 3u);
}

TEST_F(UpstreamMonitorTest, ADeletedFileGivesOneMissingEventAfterTheThirdTick) {
  std::string path = LinkedTranscript();
  std::filesystem::remove(path);
  for (uint32_t i = 1; i <= 2; ++i) {
    TickReport r = Tick();
    EXPECT_EQ(r.failed_checks, 1u);
    EXPECT_EQ(r.events_recorded, 0u);
    ASSERT_TRUE(LinkOf(kSession).has_value());
    EXPECT_EQ(LinkOf(kSession)->missing_count, i);
  }
  EXPECT_TRUE(Events(kSession).empty());
  TickReport r = Tick();
  EXPECT_EQ(r.events_recorded, 1u);
  EXPECT_EQ(r.links_removed, 1u);
  EXPECT_FALSE(LinkOf(kSession).has_value());
  auto events = Events(kSession);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, "upstream_missing");
  EXPECT_EQ(events[0].summary, "upstream missing via claude-code");
  EXPECT_EQ(events[0].payload_json, R"({"channel":"claude-code"})");
  EXPECT_EQ(Pending().size(), 1u);
  // The link is gone: later ticks record nothing more.
  r = Tick();
  EXPECT_EQ(r.links, 0u);
  EXPECT_EQ(Events(kSession).size(), 1u);
}

TEST_F(UpstreamMonitorTest, ASuccessfulCheckOrARefreshRestartsTheCount) {
  std::string path = LinkedTranscript();
  std::filesystem::rename(path, path + ".away");
  Tick();
  Tick();
  EXPECT_EQ(LinkOf(kSession)->missing_count, 2u);
  std::filesystem::rename(path + ".away", path);
  Tick();
  EXPECT_EQ(LinkOf(kSession)->missing_count, 0u);
  std::filesystem::rename(path, path + ".away");
  Tick();
  Tick();
  EXPECT_EQ(LinkOf(kSession)->missing_count, 2u);
  Link(kSession, path, /*marker=*/0);  // a refresh of the same source
  EXPECT_EQ(LinkOf(kSession)->missing_count, 0u);
  Tick();
  Tick();
  EXPECT_TRUE(Events(kSession).empty());
  EXPECT_EQ(LinkOf(kSession)->missing_count, 2u);
}

TEST_F(UpstreamMonitorTest, ALinkRefreshedDuringAScanWins) {
  std::string path = LinkedTranscript();
  AppendLine(path, UserLine("typed into the old thread"));
  std::string other = File("other.jsonl");
  AppendLine(other, UserLine("history of the new thread"));
  Engine* engine = engine_.get();
  hooked_->during_call = [engine, other, roots = Roots()](const UpstreamLink& link) {
    UpstreamLink moved = Request(link.session.session_key, other);
    EXPECT_OK(monitor::CreateOrRefreshLink(*engine, roots, moved, /*marker_given=*/false));
  };
  TickReport r = Tick();
  hooked_->during_call = nullptr;
  EXPECT_EQ(r.refreshed, 1u);
  EXPECT_EQ(r.events_recorded, 0u);
  auto link = LinkOf(kSession);
  ASSERT_TRUE(link.has_value());
  EXPECT_EQ(link->upstream_ref, other);
  EXPECT_EQ(link->marker, SizeOf(other));  // not overwritten by the scan of the old file
  // The next tick follows the new source.
  AppendLine(other, UserLine("typed into the new thread"));
  ExpectTheNextTickRecordsTheTurn(other);
}

TEST_F(UpstreamMonitorTest, AnActiveRunDefersTheScan) {
  std::string path = LinkedTranscript();
  uint64_t before = SizeOf(path);
  RunRecord run;
  run.run_id = "run-1";
  run.kind = "send";
  run.requester = Name(kWatcher);
  run.target = Name(kSession);
  run.status = "running";
  ASSERT_OK(SessionTables(*engine_).PutRun(run));
  AppendLine(path, UserLine("typed while the run is active"));
  TickReport r = Tick();
  EXPECT_EQ(r.skipped_active_run, 1u);
  EXPECT_EQ(r.scanned, 0u);
  EXPECT_EQ(MarkerOf(kSession), before);  // the marker waits
  EXPECT_TRUE(Events(kSession).empty());
  run.status = "ok";
  ASSERT_OK(SessionTables(*engine_).PutRun(run));
  ExpectTheNextTickRecordsTheTurn(path);
}

TEST_F(UpstreamMonitorTest, UnwatchedLinkedSessionsAreNotScanned) {
  std::string path = File("unwatched.jsonl");
  AppendLine(path, UserLine("history"));
  Link(kSession, path);
  uint64_t before = SizeOf(path);
  AppendLine(path, UserLine("nobody is watching"));
  TickReport r = Tick();
  EXPECT_EQ(r.links, 1u);
  EXPECT_EQ(r.skipped_unwatched, 1u);
  EXPECT_EQ(r.scanned, 0u);
  EXPECT_EQ(MarkerOf(kSession), before);
  std::filesystem::remove(path);  // not checked either: no missing count
  Tick();
  Tick();
  Tick();
  ASSERT_TRUE(LinkOf(kSession).has_value());
  EXPECT_EQ(LinkOf(kSession)->missing_count, 0u);
  EXPECT_TRUE(Events(kSession).empty());
}

// A failed append (the kind is refused by this engine's kind table; links still write)
// leaves the marker where it was.
TEST_F(UpstreamMonitorTest, AFailedAppendKeepsTheMarker) {
  std::erase_if(options_.kinds, [](const KindSpec& k) { return k.name == "human_direct_message"; });
  OpenEngine();
  std::string path = LinkedTranscript();
  uint64_t before = SizeOf(path);
  AppendLine(path, UserLine("typed by a person"));
  TickReport r = Tick();
  EXPECT_EQ(r.errors, 1u);
  EXPECT_EQ(r.events_recorded, 0u);
  EXPECT_EQ(MarkerOf(kSession), before);
}

// The same with a storage fault: every file append fails, so the engine refuses writes from
// then on; a reopened engine shows the marker unchanged, and the turn is reported then.
TEST_F(UpstreamMonitorTest, AFaultInjectedAppendKeepsTheMarker) {
  std::string path = LinkedTranscript();
  uint64_t before = SizeOf(path);
  engine_.reset();
  auto faults = storage::NewFaultInjector();
  engine::EngineTestHooks hooks;
  hooks.faults = faults;
  auto opened = engine::OpenEngineWithHooks(options_, dir_ + "/db", hooks);
  ASSERT_OK(opened);
  engine_ = std::move(*opened);
  AppendLine(path, UserLine("typed by a person"));
  faults->FailWritesAfter(0);
  TickReport r = Tick();
  EXPECT_EQ(r.outcome, Outcome::kCompleted);
  EXPECT_GE(r.errors, 1u);
  EXPECT_EQ(r.events_recorded, 0u);
  faults->Heal();
  OpenEngine();
  EXPECT_EQ(MarkerOf(kSession), before);
  EXPECT_TRUE(Events(kSession).empty());
  ExpectTheNextTickRecordsTheTurn(path);
}

// A retry of a tick whose marker write was lost (a crash between the two writes) finds the
// same bytes and the same dedupe key: no second event, no second notice.
TEST_F(UpstreamMonitorTest, ARetriedScanIsDeduplicated) {
  std::string path = LinkedTranscript();
  auto stale = LinkOf(kSession);
  AppendLine(path, UserLine("typed once"));
  ASSERT_EQ(Tick().events_recorded, 1u);
  ASSERT_OK(engine_->Drain(kWatcher));
  ASSERT_OK(SessionTables(*engine_).PutUpstreamLink(*stale));  // as if the marker write was lost
  TickReport r = Tick();
  EXPECT_EQ(r.events_recorded, 0u);
  EXPECT_EQ(r.deduplicated, 1u);
  EXPECT_EQ(Events(kSession).size(), 1u);
  EXPECT_TRUE(Pending().empty());
  EXPECT_EQ(MarkerOf(kSession), SizeOf(path));
}

// Blocks the scan of one session until released; signals when it got there.
struct Gate {
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> left;
};

void BlockScansOf(HookedProvider& p, const std::string& key, std::shared_ptr<Gate> gate) {
  p.during_call = [key, gate](const UpstreamLink& link) {
    if (link.session.session_key != key) return;
    gate->entered.set_value();
    gate->released.wait_for(std::chrono::seconds(20));
    gate->left.set_value();
  };
}

TEST_F(UpstreamMonitorTest, StopMidTickPublishesNothing) {
  // Two watched links: the first has a human turn, the second's scan hangs.
  std::string first = LinkedTranscript("agent:main:adopted:a");
  std::string second = LinkedTranscript("agent:main:adopted:b");
  AppendLine(first, UserLine("typed into a"));
  uint64_t first_marker = MarkerOf("agent:main:adopted:a");
  auto gate = std::make_shared<Gate>();
  BlockScansOf(*hooked_, "agent:main:adopted:b", gate);
  Monitor().Start(clock_->NowMs());
  clock_->Advance(15000);
  auto tick = std::async(std::launch::async, [&] { return Monitor().RunTick(clock_->NowMs()); });
  ASSERT_EQ(gate->entered.get_future().wait_for(std::chrono::seconds(20)),
            std::future_status::ready);
  Monitor().Stop();  // returns once the tick has returned
  ASSERT_EQ(tick.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  TickReport r = tick.get();
  EXPECT_EQ(r.outcome, Outcome::kAborted);
  EXPECT_TRUE(Events("agent:main:adopted:a").empty());  // scanned before the stop, not published
  EXPECT_EQ(MarkerOf("agent:main:adopted:a"), first_marker);
  EXPECT_TRUE(Pending().empty());
  EXPECT_FALSE(Monitor().NextTickAt().has_value());
  EXPECT_EQ(Monitor().RunTick(clock_->NowMs()).outcome, Outcome::kStopped);

  gate->release.set_value();  // let the abandoned scan finish
  ASSERT_EQ(gate->left.get_future().wait_for(std::chrono::seconds(20)), std::future_status::ready);
  hooked_->during_call = nullptr;
  Monitor().Start(clock_->NowMs());
  EXPECT_EQ(Tick().events_recorded, 1u);
  EXPECT_EQ(Events("agent:main:adopted:a").size(), 1u);
}

TEST_F(UpstreamMonitorTest, OneTickAtATime) {
  LinkedTranscript();
  auto gate = std::make_shared<Gate>();
  BlockScansOf(*hooked_, kSession, gate);
  auto tick = std::async(std::launch::async, [&] { return Monitor().RunTick(clock_->NowMs()); });
  ASSERT_EQ(gate->entered.get_future().wait_for(std::chrono::seconds(20)),
            std::future_status::ready);
  EXPECT_EQ(Monitor().RunTick(clock_->NowMs()).outcome, Outcome::kBusy);
  gate->release.set_value();
  ASSERT_EQ(tick.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_EQ(tick.get().outcome, Outcome::kCompleted);
  hooked_->during_call = nullptr;
}

TEST_F(UpstreamMonitorTest, AProviderTimeoutIsAFailedCheck) {
  monitor_options_.provider_timeout = std::chrono::milliseconds(20);
  LinkedTranscript();
  auto gate = std::make_shared<Gate>();
  BlockScansOf(*hooked_, kSession, gate);
  TickReport r = Tick();
  EXPECT_EQ(r.outcome, Outcome::kCompleted);
  EXPECT_EQ(r.timeouts, 1u);
  EXPECT_EQ(r.failed_checks, 1u);
  EXPECT_EQ(LinkOf(kSession)->missing_count, 1u);
  EXPECT_EQ(Monitor().Stats().abandoned_calls, 1u);
  gate->release.set_value();
  ASSERT_EQ(gate->left.get_future().wait_for(std::chrono::seconds(20)), std::future_status::ready);
  hooked_->during_call = nullptr;
  // The next call runs on a fresh worker and succeeds: the count restarts.
  r = Tick();
  EXPECT_EQ(r.scanned, 1u);
  EXPECT_EQ(LinkOf(kSession)->missing_count, 0u);
}

TEST_F(UpstreamMonitorTest, CadenceFirstTickAfterFifteenSecondsThenEverySixty) {
  auto& m = Monitor();
  EXPECT_FALSE(m.NextTickAt().has_value());
  EXPECT_FALSE(m.ShouldRunAt(kStart + 999999));
  m.Start(kStart);
  EXPECT_EQ(m.NextTickAt(), kStart + 15000);
  EXPECT_FALSE(m.ShouldRunAt(kStart + 14999));
  EXPECT_FALSE(m.RunDueTick(kStart + 14999).has_value());
  ASSERT_TRUE(m.RunDueTick(kStart + 15000).has_value());
  EXPECT_EQ(m.NextTickAt(), kStart + 75000);
  EXPECT_FALSE(m.ShouldRunAt(kStart + 74999));
  // A late tick runs once and lands back on the grid (no catch-up ticks).
  ASSERT_TRUE(m.RunDueTick(kStart + 200000).has_value());
  EXPECT_EQ(m.NextTickAt(), kStart + 255000);
  EXPECT_FALSE(m.RunDueTick(kStart + 200001).has_value());
  m.Stop();
  EXPECT_FALSE(m.NextTickAt().has_value());
  EXPECT_FALSE(m.ShouldRunAt(kStart + 999999));
}

// A bare key never has a cursor (docs/semantics.md, "Sessions and their keys"), so
// its link is never scanned.
TEST_F(UpstreamMonitorTest, BareSessionLinksAreNeverScanned) {
  std::string path = File("bare.jsonl");
  AppendLine(path, UserLine("history"));
  UpstreamLink l = Request("global", path);
  l.session.agent_id = "ops";
  ASSERT_OK(monitor::CreateOrRefreshLink(*engine_, Roots(), l, false));
  auto w = engine_->Watch("agent:ops:main", SessionName{"ops", "global"});
  ASSERT_OK(w);
  EXPECT_FALSE(*w);
  AppendLine(path, UserLine("hello"));
  TickReport r = Tick();
  EXPECT_EQ(r.skipped_unwatched, 1u);
  EXPECT_EQ(r.events_recorded, 0u);
}

// Regression: a link's source is read only under the upstream roots. A transcript replaced
// by a symlink out of the roots after the link was made is not followed, and nothing is
// counted towards upstream_missing (the configuration refuses it; the source is there).
TEST_F(UpstreamMonitorTest, ASourceThatNoLongerResolvesUnderTheRootsIsNotRead) {
  std::string path = LinkedTranscript();
  uint64_t marker = MarkerOf(kSession);
  std::string outside = dir_ + "/outside.jsonl";
  AppendLine(outside, UserLine("old history typed by a person"));
  AppendLine(outside, AssistantLine("old answer"));
  AppendLine(outside, UserLine("a secret line"));
  std::filesystem::remove(path);
  std::filesystem::create_symlink(outside, path);
  for (int i = 0; i < 4; ++i) {
    TickReport r = Tick();
    EXPECT_EQ(r.errors, 1u);
    EXPECT_EQ(r.scanned, 0u);
    EXPECT_EQ(r.failed_checks, 0u);
  }
  EXPECT_TRUE(Events(kSession).empty());
  ASSERT_TRUE(LinkOf(kSession).has_value());
  EXPECT_EQ(MarkerOf(kSession), marker);
  EXPECT_EQ(LinkOf(kSession)->missing_count, 0u);
}

TEST_F(UpstreamMonitorTest, WithoutRootsNoSourceIsRead) {
  std::string path = LinkedTranscript();
  AppendLine(path, UserLine("typed after the roots were dropped"));
  monitor_options_.roots.clear();
  TickReport r = Tick();
  EXPECT_EQ(r.errors, 1u);
  EXPECT_EQ(r.events_recorded, 0u);
  EXPECT_TRUE(Events(kSession).empty());
}

}  // namespace
}  // namespace statewatch::testing
