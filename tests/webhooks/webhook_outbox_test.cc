// The durable outbox and the dispatcher over a real engine, with a ManualClock and a
// scripted sender: what a notice turns into, retries with back-off, dead letters, and
// that a reopen (a restart, or a crash before the outbox row) loses no delivery.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <deque>
#include <mutex>

#include "engine/engine_fixture.h"
#include "statewatch/webhook_tables.h"
#include "status_matchers.h"
#include "webhooks/dispatcher.h"
#include "webhooks/signature.h"

namespace statewatch::testing {
namespace {

using webhooks::Attempt;
using webhooks::AttemptResult;
using webhooks::Dispatcher;
using webhooks::WebhookOptions;

constexpr const char* kWatcher = "agent:main:main";
constexpr const char* kTarget = "agent:main:child";
constexpr const char* kUrl = "https://hooks.example.com/in";
constexpr const char* kSecret = "s3cret";

// Answers from a script (then 200), and keeps every attempt.
class ScriptedSender final : public webhooks::Sender {
 public:
  struct Shared {
    std::mutex mu;
    std::deque<AttemptResult> script;
    std::vector<Attempt> attempts;
  };
  explicit ScriptedSender(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
  AttemptResult Send(const Attempt& a) override {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->attempts.push_back(a);
    if (shared_->script.empty()) return AttemptResult{true, 200, false, ""};
    AttemptResult r = shared_->script.front();
    shared_->script.pop_front();
    return r;
  }

 private:
  std::shared_ptr<Shared> shared_;
};

AttemptResult Http(int status) { return AttemptResult{false, status, false, "answered " + std::to_string(status)}; }
AttemptResult Timeout() { return AttemptResult{false, 0, false, "no answer within 10000 ms"}; }

std::string HeaderOf(const Attempt& a, const std::string& name) {
  for (const auto& [n, v] : a.headers) {
    if (n == name) return v;
  }
  return "";
}

class WebhookOutboxTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    options_webhooks_.initial_backoff_ms = 1000;
    options_webhooks_.max_backoff_ms = 8000;
    options_webhooks_.max_retry_ms = 20000;
    options_webhooks_.jitter_seed = 7;
    options_webhooks_.scan_interval_ms = 5000;
    options_webhooks_.concurrency = 1;
  }
  void TearDown() override {
    dispatcher_.reset();
    EngineTest::TearDown();
  }

  void NewDispatcher() {
    dispatcher_.reset();
    dispatcher_ = std::make_unique<Dispatcher>(engine_.get(), clock_.get(), options_webhooks_,
                                               std::make_unique<ScriptedSender>(sent_));
    ASSERT_OK(dispatcher_->Load());
  }
  void Register(const std::string& watcher = kWatcher) {
    ASSERT_OK(WebhookTables(*engine_).PutWebhook({watcher, kUrl, kSecret}));
    if (dispatcher_) dispatcher_->Changed();
  }
  // The watcher follows the target, and a human message opens a notice.
  Sequence OpenNotice(const std::string& watcher = kWatcher, const std::string& target = kTarget,
                      const std::string& traceparent = "") {
    auto watched = engine_->Watch(watcher, Name(target));
    EXPECT_OK(watched);
    EventInput in = HumanEvent(target);
    in.traceparent = traceparent;
    return Rec(in);
  }
  int Run() {
    auto n = dispatcher_->RunOnce();
    EXPECT_OK(n);
    return n.ok() ? *n : -1;
  }
  std::vector<Attempt> Sent() {
    std::lock_guard<std::mutex> lock(sent_->mu);
    return sent_->attempts;
  }
  void Script(std::initializer_list<AttemptResult> results) {
    std::lock_guard<std::mutex> lock(sent_->mu);
    for (const auto& r : results) sent_->script.push_back(r);
  }
  std::vector<WebhookDelivery> OutboxRows() {
    auto rows = WebhookTables(*engine_).Outbox();
    EXPECT_OK(rows);
    return rows.ok() ? *rows : std::vector<WebhookDelivery>{};
  }
  std::vector<WebhookDelivery> Dead() {
    auto rows = WebhookTables(*engine_).DeadLetters();
    EXPECT_OK(rows);
    return rows.ok() ? *rows : std::vector<WebhookDelivery>{};
  }

