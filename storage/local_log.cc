#include "storage/local_log.h"

#include <utility>

#include "storage/key_codec.h"

namespace statewatch::storage {

namespace {
const std::string kLogEnd(1, kLogTag + 1);
}  // namespace

LocalLog::LocalLog(Store* store, log::LogPosition first, log::LogPosition tail)
    : store_(store), first_(first), tail_(tail), own_batch_(*store) {}

namespace {
// The first retained and the last position of `store`'s log family (see Open).
Result<std::pair<log::LogPosition, log::LogPosition>> ReadBounds(Store* store,
                                                                 log::LogPosition known_tail) {
  auto it = store->NewIterator(Family::kLog, LogKey(0), kLogEnd);
  log::LogPosition first = 0, tail = 0;
  it->SeekToLast();
  if (it->Valid()) {
    auto last = ParseSequenceKey(kLogTag, it->key());
    if (!last) return Status::Corruption("log key of " + std::to_string(it->key().size()) +
                                         " bytes is malformed");
    tail = *last;
    it->SeekToFirst();
    first = ParseSequenceKey(kLogTag, it->key()).value_or(tail);
  }
  SW_RETURN_IF_ERROR(it->status());
  if (tail < known_tail) {
    if (tail != 0) {
      return Status::Corruption("the log ends at position " + std::to_string(tail) +
                                " but position " + std::to_string(known_tail) +
                                " was appended");
    }
    tail = known_tail;
  }
  if (first == 0) first = tail + 1;
  return std::make_pair(first, tail);
}
}  // namespace

Result<std::unique_ptr<LocalLog>> LocalLog::Open(Store* store, log::LogPosition known_tail) {
  auto bounds = ReadBounds(store, known_tail);
  if (!bounds.ok()) return bounds.status();
  return std::unique_ptr<LocalLog>(new LocalLog(store, bounds->first, bounds->second));
}

Status LocalLog::Reload(log::LogPosition known_tail) {
  auto bounds = ReadBounds(store_, known_tail);
  if (!bounds.ok()) return bounds.status();
  first_.store(bounds->first, std::memory_order_release);
  tail_.store(bounds->second, std::memory_order_release);
  return Status::OK();
}

Result<log::LogPosition> LocalLog::Append(std::string_view data,
                                          const log::AppendOptions& options) {
  const log::LogPosition tail = tail_.load(std::memory_order_acquire);
  if (options.expected_last != tail) {
    return Status::FailedPrecondition("append refused: the log's last position is " +
                                      std::to_string(tail) + ", not the expected " +
                                      std::to_string(options.expected_last));
  }
  Batch* batch = &own_batch_;
  if (options.writes != nullptr) {
    batch = dynamic_cast<Batch*>(options.writes);
    if (batch == nullptr) {
      return Status::FailedPrecondition("the local log takes keyed writes only as a storage::Batch");
    }
  } else {
    own_batch_.Clear();
  }
  const log::LogPosition position = tail + 1;
  std::string key = LogKey(position);
  batch->Put(Family::kLog, key, data);
  SW_RETURN_IF_ERROR(store_->Write(*batch, options.sync));
  if (first_.load(std::memory_order_relaxed) > position) first_.store(position);
  tail_.store(position, std::memory_order_release);
  return position;
}

Result<std::vector<log::LogRecord>> LocalLog::ReadFrom(log::LogPosition from,
                                                       std::size_t max_records) {
  const log::LogPosition start = std::max<log::LogPosition>(from, 1);
  if (start < first_.load(std::memory_order_acquire)) {
    return Status::NotFound("log position " + std::to_string(start) +
                            " was purged: the log starts at " + std::to_string(first_.load()));
  }
  std::vector<log::LogRecord> out;
  auto it = store_->NewIterator(Family::kLog, LogKey(start), kLogEnd);
  for (it->SeekToFirst(); it->Valid() && out.size() < max_records; it->Next()) {
    auto position = ParseSequenceKey(kLogTag, it->key());
    if (!position) return Status::Corruption("log key of " + std::to_string(it->key().size()) +
                                             " bytes is malformed");
    if (*position != start + out.size()) {
      return Status::Corruption("log position " + std::to_string(start + out.size()) +
                                " is missing (the next record is at " +
                                std::to_string(*position) + ")");
    }
    out.push_back(log::LogRecord{*position, std::string(it->value()), {}});
  }
  SW_RETURN_IF_ERROR(it->status());
  return out;
}

Result<log::LogPosition> LocalLog::Tail() { return tail_.load(std::memory_order_acquire); }

Status LocalLog::PurgeBelow(log::LogPosition position) {
  const log::LogPosition tail = tail_.load(std::memory_order_acquire);
  if (position > tail + 1) {
    return Status::InvalidArgument("cannot purge below position " + std::to_string(position) +
                                   ": the log's last position is " + std::to_string(tail));
  }
  if (position <= first_.load(std::memory_order_acquire)) return Status::OK();
  Batch b(*store_);
  b.DeleteRange(Family::kLog, LogKey(0), LogKey(position));
  SW_RETURN_IF_ERROR(store_->Write(b, /*sync=*/false));
  first_.store(position, std::memory_order_release);
  return Status::OK();
}

}  // namespace statewatch::storage
