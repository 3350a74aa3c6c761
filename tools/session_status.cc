// session_status: the `/status` card (tools/session_tools.h).
#include <algorithm>
#include <exception>
#include <optional>
#include <string>

#include "base/ascii.h"
#include "codecs/json_codec.h"
#include "codecs/json_fields.h"
#include "codecs/registry_codec.h"
#include "codecs/status_at_json.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"
#include "tools/session_activity.h"
#include "tools/session_history.h"
#include "tools/session_tools.h"

namespace statewatch::tools {
namespace json = boost::json;

namespace {

struct StatusParams {
  std::optional<std::string> session_key;  // nullopt: the caller
  std::optional<uint64_t> changes_since;
  std::optional<std::string> model;
  std::optional<uint64_t> as_of;  // answer as of this sequence (Engine::StatusAt)
};

Result<StatusParams> ReadStatusParams(const json::object& params) {
  SW_RETURN_IF_ERROR(
      CheckKnownParams(params, "session_status", {"sessionKey", "changesSince", "model", "asOf"}));
  StatusParams p;
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "sessionKey"), &p.session_key));
  if (p.session_key == "current") p.session_key.reset();
  SW_RETURN_IF_ERROR(
      Assign(ParseChangesSince(params.if_contains("changesSince")), &p.changes_since));
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "model"), &p.model));
  SW_RETURN_IF_ERROR(Assign(ParseAsOf(params.if_contains("asOf")), &p.as_of));
  if (p.as_of && p.model) {
    return Status::InvalidArgument("asOf reads the past: it cannot be given with model");
  }
  return p;
}

// The session the card is about: the caller, or what sessionKey names (a key or a
// sessionId, like sessions_history), with the byte-exact refusal of docs/semantics.md,
// "Session tools" when it names none. An unknown agent-scoped key the caller may not see gets the
// visibility refusal instead, so that the answer never tells a caller whether a session outside
// its visibility exists (a bare reference may be a sessionId, which has no tree to check).
Result<SessionName> StatusTarget(const Engine& engine, const SessionToolsOptions& options,
                                 const SessionName& caller, const StatusParams& p) {
  if (!p.session_key) return caller;
  auto target = ResolveSessionReference(engine, caller, *p.session_key);
  if (target.ok() || target.status().code() != Status::Code::kNotFound) return target;
  auto named = ResolveSession(Trim(*p.session_key), "", caller.agent_id);
  if (named.ok() && named->session_key.rfind("agent:", 0) == 0) {
    SW_RETURN_IF_ERROR(CheckSessionAccess(engine, options, SessionAction::kStatus, caller, *named));
  }
  return Status::NotFound("Unknown sessionKey: " + *p.session_key);
}

// session_status model: "<id>" sets the per-session override, "default" clears it.
Status ApplyModel(Engine& engine, const SessionName& target, const std::string& model) {
  SessionRecord update;
  update.name = target;
  if (ascii::AsciiToLower(model) == "default") {
    update.clear.push_back(SessionField::kModelOverride);
  } else {
    update.model_override = model;
  }
  return SessionTables(engine).UpsertSession(update);
}

json::object UsageJson(const SessionRecord& r, const std::optional<TokenUsage>& last) {
  json::object usage;
  bool from_registry = false, from_transcript = false;
  auto put = [&](const char* name, const std::optional<int64_t>& registry,
                 std::optional<int64_t> transcript) {
    if (registry) {
      usage[name] = *registry;
      from_registry = true;
    } else if (transcript) {
      usage[name] = *transcript;
      from_transcript = true;
    }
  };
  auto t = [&](int64_t TokenUsage::*field) {
    return last ? std::optional<int64_t>((*last).*field) : std::nullopt;
  };
  put("inputTokens", r.input_tokens, t(&TokenUsage::input));
  put("outputTokens", r.output_tokens, t(&TokenUsage::output));
  put("totalTokens", r.total_tokens, t(&TokenUsage::total));
  put("cacheReadTokens", r.cache_read_tokens, t(&TokenUsage::cache_read));
  put("cacheWriteTokens", r.cache_write_tokens, t(&TokenUsage::cache_write));
  if (r.context_tokens) {
    usage["contextTokens"] = *r.context_tokens;
    const json::value* total = usage.if_contains("totalTokens");
    if (total != nullptr && *r.context_tokens > 0) {
      usage["contextPercent"] = total->to_number<int64_t>() * 100 / *r.context_tokens;
    }
  }
  usage["source"] = from_registry && from_transcript ? "registry+transcript"
                    : from_registry                  ? "registry"
                    : from_transcript                ? "transcript"
                                                     : "none";
  return usage;
}

