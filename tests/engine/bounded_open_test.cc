// Formats 3 and 4: the row indexes are persisted (engine/row_index.h), so an open reads no
// journal row it does not replay and memory holds nothing per row. These tests pin what the
// in-memory row index used to give — the row cap's order, dedupe, the age pass, exact counts —
// across reopens, the migrations from formats 2 and 3, and where a damaged row is now found;
// and format 4's runs: one by_seq key per commit group, rewritten when a row in it is deleted
// by key.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "engine/engine_fixture.h"
#include "engine/engine_impl.h"
#include "engine/records.h"
#include "engine/row_index.h"
#include "status_matchers.h"
#include "storage/key_codec.h"
#include "storage/store.h"

namespace statewatch::testing {
namespace {

using storage::Family;

constexpr int64_t kDayMs = 24LL * 3600 * 1000;

class BoundedOpenTest : public EngineTest {
 protected:
  EngineStats StatsNow() {
    auto s = engine_->Stats();
    EXPECT_OK(s);
    return s.ok() ? *s : EngineStats{};
  }
  void ExpectVerifyClean() {
    auto report = engine_->Verify();
    ASSERT_OK(report);
    std::string diffs;
    for (const auto& d : report->differences) diffs += d + "\n";
    EXPECT_TRUE(report->ok) << diffs;
  }
  Sequence RecDeduped(const std::string& key, const std::string& dedupe, bool* deduplicated) {
    EventInput in = Input(key, "created", ActorType::kSystem);
    in.dedupe_key = dedupe;
    auto r = engine_->Record(in);
    EXPECT_OK(r);
    if (!r.ok()) return 0;
    *deduplicated = r->deduplicated;
    return r->event.sequence;
  }
  engine::EngineImpl& Impl() { return dynamic_cast<engine::EngineImpl&>(*engine_); }
  // Records `inputs` in one call (one commit group); returns their sequences.
  std::vector<Sequence> RecMany(const std::vector<EventInput>& inputs) {
    auto r = engine_->RecordMany(inputs);
    EXPECT_OK(r);
    std::vector<Sequence> seqs;
    if (r.ok()) {
      for (const RecordResult& e : *r) seqs.push_back(e.event.sequence);
    }
    return seqs;
  }
  // 50 keyed events over three sessions, a checkpoint (the meta record) after the 30th, so
  // that a migrating open replays the rest; returns their sequences.
  std::vector<Sequence> RecordFiftyKeyedAroundACheckpoint() {
    std::vector<Sequence> seqs;
    bool dup = false;
    for (int i = 0; i < 50; ++i) {
      if (i == 30) EXPECT_OK(engine_->Rebuild());
      seqs.push_back(
          RecDeduped("agent:main:s" + std::to_string(i % 3), "d" + std::to_string(i), &dup));
    }
    return seqs;
  }
  // Turns the closed database into one an older build wrote: `edit` changes its keys in one
  // batch with the meta record's format set to `format`.
  void RewriteAsFormat(uint32_t format,
                       const std::function<void(storage::Store&, storage::Batch&)>& edit) {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    storage::Batch b(*store);
    edit(*store, b);
    auto stored = store->Get(Family::kMeta, storage::MetaKey());
    ASSERT_OK(stored);
    ASSERT_TRUE(stored->has_value());
    auto meta = engine::DecodeMeta(**stored);
    ASSERT_OK(meta);
    meta->format_version = format;
    b.Put(Family::kMeta, storage::MetaKey(), engine::EncodeMeta(*meta));
    ASSERT_OK(store->Write(b, /*sync=*/true));
  }
  Result<std::unique_ptr<Engine>> OpenReadOnly() {
    EngineOptions ro = options_;
    ro.read_only = true;
    return Engine::Open(ro, dir_);
  }
  // A read-only open refuses the database, naming its format.
  void ExpectReadOnlyOpenRefused(uint32_t format) {
    auto reader = OpenReadOnly();
    ASSERT_EQ(reader.status().code(), Status::Code::kFailedPrecondition);
    EXPECT_NE(reader.status().message().find("format " + std::to_string(format)),
              std::string::npos)
        << reader.status().ToString();
  }
  // The number of keys under `tag` in `family`, the engine reopened afterwards.
  std::size_t CountKeys(Family family, char tag) {
    std::size_t n = 0;
    {
      auto store = OpenStore();
      if (store) n = KeysOf(*store, family, tag).size();
    }
    Reopen();
    return n;
  }

