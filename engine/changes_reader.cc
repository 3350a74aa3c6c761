#include "engine/changes_reader.h"

#include <algorithm>
#include <cstring>

#include "engine/changes_view_rep.h"
#include "engine/records.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

namespace {

// Idle pooled iterators pin the files and memtables they last saw (until refreshed), so the
// pool keeps only about as many as there are concurrent readers.
constexpr std::size_t kMaxPooledIterators = 16;

}  // namespace

struct ChangesReader::Rows {
  Sequence earliest = 0;           // with find_earliest: the first retained row (0: none)
  std::vector<CachedRowPtr> rows;  // with the cache
  std::size_t count = 0;           // rows read (with or without the cache)
  Sequence last = 0;               // the last row read
};

ChangesReader::ChangesReader(const storage::Store& store, std::size_t cache_bytes)
    : store_(store), cache_(cache_bytes) {}

ChangesReader::~ChangesReader() = default;

ChangesReader::Lease::~Lease() {
  if (reader_ != nullptr && iter_ != nullptr) reader_->ReturnIterator(std::move(iter_));
}

std::unique_ptr<storage::Iterator> ChangesReader::TakeIterator() {
  std::unique_ptr<storage::Iterator> it;
  {
    std::lock_guard lock(pool_mu_);
    if (!pool_.empty()) {
      it = std::move(pool_.back());
      pool_.pop_back();
    }
  }
  if (it != nullptr && it->Refresh().ok()) return it;
  // A new iterator sees the latest state as well; it is unbounded so that it serves any
  // session (each read stops at its own session's head).
  return store_.NewIterator(storage::Family::kJournal);
}

void ChangesReader::ReturnIterator(std::unique_ptr<storage::Iterator> it) {
  std::lock_guard lock(pool_mu_);
  if (pool_.size() < kMaxPooledIterators) pool_.push_back(std::move(it));
}

Status ChangesReader::Begin(const Request& req, Lease* lease) {
  lease->reader_ = this;
  if (cache_.enabled()) {
    lease->generation_ = cache_.Generation(req.session);
    Sequence from = std::min(std::max(req.after, req.cap_mark), req.head);
    lease->found_run_ = cache_.Lookup(req.session, from, req.head,
                                      static_cast<std::size_t>(req.limit) + 1, &lease->hit_);
    if (lease->found_run_ && lease->hit_.complete) return Status::OK();
    // A run is extended only from its end. A page that starts a little above it extends it
    // across the gap, so that a tail read (the latest event, a live watcher's next page)
    // does not replace the run a lagging reader's page keeps hitting: with one run per
    // session, the two would evict each other on every read. Far above, or when the row-cap
    // mark lies in the gap (rows below it are gone while RocksDB may still hold them, and
    // the run's earliest row with them), it is read afresh.
    if (lease->found_run_ && from > lease->hit_.hi &&
        (from - lease->hit_.hi > RowCache::kMaxRunRows || req.cap_mark > lease->hit_.hi)) {
      lease->found_run_ = false;
    }
  }
  lease->iter_ = TakeIterator();
  return lease->iter_->status();
}

Status ChangesReader::ReadRows(const Request& req, storage::Iterator* it, Sequence from,
                               std::size_t want, bool find_earliest, ChangesViewAccess::Rep* rep,
                               Rows* out) {
  auto row_of = [&](Sequence* seq) {
    if (!it->Valid()) return false;
    auto key = storage::ParseJournalKey(it->key());
    if (!key || key->session != req.session || key->sequence > req.head) return false;
    *seq = key->sequence;
    return true;
  };
  Sequence seq = 0;
  bool positioned = false;
  if (find_earliest) {
    // Rows at or below the row-cap mark are gone even where compaction has not dropped them.
    it->Seek(storage::JournalKey(req.session, req.cap_mark + 1));
    if (row_of(&seq)) out->earliest = seq;
    positioned = out->earliest == 0 || out->earliest > from;
  }
  if (!positioned) it->Seek(storage::JournalKey(req.session, from + 1));
  for (; out->count < want && row_of(&seq); it->Next()) {
    std::string_view value = it->value();
    if (cache_.enabled()) {
      auto row = CachedRow::Decode(value);
      if (!row.ok()) return row.status();
      out->rows.push_back(std::move(*row));
    } else {
      // Copied into the page's arena, 8-byte aligned as FlatBuffers reads it; decoded once
      // the arena has stopped growing.
      std::size_t offset = rep->arena.size();
      rep->arena.resize(offset + (value.size() + 7) / 8);
      std::memcpy(rep->arena.data() + offset, value.data(), value.size());
      rep->arena_rows.emplace_back(offset, value.size());
    }
    out->last = seq;
    ++out->count;
  }
  return it->status();
}

