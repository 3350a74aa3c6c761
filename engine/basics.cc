// Small definitions of the public API: Status::ToString, actor types, default kinds, clocks.
#include <chrono>

#include "statewatch/clock.h"
#include "statewatch/options.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch {

std::string Status::ToString() const {
  const char* name = "OK";
  switch (code_) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: name = "Invalid argument"; break;
    case Code::kNotFound: name = "Not found"; break;
    case Code::kIOError: name = "IO error"; break;
    case Code::kCorruption: name = "Corruption"; break;
    case Code::kFailedPrecondition: name = "Failed precondition"; break;
    case Code::kPermissionDenied: name = "Permission denied"; break;
    case Code::kBusy: name = "Busy"; break;
    case Code::kNoSpace: name = "No space"; break;
    case Code::kMisdirected: name = "Misdirected"; break;
    case Code::kResourceExhausted: name = "Resource exhausted"; break;
  }
  return std::string(name) + ": " + message_;
}

const char* ActorTypeName(ActorType t) {
  switch (t) {
    case ActorType::kHuman: return "human";
    case ActorType::kAgent: return "agent";
    case ActorType::kSystem: return "system";
  }
  return "system";
}

std::optional<ActorType> ParseActorType(const std::string& s) {
  if (s == "human") return ActorType::kHuman;
  if (s == "agent") return ActorType::kAgent;
  if (s == "system") return ActorType::kSystem;
  return std::nullopt;
}

std::vector<KindSpec> DefaultKinds() {
  return {
      {"human_direct_message", /*notifies=*/true, /*seeds_cursor=*/false},
      {"upstream_missing", true, false},
      {"goal_changed", true, false},
      {"child_spawned", false, true},
      {"run_completed", false, false},
      {"run_failed", false, false},
      {"compacted", false, false},
      {"adopted", false, false},
      {"created", false, false},
      // A loop or cost guard refused a session tool call (tools/loop_guards.h), journaled on
      // the caller. It notifies: whoever watches the caller — the coordinator that spawned a
      // runaway child, the peer that asked to watch — learns at once that it is looping.
      // Watchers get at most one pending notice per caller, and the engine journals at most
      // one refusal per guard, caller and target a second, so a refused loop cannot become a
      // notice storm of its own.
      {"guard_refused", true, false},
  };
}

namespace {
class SystemClock final : public Clock {
 public:
  int64_t NowMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};
}  // namespace

std::shared_ptr<Clock> NewSystemClock() { return std::make_shared<SystemClock>(); }

}  // namespace statewatch
