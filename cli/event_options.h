// Event inputs for `statewatch record`: from command-line options (one event) or from a
// batch document (a JSON array of objects, or JSON lines), using the field names of
// codecs/json_codec.h.
//
// Not thread-safe.
#ifndef STATEWATCH_CLI_EVENT_OPTIONS_H_
#define STATEWATCH_CLI_EVENT_OPTIONS_H_

#include <string>
#include <string_view>
#include <vector>

#include "cli/args.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::cli {

// The options of `record` that describe one event (everything but --batch).
const std::vector<std::string>& EventOptionNames();

// One event from --session, --agent, --kind, --actor-type, ... . InvalidArgument is a usage
// error: a missing required option, an unknown actor type, a non-integer --occurred-at or a
// --payload that is not JSON. A JSON payload that is not an object is dropped, as in
// tools::EventInputFromJson (docs/semantics.md, "What an event holds").
Result<EventInput> EventInputFromOptions(const Args& args);

// Events from a batch document: a JSON array of objects, a single object, or one object per
// line (blank lines skipped). InvalidArgument names the item (array) or line (JSON lines)
// and the problem.
Result<std::vector<EventInput>> EventInputsFromBatch(std::string_view text);

}  // namespace statewatch::cli

#endif  // STATEWATCH_CLI_EVENT_OPTIONS_H_
