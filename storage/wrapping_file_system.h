// WrappingFileSystem: a RocksDB FileSystemWrapper that hands every writable file it opens
// (new, reopened or reused) to Wrap, which may put a wrapper of its own around it — the
// fault injector (storage/fault_file_system.h) and the WAL sync timer (storage/io_metrics.h)
// are two. Everything else goes to the base file system unchanged.
//
// Thread-safe as the base file system is; Wrap is called from RocksDB's threads.
#ifndef STATEWATCH_STORAGE_WRAPPING_FILE_SYSTEM_H_
#define STATEWATCH_STORAGE_WRAPPING_FILE_SYSTEM_H_

#include <rocksdb/file_system.h>

#include <memory>
#include <string>

namespace statewatch::storage {

class WrappingFileSystem : public rocksdb::FileSystemWrapper {
 public:
  using rocksdb::FileSystemWrapper::FileSystemWrapper;

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

 protected:
  // `*file` is the base's file `name`, opened; Wrap may replace it with a wrapper around it.
  virtual void Wrap(const std::string& name, std::unique_ptr<rocksdb::FSWritableFile>* file) = 0;

 private:
  rocksdb::IOStatus Wrapped(const std::string& name, rocksdb::IOStatus s,
                            std::unique_ptr<rocksdb::FSWritableFile>* file) {
    if (s.ok() && *file) Wrap(name, file);
    return s;
  }
};

}  // namespace statewatch::storage

#endif  // STATEWATCH_STORAGE_WRAPPING_FILE_SYSTEM_H_
