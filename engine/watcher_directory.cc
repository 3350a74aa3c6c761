// WatcherDirectory: the watcher directory and its sagas in the sessions column family,
// written through the commit-group hook (engine/group_write.h) like the other side tables.
#include "statewatch/watcher_directory.h"

#include <algorithm>

#include "engine/flatbuffer_values.h"
#include "engine/group_write.h"
#include "engine/side_table_reads.h"
#include "engine/watcher_key.h"
#include "schema/watchers_generated.h"

namespace statewatch {

namespace fb = schema::watchers;
using engine::CanonicalWatcher;
using engine::GroupWrite;
using engine::fbv::Decode;
using engine::fbv::Finish;
using engine::fbv::Str;
using storage::Family;

namespace {

// The key tags in the sessions family (the registry's is 'G', storage/key_codec.h).
constexpr char kListingTag = 'Y';
constexpr char kSagaTag = 'Z';
constexpr char kClearFenceTag = 'F';

std::string RowKey(char tag, const std::string& watcher) {
  std::string k(1, tag);
  k.append(watcher);
  return k;
}

std::vector<uint32_t> Partitions(const flatbuffers::Vector<uint32_t>* v) {
  std::vector<uint32_t> out;
  if (v != nullptr) out.assign(v->begin(), v->end());
  return out;
}

void Insert(std::vector<uint32_t>* set, uint32_t p) {
  auto at = std::lower_bound(set->begin(), set->end(), p);
  if (at == set->end() || *at != p) set->insert(at, p);
}

void Erase(std::vector<uint32_t>* set, uint32_t p) {
  auto at = std::lower_bound(set->begin(), set->end(), p);
  if (at != set->end() && *at == p) set->erase(at);
}

// The row of `watcher` under `tag` as the commit group sees it.
template <typename T>
Result<std::optional<T>> ReadRow(const GroupWrite& g, char tag, const std::string& watcher,
                                 engine::Decoder<T> decode) {
  return engine::ReadDecoded<T>(g, Family::kSessions, RowKey(tag, watcher), decode);
}

}  // namespace

// ---- codecs ---------------------------------------------------------------------------------

std::string EncodeWatcherListing(const WatcherListing& l) {
  flatbuffers::FlatBufferBuilder b(64 + l.watcher.size() + 4 * l.partitions.size());
  auto watcher = b.CreateString(l.watcher);
  auto partitions = b.CreateVector(l.partitions);
  b.Finish(fb::CreateWatcherPartitions(b, watcher, partitions, l.version));
  return Finish(b);
}

Result<WatcherListing> DecodeWatcherListing(std::string_view bytes) {
  return Decode<fb::WatcherPartitions>(bytes, "watcher directory", [](const auto& f) {
    WatcherListing l;
    l.watcher = Str(f.watcher());
    l.partitions = Partitions(f.partitions());
    l.version = f.version();
    return l;
  });
}

std::string EncodeWatcherSaga(const WatcherSaga& s) {
  flatbuffers::FlatBufferBuilder b(64 + s.watcher.size() + 4 * s.partitions.size());
  auto watcher = b.CreateString(s.watcher);
  auto partitions = b.CreateVector(s.partitions);
  b.Finish(fb::CreateWatcherSaga(b, watcher, static_cast<uint8_t>(s.kind), partitions,
                                 s.started_at_ms, s.number));
  return Finish(b);
}

Result<WatcherSaga> DecodeWatcherSaga(std::string_view bytes) {
  // The root type of the file is WatcherPartitions; a saga is verified as its own table.
  return Decode<fb::WatcherSaga>(bytes, "watcher saga", [](const auto& f) -> Result<WatcherSaga> {
    WatcherSaga s;
    s.watcher = Str(f.watcher());
    if (f.kind() != 1 && f.kind() != 2) {
      return Status::Corruption("watcher saga of " + s.watcher + " has kind " +
                                std::to_string(f.kind()) + " (1 reset, 2 delete)");
    }
    s.kind = static_cast<WatcherSagaKind>(f.kind());
    s.partitions = Partitions(f.partitions());
    s.started_at_ms = f.started_at();
    s.number = f.number();
    return s;
  });
}

namespace {

std::string EncodeClearFence(const std::string& watcher, uint64_t saga) {
  flatbuffers::FlatBufferBuilder b(64 + watcher.size());
  auto w = b.CreateString(watcher);
  b.Finish(fb::CreateWatcherClearFence(b, w, saga));
  return Finish(b);
}

Result<uint64_t> DecodeClearFence(std::string_view bytes) {
  return Decode<fb::WatcherClearFence>(bytes, "watcher clear fence",
                                       [](const auto& f) -> uint64_t { return f.saga(); });
}

}  // namespace

const char* WatcherSagaKindName(WatcherSagaKind kind) {
  return kind == WatcherSagaKind::kDelete ? "delete" : "reset";
}

std::string WatcherSagaPendingMessage(const WatcherSaga& saga) {
  return "a " + std::string(WatcherSagaKindName(saga.kind)) + " of " + saga.watcher +
         " is still removing its cursors";
}

// ---- the table --------------------------------------------------------------------------------

WatcherDirectory::WatcherDirectory(Engine& engine)
    : host_(&engine::SideTableHostOf(engine, "WatcherDirectory")) {}

namespace {

// Runs `write(g, w, &out)` in one commit group, `w` the canonical form of `watcher`, and
// answers the `out` it left: the row as the group wrote it. An InvalidArgument names a
// watcher that is not an agent-scoped key.
template <typename T, typename Write>
Result<T> WriteWatcherRows(engine::SideTableHost* host, const std::string& watcher, Write write) {
  auto w = CanonicalWatcher(watcher);
  if (!w.ok()) return w.status();
  T out;
  Status st = host->WriteInGroup([&](GroupWrite& g) { return write(g, *w, &out); });
  if (!st.ok()) return st;
  return out;
}

}  // namespace

Result<WatcherListing> WatcherDirectory::Register(const std::string& watcher, uint32_t partition) {
  return WriteWatcherRows<WatcherListing>(
      host_, watcher, [&](GroupWrite& g, const std::string& w, WatcherListing* out) -> Status {
        auto row = ReadRow<WatcherListing>(g, kListingTag, w, DecodeWatcherListing);
        if (!row.ok()) return row.status();
        *out = row->value_or(WatcherListing{});
        out->watcher = w;
        Insert(&out->partitions, partition);
        ++out->version;
        g.Put(Family::kSessions, RowKey(kListingTag, w), EncodeWatcherListing(*out));
        return Status::OK();
      });
}

Result<WatcherListing> WatcherDirectory::Lookup(const std::string& watcher) const {
  auto w = CanonicalWatcher(watcher);
  if (!w.ok()) return w.status();
  auto stored = host_->store().Get(Family::kSessions, RowKey(kListingTag, *w));
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return WatcherListing{*w, {}, 0};
  return DecodeWatcherListing(**stored);
}

Result<WatcherSaga> WatcherDirectory::BeginSaga(const std::string& watcher, WatcherSagaKind kind,
                                                uint32_t home) {
  return WriteWatcherRows<WatcherSaga>(
      host_, watcher, [&](GroupWrite& g, const std::string& w, WatcherSaga* out) -> Status {
        auto listing = ReadRow<WatcherListing>(g, kListingTag, w, DecodeWatcherListing);
        if (!listing.ok()) return listing.status();
        auto saga = ReadRow<WatcherSaga>(g, kSagaTag, w, DecodeWatcherSaga);
        if (!saga.ok()) return saga.status();
        if (saga->has_value()) {
          *out = **saga;
          if (kind == WatcherSagaKind::kDelete) out->kind = kind;
        } else {
          *out = WatcherSaga{w, kind, {}, g.now()};
        }
        WatcherListing l = listing->value_or(WatcherListing{w, {}, 0});
        Insert(&out->partitions, home);
        for (uint32_t p : l.partitions) Insert(&out->partitions, p);
        // A new number for every saga begun or extended: the listing's version, which only
        // grows (the row is kept even when empty), so numbers never repeat for a watcher.
        out->number = ++l.version;
        g.Put(Family::kSessions, RowKey(kListingTag, w), EncodeWatcherListing(l));
        g.Put(Family::kSessions, RowKey(kSagaTag, w), EncodeWatcherSaga(*out));
        g.Put(Family::kSessions, RowKey(kClearFenceTag, w), EncodeClearFence(w, out->number));
        return Status::OK();
      });
}

Result<WatcherSaga> WatcherDirectory::Confirm(const std::string& watcher, uint32_t partition,
                                              uint64_t version_before) {
  return WriteWatcherRows<WatcherSaga>(
      host_, watcher, [&](GroupWrite& g, const std::string& w, WatcherSaga* out) -> Status {
        auto saga = ReadRow<WatcherSaga>(g, kSagaTag, w, DecodeWatcherSaga);
        if (!saga.ok()) return saga.status();
        *out = saga->value_or(WatcherSaga{w, WatcherSagaKind::kReset, {}, 0});
        if (saga->has_value()) {
          Erase(&out->partitions, partition);
          if (out->partitions.empty()) {
            g.Delete(Family::kSessions, RowKey(kSagaTag, w));
          } else {
            g.Put(Family::kSessions, RowKey(kSagaTag, w), EncodeWatcherSaga(*out));
          }
        }
        auto listing = ReadRow<WatcherListing>(g, kListingTag, w, DecodeWatcherListing);
        if (!listing.ok()) return listing.status();
        // A registration since the removal was asked may have a cursor behind it: keep it.
        if (listing->has_value() && (*listing)->version == version_before) {
          WatcherListing l = **listing;
          Erase(&l.partitions, partition);
          // Kept even when empty: the version lives on, so that a removal read before a later
          // registration never matches the row that registration writes.
          g.Put(Family::kSessions, RowKey(kListingTag, w), EncodeWatcherListing(l));
        }
        return Status::OK();
      });
}

Result<std::vector<WatcherSaga>> WatcherDirectory::Sagas() const {
  return engine::ListDecoded<WatcherSaga>(host_->store(), Family::kSessions, kSagaTag,
                                          DecodeWatcherSaga);
}

Result<std::optional<WatcherSaga>> WatcherDirectory::SagaOf(const std::string& watcher) const {
  auto w = CanonicalWatcher(watcher);
  if (!w.ok()) return w.status();
  return engine::ReadDecoded<WatcherSaga>(host_->store(), Family::kSessions,
                                          RowKey(kSagaTag, *w), DecodeWatcherSaga);
}

Result<uint64_t> WatcherDirectory::ClearedThrough(const std::string& watcher) const {
  auto w = CanonicalWatcher(watcher);
  if (!w.ok()) return w.status();
  auto fence = engine::ReadDecoded<uint64_t>(host_->store(), Family::kSessions,
                                             RowKey(kClearFenceTag, *w), DecodeClearFence);
  if (!fence.ok()) return fence.status();
  return fence->value_or(0);
}

Result<bool> WatcherDirectory::ClearedSince(const std::string& watcher,
                                           uint64_t listing_version) const {
  if (listing_version == 0 || !CanonicalWatcher(watcher).ok()) return false;
  auto fence = ClearedThrough(watcher);
  if (!fence.ok()) return fence.status();
  return *fence > listing_version;
}

Status WatcherDirectory::MarkCleared(const std::string& watcher, uint64_t saga) {
  return WriteWatcherRows<uint64_t>(
             host_, watcher,
             [&](GroupWrite& g, const std::string& w, uint64_t* out) -> Status {
               auto fence = ReadRow<uint64_t>(g, kClearFenceTag, w, DecodeClearFence);
               if (!fence.ok()) return fence.status();
               *out = std::max(fence->value_or(0), saga);
               if (*out != fence->value_or(0)) {
                 g.Put(Family::kSessions, RowKey(kClearFenceTag, w), EncodeClearFence(w, *out));
               }
               return Status::OK();
             })
      .status();
}

}  // namespace statewatch
