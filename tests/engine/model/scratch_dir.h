// Scratch directories for the model and fault-injection tests.
//
// Thread-safe.
#ifndef STATEWATCH_TESTS_ENGINE_MODEL_SCRATCH_DIR_H_
#define STATEWATCH_TESTS_ENGINE_MODEL_SCRATCH_DIR_H_

#include <filesystem>
#include <random>
#include <string>
#include <system_error>

#include "engine/engine_fixture.h"

namespace statewatch::model {

// A fresh directory on tmpfs (/dev/shm) when there is one, else under the temp directory.
// For tests that check answers rather than the disk: every RocksDB open writes its recovered
// memtables out with about 20 fsyncs, which on tmpfs cost nothing. (Injected faults sit above
// the filesystem, and the crash test keeps using the real temp directory.)
inline std::string NewScratchDir(const std::string& tag) {
  std::error_code ec;
  if (std::filesystem::is_directory("/dev/shm", ec)) {
    std::random_device rd;
    std::filesystem::path dir =
        std::filesystem::path("/dev/shm") /
        ("statewatch-" + tag + "-" + std::to_string(rd()) + std::to_string(rd()));
    if (std::filesystem::create_directories(dir, ec)) return dir.string();
  }
  return statewatch::testing::NewTempDir(tag);
}

}  // namespace statewatch::model

#endif  // STATEWATCH_TESTS_ENGINE_MODEL_SCRATCH_DIR_H_
