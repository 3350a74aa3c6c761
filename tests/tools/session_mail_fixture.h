// The two-partition setup of the session mail tests (docs/cluster-internals.md,
// "Session tools across partitions"): two in-process engines (partitions 0 and 1 of 2) on one
// ManualClock, each with its SessionMessaging in cluster mode, and partition 0's forwarder on a
// fake wire (the JSON wire form, then partition 1's ApplyMail) that can be down or lose its answer.
#ifndef STATEWATCH_TESTS_TOOLS_SESSION_MAIL_FIXTURE_H_
#define STATEWATCH_TESTS_TOOLS_SESSION_MAIL_FIXTURE_H_

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/agent_partition.h"
#include "engine/engine_fixture.h"
#include "engine/engine_impl.h"
#include "statewatch/request_ids.h"
#include "statewatch/session_key.h"
#include "statewatch/session_mail.h"
#include "statewatch/session_tables.h"
#include "statewatch/watcher_directory.h"
#include "status_matchers.h"
#include "storage/store.h"
#include "tools/session_mail_forwarder.h"
#include "tools/session_messaging.h"

namespace statewatch::testing {

namespace json = boost::json;
inline constexpr int64_t kMailStart = 1764460800000;

// The first agent id a<n> that hashes to `partition` of 2.
inline std::string AgentIn(uint32_t partition) {
  for (int i = 0; i < 1000; ++i) {
    std::string id = "a" + std::to_string(i);
    if (engine::PartitionOfAgent(id, 2) == partition) return id;
  }
  return "";
}

struct MailPartition {
  std::string dir;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<tools::SessionMessaging> messaging;
  std::vector<Delivery> published;
  int mail_wakes = 0;
};

class SessionMailFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_ = std::make_shared<ManualClock>(kMailStart);
    for (uint32_t p = 0; p < 2; ++p) {
      parts_[p].dir = NewTempDir("mail" + std::to_string(p));
      Open(p, /*cross_partition=*/true);
    }
    home_agent_ = AgentIn(0);
    dest_agent_ = AgentIn(1);
    ASSERT_FALSE(home_agent_.empty());
    ASSERT_FALSE(dest_agent_.empty());
    caller_ = "agent:" + home_agent_ + ":main";
    target_ = "agent:" + dest_agent_ + ":main";
    forwarder_ = NewForwarder();
  }
  void TearDown() override {
    forwarder_.reset();
    for (MailPartition& p : parts_) {
      p.messaging.reset();
      p.engine.reset();
      std::filesystem::remove_all(p.dir);
    }
  }

  // Opens (or reopens: a restart, or a new owner after a failover) partition p; with
  // `faults`, its store's writes fail as they say.
  void Open(uint32_t p, bool cross_partition,
            std::shared_ptr<storage::FaultInjector> faults = nullptr) {
    MailPartition& part = parts_[p];
    part.messaging.reset();
    part.engine.reset();
    EngineOptions o;
    o.clock = clock_;
    o.durability = Durability::kBuffered;
    o.partition = p;
    o.partitions = 2;
    engine::EngineTestHooks hooks;
    hooks.faults = std::move(faults);
    auto e = engine::OpenEngineWithHooks(o, part.dir, hooks);
    ASSERT_OK(e);
    part.engine = std::move(*e);
    tools::MessagingOptions m;
    m.sessions.visibility = tools::Visibility::kAll;
    m.sessions.agent_to_agent.enabled = true;
    m.tool_policy.allow_agents = {"*"};  // spawns into the other partition's agent
    m.tool_policy.max_spawn_depth = 2;    // a remote child spawns its own
    m.cross_partition = cross_partition;
    m.partitions = 2;
    m.on_delivery = [&part](const Delivery& d) { part.published.push_back(d); };
    m.on_mail = [&part] { ++part.mail_wakes; };
    auto opened = tools::SessionMessaging::Open(part.engine.get(), std::move(m));
    ASSERT_OK(opened);
    part.messaging = std::move(*opened);
  }

  // The home's forwarder, whose wire reaches the destination's messaging through JSON.
  std::unique_ptr<tools::SessionMailForwarder> NewForwarder() {
    return std::make_unique<tools::SessionMailForwarder>(
        parts_[0].engine.get(), [this](const SessionMail& mail) -> Status {
          ++sends_;
          if (down_) return Status::IOError("partition 1 unreachable");
          auto wire = tools::MailFromJson(json::value(tools::MailToJson(mail)));
          if (!wire.ok()) return wire.status();
          EXPECT_EQ(wire->partition, 1u);
          auto applied = parts_[1].messaging->ApplyMail(*wire);
          if (!applied.ok()) return applied.status();
          if (lose_answer_) return Status::IOError("answer lost");
          return Status::OK();
        });
  }

  Engine& home() { return *parts_[0].engine; }
  Engine& dest() { return *parts_[1].engine; }

  std::vector<Delivery> DeliveriesTo(Engine& engine, const std::string& key) {
    std::vector<Delivery> out;
    auto all = SessionTablesView(engine).PendingDeliveries("");
    EXPECT_OK(all);
    if (!all.ok()) return out;
    for (Delivery& d : *all) {
      if (d.session_key == key) out.push_back(std::move(d));
    }
    return out;
  }
  std::size_t OutboxSize() {
    auto rows = SessionMailTables(home()).Outbox();
    EXPECT_OK(rows);
    return rows.ok() ? rows->size() : 0;
  }
  Result<tools::ToolAnswer> Send(std::string_view params, tools::CallCompletion done = {}) {
    return parts_[0].messaging->CallTool("sessions_send", SessionName{home_agent_, caller_},
                                         json::parse(params).as_object(), std::move(done));
  }
  tools::SessionMailForwarder::PumpResult Pump() {
    auto r = forwarder_->Pump(clock_->NowMs());
    EXPECT_OK(r);
    return r.ok() ? *r : tools::SessionMailForwarder::PumpResult{};
  }
  // A session tool called by the caller at its home (partition 0).
  Result<tools::ToolAnswer> Call(std::string_view tool, std::string_view params) {
    return parts_[0].messaging->CallTool(tool, SessionName{home_agent_, caller_},
                                         json::parse(params).as_object());
  }
  // The journal of `key` at `engine`, oldest first.
  std::vector<Event> EventsOf(Engine& engine, const std::string& key) {
    auto session = ResolveSession(key, "");
    EXPECT_OK(session);
    if (!session.ok()) return {};
    auto page = engine.ChangesSince(*session, 0, 200);
    EXPECT_OK(page);
    return page.ok() ? page->events : std::vector<Event>{};
  }
  // Makes `call` (a tool call at the home) under an X-Request-Id seal with the home's writes
  // failing after n = 0, 1, ... 7 of them, and reopens the home after each, as a restart
  // would: the request's record is kept exactly when its mail is (then delivered, so that
  // the next round starts with an empty outbox). Some rounds must keep neither, some both.
  void ExpectTheRecordExactlyWithTheMail(const std::function<void()>& call) {
    int both = 0, neither = 0;
    for (uint64_t n = 0; n < 8; ++n) {
      auto faults = storage::NewFaultInjector();
      forwarder_.reset();
      Open(0, /*cross_partition=*/true, faults);
      const std::string id = "request-" + std::to_string(n);
      faults->FailWritesAfter(n);
      {
        ArmRequestSeal armed(std::make_shared<RequestSeal>(id, "digest"));
        call();
      }
      faults->Heal();
      Open(0, /*cross_partition=*/true);
      forwarder_ = NewForwarder();
      auto record = RequestIds(home()).Get(id);
      ASSERT_OK(record);
      const bool mailed = OutboxSize() > 0;
      EXPECT_EQ(record->has_value(), mailed) << "writes failing after " << n;
      (mailed ? both : neither)++;
      if (mailed) {
        EXPECT_EQ(Pump().sent, 1);
      }
    }
    EXPECT_GT(neither, 0) << "the failures never hit the call";
    EXPECT_GT(both, 0) << "the call never got through";
  }
  // A reset of the caller as a node's saga runs it (server/watcher_sagas.h): journaled at the
  // home (whose cursors go first), then the destination cleared and fenced at the saga's
  // number, then both confirmed.
  void ResetCallerAsASagaDoes() {
    WatcherDirectory directory(home());
    ASSERT_OK(home().ResetWatcher(caller_));
    auto saga = directory.BeginSaga(caller_, WatcherSagaKind::kReset, 0);
    ASSERT_OK(saga);
    ASSERT_OK(dest().ResetWatcher(caller_));
    ASSERT_OK(WatcherDirectory(dest()).MarkCleared(caller_, saga->number));
    ASSERT_OK(directory.Confirm(caller_, 1, saga->number));
    ASSERT_OK(directory.Confirm(caller_, 0, saga->number));
  }
  std::string SendParams(int timeout, bool watch = false) {
    return "{\"sessionKey\":\"" + target_ + "\",\"message\":\"ping\",\"timeoutSeconds\":" +
           std::to_string(timeout) + (watch ? ",\"watch\":true}" : "}");
  }

  std::shared_ptr<ManualClock> clock_;
  MailPartition parts_[2];
  std::string home_agent_, dest_agent_, caller_, target_;
  std::unique_ptr<tools::SessionMailForwarder> forwarder_;
  bool down_ = false;
  bool lose_answer_ = false;
  int sends_ = 0;
};

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_TOOLS_SESSION_MAIL_FIXTURE_H_
