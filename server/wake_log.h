// WakeLog: the last wake the engine sent each watcher, for the operator console's "last
// wake" (docs/console.md). It subscribes to every wake when made and unsubscribes when
// destroyed. Kept in memory only: a restarted daemon knows no wake before its start.
// Holds one entry per watcher that was ever woken, so it grows with watchers, not events.
//
// Thread-safe: the engine calls OnWake on its writer or timer thread; Last from any thread.
#ifndef STATEWATCH_SERVER_WAKE_LOG_H_
#define STATEWATCH_SERVER_WAKE_LOG_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "statewatch/engine.h"

namespace statewatch::server {

class WakeLog {
 public:
  // REQUIRES: `engine` outlives the log.
  explicit WakeLog(Engine* engine);
  ~WakeLog();
  WakeLog(const WakeLog&) = delete;
  WakeLog& operator=(const WakeLog&) = delete;

  // The newest wake of `watcher_key` (canonical) since this log was made, if any.
  std::optional<Wake> Last(const std::string& watcher_key) const;

 private:
  void OnWake(const Wake& wake);

  Engine* engine_;
  uint64_t subscription_ = 0;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Wake> last_;  // by watcher key; guarded by mu_
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_WAKE_LOG_H_
