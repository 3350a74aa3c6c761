// What the session tools cost on large registries and transcripts (the figures in
// docs/benchmarks.md, "The last run").
//
//   sessions_list/<variant>      tools::SessionsList over 10,000 registered sessions (and
//                                the caller), each with a journal event and a transcript
//                                message, so that every row's activity takes its three
//                                reads. Variants: default, limit200, limit200_enriched
//                                (derived titles and last messages), active_group_limit1.
//   sessions_history/<variant>   tools::SessionsHistory on a 10,000-message transcript whose
//                                messages carry <think> blocks and a token to clean.
//                                Variants: default, limit10000.
//
// counters rows (sessions or messages in the answer). Each fixture is built once (BENCH_SCALE
// scales its size) and kept until ReleaseSessionToolsFixtures().
#include <boost/json.hpp>

#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "statewatch/session_tables.h"
#include "tools/session_history.h"
#include "tools/session_tools.h"

namespace statewatch::bench {
namespace {

constexpr int64_t kSessions = 10000;
constexpr int64_t kMessages = 10000;
constexpr std::size_t kBatch = 1000;
const SessionName kCaller{kAgent, "agent:main:main"};

struct Fixture {
  TempDir dir;
  std::unique_ptr<Engine> engine;
};
std::unique_ptr<Fixture> list_fixture, history_fixture;

Status RegisterSession(Engine& engine, const SessionName& name) {
  SessionRecord r;
  r.name = name;
  return SessionTables(engine).UpsertSession(r);
}

Status FillRegistry(Engine& engine) {
  SW_RETURN_IF_ERROR(RegisterSession(engine, kCaller));
  std::vector<EventInput> events;
  for (int64_t i = 0, n = Scaled(kSessions); i < n; ++i) {
    SessionName name{kAgent, "agent:main:discord:group:g" + std::to_string(i)};
    SW_RETURN_IF_ERROR(RegisterSession(engine, name));
    EventInput in;
    in.session_key = name.session_key;
    in.kind = "human_direct_message";
    in.actor_type = ActorType::kHuman;
    in.summary = in.kind;
    events.push_back(std::move(in));
    TranscriptMessage m;
    m.role = "user";
    m.content_json =
        boost::json::serialize(boost::json::value("first message of session " + std::to_string(i)));
    SW_RETURN_IF_ERROR(SessionTables(engine).AppendTranscript(name, {m}));
    if (events.size() == kBatch || i + 1 == n) {
      SW_RETURN_IF_ERROR(engine.RecordMany(events).status());
      events.clear();
    }
  }
  return Status::OK();
}

Status FillTranscript(Engine& engine) {
  SW_RETURN_IF_ERROR(RegisterSession(engine, kCaller));
  std::vector<TranscriptMessage> batch;
  for (int64_t i = 0, n = Scaled(kMessages); i < n; ++i) {
    TranscriptMessage m;
    m.role = i % 2 ? "assistant" : "user";
    m.content_json = boost::json::serialize(boost::json::value(
        "<think>reasoning " + std::to_string(i) + "</think>message " + std::to_string(i) +
        " with a token sk-abcdefghij0123456789klmnop and some ordinary text to clean"));
    batch.push_back(std::move(m));
    if (batch.size() == kBatch || i + 1 == n) {
      SW_RETURN_IF_ERROR(SessionTables(engine).AppendTranscript(kCaller, std::move(batch)));
      batch.clear();
    }
  }
  return Status::OK();
}

// The fixture in `*slot`, built by `fill` on its first use.
Result<Engine*> FixtureEngine(std::unique_ptr<Fixture>* slot, Status (*fill)(Engine&)) {
  if (!*slot) {
    auto f = std::make_unique<Fixture>();
    auto engine = OpenEngine(f->dir.Sub("db"), Durability::kBuffered);
    if (!engine.ok()) return engine.status();
    f->engine = std::move(engine).value();
    SW_RETURN_IF_ERROR(fill(*f->engine));
    *slot = std::move(f);
  }
  return (*slot)->engine.get();
}

// Runs `tool` with `params` every iteration; `array` names the answer's rows.
template <typename Tool>
void RunTool(benchmark::State& state, Result<Engine*> engine, Tool tool,
             const tools::SessionToolsOptions& options, const char* params, const char* array) {
  if (!CheckOk(state, engine, "fill")) return;
  const boost::json::object p = boost::json::parse(params).as_object();
  std::size_t rows = 0;
  for (auto _ : state) {
    auto answer = tool(**engine, options, kCaller, p);
    if (!CheckOk(state, answer, params)) return;
    rows = answer->at(array).as_array().size();
  }
  if (rows == 0) state.SkipWithError((std::string(params) + ": no rows in the answer").c_str());
  state.counters["rows"] = static_cast<double>(rows);
}

void RegisterList(const std::string& variant, const char* params) {
  Register("sessions_list/" + variant, [params](benchmark::State& state) {
    tools::SessionToolsOptions options;
    options.visibility = tools::Visibility::kAgent;
    RunTool(state, FixtureEngine(&list_fixture, FillRegistry), tools::SessionsList, options, params,
            "sessions");
  });
}

void RegisterHistory(const std::string& variant, const char* params) {
  Register("sessions_history/" + variant, [params](benchmark::State& state) {
    RunTool(state, FixtureEngine(&history_fixture, FillTranscript), tools::SessionsHistory,
            tools::SessionToolsOptions(), params, "messages");
  });
}

}  // namespace

void RegisterSessionToolsBenchmarks() {
  RegisterList("default", R"({})");
  RegisterList("limit200", R"({"limit": 200})");
  RegisterList("limit200_enriched",
               R"({"limit": 200, "includeDerivedTitles": true, "includeLastMessage": true})");
  RegisterList("active_group_limit1", R"({"activeMinutes": 60, "kinds": "group", "limit": 1})");
  RegisterHistory("default", R"({"sessionKey": "current"})");
  RegisterHistory("limit10000", R"({"sessionKey": "current", "limit": 10000})");
}

void ReleaseSessionToolsFixtures() {
  list_fixture.reset();
  history_fixture.reset();
}

}  // namespace statewatch::bench
