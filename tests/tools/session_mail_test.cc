// sessions_send across partitions (docs/cluster.md §15.8): the home partition keeps the run
// and an outbox row; the forwarder carries the mail to the destination, which applies it
// exactly once. Two in-process engines (partitions 0 and 1 of 2) on one ManualClock; the
// wire is a fake MailSender that can be down or lose its answer.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/agent_partition.h"
#include "engine/engine_fixture.h"
#include "statewatch/session_mail.h"
#include "statewatch/session_tables.h"
#include "statewatch/watcher_directory.h"
#include "status_matchers.h"
#include "tools/session_mail_forwarder.h"
#include "tools/session_messaging.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;
constexpr int64_t kStart = 1764460800000;

// The first agent id a<n> that hashes to `partition` of 2.
std::string AgentIn(uint32_t partition) {
  for (int i = 0; i < 1000; ++i) {
    std::string id = "a" + std::to_string(i);
    if (engine::PartitionOfAgent(id, 2) == partition) return id;
  }
  return "";
}

struct Partition {
  std::string dir;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<tools::SessionMessaging> messaging;
  std::vector<Delivery> published;
  int mail_wakes = 0;
};

class SessionMailTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_ = std::make_shared<ManualClock>(kStart);
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
    for (Partition& p : parts_) {
      p.messaging.reset();
      p.engine.reset();
      std::filesystem::remove_all(p.dir);
    }
  }

  // Opens (or reopens: a restart, or a new owner after a failover) partition p.
  void Open(uint32_t p, bool cross_partition) {
    Partition& part = parts_[p];
    part.messaging.reset();
    part.engine.reset();
    EngineOptions o;
    o.clock = clock_;
    o.durability = Durability::kBuffered;
    o.partition = p;
    o.partitions = 2;
    auto e = Engine::Open(o, part.dir);
    ASSERT_OK(e);
    part.engine = std::move(*e);
    tools::MessagingOptions m;
    m.sessions.visibility = tools::Visibility::kAll;
    m.sessions.agent_to_agent.enabled = true;
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
  std::string SendParams(int timeout, bool watch = false) {
    return "{\"sessionKey\":\"" + target_ + "\",\"message\":\"ping\",\"timeoutSeconds\":" +
           std::to_string(timeout) + (watch ? ",\"watch\":true}" : "}");
  }

  std::shared_ptr<ManualClock> clock_;
  Partition parts_[2];
  std::string home_agent_, dest_agent_, caller_, target_;
  std::unique_ptr<tools::SessionMailForwarder> forwarder_;
  bool down_ = false;
  bool lose_answer_ = false;
  int sends_ = 0;
};

TEST_F(SessionMailTest, FireAndForgetSendIsAppliedOnceAtTheDestination) {
  auto a = Send(SendParams(0));
  ASSERT_OK(a);
  EXPECT_EQ(json::value_to<std::string>(a->result.at("status")), "accepted");
  std::string run_id = json::value_to<std::string>(a->result.at("runId"));
  // Home: the run and one outbox row; nothing at the destination yet; the forwarder woken.
  auto run = SessionTablesView(home()).GetRun(run_id);
  ASSERT_OK(run);
  ASSERT_TRUE(run->has_value());
  EXPECT_EQ(OutboxSize(), 1u);
  EXPECT_EQ(parts_[0].mail_wakes, 1);
  EXPECT_TRUE(parts_[0].published.empty());
  EXPECT_TRUE(DeliveriesTo(dest(), target_).empty());

  auto r = Pump();
  EXPECT_EQ(r.sent, 1);
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(OutboxSize(), 0u);
  auto got = DeliveriesTo(dest(), target_);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].run_id, run_id);
  EXPECT_EQ(got[0].text, "ping");
  EXPECT_EQ(got[0].type, "message");
  EXPECT_EQ(got[0].source_session_key, caller_);
  ASSERT_EQ(parts_[1].published.size(), 1u);  // the destination's feed got it
  EXPECT_EQ(parts_[1].published[0].id, got[0].id);
  // The transcript of the target shows the message with its provenance.
  auto transcript = SessionTablesView(dest()).RecentTranscript(SessionName{dest_agent_, target_}, 10);
  ASSERT_OK(transcript);
  ASSERT_EQ(transcript->size(), 1u);
  ASSERT_TRUE((*transcript)[0].provenance.has_value());
  EXPECT_EQ((*transcript)[0].provenance->run_id, run_id);
  EXPECT_EQ((*transcript)[0].provenance->source_session_key, caller_);
  // Nothing left to send.
  EXPECT_EQ(Pump().sent, 0);
  EXPECT_EQ(sends_, 1);
}

