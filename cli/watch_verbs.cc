// The watcher verbs: watch, unwatch, notices, drain, cursor, reset-watcher, sweep.
#include <string>
#include <vector>

#include "cli/verbs.h"
#include "codecs/json_codec.h"

namespace statewatch::cli {
namespace json = boost::json;

namespace {

json::object NoticesToJson(const std::vector<Notice>& notices) {
  json::array list;
  for (const Notice& n : notices) list.emplace_back(tools::NoticeToJson(n));
  return json::object{{"notices", std::move(list)}};
}

std::string Watcher(const Command& c) { return c.args.Get("watcher").value_or(""); }

json::object WatchedManyToJson(const WatchManyResult& r) {
  return json::object{{"watched", true}, {"watches", r.watched}, {"created", r.created}};
}

// --watcher with each --target (and --target-agent).
std::vector<WatchSpec> WatchSpecs(const Command& c) {
  std::vector<WatchSpec> watches;
  for (std::string& target : c.args.GetAll("target")) {
    watches.push_back({Watcher(c), SessionName{c.args.Get("target-agent").value_or(""),
                                               std::move(target)}});
  }
  return watches;
}

// Several --target: Engine::WatchMany, all or nothing; a refused one is an error naming it.
int RunWatchMany(Command& c) {
  const std::vector<WatchSpec> watches = WatchSpecs(c);
  return PrintEngineAnswer(
      c, [&](Engine& engine) { return engine.WatchMany(watches); }, WatchedManyToJson);
}

}  // namespace

int RunWatch(Command& c) {
  if (c.args.GetAll("target").size() > 1) return RunWatchMany(c);
  // docs/semantics.md, "How a watcher starts watching": a malformed or conflicting target is a
  // refused registration (watched: false), not an error — the same answer sessions_send gives.
  auto target = SessionFromOptions(c.args, "target", "target-agent");
  if (!target.ok()) return PrintJson(c, json::object{{"watched", false}});
  auto engine = c.OpenEngine();
  if (!engine.ok()) return RuntimeError(c, engine.status());
  auto watched = (*engine)->Watch(Watcher(c), *target);
  if (!watched.ok()) return RuntimeError(c, watched.status());
  return PrintJson(c, json::object{{"watched", *watched}});
}

// Engine::Unwatch of every --target, in one step; a refused pair is an error and removes
// nothing.
int RunUnwatch(Command& c) {
  const std::vector<WatchSpec> watches = WatchSpecs(c);
  return PrintEngineAnswer(
      c, [&](Engine& engine) { return engine.Unwatch(watches); },
      [](const UnwatchResult& r) {
        return json::object{{"watches", r.watches}, {"removed", r.removed}};
      });
}

int RunNotices(Command& c) {
  return PrintEngineAnswer(
      c, [&](Engine& engine) { return engine.PendingNotices(Watcher(c)); }, NoticesToJson);
}

int RunDrain(Command& c) {
  return PrintEngineAnswer(
      c, [&](Engine& engine) { return engine.Drain(Watcher(c)); }, NoticesToJson);
}

int RunCursor(Command& c) {
  auto target = SessionFromOptions(c.args, "target", "target-agent");
  if (!target.ok()) return RuntimeError(c, target.status());
  auto engine = c.OpenEngine();
  if (!engine.ok()) return RuntimeError(c, engine.status());
  auto cursor = (*engine)->Cursor(Watcher(c), *target);
  if (!cursor.ok()) return RuntimeError(c, cursor.status());
  if (!cursor->has_value()) {
    return RuntimeError(c, Status::NotFound("no cursor for watcher " + Watcher(c) + " on target " +
                                            target->session_key));
  }
  return PrintJson(c, tools::CursorToJson(**cursor));
}

int RunResetWatcher(Command& c) {
  auto engine = c.OpenEngine();
  if (!engine.ok()) return RuntimeError(c, engine.status());
  Status status = (*engine)->ResetWatcher(Watcher(c));
  if (!status.ok()) return RuntimeError(c, status);
  return PrintJson(c, json::object{{"reset", true}});
}

int RunSweep(Command& c) {
  return PrintEngineAnswer(
      c, [](Engine& engine) { return engine.Sweep(); },
      [](uint64_t pending) {
        return json::object{{"pendingNotices", pending}};
      });
}

}  // namespace statewatch::cli
