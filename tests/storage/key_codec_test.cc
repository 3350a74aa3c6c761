// The key codec: byte-wise order equals numeric order; decoders reject other shapes.
#include <gtest/gtest.h>

#include "storage/key_codec.h"

namespace statewatch::storage {
namespace {

TEST(KeyCodecTest, BigEndianKeysSortNumerically) {
  EXPECT_LT(JournalKey(SessionRef{1}, 255), JournalKey(SessionRef{1}, 256));
  EXPECT_LT(JournalKey(SessionRef{1}, UINT64_MAX), JournalKey(SessionRef{2}, 0));
  EXPECT_LT(LogKey(9), LogKey(10));
  // Cursor keys lead with the target.
  EXPECT_LT(CursorKey(SessionRef{300}, SessionRef{1}), CursorKey(SessionRef{1}, SessionRef{2}));
}

TEST(KeyCodecTest, RoundTrips) {
  auto j = ParseJournalKey(JournalKey(SessionRef{7}, 42));
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->session, SessionRef{7});
  EXPECT_EQ(j->sequence, 42u);
  EXPECT_EQ(ParseSequenceKey(kLogTag, LogKey(99)), 99u);
  EXPECT_FALSE(ParseSequenceKey(kBySeqTag, LogKey(99)).has_value());
  auto c = ParseCursorKey(CursorKey(SessionRef{3}, SessionRef{4}));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->watcher, SessionRef{3});
  EXPECT_EQ(c->target, SessionRef{4});
  EXPECT_FALSE(ParseJournalKey("J123").has_value());
  EXPECT_EQ(ParseSessionKeyed(kHeadTag, HeadKey(SessionRef{5})), SessionRef{5});
}

TEST(KeyCodecTest, NameKeysSeparateAgentAndKey) {
  EXPECT_NE(NameKey("ab", "c"), NameKey("a", "bc"));
}

}  // namespace
}  // namespace statewatch::storage
