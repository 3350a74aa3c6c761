#include "jetstream_fixture.h"

namespace statewatch::log::testing {
namespace {

class StopSharedCluster : public ::testing::Environment {
 public:
  void TearDown() override { delete SharedClusterTest::cluster_for_teardown(); }
};

const ::testing::Environment* const kStopSharedCluster =
    ::testing::AddGlobalTestEnvironment(new StopSharedCluster);

}  // namespace
}  // namespace statewatch::log::testing
