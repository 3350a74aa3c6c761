#include "storage/rocks_logger.h"

#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace statewatch::storage {

namespace {

spdlog::level::level_enum ToSpdlog(rocksdb::InfoLogLevel level) {
  switch (level) {
    case rocksdb::InfoLogLevel::DEBUG_LEVEL:
    case rocksdb::InfoLogLevel::INFO_LEVEL:
    case rocksdb::InfoLogLevel::HEADER_LEVEL:
      return spdlog::level::debug;
    case rocksdb::InfoLogLevel::WARN_LEVEL:
      return spdlog::level::warn;
    case rocksdb::InfoLogLevel::ERROR_LEVEL:
      return spdlog::level::err;
    case rocksdb::InfoLogLevel::FATAL_LEVEL:
    case rocksdb::InfoLogLevel::NUM_INFO_LOG_LEVELS:
      break;
  }
  return spdlog::level::critical;
}

class SpdlogRocksLogger final : public rocksdb::Logger {
 public:
  // RocksDB skips formatting below the logger's level, so the info lines cost nothing unless
  // spdlog would print them.
  SpdlogRocksLogger()
      : rocksdb::Logger(spdlog::should_log(spdlog::level::debug)
                            ? rocksdb::InfoLogLevel::INFO_LEVEL
                            : rocksdb::InfoLogLevel::WARN_LEVEL) {}

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel()) return;
    char buf[1024];
    int n = std::vsnprintf(buf, sizeof(buf), format, ap);
    if (n < 0) return;
    spdlog::level::level_enum to = ToSpdlog(level);
    // Recovery's "<log>: dropping N bytes; Corruption: ..." for a torn tail: the store has
    // checked the log itself and reports the tail once in its own words (RetireTornLogs).
    if (std::strstr(buf, ": dropping ") != nullptr && std::strstr(buf, " bytes; ") != nullptr) {
      to = spdlog::level::debug;
    }
    spdlog::log(to, "rocksdb: {}", buf);
  }
};

}  // namespace

std::shared_ptr<rocksdb::Logger> NewSpdlogRocksLogger() {
  return std::make_shared<SpdlogRocksLogger>();
}

}  // namespace statewatch::storage