  WebhookOptions options_webhooks_;
  std::shared_ptr<ScriptedSender::Shared> sent_ = std::make_shared<ScriptedSender::Shared>();
  std::unique_ptr<Dispatcher> dispatcher_;
};

TEST_F(WebhookOutboxTest, ANoticePostsWatcherTargetTextAndSequenceSignedWithItsKey) {
  Register();
  NewDispatcher();
  OpenNotice();
  std::vector<Notice> pending = Pending(kWatcher);
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(Run(), 1);
  std::vector<Attempt> sent = Sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].url, kUrl);
  auto body = boost::json::parse(sent[0].body).as_object();
  EXPECT_EQ(body.at("watcher").as_string(), kWatcher);
  EXPECT_EQ(body.at("target").as_string(), kTarget);
  EXPECT_EQ(body.at("text").as_string(), pending[0].text);  // byte for byte
  EXPECT_EQ(body.at("sequence").as_int64(), static_cast<int64_t>(pending[0].since));
  EXPECT_EQ(sent[0].body, webhooks::NoticePayload(kWatcher, pending[0]));
  EXPECT_EQ(HeaderOf(sent[0], "Idempotency-Key"),
            std::string(kWatcher) + ":" + kTarget + ":" + std::to_string(pending[0].since));
  EXPECT_TRUE(webhooks::VerifySignature(kSecret, HeaderOf(sent[0], "Statewatch-Signature"),
                                        sent[0].body, clock_->NowMs() / 1000, 300));
  EXPECT_EQ(HeaderOf(sent[0], "traceparent"), "");
  EXPECT_TRUE(OutboxRows().empty());
  EXPECT_EQ(dispatcher_->Stats().delivered, 1u);
}

TEST_F(WebhookOutboxTest, AStillPendingNoticeIsDeliveredOnceAcrossScans) {
  Register();
  NewDispatcher();
  OpenNotice();
  Run();
  for (int i = 0; i < 3; ++i) {
    clock_->Advance(options_webhooks_.scan_interval_ms);
    Run();
  }
  EXPECT_EQ(Sent().size(), 1u);
  EXPECT_EQ(Pending(kWatcher).size(), 1u);  // the engine's notice is the watcher's to drain
  // After a drain and a new change, the new notice (another sequence) is delivered too.
  ASSERT_OK(engine_->Drain(kWatcher));
  Human(kTarget);
  clock_->Advance(options_webhooks_.scan_interval_ms);
  Run();
  ASSERT_EQ(Sent().size(), 2u);
  EXPECT_NE(HeaderOf(Sent()[0], "Idempotency-Key"), HeaderOf(Sent()[1], "Idempotency-Key"));
}

TEST_F(WebhookOutboxTest, FailuresBackOffOnTheClockThenSucceedWithTheSameKeyAndBody) {
  Register();
  NewDispatcher();
  OpenNotice();
  Script({Http(500), Timeout(), Http(302)});
  EXPECT_EQ(Run(), 1);  // 500
  EXPECT_EQ(Run(), 0);  // not due before the back-off
  ASSERT_EQ(OutboxRows().size(), 1u);
  WebhookDelivery row = OutboxRows()[0];
  EXPECT_EQ(row.attempts, 1u);
  EXPECT_EQ(row.last_error, "answered 500");
  int64_t wait = row.next_attempt_at_ms - clock_->NowMs();
  EXPECT_GE(wait, 500);  // the first cap is 1000, minus at most half
  EXPECT_LE(wait, 1000);
  clock_->Advance(wait);
  EXPECT_EQ(Run(), 1);  // timeout
  row = OutboxRows()[0];
  EXPECT_EQ(row.attempts, 2u);
  clock_->Set(row.next_attempt_at_ms);
  EXPECT_EQ(Run(), 1);  // a redirect is a failure
  clock_->Set(OutboxRows()[0].next_attempt_at_ms);
  EXPECT_EQ(Run(), 1);  // 200
  EXPECT_TRUE(OutboxRows().empty());
  std::vector<Attempt> sent = Sent();
  ASSERT_EQ(sent.size(), 4u);
  for (const Attempt& a : sent) {
    EXPECT_EQ(a.body, sent[0].body);
    EXPECT_EQ(HeaderOf(a, "Idempotency-Key"), HeaderOf(sent[0], "Idempotency-Key"));
  }
  auto s = dispatcher_->Stats();
  EXPECT_EQ(s.http_errors, 2u);
  EXPECT_EQ(s.network_errors, 1u);
  EXPECT_EQ(s.delivered, 1u);
}