  // The database through the engine's own store, the engine closed.
  std::unique_ptr<storage::Store> OpenStore() {
    engine_.reset();
    storage::StoreOptions so;
    so.create_if_missing = false;
    auto store = storage::Store::Open(dir_, so);
    EXPECT_OK(store);
    return store.ok() ? std::move(*store) : nullptr;
  }
  // Every key of `family` under `tag`.
  static std::vector<std::string> KeysOf(storage::Store& store, Family family, char tag) {
    std::vector<std::string> keys;
    auto it = store.NewIterator(family, std::string(1, tag), std::string(1, tag + 1));
    for (it->SeekToFirst(); it->Valid(); it->Next()) keys.emplace_back(it->key());
    EXPECT_OK(it->status());
    return keys;
  }
};

TEST_F(BoundedOpenTest, TheRowCapKeepsExactlyMaxRowsAcrossReopensWithABoundedReadAhead) {
  options_.max_rows = 100;
  Reopen();
  std::vector<Sequence> s9;
  for (int i = 0; i < 3000; ++i) {
    Sequence seq =
        Rec(Input("agent:main:s" + std::to_string(i % 10), "created", ActorType::kSystem));
    if (i % 10 == 9) s9.push_back(seq);
    if (i % 700 == 699) Reopen();
  }
  EXPECT_EQ(StatsNow().journal_rows, 100u);
  EXPECT_LE(Impl().TEST_CapFrontSize(), 1024u);
  // The newest 100 rows survive: session s9's last ten events.
  auto page = engine_->ChangesSince(Name("agent:main:s9"), 0, 100);
  ASSERT_OK(page);
  ASSERT_EQ(page->events.size(), 10u);
  EXPECT_EQ(page->events.front().sequence, s9[s9.size() - 10]);
  EXPECT_TRUE(page->history_gap);
  ExpectVerifyClean();
  Reopen();
  EXPECT_EQ(StatsNow().journal_rows, 100u);
  ExpectVerifyClean();
}

TEST_F(BoundedOpenTest, DedupeHoldsAcrossReopenAndForgetsARowTheCapRemoved) {
  options_.max_rows = 50;
  Reopen();
  bool dup = false;
  Sequence first = RecDeduped("agent:main:a", "k0", &dup);
  EXPECT_FALSE(dup);
  Reopen();
  EXPECT_EQ(RecDeduped("agent:main:b", "k0", &dup), first);
  EXPECT_TRUE(dup);
  for (int i = 0; i < 60; ++i) Human("agent:main:c");  // k0's row goes with the cap
  Reopen();
  Sequence again = RecDeduped("agent:main:a", "k0", &dup);
  EXPECT_FALSE(dup);
  EXPECT_GT(again, first);
  EXPECT_EQ(RecDeduped("agent:main:a", "k0", &dup), again);
  EXPECT_TRUE(dup);
  ExpectVerifyClean();
}

// occurredAt is clamped to [now - 24 h, now], which is what lets the age pass stop reading
// by_seq a day past the cutoff: backdated rows at the edge of that window still go.
TEST_F(BoundedOpenTest, TheAgePassDeletesExactlyTheAgedRowsAcrossReopens) {
  options_.retention_ms = 30 * kDayMs;
  Reopen();
  for (int i = 0; i < 10; ++i) Human("agent:main:old");  // day 0
  ASSERT_TRUE(clock_->Set(kStart + 11 * kDayMs));
  for (int i = 0; i < 10; ++i) {  // day 11, backdated almost a day: occurred day 10 + 1 h
    EventInput in = Input("agent:main:edge", "human_direct_message");
    in.occurred_at_ms = kStart + 10 * kDayMs + 3600 * 1000;
    Rec(in);
  }
  ASSERT_TRUE(clock_->Set(kStart + 40 * kDayMs));
  for (int i = 0; i < 10; ++i) Human("agent:main:new");  // day 40
  Reopen();                                              // prunes at open: the cutoff is day 10
  EXPECT_EQ(StatsNow().journal_rows, 20u);
  auto old = engine_->ChangesSince(Name("agent:main:old"), 0, 100);
  ASSERT_OK(old);
  EXPECT_TRUE(old->events.empty());
  EXPECT_TRUE(old->history_gap);
  ASSERT_TRUE(clock_->Set(kStart + 41 * kDayMs + 3600 * 1000 + 1));  // cutoff past day 11 + 1 ms
  auto pruned = engine_->Prune();
  ASSERT_OK(pruned);
  EXPECT_EQ(pruned->rows_deleted, 10u);
  EXPECT_EQ(StatsNow().journal_rows, 10u);
  ExpectVerifyClean();
  Reopen();
  EXPECT_EQ(StatsNow().journal_rows, 10u);
  ExpectVerifyClean();
}

TEST_F(BoundedOpenTest, DeletingASessionDeletesItsIndexEntries) {
  bool dup = false;
  Sequence a = RecDeduped("agent:main:a", "ka", &dup);
  RecDeduped("agent:main:b", "kb", &dup);
  ASSERT_OK(engine_->DeleteSession(Name("agent:main:a")));
  EXPECT_EQ(StatsNow().journal_rows, 1u);
  ExpectVerifyClean();
  Reopen();
  EXPECT_GT(RecDeduped("agent:main:a", "ka", &dup), a);
  EXPECT_FALSE(dup);
  EXPECT_EQ(StatsNow().journal_rows, 2u);
  ExpectVerifyClean();
}

// Regression (format 2): every open walked the whole journal, so one damaged row anywhere
// made the database unopenable; now the open reads only what it replays.
TEST_F(BoundedOpenTest, ADamagedRowTheOpenDoesNotReplayIsFoundByVerifyAndByReads) {
  options_.checkpoint_min_records = 1;  // every row is covered by a checkpoint
  Reopen();
  for (int i = 0; i < 5; ++i) Human("agent:main:a");
  Human("agent:main:b");
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto keys = KeysOf(*store, Family::kJournal, storage::kJournalTag);
    ASSERT_EQ(keys.size(), 6u);
    storage::Batch b(*store);
    b.Put(Family::kJournal, keys[2], "not a flatbuffer");  // session a's third row
    ASSERT_OK(store->Write(b, /*sync=*/true));
  }
  Reopen();
  auto page = engine_->ChangesSince(Name("agent:main:a"), 0, 100);
  EXPECT_EQ(page.status().code(), Status::Code::kCorruption) << page.status().ToString();
  auto other = engine_->ChangesSince(Name("agent:main:b"), 0, 100);
  EXPECT_OK(other);
  auto report = engine_->Verify();
  EXPECT_EQ(report.status().code(), Status::Code::kCorruption) << report.status().ToString();
}

TEST_F(BoundedOpenTest, AMissingIndexEntryIsAVerifyDifference) {
  for (int i = 0; i < 4; ++i) Human("agent:main:a");
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    storage::Batch b(*store);
    b.Delete(Family::kBySeq, storage::BySeqKey(2));
    ASSERT_OK(store->Write(b, /*sync=*/true));
  }
  Reopen();
  auto report = engine_->Verify();
  ASSERT_OK(report);
  EXPECT_FALSE(report->ok);
  ASSERT_FALSE(report->differences.empty());
  EXPECT_NE(report->differences.front().find("the by_seq index holds 3 rows but the journal 4"),
            std::string::npos)
      << report->differences.front();
}

