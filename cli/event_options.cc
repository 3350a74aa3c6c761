#include "cli/event_options.h"

#include <boost/json.hpp>
#include <exception>
#include <system_error>

#include "cli/command.h"
#include "codecs/json_codec.h"

namespace statewatch::cli {
namespace json = boost::json;

namespace {

Status Missing(std::string_view option) {
  return Status::InvalidArgument("'record' needs --" + std::string(option) + " (or --batch FILE)");
}

// --payload is JSON text; text that does not parse is a malformed option value.
Status ReadPayloadOption(const Args& args, EventInput* input) {
  auto text = args.Get("payload");
  if (!text) return Status::OK();
  std::error_code ec;
  json::value payload = json::parse(*text, ec);
  if (ec) {
    return Status::InvalidArgument("--payload must be JSON (got '" + *text + "': " + ec.message() +
                                   ")");
  }
  if (payload.is_object()) input->payload_json = json::serialize(payload);
  return Status::OK();
}

Status ReadRequired(const Args& args, EventInput* input) {
  auto session = args.Get("session");
  if (!session) return Missing("session");
  auto kind = args.Get("kind");
  if (!kind) return Missing("kind");
  auto actor_type = args.Get("actor-type");
  if (!actor_type) return Missing("actor-type");
  std::optional<ActorType> type = ParseActorType(*actor_type);
  if (!type) {
    return Status::InvalidArgument("--actor-type must be human, agent or system (got \"" +
                                   *actor_type + "\")");
  }
  input->session_key = *session;
  input->kind = *kind;
  input->actor_type = *type;
  return Status::OK();
}

// A line of JSON lines, or an item of an array, as an event; errors say which one.
Result<EventInput> BatchItem(const json::value& value, std::string_view where, std::size_t n) {
  auto input = tools::EventInputFromJson(value);
  if (!input.ok()) {
    return Status::InvalidArgument("batch " + std::string(where) + " " + std::to_string(n) + ": " +
                                   input.status().message());
  }
  return input;
}

Result<std::vector<EventInput>> FromJsonLines(std::string_view text) {
  std::vector<EventInput> inputs;
  std::size_t line_number = 0;
  while (!text.empty()) {
    std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    std::error_code ec;
    json::value value = json::parse(line, ec);
    if (ec) {
      return Status::InvalidArgument("batch line " + std::to_string(line_number) + ": not JSON (" +
                                     ec.message() + ")");
    }
    auto input = BatchItem(value, "line", line_number);
    if (!input.ok()) return input.status();
    inputs.push_back(std::move(input).value());
  }
  return inputs;
}

Result<std::vector<EventInput>> FromArray(const json::array& items) {
  std::vector<EventInput> inputs;
  inputs.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto input = BatchItem(items[i], "item", i + 1);
    if (!input.ok()) return input.status();
    inputs.push_back(std::move(input).value());
  }
  return inputs;
}

Result<std::vector<EventInput>> ParseBatch(std::string_view text) {
  // One document first (an array, or one object possibly spread over lines); a parse
  // failure means several documents, i.e. JSON lines.
  std::error_code ec;
  json::value document = json::parse(text, ec);
  if (ec) return FromJsonLines(text);
  if (document.is_array()) return FromArray(document.as_array());
  if (document.is_object()) return FromArray(json::array{document});
  return Status::InvalidArgument(
      "a batch must be a JSON array of objects or one JSON object per line (got " +
      tools::DescribeJson(document) + ")");
}

}  // namespace

const std::vector<std::string>& EventOptionNames() {
  static const auto* names = new std::vector<std::string>{
      "session",    "agent",   "kind",    "actor-type", "actor-id",    "run-id",
      "session-id", "summary", "payload", "dedupe",     "occurred-at", "watcher"};
  return *names;
}

Result<EventInput> EventInputFromOptions(const Args& args) {
  EventInput input;
  SW_RETURN_IF_ERROR(ReadRequired(args, &input));
  input.agent_id = args.Get("agent").value_or("");
  input.actor_id = args.Get("actor-id").value_or("");
  input.run_id = args.Get("run-id").value_or("");
  input.session_id = args.Get("session-id").value_or("");
  input.summary = args.Get("summary").value_or("");
  input.dedupe_key = args.Get("dedupe").value_or("");
  input.watchers = args.GetAll("watcher");
  if (auto at = args.Get("occurred-at")) {
    auto ms = ParseIntOption("occurred-at", *at);
    if (!ms.ok()) return ms.status();
    input.occurred_at_ms = *ms;
  }
  SW_RETURN_IF_ERROR(ReadPayloadOption(args, &input));
  return input;
}

Result<std::vector<EventInput>> EventInputsFromBatch(std::string_view text) {
  try {
    return ParseBatch(text);
  } catch (const std::exception& e) {  // allocation failures: this is the edge
    return Status::InvalidArgument(std::string("cannot read batch: ") + e.what());
  }
}

}  // namespace statewatch::cli
