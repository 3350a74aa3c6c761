#include "log/mem_checkpoint_store.h"

#include <gtest/gtest.h>

#include "status_matchers.h"

namespace statewatch::log {
namespace {

TEST(MemCheckpointStoreTest, KeepsTheLatestAndRefusesAnOlderOne) {
  MemCheckpointStore store;
  EXPECT_FALSE(store.Latest()->has_value());
  ASSERT_OK(store.Write({10, "state at 10"}));
  ASSERT_OK(store.Write({20, "state at 20"}));
  EXPECT_EQ(**store.Latest(), (Checkpoint{20, "state at 20"}));
  Status stale = store.Write({15, "a fenced owner's late snapshot"});
  EXPECT_EQ(stale.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(stale.message(), "checkpoint at position 15 refused: a newer one covers position 20");
  EXPECT_EQ(**store.Latest(), (Checkpoint{20, "state at 20"}));
}

}  // namespace
}  // namespace statewatch::log
