// RowCache (engine/row_cache.h): runs per session, bounded bytes, LRU eviction, and the
// generation that keeps a run read before a deletion from being stored after it.
#include "engine/row_cache.h"

#include <gtest/gtest.h>

#include "engine/records.h"
#include "status_matchers.h"

namespace statewatch::engine {
namespace {

CachedRowPtr Row(Sequence seq, std::size_t summary_bytes = 40) {
  Event e;
  e.sequence = seq;
  e.session_key = "agent:main:subagent:cache";
  e.agent_id = "main";
  e.kind = "human_direct_message";
  e.actor_type = ActorType::kHuman;
  e.summary = std::string(summary_bytes, 's');
  auto row = CachedRow::Decode(EncodeEvent(e));
  EXPECT_OK(row);
  return *row;
}

std::vector<CachedRowPtr> Rows(Sequence first, Sequence last, Sequence step = 1) {
  std::vector<CachedRowPtr> rows;
  for (Sequence s = first; s <= last; s += step) rows.push_back(Row(s));
  return rows;
}

std::vector<Sequence> Seqs(const RowCache::Hit& hit) {
  std::vector<Sequence> out;
  for (const auto& r : hit.rows) out.push_back(r->view().sequence);
  return out;
}

constexpr SessionRef kS{7};
constexpr SessionRef kT{8};

TEST(RowCacheTest, DecodedRowViewsItsOwnBytes) {
  CachedRowPtr row = Row(42, 100);
  EXPECT_EQ(row->view().sequence, 42u);
  EXPECT_EQ(row->view().summary, std::string(100, 's'));
  EXPECT_EQ(row->view().kind, "human_direct_message");
  EXPECT_GT(row->charge(), 100u);
}

TEST(RowCacheTest, DisabledCacheKeepsNothing) {
  RowCache cache(0);
  EXPECT_FALSE(cache.enabled());
  cache.Fill(kS, cache.Generation(kS), 1, 0, 10, Rows(1, 10), false);
  RowCache::Hit hit;
  EXPECT_FALSE(cache.Lookup(kS, 0, 10, 201, &hit));
  EXPECT_EQ(cache.stats().bytes, 0u);
}

TEST(RowCacheTest, LookupServesTheRunSliceUpToHeadAndWant) {
  RowCache cache(1 << 20);
  cache.Fill(kS, cache.Generation(kS), 2, 0, 20, Rows(2, 20, 2), false);  // 2, 4, ..., 20
  RowCache::Hit hit;
  ASSERT_TRUE(cache.Lookup(kS, 5, 20, 3, &hit));
  EXPECT_EQ(Seqs(hit), (std::vector<Sequence>{6, 8, 10}));
  EXPECT_TRUE(hit.complete);  // `want` rows
  EXPECT_EQ(hit.earliest, 2u);
  ASSERT_TRUE(cache.Lookup(kS, 14, 17, 10, &hit));
  EXPECT_EQ(Seqs(hit), (std::vector<Sequence>{16}));  // never above the reader's head
  EXPECT_TRUE(hit.complete);                          // the run reaches the head
  ASSERT_TRUE(cache.Lookup(kS, 14, 30, 10, &hit));    // the head moved on: rows 21..30 unknown
  EXPECT_EQ(Seqs(hit), (std::vector<Sequence>{16, 18, 20}));
  EXPECT_FALSE(hit.complete);
  EXPECT_EQ(hit.hi, 20u);
}

TEST(RowCacheTest, RunStartingAboveThePageIsAMiss) {
  RowCache cache(1 << 20);
  cache.Fill(kS, cache.Generation(kS), 1, 10, 20, Rows(11, 20), false);
  RowCache::Hit hit;
  EXPECT_FALSE(cache.Lookup(kS, 9, 20, 5, &hit));
  EXPECT_TRUE(cache.Lookup(kS, 10, 20, 5, &hit));
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.stats().hits, 1u);
}

TEST(RowCacheTest, ExtendAppendsOnlyToTheRunEndingThere) {
  RowCache cache(1 << 20);
  cache.Fill(kS, cache.Generation(kS), 1, 0, 10, Rows(1, 10), false);
  cache.Fill(kS, cache.Generation(kS), 0, 12, 15, Rows(13, 15), /*extends=*/true);  // gap
  RowCache::Hit hit;
  ASSERT_TRUE(cache.Lookup(kS, 0, 15, 100, &hit));
  EXPECT_EQ(hit.hi, 10u);
  cache.Fill(kS, cache.Generation(kS), 0, 10, 15, Rows(11, 15), /*extends=*/true);
  ASSERT_TRUE(cache.Lookup(kS, 0, 15, 100, &hit));
  EXPECT_EQ(hit.hi, 15u);
  EXPECT_EQ(hit.rows.size(), 15u);
  EXPECT_TRUE(hit.complete);
}

TEST(RowCacheTest, ExtendingAnEmptyRunSetsTheEarliestRow) {
  RowCache cache(1 << 20);
  cache.Fill(kS, cache.Generation(kS), 0, 0, 5, {}, false);  // no rows retained up to 5
  cache.Fill(kS, cache.Generation(kS), 0, 5, 9, Rows(8, 9), true);
  RowCache::Hit hit;
  ASSERT_TRUE(cache.Lookup(kS, 0, 9, 10, &hit));
  EXPECT_EQ(hit.earliest, 8u);
}

TEST(RowCacheTest, ForgetDropsTheRunAndRefusesFillsReadBeforeIt) {
  RowCache cache(1 << 20);
  uint64_t before = cache.Generation(kS);
  cache.Fill(kS, before, 1, 0, 10, Rows(1, 10), false);
  cache.Forget(kS);  // a deletion of one of kS's rows
  RowCache::Hit hit;
  EXPECT_FALSE(cache.Lookup(kS, 0, 10, 5, &hit));
  // A reader whose snapshot predates the deletion must not store what it read.
  cache.Fill(kS, before, 1, 0, 10, Rows(1, 10), false);
  EXPECT_FALSE(cache.Lookup(kS, 0, 10, 5, &hit));
  EXPECT_EQ(cache.stats().bytes, 0u);
  cache.Fill(kS, cache.Generation(kS), 2, 0, 10, Rows(2, 10), false);
  EXPECT_TRUE(cache.Lookup(kS, 0, 10, 5, &hit));
  EXPECT_EQ(hit.earliest, 2u);
}

TEST(RowCacheTest, ForgetLeavesOtherSessionsAlone) {
  RowCache cache(1 << 20);
  cache.Fill(kS, cache.Generation(kS), 1, 0, 10, Rows(1, 10), false);
  cache.Fill(kT, cache.Generation(kT), 11, 0, 20, Rows(11, 20), false);
  cache.Forget(kS);
  RowCache::Hit hit;
  EXPECT_FALSE(cache.Lookup(kS, 0, 10, 5, &hit));
  EXPECT_TRUE(cache.Lookup(kT, 0, 20, 5, &hit));
}

TEST(RowCacheTest, BytesStayBoundedAndTheLeastRecentlyUsedRunGoesFirst) {
  // Every session lands in its own shard's budget: sessions 16 apart share a shard.
  const std::size_t capacity = 16 * 20000;
  RowCache cache(capacity);
  const std::size_t per_run = Row(1)->charge() * 10;
  ASSERT_LT(per_run * 2, capacity / 16);
  std::size_t runs_per_shard = (capacity / 16) / per_run;
  auto ref = [](uint64_t i) { return SessionRef{16 * i + 1}; };
  for (uint64_t i = 0; i < runs_per_shard; ++i) {
    cache.Fill(ref(i), cache.Generation(ref(i)), 1, 0, 10, Rows(1, 10), false);
  }
  RowCache::Hit hit;
  ASSERT_TRUE(cache.Lookup(ref(0), 0, 10, 1, &hit));  // the oldest becomes the newest
  EXPECT_EQ(cache.stats().evictions, 0u);
  cache.Fill(ref(runs_per_shard), cache.Generation(ref(runs_per_shard)), 1, 0, 10, Rows(1, 10),
             false);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_TRUE(cache.Lookup(ref(0), 0, 10, 1, &hit));
  EXPECT_FALSE(cache.Lookup(ref(1), 0, 10, 1, &hit));  // least recently used: evicted
  // Many more runs than fit: the charged bytes never pass the capacity.
  for (uint64_t i = 0; i < 500; ++i) {
    cache.Fill(SessionRef{1000 + i}, cache.Generation(SessionRef{1000 + i}), 1, 0, 40, Rows(1, 40),
               false);
    ASSERT_LE(cache.stats().bytes, capacity);
  }
}

TEST(RowCacheTest, RunLongerThanItsCapKeepsItsNewestRows) {
  RowCache cache(64 << 20);
  Sequence last = RowCache::kMaxRunRows + 100;
  cache.Fill(kS, cache.Generation(kS), 1, 0, last, Rows(1, last), false);
  RowCache::Hit hit;
  EXPECT_FALSE(cache.Lookup(kS, 0, last, 10, &hit));  // the oldest rows are gone
  ASSERT_TRUE(cache.Lookup(kS, 100, last, 10, &hit));
  EXPECT_EQ(hit.rows.front()->view().sequence, 101u);
  EXPECT_EQ(hit.earliest, 1u);  // the session's earliest row is still known
}

void RenderSummary(const EventView& e, std::string* out) {
  *out = "<" + std::string(e.summary) + ">";
}
void RenderKind(const EventView& e, std::string* out) { *out = std::string(e.kind); }

TEST(RowCacheTest, MemoizedRenderingIsChargedOnceAndKeptPerRenderer) {
  RowCache cache(1 << 20);
  auto rows = Rows(1, 3);
  cache.Fill(kS, cache.Generation(kS), 1, 0, 3, rows, false);
  std::size_t before = cache.stats().bytes;
  cache.Memoize(kS, rows[0], &RenderSummary, "<first>");
  std::size_t after = cache.stats().bytes;
  EXPECT_GT(after, before);
  cache.Memoize(kS, rows[0], &RenderSummary, "<second>");  // the first one wins
  EXPECT_EQ(cache.stats().bytes, after);
  ASSERT_NE(rows[0]->Rendering(&RenderSummary), nullptr);
  EXPECT_EQ(*rows[0]->Rendering(&RenderSummary), "<first>");
  EXPECT_EQ(rows[0]->Rendering(&RenderKind), nullptr);  // another renderer: not memoized
  cache.Forget(kS);
  EXPECT_EQ(cache.stats().bytes, 0u);  // the rendering left with its row
}

}  // namespace
}  // namespace statewatch::engine