Status ChangesReader::Finish(const Request& req, Lease* lease, RowRenderer render,
                             ChangesView* page) {
  ChangesViewAccess::Rep& rep = ChangesViewAccess::Of(*page);
  const std::size_t want = static_cast<std::size_t>(req.limit) + 1;
  const Sequence from = std::min(std::max(req.after, req.cap_mark), req.head);
  Sequence earliest = lease->hit_.earliest;
  PinnedRows pinned;               // from the cached run
  std::vector<CachedRowPtr> rows;  // read from RocksDB after them
  std::size_t count = 0;
  if (lease->found_run_) {
    pinned = std::move(lease->hit_.rows);
    rep.cached = count = pinned.size();
  }
  if (lease->iter_ != nullptr && lease->found_run_) {
    SW_RETURN_IF_ERROR(ExtendRun(req, lease, from, want - count, &rep, &rows, &earliest));
    count = std::min(pinned.size() + rows.size(), want);
  } else if (lease->iter_ != nullptr) {
    Rows read;
    SW_RETURN_IF_ERROR(ReadRows(req, lease->iter_.get(), from, want, true, &rep, &read));
    Sequence hi = read.count == want ? read.last : req.head;
    cache_.Fill(req.session, lease->generation_, read.earliest, from, hi, read.rows,
                /*extends=*/false);
    earliest = read.earliest;
    rows = std::move(read.rows);
    count = read.count;
  }
  // A run filled by a reader with a later head may know an earliest row above this head.
  if (earliest == 0 || earliest > req.head) earliest = req.head > 0 ? req.head + 1 : 0;
  page->earliest_available_sequence = earliest;
  page->truncated = count == want;
  SW_RETURN_IF_ERROR(
      BuildEvents(std::min(count, want - 1), std::move(pinned), std::move(rows), &rep));
  if (render != nullptr) RenderEvents(req.session, render, &rep);
  return Status::OK();
}

Status ChangesReader::ExtendRun(const Request& req, Lease* lease, Sequence from,
                                std::size_t want, ChangesViewAccess::Rep* rep,
                                std::vector<CachedRowPtr>* rows, Sequence* earliest) {
  // Through the rows between the run's end and the page's start when the page starts above
  // it (the run then holds no row of the page): they are cached but not in the page.
  const Sequence gap = from > lease->hit_.hi ? from - lease->hit_.hi : 0;
  const std::size_t limit = gap + want;
  Rows more;
  SW_RETURN_IF_ERROR(
      ReadRows(req, lease->iter_.get(), lease->hit_.hi, limit, false, rep, &more));
  Sequence hi = more.count == limit ? more.last : req.head;
  cache_.Fill(req.session, lease->generation_, 0, lease->hit_.hi, hi, more.rows,
              /*extends=*/true);
  if (*earliest == 0 && !more.rows.empty()) *earliest = more.rows.front()->view().sequence;
  auto first = std::lower_bound(
      more.rows.begin(), more.rows.end(), from + 1,
      [](const CachedRowPtr& row, Sequence seq) { return row->view().sequence < seq; });
  rows->assign(first, more.rows.end());
  return Status::OK();
}

Status ChangesReader::BuildEvents(std::size_t n, PinnedRows pinned,
                                  std::vector<CachedRowPtr> rows, ChangesViewAccess::Rep* rep) {
  rep->events.resize(n);
  if (!rep->arena_rows.empty()) {
    const char* base = reinterpret_cast<const char*>(rep->arena.data());
    for (std::size_t i = 0; i < n; ++i) {
      auto [offset, size] = rep->arena_rows[i];
      std::string_view bytes(base + offset * sizeof(uint64_t), size);
      SW_RETURN_IF_ERROR(DecodeEventView(bytes, &rep->events[i]));
    }
    return Status::OK();
  }
  pinned.Truncate(std::min(pinned.size(), n));
  if (rows.size() > n - pinned.size()) rows.resize(n - pinned.size());
  rep->pinned = std::move(pinned);
  rep->rows = std::move(rows);
  for (std::size_t i = 0; i < n; ++i) rep->events[i] = rep->Row(i)->view();
  rep->cached = std::min(rep->cached, n);
  return Status::OK();
}

void ChangesReader::RenderEvents(SessionRef session, RowRenderer render,
                                 ChangesViewAccess::Rep* rep) {
  const std::size_t n = rep->events.size();
  rep->renderings.assign(n, std::string_view());
  // Renderings the page keeps itself: (event, offset, size) into rep->rendered, turned into
  // views once it has stopped growing.
  std::vector<std::pair<std::size_t, std::pair<std::size_t, std::size_t>>> own;
  std::string scratch;
  for (std::size_t i = 0; i < n; ++i) {
    const CachedRow* row = rep->Row(i);
    if (row != nullptr) {
      if (const std::string* r = row->Rendering(render)) {
        rep->renderings[i] = *r;
        continue;
      }
      scratch.clear();
      render(rep->events[i], &scratch);
      cache_.Memoize(session, rep->RowPtr(i), render, std::move(scratch));
      if (const std::string* r = row->Rendering(render)) {
        rep->renderings[i] = *r;
        continue;
      }
    }
    std::size_t offset = rep->rendered.size();
    scratch.clear();
    render(rep->events[i], &scratch);
    rep->rendered += scratch;
    own.push_back({i, {offset, scratch.size()}});
  }
  for (const auto& [i, span] : own) {
    rep->renderings[i] = std::string_view(rep->rendered).substr(span.first, span.second);
  }
}

}  // namespace statewatch::engine
