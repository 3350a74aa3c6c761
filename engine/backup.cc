// EngineImpl: the day-2 reads — a checkpoint of the whole database and a walk over the
// journal for export. Neither takes the projection lock for long: RocksDB's checkpoint and
// iterators see one consistent point of the database, and every commit group is one
// atomic batch, so what they see is always a whole prefix of acknowledged writes.
#include "engine/engine_impl.h"
#include "engine/records.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

Status EngineImpl::Backup(const std::string& dir) const {
  if (dir.empty()) return Status::InvalidArgument("the backup directory must be named");
  return store_->Checkpoint(dir);
}

Status EngineImpl::ForEachEvent(const std::function<Status(const Event&)>& fn) const {
  Sequence cap_mark = 0;
  {
    std::shared_lock lock(state_mu_);
    cap_mark = meta_.row_cap_mark;
  }
  auto it = store_->NewIterator(storage::Family::kJournal);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto key = storage::ParseJournalKey(it->key());
    // Rows at or below the row-cap mark are gone even where compaction has not dropped them.
    if (key && key->sequence <= cap_mark) continue;
    auto event = DecodeEvent(it->value());
    if (!event.ok()) return event.status();
    SW_RETURN_IF_ERROR(fn(*event));
  }
  return it->status();
}

}  // namespace statewatch::engine
