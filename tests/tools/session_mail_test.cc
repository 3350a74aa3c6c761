// sessions_send across partitions (docs/cluster-internals.md,
// "Session tools across partitions"): the home partition keeps the run and an outbox row;
// the forwarder carries the mail to the destination, which applies it exactly once. Two
// in-process engines (partitions 0 and 1 of 2) on one ManualClock; the wire is a fake
// MailSender that can be down or lose its answer (session_mail_fixture.h).
#include "tools/session_mail_fixture.h"

namespace statewatch::testing {
namespace {

using SessionMailTest = SessionMailFixture;

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
  EXPECT_EQ(*r.next_due_ms, kMailStart + 200);
  clock_->Advance(199);
  EXPECT_EQ(Pump().failed, 0);  // not due yet: not tried
  EXPECT_EQ(sends_, 1);
  clock_->Advance(1);
  r = Pump();
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(*r.next_due_ms, kMailStart + 200 + 400);  // doubled
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

// A reset of the caller that begins after a watched send was answered, while its mail is
// still in the home's outbox, removes that watch too: the destination, fenced by the reset's
// clear, applies the message without the cursor, which would otherwise outlive the reset,
// unlisted at the home. A reset that ended before the send leaves its watch in place.
TEST_F(SessionMailTest, AResetAfterAWatchedSendIsNotOutlivedByTheMailsCursor) {
  const SessionName target{dest_agent_, target_};
  WatcherDirectory directory(home());
  ASSERT_OK(Send(SendParams(0, /*watch=*/true)));
  ResetCallerAsASagaDoes();  // the mail has not left yet
  EXPECT_EQ(Pump().sent, 1);
  EXPECT_EQ(DeliveriesTo(dest(), target_).size(), 1u);  // the message itself is delivered
  auto cursor = dest().Cursor(caller_, target);
  ASSERT_OK(cursor);
  EXPECT_FALSE(cursor->has_value());
  auto listed = directory.Lookup(caller_);
  ASSERT_OK(listed);
  EXPECT_TRUE(listed->partitions.empty());  // and the home lists nothing: consistent

  ASSERT_OK(Send(SendParams(0, /*watch=*/true)));  // after the reset: the watch holds
  EXPECT_EQ(Pump().sent, 1);
  cursor = dest().Cursor(caller_, target);
  ASSERT_OK(cursor);
  EXPECT_TRUE(cursor->has_value());
}

// A watched send while a reset of the caller is still clearing partitions (one of them is
// unreachable) is refused with nothing written, as a watch through a node is: its cursor
// could be cleared by that reset after the send was answered.
TEST_F(SessionMailTest, AWatchedSendWhileAResetIsPendingIsRefused) {
  WatcherDirectory directory(home());
  auto saga = directory.BeginSaga(caller_, WatcherSagaKind::kReset, 0);
  ASSERT_OK(saga);
  auto refused = Send(SendParams(0, /*watch=*/true));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kBusy) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("still removing its cursors"), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(OutboxSize(), 0u);
  ASSERT_OK(Send(SendParams(0)));  // an unwatched send is not held up
  EXPECT_EQ(Pump().sent, 1);
  ASSERT_OK(directory.Confirm(caller_, 0, saga->number));
  ASSERT_OK(Send(SendParams(0, /*watch=*/true)));
}

// A watched send makes two groups at the home: the watcher directory lists the destination,
// then the run and the mail. The request's X-Request-Id record rides on the mail's group —
// the request's effect — not on the listing's (idempotent, a superset): whichever write fails,
// the record is kept exactly when the mail is, so a retry after a crash between the two is
// sent, never told it was applied.
TEST_F(SessionMailTest, AWatchedSendsRequestRecordIsWrittenWithItsMail) {
  ExpectTheRecordExactlyWithTheMail([&] { (void)Send(SendParams(0, /*watch=*/true)); });
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
