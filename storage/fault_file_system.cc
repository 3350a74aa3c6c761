#include "storage/fault_file_system.h"

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "storage/wrapping_file_system.h"

namespace statewatch::storage {

namespace {

class FaultState final : public FaultInjector {
 public:
  void FailWritesAfter(uint64_t n) override { Arm(writes_left_, n, Kind::kIOError); }
  void FailSyncsAfter(uint64_t n) override { Arm(syncs_left_, n, Kind::kIOError); }
  void NoSpaceAfter(uint64_t n) override { Arm(writes_left_, n, Kind::kNoSpace); }
  void Heal() override {
    writes_left_.store(-1);
    syncs_left_.store(-1);
  }
  void HoldSyncs() override {
    std::lock_guard<std::mutex> lock(hold_mu_);
    held_ = true;
  }
  void ReleaseSyncs() override {
    std::lock_guard<std::mutex> lock(hold_mu_);
    held_ = false;
    hold_cv_.notify_all();
  }
  uint64_t held_syncs() const override {
    std::lock_guard<std::mutex> lock(hold_mu_);
    return waiting_;
  }
  // The error this append must fail with, or OK.
  rocksdb::IOStatus TakeWrite() { return Take(writes_left_, write_kind_.load(), "write"); }
  rocksdb::IOStatus TakeSync() {
    {
      std::unique_lock<std::mutex> lock(hold_mu_);
      ++waiting_;
      hold_cv_.wait(lock, [&] { return !held_; });  // released by the test, always
      --waiting_;
    }
    return Take(syncs_left_, sync_kind_.load(), "sync");
  }

 private:
  enum class Kind { kIOError, kNoSpace };
  void Arm(std::atomic<int64_t>& left, uint64_t n, Kind kind) {
    (&left == &writes_left_ ? write_kind_ : sync_kind_).store(kind);
    left.store(static_cast<int64_t>(n));
  }
  // -1 means "never fail"; 0 means "fail every call from now on".
  static rocksdb::IOStatus Take(std::atomic<int64_t>& left, Kind kind, const char* what) {
    int64_t cur = left.load();
    while (cur > 0) {
      if (left.compare_exchange_weak(cur, cur - 1)) return rocksdb::IOStatus::OK();
    }
    if (cur != 0) return rocksdb::IOStatus::OK();
    if (kind == Kind::kNoSpace) return rocksdb::IOStatus::NoSpace("injected: no space left on device");
    return rocksdb::IOStatus::IOError(std::string("injected ") + what + " fault");
  }
  std::atomic<int64_t> writes_left_{-1};
  std::atomic<int64_t> syncs_left_{-1};
  std::atomic<Kind> write_kind_{Kind::kIOError};
  std::atomic<Kind> sync_kind_{Kind::kIOError};
  mutable std::mutex hold_mu_;
  std::condition_variable hold_cv_;
  bool held_ = false;
  uint64_t waiting_ = 0;
};

class FaultyWritableFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultyWritableFile(std::unique_ptr<rocksdb::FSWritableFile> f, std::shared_ptr<FaultState> s)
      : FSWritableFileOwnerWrapper(std::move(f)), state_(std::move(s)) {}
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = state_->TakeWrite();
    return s.ok() ? FSWritableFileOwnerWrapper::Append(data, o, dbg) : s;
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& v,
                           rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = state_->TakeWrite();
    return s.ok() ? FSWritableFileOwnerWrapper::Append(data, o, v, dbg) : s;
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = state_->TakeSync();
    return s.ok() ? FSWritableFileOwnerWrapper::Sync(o, dbg) : s;
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = state_->TakeSync();
    return s.ok() ? FSWritableFileOwnerWrapper::Fsync(o, dbg) : s;
  }

 private:
  std::shared_ptr<FaultState> state_;
};

}  // namespace

std::shared_ptr<FaultInjector> NewFaultInjector() { return std::make_shared<FaultState>(); }

std::shared_ptr<rocksdb::FileSystem> NewFaultyFileSystem(std::shared_ptr<rocksdb::FileSystem> base,
                                                         std::shared_ptr<FaultInjector> faults) {
  return std::make_shared<WrappingFileSystem>(
      std::move(base), "StatewatchFaultyFileSystem",
      [state = std::static_pointer_cast<FaultState>(std::move(faults))](
          const std::string&, std::unique_ptr<rocksdb::FSWritableFile>* file) {
        *file = std::make_unique<FaultyWritableFile>(std::move(*file), state);
      });
}

}  // namespace statewatch::storage
