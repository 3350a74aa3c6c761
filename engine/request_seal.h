// The engine's side of the X-Request-Id seal (include/statewatch/request_ids.h): a command
// made on a thread armed with a RequestSeal carries a write function that the commit leader
// runs, in the command's group, once the command has built (write_path.cc, RunGroup). The
// function writes the request's record the first time it runs and nothing after that — with
// the answer when the seal renders one from the command's outcome.
#ifndef STATEWATCH_ENGINE_REQUEST_SEAL_H_
#define STATEWATCH_ENGINE_REQUEST_SEAL_H_

#include <functional>

#include "engine/group_write.h"
#include "statewatch/request_ids.h"

namespace statewatch::engine {

// Writes a request's record in a group, given the outcome of the command it rides on (the
// answer is rendered from it when the seal has a renderer).
using SealWriteFn = std::function<Status(GroupWrite&, const SealedOutcome&)>;

// The calling thread's seal as a write function, or an empty function when none is armed.
// Called by every Command's constructor (on the thread that makes the command).
SealWriteFn TakeRequestSeal();

// Moves the X-Request-Id records that builds before 2026-12-07 kept in the meta family into
// the requests family, a batch of at most 1,000 at a time, each atomic (a crash part-way
// leaves the rest for the next open). A record answers retries for 15 minutes, so this
// matters only for an open soon after such a build stopped. Called by a writable open.
Status MoveRequestRecords(storage::Store& store);

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_REQUEST_SEAL_H_
