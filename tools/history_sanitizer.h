// The cleaned, bounded view of a transcript that sessions_history serves (docs/semantics.md,
// "Session tools"). A transcript written by one model is read by another: whatever the first
// one leaked — reasoning, memory scaffolding, plain-text tool calls, chat-template tokens,
// credentials — must not reach the reader as if it were conversation.
//
// Text cleaning, in this order (each step documented at its function):
//   1. StripScaffolding — removes
//      * control tokens: ASCII `<|…|>` and full-width `<｜…｜>` / `＜｜…｜＞` (at most 128
//        bytes, one line); a DeepSeek `<｜tool▁calls▁begin｜>` token removes everything up to
//        its `…end｜>` token (or to the end of the text);
//      * block tags with their content, case-insensitive, attributes allowed, nesting of the
//        same tag counted: reasoning `<think>`, `<thinking>`, `<thought>`, `<antThinking>`;
//        memory `<relevant-memories>`, `<relevant_memories>`; tool calls `<tool_call>`,
//        `<tool_calls>`, `<function_call>`, `<function_calls>`, `<minimax:tool_call>`,
//        `<invoke name=…>`, `<parameter name=…>`. A block that is never closed is removed to
//        the end of the text. A stray closing tag is removed; a stray closing *reasoning*
//        tag also removes everything before it (models that omit the opening tag put their
//        reasoning first). `<final>` wrappers are unwrapped (tags go, content stays);
//      * downgraded scaffolding: a line starting with `[Tool Call:`, `[Tool Result` or
//        `[Historical context` (case-insensitive, after indentation) and the non-blank lines
//        that follow it (the arguments / result body), up to the next blank line.
//      Tags inside code fences are not special: a leaked tag is stripped wherever it is.
//   2. RedactSecrets — credential-like text becomes `[REDACTED]`.
//   3. CutText — at most 4,000 characters (code points) per text block.
// Redaction runs before the cut so that a secret straddling the cut never leaks a prefix,
// and after stripping so that a secret split by a control token is caught joined.
//
// Split by concern: step 1 in history_sanitizer_scaffolding.cc, step 2 (the rules) in
// history_sanitizer_redaction.cc, step 3 and the view in history_sanitizer.cc.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_TOOLS_HISTORY_SANITIZER_H_
#define STATEWATCH_TOOLS_HISTORY_SANITIZER_H_

#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "statewatch/session_records.h"
#include "statewatch/types.h"

namespace statewatch::tools {

inline constexpr std::size_t kHistoryTextMaxChars = 4000;
inline constexpr std::size_t kHistoryMaxBytes = 80 * 1024;
inline constexpr char kRedacted[] = "[REDACTED]";
inline constexpr char kOmittedMessage[] = "[sessions_history omitted: message too large]";
// Appended to a cut text block.
inline constexpr char kTruncatedMarker[] = "\n…(truncated)";

// Step 1 (see the file comment). Returns the text unchanged when nothing matched; otherwise
// runs of blank lines left behind are collapsed and the result is trimmed.
std::string StripScaffolding(std::string_view text);

// Step 2. Replaces with `[REDACTED]`:
//   * API keys by prefix: `sk-`, `sk_live_`/`sk_test_`/`rk_live_`, `ghp_` `gho_` `ghu_` `ghs_`
//     `ghr_` `github_pat_`, `glpat-`, `xoxa-` `xoxb-` `xoxe-` `xoxp-` `xoxr-` `xoxs-` `xapp-`,
//     `AKIA`/`ASIA` + 16, `AIza`, `hf_`, `npm_` (a key body shorter than 32 characters
//     must hold a digit: `sk-learn-model-selection` is a word), and JWTs (`eyJ….….…`);
//   * the token after `Bearer ` (the word is kept);
//   * PEM private keys, `-----BEGIN … PRIVATE KEY-----` to its END line (or the text's end);
//   * the password of a URL `scheme://user:password@host` (the user is kept);
//   * the value of an assignment whose name ends in password, passwd, secret, apikey,
//     api_key, api-key, _token, -token, access_key, private_key (also `token`, `pwd`), as in
//     `password=…`, `"apiKey": "…"`, `DB_PASSWORD: …` (the name is kept).
// Sets *redacted when anything was replaced (never clears it).
std::string RedactSecrets(std::string_view text, bool* redacted);

// Step 3. At most `max_chars` code points (a UTF-8 sequence is never split), then
// kTruncatedMarker. Sets *truncated when it cut (never clears it).
std::string CutText(std::string_view text, std::size_t max_chars, bool* truncated);

struct CleanText {
  std::string text;
  bool redacted = false;
  bool truncated = false;
};
// Steps 1–3.
CleanText SanitizeText(std::string_view text, std::size_t max_chars = kHistoryTextMaxChars);

// Roles whose messages are tool results: "tool", "toolResult", "tool_result", "function".
bool IsToolResultRole(std::string_view role);

struct HistoryViewOptions {
  bool include_tools = false;  // keep tool results
  std::size_t max_text_chars = kHistoryTextMaxChars;
  std::size_t max_bytes = kHistoryMaxBytes;  // cap of the serialized `messages` array
};

struct HistoryView {
  boost::json::array messages;     // oldest first
  bool truncated = false;          // messages were dropped or omitted for the byte cap
  uint64_t dropped_messages = 0;   // oldest messages left out for the byte cap
  bool content_truncated = false;  // a text block was cut or a message omitted
  bool content_redacted = false;   // credential-like text was replaced
  std::size_t bytes = 0;           // size of the serialized `messages` array
};

// Builds the view of `messages` (oldest first, as RecentTranscript returns them):
//   * tool-result messages (IsToolResultRole) and `tool_result` blocks only with
//     include_tools;
//   * each message becomes {"index", "role", "content", "toolName"?, "timestamp",
//     "provenance"? {"kind", "sourceSessionKey", "sourceTool", "sourceChannel"?, "runId"?,
//     "isUser": false}}; string
//     content stays a string, block content stays an array of blocks:
//       text-like blocks (any block with a string "text") keep type and cleaned text;
//       reasoning blocks (thinking, redacted_thinking, reasoning) are dropped;
//       tool calls (tool_use, toolCall, tool_call, function_call, functionCall) keep type,
//       id and name, with their arguments serialized, cleaned and cut, as "input";
//       tool results keep type, tool_use_id, is_error and a cleaned "content" text;
//       media (image, image_url, input_image, document, file, audio, input_audio) become
//       {"type", "omitted": true}; other blocks keep only their type;
//     a message left with no content is dropped (not counted as dropped for the cap);
//   * a message whose JSON alone exceeds max_bytes becomes kOmittedMessage;
//   * then the oldest messages are dropped until the array fits in max_bytes.
HistoryView BuildHistoryView(const std::vector<TranscriptMessage>& messages,
                             const HistoryViewOptions& options);

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_HISTORY_SANITIZER_H_
