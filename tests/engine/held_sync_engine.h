// An engine whose fsyncs a test can hold: `sync` durability, the manual clock and a fault
// injector on its file system, for the tests that queue writers behind a held commit
// (group_commit_test, group_write_test).
#ifndef STATEWATCH_TESTS_ENGINE_HELD_SYNC_ENGINE_H_
#define STATEWATCH_TESTS_ENGINE_HELD_SYNC_ENGINE_H_

#include <memory>
#include <string>

#include "engine/engine_fixture.h"
#include "engine/engine_impl.h"
#include "storage/store.h"

namespace statewatch::testing {

struct HeldSyncEngine {
  std::string dir;  // the database's directory (the test removes it)
  std::shared_ptr<storage::FaultInjector> faults = storage::NewFaultInjector();
  std::unique_ptr<Engine> owner;
  engine::EngineImpl* engine = nullptr;  // owner's implementation (queue length, stats)
};

// Opens one in a fresh temporary directory named after `tag`.
inline Result<HeldSyncEngine> OpenHeldSyncEngine(const std::string& tag) {
  HeldSyncEngine out;
  EngineOptions options;
  options.clock = std::make_shared<ManualClock>(1764460800000);
  options.durability = Durability::kSync;
  engine::EngineTestHooks hooks;
  hooks.faults = out.faults;
  out.dir = NewTempDir(tag);
  auto opened = engine::OpenEngineWithHooks(options, out.dir, hooks);
  if (!opened.ok()) return opened.status();
  out.owner = std::move(opened).value();
  out.engine = dynamic_cast<engine::EngineImpl*>(out.owner.get());
  if (out.engine == nullptr) return Status::FailedPrecondition("the engine is not an EngineImpl");
  return out;
}

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_ENGINE_HELD_SYNC_ENGINE_H_