// A format-2 database (no row indexes, no per-group row counts) is indexed once at its first
// writable open; a read-only open refuses it and changes nothing.
TEST_F(BoundedOpenTest, AFormat2DatabaseIsIndexedAtItsFirstWritableOpen) {
  options_.max_rows = 40;
  Reopen();
  bool dup = false;
  std::vector<Sequence> seqs = RecordFiftyKeyedAroundACheckpoint();
  RewriteAsFormat(2, [](storage::Store& store, storage::Batch& b) {
    for (const auto& k : KeysOf(store, Family::kBySeq, storage::kBySeqTag)) {
      b.Delete(Family::kBySeq, k);
    }
    for (const auto& k : KeysOf(store, Family::kDedupe, storage::kDedupeTag)) {
      b.Delete(Family::kDedupe, k);
    }
  });
  ExpectReadOnlyOpenRefused(2);
  Reopen();
  EXPECT_EQ(StatsNow().journal_rows, 40u);
  ExpectVerifyClean();
  EXPECT_EQ(RecDeduped("agent:main:s0", "d45", &dup), seqs[45]);  // retained: deduplicated
  EXPECT_TRUE(dup);
  RecDeduped("agent:main:s0", "d1", &dup);  // pruned by the cap: recorded anew
  EXPECT_FALSE(dup);
  EXPECT_EQ(StatsNow().journal_rows, 40u);
  Reopen();
  ExpectVerifyClean();
  auto read_only = OpenReadOnly();
  EXPECT_OK(read_only);
}

