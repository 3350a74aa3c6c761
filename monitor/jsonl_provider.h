// JsonlProvider: the built-in upstream provider for JSONL transcripts (upstream kind
// "jsonl"), such as the session files another agent client appends to. The link's
// upstream_ref is the file's absolute path; its marker is a byte offset into the file.
//
// Reading. A scan reads at most max_bytes (the monitor passes 1 MiB) from the marker and
// classifies the complete lines in that window, in order. A line is complete when its '\n'
// is inside the window; a trailing '\r' before it is ignored. The marker advances to just
// past the last complete line, so:
//   - a partial last line (no '\n' yet) is never consumed: it waits for its newline;
//   - bytes beyond the window are never consumed: they wait for the next tick;
//   - a single line longer than the window (its '\n' not within max_bytes of the marker)
//     blocks the marker at its start and is reported (blocked = true), every tick, until
//     the cap is raised. It is never skipped.
// A file shorter than the marker (truncated or replaced) is a scan error: the monitor counts
// it as a failed check, so a replaced file ends as upstream_missing unless the link is
// refreshed (a refresh of the same source moves a marker past the end back to the end).
//
// Classification (exact). A complete line is a HUMAN TURN when all of these hold:
//   1. it parses as one JSON object (RFC 8259, UTF-8);
//   2. its "type" member is the string "user";
//   3. none of its members "isMeta", "isSynthetic", "isCompactSummary",
//      "isVisibleInTranscriptOnly", "isSidechain" is the JSON value true (client notes,
//      generated summaries, display-only lines, and the prompts an agent writes to its own
//      sub-agents in a sidechain are not typed by a person);
//   4. its "message" member is an object whose "role", if present, is "user" and whose
//      "content" is either
//        a. a string containing at least one non-whitespace character, or
//        b. an array containing at least one block {"type": "text", "text": <string with
//           a non-whitespace character>}; other blocks ("tool_result", "image", ...) are
//           ignored, so content made only of tool results is not a human turn.
// Every other complete line (other types, assistant/system lines, tool results, meta or
// synthetic lines, blank lines, and lines that are not valid JSON objects) is classified NOT
// HUMAN and consumed. Nothing is ever consumed unclassified.
//
// The turn's text (compared for self-echo) is the content string, or the texts of the
// "text" blocks joined with "\n". Its time is the line's "timestamp": an ISO-8601 string
// (YYYY-MM-DD[T ]HH:MM:SS[.fraction](Z|±HH:MM|±HHMM)) or an integer of milliseconds since
// the epoch; anything else means "no time" (the engine then uses now). The engine clamps it
// into [now − 24 h, now].
//
// Speed: a line that contains neither the token "user" (with its quotes) nor a "\u" escape
// cannot satisfy rule 2 and is classified NOT HUMAN without being parsed. That is the same
// answer a full parse gives; it only saves time on assistant lines.
//
// Thread-safe: no state.
#ifndef STATEWATCH_MONITOR_JSONL_PROVIDER_H_
#define STATEWATCH_MONITOR_JSONL_PROVIDER_H_

#include <optional>
#include <string>
#include <string_view>

#include "monitor/upstream_provider.h"

namespace statewatch::monitor {

// The classification of one complete line (without its '\n'; a trailing '\r' is ignored).
enum class JsonlLineClass {
  kHumanTurn,
  kNotHuman,   // a JSON object that fails rules 2-4
  kMalformed,  // not a JSON object at all (also not human)
};
struct JsonlLine {
  JsonlLineClass cls = JsonlLineClass::kNotHuman;
  HumanTurn turn;  // set for kHumanTurn
};
// Applies rules 1-4 with a full parse (no shortcut).
JsonlLine ClassifyJsonlLine(std::string_view line);

// Parses a "timestamp" text as described above; nullopt when it is not one.
std::optional<int64_t> ParseIso8601Ms(std::string_view text);

class JsonlProvider final : public UpstreamProvider {
 public:
  // REQUIRES-like check: a non-empty absolute path without NUL bytes.
  Status ValidateRef(const std::string& upstream_ref) const override;
  // stat(2): a regular file exists (end = its size); ENOENT/ENOTDIR is missing; anything
  // else (not a regular file, EACCES, EIO...) failed.
  SourceCheck CheckSource(const UpstreamLink& link) const override;
  ScanResult Scan(const UpstreamLink& link, uint64_t max_bytes) const override;
};

}  // namespace statewatch::monitor

#endif  // STATEWATCH_MONITOR_JSONL_PROVIDER_H_