TEST_F(SessionMailTest, ALostAnswerIsRetriedAndAppliedOnce) {
  ASSERT_OK(Send(SendParams(0)));
  lose_answer_ = true;
  auto r = Pump();
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(OutboxSize(), 1u);
  ASSERT_EQ(DeliveriesTo(dest(), target_).size(), 1u);  // it landed; the answer did not
  lose_answer_ = false;
  clock_->Advance(200);
  EXPECT_EQ(Pump().sent, 1);
  EXPECT_EQ(OutboxSize(), 0u);
  EXPECT_EQ(DeliveriesTo(dest(), target_).size(), 1u);  // the retry changed nothing
  EXPECT_EQ(parts_[1].published.size(), 1u);
}

TEST_F(SessionMailTest, AnUnreachableDestinationIsRetriedWithBackOff) {
  ASSERT_OK(Send(SendParams(0)));
  down_ = true;
  auto r = Pump();
  EXPECT_EQ(r.failed, 1);
  ASSERT_TRUE(r.next_due_ms.has_value());
  EXPECT_EQ(*r.next_due_ms, kStart + 200);
  clock_->Advance(199);
  EXPECT_EQ(Pump().failed, 0);  // not due yet: not tried
  EXPECT_EQ(sends_, 1);
  clock_->Advance(1);
  r = Pump();
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(*r.next_due_ms, kStart + 200 + 400);  // doubled
  down_ = false;
  clock_->Advance(400);
  EXPECT_EQ(Pump().sent, 1);
  EXPECT_EQ(DeliveriesTo(dest(), target_).size(), 1u);
}

TEST_F(SessionMailTest, ANewHomeOwnerSendsWhatTheOldOneLeft) {
  down_ = true;
  ASSERT_OK(Send(SendParams(0)));
  EXPECT_EQ(Pump().failed, 1);
  // The home's owner fails over: the engine reopens on the same (replicated) state and a new
  // forwarder starts with every row due.
  forwarder_.reset();
  Open(0, /*cross_partition=*/true);
  forwarder_ = NewForwarder();
  down_ = false;
  EXPECT_EQ(Pump().sent, 1);
  EXPECT_EQ(DeliveriesTo(dest(), target_).size(), 1u);
}

TEST_F(SessionMailTest, ADestinationRestartBetweenSendAndApplyLosesNothing) {
  ASSERT_OK(Send(SendParams(0)));
  lose_answer_ = true;
  EXPECT_EQ(Pump().failed, 1);  // applied, answer lost
  Open(1, /*cross_partition=*/true);  // the destination's owner restarts
  lose_answer_ = false;
  clock_->Advance(200);
  EXPECT_EQ(Pump().sent, 1);
  EXPECT_EQ(DeliveriesTo(dest(), target_).size(), 1u);  // the mark survived the restart
}

