// Shared fixture for engine tests: a fresh database in a temporary directory, a ManualClock,
// and small helpers to record events.
#ifndef STATEWATCH_TESTS_ENGINE_ENGINE_FIXTURE_H_
#define STATEWATCH_TESTS_ENGINE_ENGINE_FIXTURE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "poll_until.h"
#include "statewatch/engine.h"
#include "statewatch/session_records.h"
#include "status_matchers.h"

namespace statewatch::testing {

// Waits until `done()` holds — a thread the test started reached a point — for at most
// ~20 s of polling; false when it never did.
template <typename F>
bool WaitFor(F done) {
  return PollUntil(done, 20000, std::chrono::milliseconds(1));
}

inline std::string NewTempDir(const std::string& tag) {
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() /
             ("statewatch-" + tag + "-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

// A human message to `key`: the plainest event that notifies.
inline EventInput HumanEvent(const std::string& key, const std::string& summary = "hello") {
  EventInput in;
  in.session_key = key;
  in.kind = "human_direct_message";
  in.actor_type = ActorType::kHuman;
  in.summary = summary;
  return in;
}

// A message for `agent`'s session `key` on the delivery feed (SessionTables::EnqueueDelivery).
inline Delivery MessageDelivery(const std::string& agent, const std::string& key,
                                const std::string& text = "hello") {
  Delivery d;
  d.agent_id = agent;
  d.type = "message";
  d.session_key = key;
  d.text = text;
  return d;
}

class EngineTest : public ::testing::Test {
 protected:
  static constexpr int64_t kStart = 1764460800000;  // 2025-11-30T00:00:00Z

  void SetUp() override {
    dir_ = NewTempDir("engine");
    clock_ = std::make_shared<ManualClock>(kStart);
    options_.clock = clock_;
    options_.durability = Durability::kBuffered;  // tests do not need fsync
    Reopen();
  }
  void TearDown() override {
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    engine_.reset();
    auto e = Engine::Open(options_, dir_);
    ASSERT_OK(e);
    engine_ = std::move(*e);
  }

  static EventInput Input(const std::string& key, const std::string& kind,
                          ActorType actor = ActorType::kHuman, const std::string& actor_id = "") {
    EventInput in;
    in.session_key = key;
    in.kind = kind;
    in.actor_type = actor;
    in.actor_id = actor_id;
    in.summary = kind;
    return in;
  }
  // Records and returns the sequence; fails the test on error.
  Sequence Rec(const EventInput& in) {
    auto r = engine_->Record(in);
    EXPECT_OK(r);
    return r.ok() ? r->event.sequence : 0;
  }
  Sequence Human(const std::string& key) { return Rec(Input(key, "human_direct_message")); }
  Sequence Spawn(const std::string& parent, const std::string& child) {
    EventInput in = Input(child, "child_spawned", ActorType::kAgent, parent);
    in.watchers = {parent};
    return Rec(in);
  }
  static SessionName Name(const std::string& key, const std::string& agent = "") {
    auto p = key.rfind("agent:", 0) == 0 ? key.substr(6, key.find(':', 6) - 6) : agent;
    return SessionName{p.empty() ? "main" : p, key};
  }
  std::vector<Notice> Pending(const std::string& watcher) {
    auto n = engine_->PendingNotices(watcher);
    EXPECT_OK(n);
    return n.ok() ? *n : std::vector<Notice>{};
  }
  CursorState CursorOf(const std::string& watcher, const std::string& target) {
    auto c = engine_->Cursor(watcher, Name(target));
    EXPECT_OK(c);
    EXPECT_TRUE(c.ok() && c->has_value()) << "no cursor of " << watcher << " on " << target;
    return c.ok() && c->has_value() ? **c : CursorState{};
  }

  std::string dir_;
  std::shared_ptr<ManualClock> clock_;
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_ENGINE_ENGINE_FIXTURE_H_
