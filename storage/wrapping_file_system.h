// WrappingFileSystem: a RocksDB FileSystemWrapper that hands every writable file it opens
// (new, reopened or reused) to its Wrap function, which may put a wrapper of its own around
// it — the fault injector (storage/fault_file_system.h) and the WAL sync timer
// (storage/io_metrics.h) are two. Everything else goes to the base file system unchanged.
//
// Thread-safe as the base file system is and as Wrap is; Wrap is called from RocksDB's
// threads.
#ifndef STATEWATCH_STORAGE_WRAPPING_FILE_SYSTEM_H_
#define STATEWATCH_STORAGE_WRAPPING_FILE_SYSTEM_H_

#include <rocksdb/file_system.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace statewatch::storage {

class WrappingFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  // `*file` is the base's file `name`, opened; Wrap may replace it with a wrapper around it.
  using Wrap =
      std::function<void(const std::string& name, std::unique_ptr<rocksdb::FSWritableFile>* file)>;

  // `name` is what RocksDB's Name() answers (its options and logs show it).
  WrappingFileSystem(std::shared_ptr<rocksdb::FileSystem> base, std::string name, Wrap wrap)
      : rocksdb::FileSystemWrapper(std::move(base)),
        name_(std::move(name)),
        wrap_(std::move(wrap)) {}

  const char* Name() const override { return name_.c_str(); }

  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    return Wrapped(f, target()->NewWritableFile(f, o, r, dbg), r);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override {
    return Wrapped(f, target()->ReopenWritableFile(f, o, r, dbg), r);
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override {
    return Wrapped(f, target()->ReuseWritableFile(f, old, o, r, dbg), r);
  }

 private:
  rocksdb::IOStatus Wrapped(const std::string& name, rocksdb::IOStatus s,
                            std::unique_ptr<rocksdb::FSWritableFile>* file) {
    if (s.ok() && *file) wrap_(name, file);
    return s;
  }

  const std::string name_;
  const Wrap wrap_;
};

}  // namespace statewatch::storage

#endif  // STATEWATCH_STORAGE_WRAPPING_FILE_SYSTEM_H_