// ---- format 4: runs ------------------------------------------------------------------------

TEST(RowRunCodecTest, RoundTripsStridesStepsAndFlags) {
  std::vector<engine::IndexedRow> regular, irregular;
  for (int i = 0; i < 5; ++i) {
    regular.push_back({Sequence(10 + 3 * i), SessionRef{uint64_t(i % 2 + 1)}, 1000 - i, i == 2,
                       i == 4});
    irregular.push_back({Sequence(7 + i * i), SessionRef{9}, 5000 + 100 * i, false, i == 0});
  }
  for (const auto& members : {regular, irregular}) {
    std::vector<engine::IndexedRow> decoded;
    ASSERT_OK(engine::DecodeRowRun(members.front().sequence, engine::EncodeRowRun(members),
                                   &decoded));
    ASSERT_EQ(decoded.size(), members.size());
    for (std::size_t i = 0; i < members.size(); ++i) {
      EXPECT_EQ(decoded[i].sequence, members[i].sequence) << i;
      EXPECT_EQ(decoded[i].session.value, members[i].session.value) << i;
      EXPECT_EQ(decoded[i].occurred_at, members[i].occurred_at) << i;
      EXPECT_EQ(decoded[i].keyed, members[i].keyed) << i;
      EXPECT_EQ(decoded[i].removed, members[i].removed) << i;
    }
  }
  std::vector<engine::IndexedRow> decoded;
  EXPECT_EQ(engine::DecodeRowRun(10, "not a flatbuffer", &decoded).code(),
            Status::Code::kCorruption);
  EXPECT_EQ(engine::DecodeRowRunEntry("S123", engine::EncodeRowRun(regular), &decoded).code(),
            Status::Code::kCorruption);
}

TEST(RowRunCodecTest, TheWriterSplitsWhereAMemberDoesNotFit) {
  engine::RowRunWriter writer;
  const int64_t far = int64_t{1} << 32;  // beyond a 32-bit time offset
  for (std::size_t i = 0; i < engine::kMaxRunMembers + 2; ++i) {
    writer.Add(Sequence(1 + i), SessionRef{1}, i == engine::kMaxRunMembers + 1 ? far : 0, false);
  }
  std::vector<std::pair<Sequence, std::size_t>> runs;  // first sequence, members
  writer.Emit([&](Sequence first, std::string_view value) {
    std::vector<engine::IndexedRow> decoded;
    EXPECT_OK(engine::DecodeRowRun(first, value, &decoded));
    runs.emplace_back(first, decoded.size());
  });
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0], std::make_pair(Sequence(1), engine::kMaxRunMembers));
  EXPECT_EQ(runs[1], std::make_pair(Sequence(1 + engine::kMaxRunMembers), std::size_t{1}));
  EXPECT_EQ(runs[2], std::make_pair(Sequence(2 + engine::kMaxRunMembers), std::size_t{1}));
}

TEST_F(BoundedOpenTest, ABatchIsOneRunAndDeletingItsSessionsRewritesThenDeletesIt) {
  std::vector<EventInput> batch;
  for (int i = 0; i < 100; ++i) {
    EventInput in = Input(i % 2 ? "agent:main:b" : "agent:main:a", "created", ActorType::kSystem);
    if (i % 10 == 0) in.dedupe_key = "k" + std::to_string(i);
    batch.push_back(in);
  }
  RecMany(batch);
  EXPECT_EQ(CountKeys(Family::kBySeq, storage::kBySeqTag), 1u);
  EXPECT_EQ(CountKeys(Family::kDedupe, storage::kDedupeTag), 10u);
  ExpectVerifyClean();
  ASSERT_OK(engine_->DeleteSession(Name("agent:main:a")));  // every dedupe key was a's
  EXPECT_EQ(StatsNow().journal_rows, 50u);
  ExpectVerifyClean();
  EXPECT_EQ(CountKeys(Family::kBySeq, storage::kBySeqTag), 1u);  // b's half remains
  EXPECT_EQ(CountKeys(Family::kDedupe, storage::kDedupeTag), 0u);
  bool dup = true;
  RecDeduped("agent:main:c", "k0", &dup);
  EXPECT_FALSE(dup);
  ASSERT_OK(engine_->DeleteSession(Name("agent:main:b")));
  ExpectVerifyClean();
  EXPECT_EQ(CountKeys(Family::kBySeq, storage::kBySeqTag), 1u);  // c's run only
  EXPECT_EQ(StatsNow().journal_rows, 1u);
  ExpectVerifyClean();
}

