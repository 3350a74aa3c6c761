// Self-echo (docs/semantics.md, "Upstream monitor (adopted sessions)"): an upstream user text
// equal — whitespace collapsed, trimmed — to one of the session's own recent user messages is the
// session's own message mirrored into the upstream source, not a human turning to the session.
//
// Thread-safe: pure functions and engine reads.
#ifndef STATEWATCH_MONITOR_SELF_ECHO_H_
#define STATEWATCH_MONITOR_SELF_ECHO_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_set>

#include "statewatch/engine.h"

namespace statewatch::monitor {

// Runs of ASCII whitespace (space, \t, \n, \r, \f, \v) become one space; leading and
// trailing whitespace is dropped.
std::string NormalizeForEcho(std::string_view text);

// The text of a transcript message: a JSON string as itself; a JSON array as the "text" of
// its {"type": "text"} blocks (and its plain string elements) joined with "\n"; anything
// that is not JSON as the raw content.
std::string TranscriptText(const std::string& content_json);

// The normalized texts of the session's `count` most recent own messages with role "user"
// (Engine::RecentTranscript). Looks back at most `max_lookback` messages of any role.
Result<std::unordered_set<std::string>> RecentOwnUserTexts(const Engine& engine,
                                                           const SessionName& session,
                                                           std::size_t count,
                                                           std::size_t max_lookback = 1024);

}  // namespace statewatch::monitor

#endif  // STATEWATCH_MONITOR_SELF_ECHO_H_
