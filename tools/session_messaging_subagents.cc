// SessionMessaging: subagents list | steer | kill (answers documented in the header).
#include <algorithm>
#include <cstdio>
#include <tuple>

#include "base/ascii.h"
#include "codecs/json_fields.h"
#include "statewatch/session_tables.h"
#include "tools/session_messaging.h"
#include "tools/session_messaging_internal.h"

namespace statewatch::tools {
namespace json = boost::json;
using namespace messaging_internal;  // NOLINT: the implementation's own helpers

// ---- subagents (answers documented in the header) -----------------------------------------

namespace {

struct ChildList {
  std::vector<RunRecord> active;
  std::vector<RunRecord> recent;
  std::vector<RunRecord> all;  // every child run of the caller, for run id / key targets

  const RunRecord* At(std::size_t index) const {  // 1-based over active then recent
    if (index >= 1 && index <= active.size()) return &active[index - 1];
    if (index > active.size() && index <= active.size() + recent.size()) {
      return &recent[index - active.size() - 1];
    }
    return nullptr;
  }
};

ChildList SortChildren(std::vector<RunRecord> runs, int64_t now, int64_t recent_ms) {
  ChildList list;
  for (const RunRecord& r : runs) {
    if (r.status == "running") {
      list.active.push_back(r);
    } else if (r.ended_at_ms >= now - recent_ms) {
      list.recent.push_back(r);
    }
  }
  std::sort(list.active.begin(), list.active.end(), [](const RunRecord& a, const RunRecord& b) {
    return std::tie(a.created_at_ms, a.run_id) < std::tie(b.created_at_ms, b.run_id);
  });
  std::sort(list.recent.begin(), list.recent.end(), [](const RunRecord& a, const RunRecord& b) {
    return std::tie(b.ended_at_ms, b.run_id) < std::tie(a.ended_at_ms, a.run_id);
  });
  list.all = std::move(runs);
  return list;
}

Result<RunRecord> ResolveChild(const ChildList& list, const std::string& target) {
  std::string t = Trim(target);
  if (t.empty()) return Status::InvalidArgument("Missing subagent target.");
  if (t == "last") {
    const RunRecord* newest = nullptr;
    for (const auto* group : {&list.active, &list.recent}) {
      for (const RunRecord& r : *group) {
        if (!newest || r.created_at_ms > newest->created_at_ms) newest = &r;
      }
    }
    if (newest) return *newest;
  } else if (t.size() <= 6 && t.find_first_not_of("0123456789") == std::string::npos) {
    if (const RunRecord* r = list.At(std::stoul(t))) return *r;
  } else {
    for (const RunRecord& r : list.all) {
      if (r.run_id == t) return r;
    }
    const RunRecord* by_key = nullptr;  // the newest run of that child session
    for (const RunRecord& r : list.all) {
      if (r.target.session_key == t && (!by_key || r.created_at_ms > by_key->created_at_ms)) {
        by_key = &r;
      }
    }
    if (by_key) return *by_key;
    std::string label = ascii::AsciiToLower(t);
    for (const auto* group : {&list.active, &list.recent}) {
      std::vector<const RunRecord*> hits;
      for (const RunRecord& r : *group) {
        if (!r.label.empty() && ascii::AsciiToLower(r.label) == label) hits.push_back(&r);
      }
      if (hits.size() > 1) return Status::InvalidArgument("Ambiguous subagent label: " + t);
      if (hits.size() == 1) return *hits[0];
    }
  }
  return Status::NotFound("Unknown subagent session: " + t);
}

json::object ChildRow(const RunRecord& r, std::size_t index, int64_t now) {
  SpawnOptions options = SpawnOptionsOf(r);
  json::object o;
  o["index"] = index;
  o["runId"] = r.run_id;
  o["sessionKey"] = r.target.session_key;
  if (!r.label.empty()) o["label"] = r.label;
  o["task"] = r.task.size() > 200 ? r.task.substr(0, 200) + "…" : r.task;
  o["status"] = r.status;
  o["runtime"] = options.runtime;
  if (!options.model.empty()) o["model"] = options.model;
  o["createdAt"] = r.created_at_ms;
  if (r.ended_at_ms > 0) o["endedAt"] = r.ended_at_ms;
  o["runtimeMs"] = (r.ended_at_ms > 0 ? r.ended_at_ms : now) - r.created_at_ms;
  return o;
}

json::object NotRunning(const char* action, const RunRecord& run) {
  return json::object{
      {"status", "done"},
      {"action", action},
      {"runId", run.run_id},
      {"sessionKey", run.target.session_key},
      {"text", "Subagent " + ChildName(run) + " is not running (status " + run.status + ")."}};
}

}  // namespace

Result<json::object> SessionMessaging::Subagents(const SessionName& caller,
                                                 const json::object& params,
                                                 const AnswerKnown& answer_known) {
  return Guarded("subagents", [&]() -> Result<json::object> {
    SW_RETURN_IF_ERROR(
        CheckKnownParams(params, "subagents", {"action", "target", "message", "recentMinutes"}));
    std::optional<std::string> action, target;
    std::optional<int64_t> recent_minutes;
    SW_RETURN_IF_ERROR(Assign(EnumParam(params, "action", {"list", "steer", "kill"},
                                        "action must be one of list, steer, kill"),
                              &action));
    SW_RETURN_IF_ERROR(Assign(StringParam(params, "target"), &target));
    SW_RETURN_IF_ERROR(Assign(IntegerParam(params, "recentMinutes", 1, 1440), &recent_minutes));
    const json::value* message = params.if_contains("message");
    if (message != nullptr && !message->is_null() && !message->is_string()) {
      return Status::InvalidArgument("message must be a string (got " + DescribeJson(*message) +
                                     ")");
    }
    int64_t recent_ms = recent_minutes ? *recent_minutes * 60000 : Policy()->recent_window_ms;
    std::string act = action.value_or("list");
    if (act == "list") return ListChildren(caller, recent_ms);
    if (!target) return Status::InvalidArgument("Missing subagent target.");
    if (act == "kill") return Kill(caller, *target, recent_ms);
    std::string text = message && message->is_string() ? std::string(message->as_string()) : "";
    if (Trim(text).empty()) return Status::InvalidArgument("Missing steer message.");
    std::size_t chars = CountChars(text);
    if (chars > kMaxSteerChars) {
      return Status::InvalidArgument("Message too long (" + std::to_string(chars) +
                                     " chars, max 4000).");
    }
    return Steer(caller, *target, text, recent_ms, answer_known);
  });
}

Result<json::object> SessionMessaging::ListChildren(const SessionName& caller, int64_t recent_ms) {
  auto runs = ChildRuns(caller);
  if (!runs.ok()) return runs.status();
  int64_t now = engine_->clock().NowMs();
  ChildList list = SortChildren(std::move(*runs), now, recent_ms);
  json::array active, recent;
  std::string text;
  std::size_t index = 0;
  for (const auto& [group, rows] : {std::pair{&list.active, &active}, {&list.recent, &recent}}) {
    for (const RunRecord& r : *group) {
      rows->push_back(ChildRow(r, ++index, now));
      text += std::to_string(index) + ". [" + r.status + "] " + ChildName(r) + " (run " + r.run_id +
              ")\n";
    }
  }
  if (text.empty()) text = "no subagents.";
  json::object o;
  o["status"] = "ok";
  o["action"] = "list";
  o["requesterSessionKey"] = caller.session_key;
  o["total"] = index;
  o["active"] = std::move(active);
  o["recent"] = std::move(recent);
  o["text"] = Trim(text);
  return o;
}

Result<json::object> SessionMessaging::Steer(const SessionName& caller, const std::string& target,
                                             const std::string& message, int64_t recent_ms,
                                             const AnswerKnown& answer_known) {
  auto runs = ChildRuns(caller);
  if (!runs.ok()) return runs.status();
  auto child =
      ResolveChild(SortChildren(std::move(*runs), engine_->clock().NowMs(), recent_ms), target);
  if (!child.ok()) return child.status();
  std::vector<Delivery> sent;
  json::object out;
  {
    std::lock_guard lock(StripeOf(child->run_id));
    auto stored = SessionTablesView(*engine_).GetRun(child->run_id);
    if (!stored.ok()) return stored.status();
    if (!*stored) return Status::NotFound("Unknown subagent session: " + Trim(target));
    RunRecord run = std::move(**stored);
    if (run.status != "running") return NotRunning("steer", run);
    int64_t now = engine_->clock().NowMs();
    out = json::object{
        {"action", "steer"}, {"runId", run.run_id}, {"sessionKey", run.target.session_key}};
    const int64_t interval = Policy()->steer_interval_ms;
    if (run.last_steer_at_ms > 0 && now - run.last_steer_at_ms < interval) {
      out["status"] = "rate_limited";
      out["error"] = "Steer rate limit: at most one steer every " +
                     std::to_string(interval / 1000) + " s per run (retry in " +
                     std::to_string(interval - (now - run.last_steer_at_ms)) + " ms).";
      return out;
    }
    run.last_steer_at_ms = now;
    auto remote = RemotePartition(run.target);
    if (!remote.ok()) return remote.status();
    if (*remote) {
      // Cluster mode: the steer goes as mail to the child's partition, in the run's group;
      // its delivery id is assigned there (0 here, as a ping-pong turn's).
      char stamp[24];
      std::snprintf(stamp, sizeof(stamp), "%016lld", static_cast<long long>(now));
      out["status"] = "accepted";
      out["deliveryId"] = 0;
      if (answer_known) answer_known(out);  // rides on the mail's group
      SW_RETURN_IF_ERROR(PostMail(
          MakeDelivery(run.target, "steer", run.run_id, message, caller.session_key,
                       "subagents", run.traceparent),
          **remote, std::string(kMailStepSteer) + ":" + stamp + ":" + NewUuidV4(), "", &run));
      sent.emplace_back();  // id 0: wakes the forwarder (Publish)
    } else {
      // The run's steer time, the message's transcript entry and its delivery: one group,
      // whose answer names the delivery's id (assigned in it).
      out["status"] = "accepted";
      Delivery d = MakeDelivery(run.target, "steer", run.run_id, message, caller.session_key,
                                "subagents", run.traceparent);
      TranscriptMessage m = PrepareDelivery(&d);
      HomeGroup group;
      group.runs.push_back(run);
      group.deliveries.emplace_back(std::move(d), std::move(m));
      if (answer_known) {
        group.built = [&out, &answer_known](const std::vector<Delivery>& stored) {
          json::object answer = out;
          answer["deliveryId"] = stored.front().id;
          answer_known(answer);
        };
      }
      auto committed = CommitHome(std::move(group));
      if (!committed.ok()) return committed.status();
      sent = std::move(*committed);
      out["deliveryId"] = sent.front().id;
    }
  }
  Publish(sent);
  return out;
}

// Cancels a running child and, depth first, the runs it spawned itself. Returns how many
// runs it cancelled.
Result<int64_t> SessionMessaging::KillTree(const std::string& run_id, const std::string& killer,
                                           int depth) {
  auto u = FinishSpawnRun(run_id, "cancelled", "killed by " + killer, killer, /*by_kill=*/true);
  if (!u.ok()) return u.status();
  int64_t killed = u->applied ? 1 : 0;
  Deliver(std::move(*u), nullptr);
  auto run = SessionTablesView(*engine_).GetRun(run_id);
  if (!run.ok()) return run.status();
  if (!*run || depth >= 32) return killed;
  auto grandchildren = ChildRuns((*run)->target);
  if (!grandchildren.ok()) return grandchildren.status();
  for (const RunRecord& g : *grandchildren) {
    if (g.status != "running") continue;
    auto n = KillTree(g.run_id, killer, depth + 1);
    if (!n.ok()) return n.status();
    killed += *n;
  }
  return killed;
}

Result<json::object> SessionMessaging::Kill(const SessionName& caller, const std::string& target,
                                            int64_t recent_ms) {
  auto runs = ChildRuns(caller);
  if (!runs.ok()) return runs.status();
  ChildList list = SortChildren(std::move(*runs), engine_->clock().NowMs(), recent_ms);
  std::string t = Trim(target);
  auto killed_text = [](int64_t n) { return "killed " + std::to_string(n) + " subagent(s)."; };
  if (t == "all" || t == "*") {
    if (list.active.empty()) {
      return json::object{{"status", "ok"},
                          {"action", "kill"},
                          {"killed", 0},
                          {"text", "no running subagents to kill."}};
    }
    int64_t killed = 0;
    for (const RunRecord& r : list.active) {
      auto n = KillTree(r.run_id, caller.session_key, 0);
      if (!n.ok()) return n.status();
      killed += *n;
    }
    return json::object{
        {"status", "ok"}, {"action", "kill"}, {"killed", killed}, {"text", killed_text(killed)}};
  }
  auto child = ResolveChild(list, t);
  if (!child.ok()) return child.status();
  if (child->status != "running") return NotRunning("kill", *child);
  auto killed = KillTree(child->run_id, caller.session_key, 0);
  if (!killed.ok()) return killed.status();
  return json::object{{"status", "ok"},         {"action", "kill"},
                      {"runId", child->run_id}, {"sessionKey", child->target.session_key},
                      {"killed", *killed},      {"text", killed_text(*killed)}};
}

}  // namespace statewatch::tools