TEST_F(BoundedOpenTest, TheAgePassDeletesPartOfARunAndTheRestStays) {
  options_.retention_ms = 30 * kDayMs;
  Reopen();
  std::vector<EventInput> batch;
  for (int i = 0; i < 10; ++i) {
    EventInput in = Input("agent:main:s" + std::to_string(i % 3), "created", ActorType::kSystem);
    in.dedupe_key = "d" + std::to_string(i);
    if (i % 2 == 0) in.occurred_at_ms = kStart - 20 * 3600 * 1000;  // backdated 20 h
    batch.push_back(in);
  }
  std::vector<Sequence> seqs = RecMany(batch);
  ASSERT_EQ(seqs.size(), 10u);
  ASSERT_TRUE(clock_->Set(kStart + 30 * kDayMs - 3600 * 1000));  // cutoff: 1 h before the batch
  auto pruned = engine_->Prune();
  ASSERT_OK(pruned);
  EXPECT_EQ(pruned->rows_deleted, 5u);
  EXPECT_EQ(StatsNow().journal_rows, 5u);
  ExpectVerifyClean();
  EXPECT_EQ(CountKeys(Family::kBySeq, storage::kBySeqTag), 1u);
  bool dup = false;
  EXPECT_GT(RecDeduped("agent:main:x", "d0", &dup), seqs.back());  // its row went: anew
  EXPECT_FALSE(dup);
  EXPECT_EQ(RecDeduped("agent:main:x", "d1", &dup), seqs[1]);  // retained
  EXPECT_TRUE(dup);
  ExpectVerifyClean();
}

// A row that does not decode is deleted all the same, and its dedupe entry with it (found in
// the dedupe index: the run holds only that the row has a key).
TEST_F(BoundedOpenTest, DeletingADamagedKeyedRowDeletesItsDedupeEntry) {
  bool dup = false;
  RecDeduped("agent:main:a", "ka", &dup);
  RecDeduped("agent:main:b", "kb", &dup);
  ASSERT_OK(engine_->Rebuild());  // a checkpoint: the reopen replays neither row
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto keys = KeysOf(*store, Family::kJournal, storage::kJournalTag);
    ASSERT_EQ(keys.size(), 2u);
    storage::Batch b(*store);
    b.Put(Family::kJournal, keys[0], "not a flatbuffer");  // session a's row
    ASSERT_OK(store->Write(b, /*sync=*/true));
  }
  Reopen();
  ASSERT_OK(engine_->DeleteSession(Name("agent:main:a")));
  EXPECT_EQ(CountKeys(Family::kDedupe, storage::kDedupeTag), 1u);
  RecDeduped("agent:main:c", "ka", &dup);
  EXPECT_FALSE(dup);
  ExpectVerifyClean();
}

// A format-3 database (an index entry per row) is reindexed as runs at its first writable
// open; a read-only open refuses it and changes nothing.
TEST_F(BoundedOpenTest, AFormat3DatabaseIsReindexedAtItsFirstWritableOpen) {
  options_.max_rows = 40;
  Reopen();
  bool dup = false;
  std::vector<Sequence> seqs = RecordFiftyKeyedAroundACheckpoint();
  RewriteAsFormat(3, [](storage::Store& store, storage::Batch& b) {
    for (const auto& k : KeysOf(store, Family::kBySeq, storage::kBySeqTag)) {
      b.Put(Family::kBySeq, k, "a format-3 RowIndex");  // never read: replaced whole
    }
  });
  ExpectReadOnlyOpenRefused(3);
  Reopen();
  EXPECT_EQ(StatsNow().journal_rows, 40u);
  ExpectVerifyClean();
  EXPECT_EQ(RecDeduped("agent:main:s0", "d45", &dup), seqs[45]);
  EXPECT_TRUE(dup);
  Human("agent:main:s1");  // the cap prunes the oldest migrated row
  EXPECT_EQ(StatsNow().journal_rows, 40u);
  ExpectVerifyClean();
  auto read_only = OpenReadOnly();
  EXPECT_OK(read_only);
}

}  // namespace
}  // namespace statewatch::testing