json::object RunsJson(const RunIndex& runs, const SessionName& target, json::object card) {
  if (const RunRecord* active = runs.ActiveRunOf(target)) {
    card["activeRun"] = json::object{{"runId", active->run_id},
                                     {"kind", active->kind},
                                     {"status", active->status},
                                     {"startedAt", active->created_at_ms},
                                     {"requesterSessionKey", active->requester.session_key}};
  }
  json::array background;
  for (const RunRecord* child : runs.RunningChildrenOf(target)) {
    json::object task{{"runId", child->run_id}, {"sessionKey", child->target.session_key}};
    if (!child->label.empty()) task["label"] = child->label;
    task["runtime"] = child->spawn ? child->spawn->runtime : std::string("subagent");
    task["startedAt"] = child->created_at_ms;
    background.push_back(std::move(task));
  }
  card["backgroundTasks"] = std::move(background);
  return card;
}

// The card without stateVersion / stateChanges (added by the caller).
Result<json::object> Card(const Engine& engine, const SessionRecord& r, Sequence version) {
  json::object card;
  card["sessionKey"] = r.name.session_key;
  card["agentId"] = r.name.agent_id;
  if (r.session_id) card["sessionId"] = *r.session_id;
  card["kind"] = SessionKindOf(r);
  card["channel"] = SessionChannelOf(r);
  if (r.label) card["label"] = *r.label;
  if (r.display_name) card["displayName"] = *r.display_name;
  if (r.model_override) {
    card["model"] = *r.model_override;
    if (r.model) card["defaultModel"] = *r.model;
  } else if (r.model) {
    card["model"] = *r.model;
  }
  card["modelOverride"] = r.model_override.has_value();
  if (r.runtime) card["runtime"] = *r.runtime;
  if (r.thinking) card["thinking"] = *r.thinking;
  if (r.context_tokens) card["contextTokens"] = *r.context_tokens;
  if (r.total_tokens) card["totalTokens"] = *r.total_tokens;
  std::optional<TokenUsage> last;
  if (!r.input_tokens || !r.output_tokens || !r.total_tokens) {
    auto usage = LatestUsage(engine, r.name);
    if (!usage.ok()) return usage.status();
    last = *usage;
  }
  card["usage"] = UsageJson(r, last);
  if (r.parent_session_key) card["parentSessionKey"] = *r.parent_session_key;
  card["sandboxed"] = r.sandboxed.value_or(false);
  if (r.created_at_ms) card["createdAt"] = *r.created_at_ms;
  auto active = LastActivityMs(engine, r, version);
  if (!active.ok()) return active.status();
  if (*active > 0) {
    card["updatedAt"] = *active;
    card["ageMs"] = std::max<int64_t>(0, engine.clock().NowMs() - *active);
  }
  auto runs = RunIndex::Load(engine);
  if (!runs.ok()) return runs.status();
  return RunsJson(*runs, r.name, std::move(card));
}

