// Event validation: turns a producer's EventInput into a normalised, checked event
// (docs/semantics.md, "What an event holds") before it reaches the sequencer, so bad
// input never changes anything.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_ENGINE_EVENT_VALIDATION_H_
#define STATEWATCH_ENGINE_EVENT_VALIDATION_H_

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "statewatch/options.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::engine {

// The kind table as a lookup.
class KindTable {
 public:
  explicit KindTable(const std::vector<KindSpec>& kinds);
  const KindSpec* Find(const std::string& name) const;
  // Every kind's name in table order, comma-separated (for error messages).
  const std::string& names() const { return names_; }

 private:
  std::unordered_map<std::string, KindSpec> by_name_;
  std::string names_;
};

struct PreparedEvent {
  Event event;          // normalised; sequence still 0
  SessionName session;  // the journal identity
  KindSpec kind;
  std::optional<SessionName> actor_session;  // when actorId is an agent-scoped key
  std::vector<SessionName> watchers;         // agent-scoped, canonical, de-duplicated
};

inline constexpr int64_t kClampWindowMs = 24LL * 3600 * 1000;
inline constexpr std::size_t kMaxKeyBytes = 1024;
inline constexpr std::size_t kMaxIdBytes = 512;
inline constexpr std::size_t kMaxPayloadBytes = 16 * 1024;

// The last session key (and agent id) an event of a batch named and what it resolved to, so
// that a batch's events for one session check and parse that key once. Not thread-safe.
struct SessionMemo {
  bool valid = false;
  std::string session_key;
  std::string agent_id;
  SessionName session;
};

// Validates and normalises `in` at time `now_ms`. InvalidArgument names the field and value.
// `memo` (optional) carries the session resolved for the previous event of the same batch:
// the same key and agent id resolve as before without being checked again.
Result<PreparedEvent> PrepareEvent(const EventInput& in, const KindTable& kinds, int64_t now_ms,
                                   std::size_t summary_max_bytes, SessionMemo* memo = nullptr);

// Folds `s` to one line (CR/LF and other control characters become spaces) and caps it to
// `max_bytes` without splitting a UTF-8 sequence. REQUIRES: s is valid UTF-8.
std::string FoldSummary(const std::string& s, std::size_t max_bytes);

// Parses a watcher key: the canonical agent-scoped key, nullopt for a bare key, an error for a
// malformed one.
Result<std::optional<SessionName>> ParseWatcherKey(const std::string& key);

// The canonical (watcher, target) pair a registration names (Engine::Watch, WatchMany), or
// InvalidArgument saying why it is refused: a malformed or bare key on either side, a target
// whose key and agent id disagree, a watcher that is its own target.
Result<std::pair<SessionName, SessionName>> ResolveWatchPair(const std::string& watcher_key,
                                                             const SessionName& target);

// The journal identity in canonical form; names that do not resolve pass through unchanged
// (they then simply match nothing).
SessionName CanonicalSession(const SessionName& s);

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_EVENT_VALIDATION_H_
