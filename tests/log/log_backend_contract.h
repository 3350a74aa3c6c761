// The LogBackend contract (log/log_backend.h) as checks any backend must pass, given an
// empty log. mem_log_test.cc runs them on MemLog, jetstream/jetstream_log_test.cc on
// JetStreamLog against a real three-server cluster (both through ContractCases()), and
// tests/storage/local_log_test.cc those LocalLog keeps on LocalLog.
#ifndef STATEWATCH_TESTS_LOG_LOG_BACKEND_CONTRACT_H_
#define STATEWATCH_TESTS_LOG_LOG_BACKEND_CONTRACT_H_

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "log/log_backend.h"
#include "status_matchers.h"

namespace statewatch::log::testing {

inline AppendOptions At(LogPosition expected_last, std::string id = "") {
  AppendOptions o;
  o.expected_last = expected_last;
  o.dedupe_id = std::move(id);
  return o;
}

inline std::vector<std::string> DataOf(const std::vector<LogRecord>& records) {
  std::vector<std::string> out;
  for (const LogRecord& r : records) out.push_back(r.data);
  return out;
}

inline void ExpectAppendReadTail(LogBackend& log) {
  ASSERT_EQ(*log.Tail(), 0u);
  ASSERT_EQ(*log.Append("one", At(0)), 1u);
  ASSERT_EQ(*log.Append("two", At(1)), 2u);
  ASSERT_EQ(*log.Append(std::string("th\0ree", 6), At(2)), 3u);
  EXPECT_EQ(*log.Tail(), 3u);
  Result<std::vector<LogRecord>> all = log.ReadFrom(1, 100);
  ASSERT_OK(all);
  EXPECT_EQ(DataOf(*all), (std::vector<std::string>{"one", "two", std::string("th\0ree", 6)}));
  EXPECT_EQ((*all)[0].position, 1u);
  EXPECT_EQ((*all)[2].position, 3u);
  Result<std::vector<LogRecord>> page = log.ReadFrom(2, 1);
  ASSERT_OK(page);
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ((*page)[0].position, 2u);
  EXPECT_EQ((*page)[0].data, "two");
  Result<std::vector<LogRecord>> past = log.ReadFrom(4, 10);
  ASSERT_OK(past);
  EXPECT_TRUE(past->empty());
}

inline void ExpectStaleWriterRefused(LogBackend& log) {
  ASSERT_EQ(*log.Append("owner a", At(0)), 1u);
  ASSERT_EQ(*log.Append("fence by b", At(1)), 2u);
  // a still believes the tail is 1.
  Result<LogPosition> stale = log.Append("zombie a", At(1, "zombie"));
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(stale.status().message().find("last position is 2, not the expected 1"),
            std::string::npos)
      << stale.status().message();
  EXPECT_EQ(*log.Tail(), 2u);
  // Expecting an empty log is a check too, not "no check".
  EXPECT_EQ(log.Append("late first", At(0)).status().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(DataOf(*log.ReadFrom(1, 10)), (std::vector<std::string>{"owner a", "fence by b"}));
}

inline void ExpectDedupeById(LogBackend& log) {
  ASSERT_EQ(*log.Append("batch 1", At(0, "0/1/1")), 1u);
  ASSERT_EQ(*log.Append("batch 2", At(1, "0/1/2")), 2u);
  // A retry of batch 1 (its acknowledgement was lost) gets its first position back even
  // though the tail moved on, and appends nothing.
  EXPECT_EQ(*log.Append("batch 1", At(0, "0/1/1")), 1u);
  EXPECT_EQ(*log.Append("batch 2", At(2, "0/1/2")), 2u);
  EXPECT_EQ(*log.Tail(), 2u);
  ASSERT_EQ(*log.Append("batch 3", At(2, "0/1/3")), 3u);
  EXPECT_EQ(DataOf(*log.ReadFrom(1, 10)),
            (std::vector<std::string>{"batch 1", "batch 2", "batch 3"}));
}

inline void ExpectPurgeBelow(LogBackend& log) {
  for (LogPosition p = 0; p < 5; ++p) {
    ASSERT_EQ(*log.Append("r" + std::to_string(p + 1), At(p)), p + 1);
  }
  ASSERT_OK(log.PurgeBelow(3));
  Result<std::vector<LogRecord>> purged = log.ReadFrom(2, 10);
  ASSERT_FALSE(purged.ok());
  EXPECT_TRUE(purged.status().IsNotFound()) << purged.status().ToString();
  EXPECT_EQ(DataOf(*log.ReadFrom(3, 10)), (std::vector<std::string>{"r3", "r4", "r5"}));
  EXPECT_EQ(*log.Tail(), 5u);
  ASSERT_OK(log.PurgeBelow(2));  // already purged: nothing to do
  EXPECT_EQ(log.PurgeBelow(7).code(), Status::Code::kInvalidArgument);
  ASSERT_EQ(*log.Append("r6", At(5)), 6u);
  ASSERT_OK(log.PurgeBelow(7));  // everything: the tail stays
  EXPECT_EQ(*log.Tail(), 6u);
  EXPECT_TRUE(log.ReadFrom(7, 10)->empty());
  ASSERT_EQ(*log.Append("r7", At(6)), 7u);
  EXPECT_EQ(DataOf(*log.ReadFrom(7, 10)), (std::vector<std::string>{"r7"}));
}

inline void ExpectPipelinedAppends(LogBackend& log) {
  ASSERT_EQ(*log.Append("first", At(0, "p/1/1")), 1u);
  std::vector<std::string> bodies;
  std::vector<PendingAppend> batch;
  for (int i = 0; i < 50; ++i) bodies.push_back("pipelined " + std::to_string(i));
  for (int i = 0; i < 50; ++i) batch.push_back({bodies[i], "p/1/" + std::to_string(i + 2)});
  std::vector<Result<LogPosition>> results = log.AppendPipelined(batch, 1);
  ASSERT_EQ(results.size(), 50u);
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_OK(results[i]) << i;
    EXPECT_EQ(*results[i], i + 2);
  }
  Result<std::vector<LogRecord>> all = log.ReadFrom(2, 100);
  ASSERT_OK(all);
  EXPECT_EQ(DataOf(*all), bodies);
  // A stale batch: the first record is refused, and nothing after it lands.
  std::vector<Result<LogPosition>> stale = log.AppendPipelined(
      std::vector<PendingAppend>{{"x", "p/0/1"}, {"y", "p/0/2"}, {"z", "p/0/3"}}, 10);
  ASSERT_EQ(stale.size(), 3u);
  EXPECT_EQ(stale[0].status().code(), Status::Code::kFailedPrecondition);
  EXPECT_FALSE(stale[1].ok());
  EXPECT_FALSE(stale[2].ok());
  EXPECT_EQ(*log.Tail(), 51u);
  EXPECT_TRUE(log.AppendPipelined({}, 51).empty());
}

// The checks above as one table, for a value-parameterized suite per backend:
//   INSTANTIATE_TEST_SUITE_P(Contract, MyLogTest, ::testing::ValuesIn(ContractCases()),
//                            ContractCaseName);
struct ContractCase {
  const char* name;
  void (*check)(LogBackend& log);
};

inline std::vector<ContractCase> ContractCases() {
  return {{"AppendReadTail", ExpectAppendReadTail},
          {"StaleWriterRefused", ExpectStaleWriterRefused},
          {"DedupeById", ExpectDedupeById},
          {"PurgeBelow", ExpectPurgeBelow},
          {"PipelinedAppends", ExpectPipelinedAppends}};
}

// gtest prints a case by its name (not as bytes) in test listings and failures.
inline void PrintTo(const ContractCase& c, std::ostream* os) { *os << c.name; }

inline std::string ContractCaseName(const ::testing::TestParamInfo<ContractCase>& info) {
  return info.param.name;
}

}  // namespace statewatch::log::testing

#endif  // STATEWATCH_TESTS_LOG_LOG_BACKEND_CONTRACT_H_
