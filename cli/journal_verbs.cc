// The journal verbs: record, status, versions, delete-session, and the maintenance verbs
// prune, stats, verify, rebuild.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "cli/event_options.h"
#include "cli/verbs.h"
#include "codecs/json_codec.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"

namespace statewatch::cli {
namespace json = boost::json;

namespace {

constexpr int kDefaultLimit = 200;

// `-` is stdin, so that a producer can pipe events in.
Result<std::string> ReadBatchText(Command& c, const std::string& path) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(c.in), std::istreambuf_iterator<char>());
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return Status::IOError("cannot read batch file " + path + ": " + std::strerror(errno));
  }
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

Result<std::vector<EventInput>> ReadBatchInputs(Command& c) {
  auto text = ReadBatchText(c, *c.args.Get("batch"));
  if (!text.ok()) return text.status();
  return EventInputsFromBatch(*text);
}

namespace {

int RunRecordBatch(Command& c) {
  for (const std::string& name : EventOptionNames()) {
    if (c.args.Has(name)) return UsageError(c, "--batch cannot be combined with --" + name);
  }
  auto inputs = ReadBatchInputs(c);
  if (!inputs.ok()) return RuntimeError(c, inputs.status());
  auto engine = c.OpenEngine();
  if (!engine.ok()) return RuntimeError(c, engine.status());
  json::array results;
  if (!inputs->empty()) {
    auto recorded = (*engine)->RecordMany(*inputs);
    if (!recorded.ok()) return RuntimeError(c, recorded.status());
    for (const RecordResult& r : *recorded) results.emplace_back(tools::RecordResultToJson(r));
  }
  return PrintJson(c, results);
}

// --limit is clamped by the engine (1..200); here it only has to be an integer.
Result<int> LimitOption(const Args& args) {
  auto text = args.Get("limit");
  if (!text) return kDefaultLimit;
  auto n = ParseIntOption("limit", *text);
  if (!n.ok()) return n.status();
  return static_cast<int>(
      std::clamp<int64_t>(*n, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

// The same parser as the session tools, so that the CLI refuses exactly what
// session_status refuses, with the byte-exact message (a runtime error, exit 1).
Result<std::optional<uint64_t>> ChangesSinceOption(const Args& args) {
  auto text = args.Get("changes-since");
  if (!text) return std::optional<uint64_t>();
  json::value value(*text);
  return tools::ParseChangesSince(&value);
}

// With several keys, --agent names the agent of the bare ones; an agent-scoped key always
// brings its own agent (a list may mix agents, so a conflict is not an error here).
Result<SessionName> VersionsSession(const std::string& key, const std::string& agent) {
  auto parsed = ParseSessionKey(key);
  if (!parsed.ok()) return parsed.status();
  return ResolveSession(key, parsed->agent_scoped ? "" : agent);
}

}  // namespace

int RunRecord(Command& c) {
  if (c.args.Has("batch")) return RunRecordBatch(c);
  auto input = EventInputFromOptions(c.args);
  if (!input.ok()) return UsageError(c, input.status().message());
  return PrintEngineAnswer(
      c, [&](Engine& engine) { return engine.Record(*input); }, tools::RecordResultToJson);
}

int RunStatus(Command& c) {
  auto limit = LimitOption(c.args);
  if (!limit.ok()) return UsageError(c, limit.status().message());
  auto since = ChangesSinceOption(c.args);
  if (!since.ok()) return RuntimeError(c, since.status());
  auto session = SessionFromOptions(c.args, "session", "agent");
  if (!session.ok()) return RuntimeError(c, session.status());
  auto engine = c.OpenEngine();
  if (!engine.ok()) return RuntimeError(c, engine.status());
  auto version = (*engine)->StateVersion(*session);
  if (!version.ok()) return RuntimeError(c, version.status());
  if (!since->has_value()) return PrintJson(c, tools::SessionStateToJson(*session, *version));
  auto page = (*engine)->ChangesSince(*session, **since, *limit);
  if (!page.ok()) return RuntimeError(c, page.status());
  return PrintJson(c, tools::SessionStateToJson(*session, *version, &*page));
}

int RunVersions(Command& c) {
  std::string agent = c.args.Get("agent").value_or("");
  std::vector<SessionName> sessions;
  for (const std::string& key : c.args.GetAll("session")) {
    auto session = VersionsSession(key, agent);
    if (!session.ok()) return RuntimeError(c, session.status());
    sessions.push_back(std::move(session).value());
  }
  auto engine = c.OpenEngine();
  if (!engine.ok()) return RuntimeError(c, engine.status());
  auto versions = (*engine)->StateVersions(sessions);  // one batched lookup
  if (!versions.ok()) return RuntimeError(c, versions.status());
  if (versions->size() != sessions.size()) {
    return RuntimeError(
        c, Status::Corruption("engine answered " + std::to_string(versions->size()) +
                              " versions for " + std::to_string(sessions.size()) + " sessions"));
  }
  json::array rows;
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    rows.emplace_back(tools::SessionStateToJson(sessions[i], (*versions)[i]));
  }
  return PrintJson(c, json::object{{"versions", std::move(rows)}});
}

int RunDeleteSession(Command& c) {
  return PrintSessionRemoved(
      c, [](Engine& engine, const SessionName& session) { return engine.DeleteSession(session); });
}

int RunPrune(Command& c) {
  return PrintEngineAnswer(
      c, [](Engine& engine) { return engine.Prune(); }, tools::PruneStatsToJson);
}

int RunStats(Command& c) {
  auto engine = c.OpenEngine();
  if (!engine.ok()) return RuntimeError(c, engine.status());
  auto stats = (*engine)->Stats();
  if (!stats.ok()) return RuntimeError(c, stats.status());
  // "sessions" counts the registry; "journalSessions" the sessions with events.
  auto registered = SessionTablesView(**engine).ListSessions();
  if (!registered.ok()) return RuntimeError(c, registered.status());
  return PrintJson(c, tools::StatsToJson(*stats, registered->size()));
}

int RunVerify(Command& c) {
  auto engine = c.OpenEngine();
  if (!engine.ok()) return RuntimeError(c, engine.status());
  auto report = (*engine)->Verify();
  if (!report.ok()) return RuntimeError(c, report.status());
  PrintJson(c, tools::VerifyReportToJson(*report));
  if (report->ok) return kExitOk;
  // The differences are on stdout (JSON); stderr says why the exit code is 1.
  c.err << "statewatch: verify: the live projections differ from the rebuilt ones ("
        << report->differences.size() << " difference(s) listed)\n";
  return kExitRuntimeError;
}

int RunRebuild(Command& c) {
  return PrintEngineAnswer(
      c, [](Engine& engine) { return engine.Rebuild(); }, tools::VerifyReportToJson);
}

}  // namespace statewatch::cli