TEST_F(WebhookOutboxTest, RetriesEndInADeadLetterThatCanBeRetriedOrDropped) {
  Register();
  NewDispatcher();
  OpenNotice();
  // Enough 503s to outlast maxRetryMs (20 s with caps 1, 2, 4, 8, 8, ... s): never a 200.
  for (int i = 0; i < 30; ++i) Script({Http(503)});
  EXPECT_EQ(Run(), 1);
  clock_->Set(OutboxRows()[0].next_attempt_at_ms);
  for (int i = 0; i < 30 && !OutboxRows().empty(); ++i) {
    Run();
    if (!OutboxRows().empty()) clock_->Set(OutboxRows()[0].next_attempt_at_ms);
  }
  ASSERT_TRUE(OutboxRows().empty());
  std::vector<WebhookDelivery> dead = Dead();
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].last_error, "answered 503");
  // Every attempt was within maxRetryMs of the enqueue; the next would not have been.
  EXPECT_LE(dead[0].dead_at_ms - dead[0].enqueued_at_ms, options_webhooks_.max_retry_ms);
  EXPECT_GE(dead[0].attempts, 3u);
  EXPECT_EQ(dispatcher_->Stats().dead_letters, 1u);

  WebhookTables tables(*engine_);
  const std::string key = dead[0].IdempotencyKey();
  auto retried = tables.RetryDead(key);
  ASSERT_OK(retried);
  EXPECT_TRUE(*retried);
  dispatcher_->Changed();
  {
    std::lock_guard<std::mutex> lock(sent_->mu);
    sent_->script.clear();  // 200 from here
  }
  size_t before = Sent().size();
  EXPECT_EQ(Run(), 1);
  EXPECT_EQ(Sent().size(), before + 1);
  EXPECT_EQ(Sent().back().body, dead[0].body);
  EXPECT_TRUE(Dead().empty());
  EXPECT_TRUE(OutboxRows().empty());
  auto again = tables.DropDead(key);
  ASSERT_OK(again);
  EXPECT_FALSE(*again);
}

TEST_F(WebhookOutboxTest, TheURLPolicyRefusalIsADeadLetterAtOnce) {
  Register();
  NewDispatcher();
  OpenNotice();
  Script({AttemptResult{false, 0, true, "address 10.0.0.5 of hooks.example.com is in a private network"}});
  EXPECT_EQ(Run(), 1);
  ASSERT_EQ(Dead().size(), 1u);
  EXPECT_EQ(Dead()[0].attempts, 1u);
  EXPECT_EQ(dispatcher_->Stats().refused, 1u);
}

TEST_F(WebhookOutboxTest, AnUndeliveredRowSurvivesAReopenWithItsBodyAndAttempts) {
  Register();
  NewDispatcher();
  OpenNotice("agent:main:main", kTarget, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  Script({Http(500)});
  Run();
  ASSERT_EQ(OutboxRows().size(), 1u);
  const WebhookDelivery before = OutboxRows()[0];
  dispatcher_.reset();
  Reopen();
  ASSERT_OK(engine_->Start());
  ASSERT_EQ(OutboxRows().size(), 1u);
  EXPECT_EQ(OutboxRows()[0].body, before.body);
  EXPECT_EQ(OutboxRows()[0].attempts, 1u);
  EXPECT_EQ(OutboxRows()[0].next_attempt_at_ms, before.next_attempt_at_ms);
  NewDispatcher();
  EXPECT_EQ(dispatcher_->Stats().outbox_depth, 1u);
  clock_->Set(before.next_attempt_at_ms);
  Run();
  std::vector<Attempt> sent = Sent();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].body, sent[0].body);
  EXPECT_EQ(HeaderOf(sent[1], "Idempotency-Key"), HeaderOf(sent[0], "Idempotency-Key"));
  EXPECT_EQ(HeaderOf(sent[1], "traceparent"),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  EXPECT_TRUE(OutboxRows().empty());
}

// A crash after the notice opened and before its outbox row was written: the notice is
// durable in the engine, and the first scan after the restart enqueues it.
TEST_F(WebhookOutboxTest, ANoticeWithoutAnOutboxRowIsFoundByTheScanAfterAReopen) {
  Register();
  OpenNotice();  // no dispatcher running
  Reopen();
  ASSERT_OK(engine_->Start());
  EXPECT_TRUE(OutboxRows().empty());
  NewDispatcher();
  EXPECT_EQ(Run(), 1);
  EXPECT_EQ(Sent().size(), 1u);
}

