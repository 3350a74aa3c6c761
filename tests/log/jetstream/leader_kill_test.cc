// kill -9 of a partition stream's leader while an owner appends: every acknowledged append
// is in the log exactly once afterwards, and the chain verifies. Its own three servers.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "log/append_resolver.h"
#include "log/chain_verifier.h"
#include "log/chain_writer.h"
#include "log/jetstream/jetstream_log.h"
#include "log/log_backend_contract.h"
#include "nats_test_cluster.h"
#include "status_matchers.h"

namespace statewatch::log::testing {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr uint32_t kPartition = 5;
constexpr uint32_t kPartitions = 8;
constexpr int kAckedBeforeKill = 200;
constexpr int kAckedAfterKill = 300;

std::shared_ptr<NatsConnection> ConnectTo(const NatsTestCluster& cluster) {
  NatsConnectionOptions o;
  o.servers = cluster.Urls();
  // Short, so that a publish stuck on the dead leader turns into a retry soon.
  o.request_timeout_ms = 2000;
  Result<std::shared_ptr<NatsConnection>> c = NatsConnection::Connect(o);
  EXPECT_OK(c);
  return c.ok() ? *c : nullptr;
}

TEST(LeaderKillTest, NoAcknowledgedAppendIsLostWhenTheStreamLeaderIsKilled) {
  Result<std::unique_ptr<NatsTestCluster>> started = NatsTestCluster::Start({});
  ASSERT_OK(started);
  NatsTestCluster& cluster = **started;
  std::shared_ptr<NatsConnection> conn = ConnectTo(cluster);
  ASSERT_NE(conn, nullptr);
  JetStreamLogOptions o;
  o.partition = kPartition;
  Result<std::unique_ptr<JetStreamLog>> opened = JetStreamLog::Open(conn, o);
  ASSERT_OK(opened);
  JetStreamLog& log = **opened;

  // ~30 s of retries per append at most: an election here takes a few seconds.
  RetryPolicy policy{40, RetryPolicy::Backoff()};
  ChainWriter writer = *ChainWriter::Make(GenesisChainState(kPartition, kPartitions, 1), 1);
  std::vector<std::pair<LogPosition, std::string>> acked;
  auto commit = [&](const SealedFrame& sealed) {
    const LogPosition last = acked.empty() ? 0 : acked.back().first;
    Result<LogPosition> r = AppendResolved(log, sealed.bytes, At(last, sealed.dedupe_id), policy);
    if (!r.ok()) return r.status();
    EXPECT_EQ(*r, last + 1);
    writer.Advance(sealed);
    acked.emplace_back(*r, sealed.bytes);
    return Status::OK();
  };
  ASSERT_OK(commit(*writer.SealFence("owner")));

  const std::string body(300, 'e');  // one commit group of one ~300-byte event
  std::string killed;
  SteadyClock::time_point killed_at;
  double stall_ms = 0;
  const auto deadline = SteadyClock::now() + std::chrono::seconds(120);
  while (acked.size() < 1 + kAckedBeforeKill + kAckedAfterKill) {
    ASSERT_LT(SteadyClock::now(), deadline) << "gave up: " << acked.size() << " acknowledged";
    if (killed.empty() && acked.size() == 1 + kAckedBeforeKill) {
      Result<std::string> leader = log.Leader();
      ASSERT_OK(leader);
      killed = *leader;
      ASSERT_OK(cluster.Signal(killed, SIGKILL));
      killed_at = SteadyClock::now();
    }
    Status s = commit(*writer.SealCommitGroup(body, 1));
    ASSERT_OK(s) << "\n" << cluster.LogTails();
    if (!killed.empty() && stall_ms == 0) {
      stall_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - killed_at).count();
    }
  }
  std::cout << "killed stream leader " << killed << "; first acknowledgement after it came "
            << stall_ms << " ms later; " << acked.size() << " appends acknowledged\n";

  // Read back through a new connection, from the surviving servers.
  std::shared_ptr<NatsConnection> reader_conn = ConnectTo(cluster);
  auto reader = JetStreamLog::Open(reader_conn, o).value();
  // Reads may fail (IOError) while the cluster settles, as appends may: retry, bounded.
  std::vector<LogRecord> records;
  for (int attempt = 0; records.size() < acked.size(); ++attempt) {
    ASSERT_LT(attempt, 40) << "log not readable; " << records.size() << " records read";
    Result<std::vector<LogRecord>> page = reader->ReadFrom(records.size() + 1, 100000);
    if (!page.ok()) {
      ASSERT_EQ(page.status().code(), Status::Code::kIOError) << page.status().ToString();
      RetryPolicy::Backoff()(attempt + 1);
      continue;
    }
    if (page->empty()) break;
    records.insert(records.end(), page->begin(), page->end());
  }
  ASSERT_EQ(records.size(), acked.size()) << "lost or duplicated appends";
  for (size_t i = 0; i < acked.size(); ++i) {
    ASSERT_EQ(records[i].position, acked[i].first);
    ASSERT_EQ(records[i].data, acked[i].second) << "position " << acked[i].first;
  }
  ChainVerifier verifier(GenesisChainState(kPartition, kPartitions, 1));
  for (const LogRecord& r : records) {
    Result<FrameView> frame = verifier.Next(r.position, r.data);
    ASSERT_OK(frame);
  }
  EXPECT_EQ(verifier.state().batch_no, acked.size());

  // The killed server comes back and catches up: its restart changes nothing.
  ASSERT_OK(cluster.Restart(killed));
  Result<LogPosition> tail = reader->Tail();
  ASSERT_OK(tail);
  EXPECT_EQ(*tail, acked.back().first);
}

}  // namespace
}  // namespace statewatch::log::testing
