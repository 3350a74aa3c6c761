#include "storage/store_replace.h"

#include <string>

#include "storage/key_codec.h"

namespace statewatch::storage {

Status BeginReplace(Store& store) {
  Batch batch(store);
  batch.Put(Family::kMeta, ReplacingKey(), "");
  return store.Write(batch, /*sync=*/true);
}

namespace {
constexpr std::size_t kClearBatchBytes = 4u << 20;
}  // namespace

Status DeleteEveryKeyButTheMarker(Store& store) {
  const std::string marker = ReplacingKey();
  Batch clear(store);
  for (int i = 0; i < static_cast<int>(Family::kCount); ++i) {
    const auto f = static_cast<Family>(i);
    auto it = store.NewIterator(f);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (f == Family::kMeta && it->key() == marker) continue;
      clear.Delete(f, it->key());
      if (clear.ByteSize() >= kClearBatchBytes) {
        SW_RETURN_IF_ERROR(store.Write(clear, /*sync=*/false));
        clear.Clear();
      }
    }
    SW_RETURN_IF_ERROR(it->status());
  }
  return store.Write(clear, /*sync=*/false);
}

void FinishReplace(Batch& last) { last.Delete(Family::kMeta, ReplacingKey()); }

Result<bool> ReplaceInterrupted(const Store& store) {
  auto marker = store.Get(Family::kMeta, ReplacingKey());
  if (!marker.ok()) return marker.status();
  return marker->has_value();
}

Result<bool> ClearInterruptedReplace(Store& store) {
  auto interrupted = ReplaceInterrupted(store);
  if (!interrupted.ok() || !*interrupted) return interrupted;
  SW_RETURN_IF_ERROR(DeleteEveryKeyButTheMarker(store));
  Batch last(store);
  FinishReplace(last);
  SW_RETURN_IF_ERROR(store.Write(last, /*sync=*/true));
  return true;
}

}  // namespace statewatch::storage