TEST_F(WebhookOutboxTest, ASubAgentWatcherWithoutWakesIsDeliveredByThePeriodicScan) {
  const std::string sub = "agent:main:subagent:abc";
  Register(sub);
  NewDispatcher();
  Run();  // the first (full) scan: nothing yet
  OpenNotice(sub, kTarget);
  EXPECT_EQ(Run(), 0);  // no wake, no full scan due yet
  clock_->Advance(options_webhooks_.scan_interval_ms);
  EXPECT_EQ(Run(), 1);
  ASSERT_EQ(Sent().size(), 1u);
  EXPECT_NE(HeaderOf(Sent()[0], "Idempotency-Key").find(sub), std::string::npos);
}

TEST_F(WebhookOutboxTest, AWakeMakesTheNextPassScanTheWatcher) {
  Register();
  NewDispatcher();
  Run();  // the first full scan
  OpenNotice();  // the engine wakes the watcher at once
  EXPECT_EQ(Run(), 1);
}

TEST_F(WebhookOutboxTest, AFullOutboxLeavesTheNoticePendingUntilRoomFrees) {
  options_webhooks_.max_outbox = 1;
  Register("agent:main:a");
  Register("agent:main:b");
  NewDispatcher();
  OpenNotice("agent:main:a", kTarget);
  OpenNotice("agent:main:b", kTarget);
  Script({Http(500)});
  EXPECT_EQ(Run(), 1);  // one row fits; its attempt fails
  EXPECT_EQ(OutboxRows().size(), 1u);
  EXPECT_GE(dispatcher_->Stats().outbox_full, 1u);
  clock_->Set(OutboxRows()[0].next_attempt_at_ms);
  EXPECT_EQ(Run(), 1);  // delivered: room again
  clock_->Advance(options_webhooks_.scan_interval_ms);
  EXPECT_EQ(Run(), 1);  // the other watcher's notice, enqueued by this scan
  std::set<std::string> watchers;
  for (const Attempt& a : Sent()) watchers.insert(boost::json::parse(a.body).at("watcher").as_string().c_str());
  EXPECT_EQ(watchers, (std::set<std::string>{"agent:main:a", "agent:main:b"}));
}

TEST_F(WebhookOutboxTest, DeletingTheWebhookDropsItsOutboxRows) {
  Register();
  NewDispatcher();
  OpenNotice();
  Script({Http(500)});
  Run();
  ASSERT_EQ(OutboxRows().size(), 1u);
  auto removed = WebhookTables(*engine_).DeleteWebhook(kWatcher);
  ASSERT_OK(removed);
  EXPECT_TRUE(*removed);
  dispatcher_->Changed();
  clock_->Advance(60000);
  EXPECT_EQ(Run(), 0);
  EXPECT_TRUE(OutboxRows().empty());
  EXPECT_EQ(dispatcher_->Stats().outbox_depth, 0u);
}

TEST_F(WebhookOutboxTest, RegistrationRefusesABareWatcherAndEmptyFields) {
  WebhookTables tables(*engine_);
  EXPECT_EQ(tables.PutWebhook({"main", kUrl, kSecret}).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(tables.PutWebhook({kWatcher, "", kSecret}).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(tables.PutWebhook({kWatcher, kUrl, ""}).code(), Status::Code::kInvalidArgument);
  auto hooks = tables.ListWebhooks();
  ASSERT_OK(hooks);
  EXPECT_TRUE(hooks->empty());
  ASSERT_OK(tables.PutWebhook({"AGENT:Main:main", kUrl, kSecret}));
  auto got = tables.GetWebhook(kWatcher);
  ASSERT_OK(got);
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->watcher, kWatcher);  // canonical
  EXPECT_EQ((*got)->created_at_ms, kStart);
}

TEST_F(WebhookOutboxTest, TheCodecsRoundTripAndRefuseGarbage) {
  WebhookDelivery d;
  d.watcher = kWatcher;
  d.target = Name(kTarget);
  d.since = 42;
  d.body = "{\"x\":\"\xc3\xa9\"}";
  d.attempts = 3;
  d.last_error = "answered 500";
  auto back = DecodeWebhookDelivery(EncodeWebhookDelivery(d));
  ASSERT_OK(back);
  EXPECT_EQ(back->IdempotencyKey(), std::string(kWatcher) + ":" + kTarget + ":42");
  EXPECT_EQ(back->body, d.body);
  EXPECT_EQ(back->attempts, 3u);
  EXPECT_EQ(DecodeWebhookDelivery("garbage").status().code(), Status::Code::kCorruption);
  EXPECT_EQ(DecodeWebhook("").status().code(), Status::Code::kCorruption);
}

}  // namespace
}  // namespace statewatch::testing