TEST_F(SessionMailTest, AWaitingSendGetsTheReplyAndPingPongCrossesBack) {
  std::optional<json::object> result;
  auto a = Send(SendParams(30), [&](const json::object& r) { result = r; });
  ASSERT_OK(a);
  ASSERT_TRUE(a->pending);
  EXPECT_EQ(Pump().sent, 1);
  auto got = DeliveriesTo(dest(), target_);
  ASSERT_EQ(got.size(), 1u);
  // The gateway replies for the run; a node routes POST /v1/runs/{id}/reply to the
  // partition that holds the run: the home.
  auto u = parts_[0].messaging->OnReply(got[0].run_id, "pong");
  ASSERT_OK(u);
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(json::value_to<std::string>(result->at("status")), "ok");
  EXPECT_EQ(json::value_to<std::string>(result->at("reply")), "pong");
  // Ping-pong turn 1 goes to the requester, at home.
  auto mine = DeliveriesTo(home(), caller_);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].text, "pong");
  // The requester answers: turn 2 goes back to the target as mail.
  ASSERT_OK(parts_[0].messaging->OnReply(got[0].run_id, "again"));
  EXPECT_EQ(OutboxSize(), 1u);
  EXPECT_EQ(Pump().sent, 1);
  auto turn = DeliveriesTo(dest(), target_);
  ASSERT_EQ(turn.size(), 2u);
  EXPECT_EQ(turn[1].text, "again");
  EXPECT_EQ(turn[1].source_session_key, caller_);
}

TEST_F(SessionMailTest, AWaitingSendTimesOutAtHome) {
  std::optional<json::object> result;
  down_ = true;
  ASSERT_OK(Send(SendParams(5), [&](const json::object& r) { result = r; }));
  clock_->Advance(5000);
  auto expired = parts_[0].messaging->ExpireDue();
  ASSERT_EQ(expired.size(), 1u);
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(json::value_to<std::string>(result->at("status")), "timeout");
  // The message itself is still delivered once the destination is back (as on one node,
  // where it sits in the target's feed).
  down_ = false;
  EXPECT_EQ(Pump().sent, 1);
}

TEST_F(SessionMailTest, WatchTravelsWithTheMessage) {
  auto a = Send(SendParams(0, /*watch=*/true));
  ASSERT_OK(a);
  EXPECT_TRUE(a->result.at("watched").as_bool());
  // The caller's home lists the destination before the cursor can exist there (the watcher
  // directory stays a superset), so a drain through a node asks partition 1 too.
  auto listed = WatcherDirectory(home()).Lookup(caller_);
  ASSERT_OK(listed);
  EXPECT_EQ(listed->partitions, std::vector<uint32_t>{1});
  EXPECT_EQ(Pump().sent, 1);
  auto cursor = dest().Cursor(caller_, SessionName{dest_agent_, target_});
  ASSERT_OK(cursor);
  EXPECT_TRUE(cursor->has_value());
}

TEST_F(SessionMailTest, WithoutCrossPartitionMailASendIsMisdirected) {
  Open(0, /*cross_partition=*/false);
  auto a = Send(SendParams(0));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), Status::Code::kMisdirected);
  EXPECT_EQ(OutboxSize(), 0u);
}

TEST_F(SessionMailTest, ApplyRefusesMailForAnotherPartitionAndBadWireBodies) {
  ASSERT_OK(Send(SendParams(0)));
  auto rows = SessionMailTables(home()).Outbox();
  ASSERT_OK(rows);
  ASSERT_EQ(rows->size(), 1u);
  // Mail applied at the wrong partition changes nothing there.
  auto wrong = parts_[0].messaging->ApplyMail((*rows)[0]);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), Status::Code::kMisdirected);
  // The wire form round-trips; a body without a key is refused by name.
  json::object wire = tools::MailToJson((*rows)[0]);
  auto back = tools::MailFromJson(json::value(wire));
  ASSERT_OK(back);
  EXPECT_EQ(back->key, (*rows)[0].key);
  EXPECT_EQ(back->delivery.text, "ping");
  wire.erase("key");
  auto bad = tools::MailFromJson(json::value(wire));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("key"), std::string::npos);
}

}  // namespace
}  // namespace statewatch::testing
