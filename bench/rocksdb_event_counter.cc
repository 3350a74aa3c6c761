#include "bench/rocksdb_event_counter.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string_view>

namespace statewatch::bench {

class RocksdbEventCounter::Sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::atomic<int64_t> flushes{0}, compactions{0};

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string_view text(msg.payload.data(), msg.payload.size());
    if (text.find("\"event\": \"flush_finished\"") != std::string_view::npos) ++flushes;
    if (text.find("\"event\": \"compaction_finished\"") != std::string_view::npos) ++compactions;
    if (msg.level >= spdlog::level::warn) {  // what the engine would have printed anyway
      std::fprintf(stderr, "%.*s\n", static_cast<int>(text.size()), text.data());
    }
  }
  void flush_() override {}
};

RocksdbEventCounter::RocksdbEventCounter()
    : sink_(std::make_shared<Sink>()), previous_(spdlog::default_logger()) {
  auto logger = std::make_shared<spdlog::logger>("bench-rocksdb-events", sink_);
  logger->set_level(spdlog::level::debug);
  spdlog::set_default_logger(logger);
}

RocksdbEventCounter::~RocksdbEventCounter() { spdlog::set_default_logger(previous_); }

BackgroundWork RocksdbEventCounter::Counts() const {
  return BackgroundWork{sink_->flushes.load(), sink_->compactions.load()};
}

}  // namespace statewatch::bench
