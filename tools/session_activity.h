// What session_status and sessions_list derive about a session beyond its registry entry:
// when it was last active, its runs (the one it is the child of, the children it runs), and
// short cleaned snippets of its transcript (titles, previews).
//
// Thread-safe: reads the engine only; RunIndex is a plain value.
#ifndef STATEWATCH_TOOLS_SESSION_ACTIVITY_H_
#define STATEWATCH_TOOLS_SESSION_ACTIVITY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "statewatch/engine.h"
#include "statewatch/status.h"
#include "statewatch/session_records.h"
#include "statewatch/types.h"

namespace statewatch::tools {

// A derived title is the first user message, one line, at most this many characters.
inline constexpr std::size_t kTitleMaxChars = 60;
// A last-message preview is the last user or assistant message, one line, at most this many.
inline constexpr std::size_t kPreviewMaxChars = 120;

// The last time anything happened to a session: the latest of its registry updatedAt (or
// createdAt), its latest journal event (occurredAt) and its latest transcript message —
// which includes every delivery statewatch made to it (they are appended to the transcript).
// 0 when nothing is known.
Result<int64_t> LastActivityMs(const Engine& engine, const SessionRecord& record,
                               Sequence state_version);

// The runs of the engine by the sessions they name.
class RunIndex {
 public:
  static Result<RunIndex> Load(const Engine& engine);

  // The newest sessions_spawn run whose child is `session`, or nullptr.
  const RunRecord* SpawnRunOf(const SessionName& session) const;
  // The newest running run (spawn or send) whose target is `session`, or nullptr.
  const RunRecord* ActiveRunOf(const SessionName& session) const;
  // The running sessions_spawn runs `session` requested, oldest first.
  std::vector<const RunRecord*> RunningChildrenOf(const SessionName& session) const;

 private:
  // The newest run whose target is `session` and that `pick` accepts, or nullptr.
  const RunRecord* NewestRunTargeting(const SessionName& session,
                                      bool (*pick)(const RunRecord&)) const;

  std::vector<RunRecord> runs_;
  std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> by_target_;
  std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> by_requester_;
};

// A spawn run's status as sessions_list shows it: running | done | failed | killed |
// timeout.
const char* ListStatusOf(const RunRecord& run);

// The first user message of the session, cleaned as sessions_history cleans it, on one line,
// cut to kTitleMaxChars (with "…"). Nullopt when the opening messages hold no user text.
Result<std::optional<std::string>> DerivedTitle(const Engine& engine, const SessionName& session);

// The session's last user or assistant message, cleaned, on one line, cut to
// kPreviewMaxChars. Nullopt when there is none.
Result<std::optional<std::string>> LastMessagePreview(const Engine& engine,
                                                      const SessionName& session);

// The latest token usage a transcript message reports (newest first among the last 50),
// for session_status when the registry's counters are sparse.
Result<std::optional<TokenUsage>> LatestUsage(const Engine& engine, const SessionName& session);

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_SESSION_ACTIVITY_H_
