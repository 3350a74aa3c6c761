// The key a side table files a watcher's rows under — the watcher directory
// (engine/watcher_directory.cc) and the webhook registrations (engine/webhook_tables.cc) —
// so that both accept and refuse the same watchers with the same message.
//
// Thread-safe: a pure function.
#ifndef STATEWATCH_ENGINE_WATCHER_KEY_H_
#define STATEWATCH_ENGINE_WATCHER_KEY_H_

#include <string>

#include "statewatch/session_key.h"
#include "statewatch/status.h"

namespace statewatch::engine {

// The canonical form of `watcher`; the parse error when it is malformed, InvalidArgument
// naming it when it is a bare key rather than an agent-scoped one (agent:<id>:<rest>).
inline Result<std::string> CanonicalWatcher(const std::string& watcher) {
  auto parsed = ParseSessionKey(watcher);
  if (!parsed.ok()) return parsed.status();
  if (!parsed->agent_scoped) {
    return Status::InvalidArgument("watcher must be an agent-scoped key agent:<id>:<rest> (got \"" +
                                   watcher + "\")");
  }
  return parsed->canonical;
}

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_WATCHER_KEY_H_
