// Shared fixture for the upstream monitor tests: an engine on a ManualClock in a temporary
// directory, real JSONL files beside it, and helpers that write transcript lines the way an
// agent client does.
#ifndef STATEWATCH_TESTS_MONITOR_MONITOR_FIXTURE_H_
#define STATEWATCH_TESTS_MONITOR_MONITOR_FIXTURE_H_

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/engine_fixture.h"
#include "monitor/jsonl_provider.h"
#include "monitor/upstream_links.h"
#include "monitor/upstream_monitor.h"
#include "statewatch/engine.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"

namespace statewatch::testing {

// JSONL lines (without the newline) as a Claude-Code-like client writes them.
inline std::string UserLine(const std::string& text, const std::string& timestamp = "") {
  boost::json::object o{{"type", "user"},
                        {"message", {{"role", "user"}, {"content", text}}},
                        {"uuid", "u-" + std::to_string(text.size())}};
  if (!timestamp.empty()) o["timestamp"] = timestamp;
  return boost::json::serialize(o);
}
inline std::string ToolResultLine() {
  return R"({"type":"user","message":{"role":"user","content":[{"type":"tool_result",)"
         R"("tool_use_id":"toolu_1","content":"ok"}]},"toolUseResult":{"stdout":"ok"}})";
}
inline std::string AssistantLine(const std::string& text) {
  boost::json::object o{
      {"type", "assistant"},
      {"message", {{"role", "assistant"}, {"content", {{{"type", "text"}, {"text", text}}}}}}};
  return boost::json::serialize(o);
}

// A transcript message of the session itself.
inline TranscriptMessage Msg(const std::string& role, const std::string& content_json) {
  TranscriptMessage m;
  m.role = role;
  m.content_json = content_json;
  return m;
}

// Appends bytes to a file the way a client appends to its transcript.
inline void Append(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << bytes;
}
inline void AppendLine(const std::string& path, const std::string& line) {
  Append(path, line + "\n");
}
inline uint64_t SizeOf(const std::string& path) { return std::filesystem::file_size(path); }

// A provider that runs a hook (on the monitor's worker thread) before delegating to the
// JSONL provider, so a test can act "during a scan".
class HookedProvider final : public monitor::UpstreamProvider {
 public:
  // Runs at the start of every provider call for a link (CheckSource, which the monitor
  // calls first, always), on the monitor's worker thread.
  std::function<void(const UpstreamLink&)> during_call;
  Status ValidateRef(const std::string& ref) const override { return jsonl_.ValidateRef(ref); }
  monitor::SourceCheck CheckSource(const UpstreamLink& link) const override {
    // A copy: the test may replace the hook once this call has signalled it is done.
    std::function<void(const UpstreamLink&)> hook = during_call;
    if (hook) hook(link);
    return jsonl_.CheckSource(link);
  }
  monitor::ScanResult Scan(const UpstreamLink& link, uint64_t max_bytes) const override {
    return jsonl_.Scan(link, max_bytes);
  }

 private:
  monitor::JsonlProvider jsonl_;
};

class MonitorTest : public ::testing::Test {
 protected:
  static constexpr int64_t kStart = 1764460800000;  // 2025-11-30T00:00:00Z
  static constexpr const char* kSession = "agent:main:adopted:claude:abc";
  static constexpr const char* kWatcher = "agent:main:main";
  static constexpr const char* kCatalog = "claude-code";

  void SetUp() override {
    dir_ = NewTempDir("monitor");
    std::filesystem::create_directories(dir_ + "/files");
    clock_ = std::make_shared<ManualClock>(kStart);
    options_.clock = clock_;
    options_.durability = Durability::kBuffered;
    monitor_options_.provider_timeout = std::chrono::seconds(20);  // never hit by real scans
    hooked_ = std::make_shared<HookedProvider>();
    monitor_options_.providers["jsonl"] = hooked_;
    monitor_options_.roots = Roots();
    OpenEngine();
  }
  void TearDown() override {
    monitor_.reset();
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }
  void OpenEngine() {
    monitor_.reset();
    engine_.reset();
    auto e = Engine::Open(options_, dir_ + "/db");
    ASSERT_OK(e);
    engine_ = std::move(*e);
  }
  monitor::UpstreamMonitor& Monitor() {
    if (!monitor_)
      monitor_ = std::make_unique<monitor::UpstreamMonitor>(*engine_, monitor_options_);
    return *monitor_;
  }

  std::string File(const std::string& name) const { return dir_ + "/files/" + name; }
  // The upstream roots: the transcripts live in files/.
  std::vector<std::string> Roots() const { return {dir_ + "/files"}; }

  static SessionName Name(const std::string& key) { return SessionName{"main", key}; }
  static UpstreamLink Request(const std::string& key, const std::string& path) {
    UpstreamLink l;
    l.session = Name(key);
    l.catalog_id = kCatalog;
    l.host_id = "host-1";
    l.thread_id = "thread-" + key;
    l.upstream_kind = "jsonl";
    l.upstream_ref = path;
    return l;
  }
  // Links `key` to `path` (starting at its end unless a marker is given).
  void Link(const std::string& key, const std::string& path,
            std::optional<uint64_t> marker = std::nullopt) {
    UpstreamLink l = Request(key, path);
    l.marker = marker.value_or(0);
    Status st = monitor::CreateOrRefreshLink(*engine_, Roots(), l, marker.has_value());
    ASSERT_OK(st);
  }
  void WatchSession(const std::string& key, const std::string& watcher = kWatcher) {
    auto w = engine_->Watch(watcher, Name(key));
    ASSERT_OK(w);
    ASSERT_TRUE(*w);
  }
  std::optional<UpstreamLink> LinkOf(const std::string& key) {
    auto l = SessionTablesView(*engine_).GetUpstreamLink(Name(key));
    EXPECT_OK(l);
    return l.ok() ? *l : std::nullopt;
  }
  uint64_t MarkerOf(const std::string& key) {
    auto l = LinkOf(key);
    EXPECT_TRUE(l.has_value()) << "no link for " << key;
    return l ? l->marker : ~uint64_t{0};
  }
  std::vector<Event> Events(const std::string& key) {
    auto page = engine_->ChangesSince(Name(key), 0);
    EXPECT_OK(page);
    return page.ok() ? page->events : std::vector<Event>{};
  }
  std::vector<Notice> Pending(const std::string& watcher = kWatcher) {
    auto n = engine_->PendingNotices(watcher);
    EXPECT_OK(n);
    return n.ok() ? *n : std::vector<Notice>{};
  }
  // Moves the clock one interval on and runs a tick there.
  monitor::TickReport Tick() {
    clock_->Advance(60000);
    return Monitor().RunTick(clock_->NowMs());
  }

  std::string dir_;
  std::shared_ptr<ManualClock> clock_;
  EngineOptions options_;
  monitor::UpstreamMonitorOptions monitor_options_;
  std::shared_ptr<HookedProvider> hooked_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<monitor::UpstreamMonitor> monitor_;
};

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_MONITOR_MONITOR_FIXTURE_H_
