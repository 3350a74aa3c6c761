// The benchmarks are the only code outside storage/ that includes <rocksdb/...>: the floor
// must measure RocksDB itself, not statewatch's storage layer.
#include "bench/raw_rocksdb_floor.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

namespace statewatch::bench {
namespace {

void PutFixed64BE(std::string* dst, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) dst->push_back(static_cast<char>(v >> shift));
}

Status FromRocks(const rocksdb::Status& s) {
  return s.ok() ? Status::OK() : Status::IOError("rocksdb: " + s.ToString());
}

// Writes the key of (session, sequence) into `key`, reusing its buffer.
void KeyFor(uint64_t session, uint64_t sequence, std::string* key) {
  key->clear();
  key->push_back('J');
  PutFixed64BE(key, session);
  PutFixed64BE(key, sequence);
}

}  // namespace

struct RawRocksdbFloor::Rep {
  std::unique_ptr<rocksdb::DB> db;
  std::string value;
};

Result<std::unique_ptr<RawRocksdbFloor>> RawRocksdbFloor::Open(const std::string& path,
                                                               std::size_t value_bytes) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.write_buffer_size = 16u << 20;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, path, &raw);
  if (!s.ok()) return FromRocks(s);
  auto rep = std::make_unique<Rep>();
  rep->db.reset(raw);
  // Printable, not all-equal bytes, so that compression (snappy) sees roughly what an event
  // looks like: a mix of repeated key text and varying digits.
  for (std::size_t i = 0; rep->value.size() < value_bytes; ++i)
    rep->value += "agent:main:subagent:" + std::to_string(i * 7919 % 100003) + ";";
  rep->value.resize(value_bytes);
  return std::unique_ptr<RawRocksdbFloor>(new RawRocksdbFloor(std::move(rep)));
}

RawRocksdbFloor::RawRocksdbFloor(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
RawRocksdbFloor::~RawRocksdbFloor() = default;

Status RawRocksdbFloor::Put(uint64_t session, bool sync) {
  thread_local std::string key;
  KeyFor(session, sequence_.fetch_add(1, std::memory_order_relaxed) + 1, &key);
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  return FromRocks(rep_->db->Put(wo, key, rep_->value));
}

Status RawRocksdbFloor::PutBatch(const std::vector<uint64_t>& sessions, bool sync) {
  thread_local std::string key;
  thread_local rocksdb::WriteBatch batch;
  batch.Clear();
  uint64_t first = sequence_.fetch_add(sessions.size(), std::memory_order_relaxed) + 1;
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    KeyFor(sessions[i], first + i, &key);
    batch.Put(key, rep_->value);
  }
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  return FromRocks(rep_->db->Write(wo, &batch));
}

}  // namespace statewatch::bench
