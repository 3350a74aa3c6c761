// The two reads every side table makes of its own column family: one value by key, and
// every value under one key tag, each decoded with the table's codec (engine/table_codecs.h);
// and the one-value read of a row keyed by a session's ref.
//
// Thread-safe: reads of the store only.
#ifndef STATEWATCH_ENGINE_SIDE_TABLE_READS_H_
#define STATEWATCH_ENGINE_SIDE_TABLE_READS_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/event_validation.h"
#include "engine/group_write.h"
#include "schema/session_ref.h"
#include "statewatch/status.h"
#include "storage/store.h"

namespace statewatch::engine {

template <typename T>
using Decoder = Result<T> (*)(std::string_view);

// The value at `key` decoded, nullopt when there is none; a value that does not decode is
// its Corruption. `from` is the store, or a commit group (engine/group_write.h) to read what
// the group itself sees.
template <typename T, typename Reader>
Result<std::optional<T>> ReadDecoded(const Reader& from, storage::Family family,
                                     std::string_view key, Decoder<T> decode) {
  auto stored = from.Get(family, key);
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return std::optional<T>();
  auto value = decode(**stored);
  if (!value.ok()) return value.status();
  return std::optional<T>(std::move(*value));
}

// The row of session `name` (canonicalised first) at `key_of` its ref in `family`, decoded;
// nullopt when the engine never saw the session or the session has no such row.
template <typename T>
Result<std::optional<T>> ReadSessionRow(const SideTableHost& host, const SessionName& name,
                                        storage::Family family, std::string (*key_of)(SessionRef),
                                        Decoder<T> decode) {
  SessionRef ref = host.FindSession(CanonicalSession(name));
  if (!ref) return std::optional<T>();
  return ReadDecoded<T>(host.store(), family, key_of(ref), decode);
}

// Every value under the key tag `tag` of `family` (keys [tag, tag + 1)) in key order,
// decoded, that `keep` accepts. A family holds other tables' rows under other tags (the
// sessions family: the registry 'G' beside the watcher directory 'Y' and its sagas 'Z'), so
// a table lists its own tag's range, never the whole family.
template <typename T, typename Keep>
Result<std::vector<T>> ListDecoded(const storage::Store& store, storage::Family family, char tag,
                                   Decoder<T> decode, Keep keep) {
  std::vector<T> out;
  auto it = store.NewIterator(family, std::string(1, tag),
                              std::string(1, static_cast<char>(tag + 1)));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto value = decode(it->value());
    if (!value.ok()) return value.status();
    if (keep(*value)) out.push_back(std::move(*value));
  }
  SW_RETURN_IF_ERROR(it->status());
  return out;
}

// Every value under the key tag `tag` of `family` in key order, decoded.
template <typename T>
Result<std::vector<T>> ListDecoded(const storage::Store& store, storage::Family family, char tag,
                                   Decoder<T> decode) {
  return ListDecoded<T>(store, family, tag, decode, [](const T&) { return true; });
}

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_SIDE_TABLE_READS_H_
