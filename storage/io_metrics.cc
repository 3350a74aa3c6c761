#include "storage/io_metrics.h"

#include <string_view>

#include "storage/wrapping_file_system.h"

namespace statewatch::storage {

void IoMetrics::StallChanged(const std::string& family, rocksdb::WriteStallCondition now) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool was_stalled = !stalled_.empty();
  auto it = stalled_.find(family);
  const rocksdb::WriteStallCondition before =
      it == stalled_.end() ? rocksdb::WriteStallCondition::kNormal : it->second;
  if (now == before) return;
  if (now == rocksdb::WriteStallCondition::kDelayed) ++delayed_;
  if (now == rocksdb::WriteStallCondition::kStopped) ++stopped_;
  if (now == rocksdb::WriteStallCondition::kNormal) {
    stalled_.erase(it);
  } else {
    stalled_[family] = now;  // no allocation for a family already stalled
  }
  const auto t = SteadyClock::now();
  if (!was_stalled && !stalled_.empty()) stalled_since_ = t;
  if (was_stalled && stalled_.empty()) {
    stalled_seconds_ += std::chrono::duration<double>(t - stalled_since_).count();
  }
}

void IoMetrics::FillStalls(RocksDbStats* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  out->stalls_delayed = delayed_;
  out->stalls_stopped = stopped_;
  out->stall_seconds = stalled_seconds_;
  if (!stalled_.empty()) {
    out->stall_seconds +=
        std::chrono::duration<double>(SteadyClock::now() - stalled_since_).count();
  }
}

namespace {

class TimedSyncFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  TimedSyncFile(std::unique_ptr<rocksdb::FSWritableFile> f, std::shared_ptr<IoMetrics> m)
      : FSWritableFileOwnerWrapper(std::move(f)), metrics_(std::move(m)) {}
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    const auto start = std::chrono::steady_clock::now();
    rocksdb::IOStatus s = FSWritableFileOwnerWrapper::Sync(o, dbg);
    Record(start);
    return s;
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    const auto start = std::chrono::steady_clock::now();
    rocksdb::IOStatus s = FSWritableFileOwnerWrapper::Fsync(o, dbg);
    Record(start);
    return s;
  }

 private:
  void Record(std::chrono::steady_clock::time_point start) {
    metrics_->wal_sync.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::shared_ptr<IoMetrics> metrics_;
};

bool IsWalFile(std::string_view name) {
  return name.size() > 4 && name.substr(name.size() - 4) == ".log";
}

class StallListener final : public rocksdb::EventListener {
 public:
  explicit StallListener(std::shared_ptr<IoMetrics> m) : metrics_(std::move(m)) {}
  const char* Name() const override { return "StatewatchStallListener"; }
  void OnStallConditionsChanged(const rocksdb::WriteStallInfo& info) noexcept override {
    try {  // anything handed to RocksDB must not throw (a map insert may)
      metrics_->StallChanged(info.cf_name, info.condition.cur);
    } catch (...) {
    }
  }

 private:
  std::shared_ptr<IoMetrics> metrics_;
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> NewWalSyncTimingFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base, std::shared_ptr<IoMetrics> metrics) {
  return std::make_shared<WrappingFileSystem>(
      std::move(base), "StatewatchWalSyncTimingFileSystem",
      [metrics = std::move(metrics)](const std::string& name,
                                     std::unique_ptr<rocksdb::FSWritableFile>* file) {
        if (IsWalFile(name)) *file = std::make_unique<TimedSyncFile>(std::move(*file), metrics);
      });
}

std::shared_ptr<rocksdb::EventListener> NewStallListener(std::shared_ptr<IoMetrics> metrics) {
  return std::make_shared<StallListener>(std::move(metrics));
}

}  // namespace statewatch::storage
