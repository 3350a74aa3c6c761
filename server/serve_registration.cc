// Compiled into the statewatch executable only (server/CMakeLists.txt adds it to
// statewatch_bin's sources, so the linker cannot drop it the way it drops an unreferenced
// object of a static library): installs the `serve` verb before main() runs.
#include "server/serve_command.h"
#include "server/serve_hook.h"

namespace {

const bool kServeInstalled = [] {
  statewatch::cli::InstallServeVerb(&statewatch::server::RunServeCommand);
  return true;
}();

}  // namespace