// session_status up to its stateChanges: the card with stateVersion, and — when
// changesSince is given (`*with_changes`) — the page in `*page`, read with `render`. With
// asOf the card's stateVersion is the one then, and `*at` holds the rest (its changes
// instead of `*page`).
Result<json::object> StatusAnswer(Engine& engine, const SessionToolsOptions& options,
                                  const SessionName& caller, const json::object& params,
                                  RowRenderer render, ChangesView* page, bool* with_changes,
                                  std::optional<SessionStatusAt>* at) {
  auto p = ReadStatusParams(params);
  if (!p.ok()) return p.status();
  auto target = StatusTarget(engine, options, caller, *p);
  if (!target.ok()) return target.status();
  SW_RETURN_IF_ERROR(CheckSessionAccess(engine, options, SessionAction::kStatus, caller, *target));
  if (p->model) SW_RETURN_IF_ERROR(ApplyModel(engine, *target, *p->model));

  auto rec = SessionTablesView(engine).GetSession(*target);
  if (!rec.ok()) return rec.status();
  SessionRecord record;
  if (*rec) record = std::move(**rec);
  record.name = *target;
  Sequence version = 0;
  *with_changes = p->changes_since.has_value();
  if (p->as_of) {
    auto status = engine.StatusAt(*target, *p->as_of, p->changes_since.value_or(0), 200);
    if (!status.ok()) return status.status();
    version = status->state_version;
    *at = std::move(*status);
  } else if (*with_changes) {
    SW_RETURN_IF_ERROR(engine.ReadChanges(*target, *p->changes_since, 200, render, page));
    version = page->state_version;
  } else {
    auto v = engine.StateVersion(*target);
    if (!v.ok()) return v.status();
    version = *v;
  }
  auto card = Card(engine, record, version);
  if (!card.ok()) return card.status();
  (*card)["stateVersion"] = version;
  return card;
}

// One page per thread, reused so that its vectors keep their capacity; cleared after each
// answer so that it holds no cached rows in between.
ChangesView& ThreadPage() {
  thread_local ChangesView page;
  page.Clear();
  return page;
}

// `answer(page)` on this thread's page, which is cleared again afterwards: the page holds
// rows only while one answer is built. An exception (an allocation failure: this is the edge)
// becomes an IOError.
template <typename T, typename Answer>
Result<T> OnThreadPage(Answer answer) {
  ChangesView& page = ThreadPage();
  try {
    Result<T> out = answer(page);
    page.Clear();
    return out;
  } catch (const std::exception& e) {
    page.Clear();
    return Status::IOError(std::string("session_status failed: ") + e.what());
  }
}

}  // namespace

Result<json::object> SessionStatus(Engine& engine, const SessionToolsOptions& options,
                                   const SessionName& caller, const json::object& params) {
  return OnThreadPage<json::object>([&](ChangesView& page) -> Result<json::object> {
    bool with_changes = false;
    std::optional<SessionStatusAt> at;
    auto card = StatusAnswer(engine, options, caller, params, nullptr, &page, &with_changes, &at);
    if (card.ok() && at) {
      if (with_changes) (*card)["stateChanges"] = ChangesPageToJson(at->changes);
      (*card)["asOf"] = AsOfDetailsToJson(*at);
    } else if (card.ok() && with_changes) {
      (*card)["stateChanges"] = ChangesPageToJson(page);
    }
    return card;
  });
}

Result<std::string> SessionStatusJson(Engine& engine, const SessionToolsOptions& options,
                                      const SessionName& caller, const json::object& params) {
  return OnThreadPage<std::string>([&](ChangesView& page) -> Result<std::string> {
    bool with_changes = false;
    std::optional<SessionStatusAt> at;
    auto card = StatusAnswer(engine, options, caller, params, &RenderChangeEvent, &page,
                             &with_changes, &at);
    if (!card.ok()) return card.status();
    if (at) {  // the past is read rarely: the plain encoder
      if (with_changes) (*card)["stateChanges"] = ChangesPageToJson(at->changes);
      (*card)["asOf"] = AsOfDetailsToJson(*at);
      return json::serialize(*card);
    }
    std::string out = json::serialize(*card);
    if (with_changes) {
      // The card's closing brace makes way for stateChanges, its last member.
      out.pop_back();
      out.append(R"(,"stateChanges":)");
      AppendChangesPageJson(page, &out);
      out.push_back('}');
    }
    return out;
  });
}

}  // namespace statewatch::tools
