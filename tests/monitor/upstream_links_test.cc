// Link creation and refresh (the daemon's POST /v1/upstream-links), the source hash and the
// dedupe keys.
#include "monitor/upstream_links.h"

#include <gtest/gtest.h>

#include "monitor_fixture.h"

namespace statewatch::testing {
namespace {

using monitor::CreateOrRefreshLink;

class UpstreamLinksTest : public MonitorTest {};

TEST_F(UpstreamLinksTest, SourceHashIsSha256OfHostThreadAndRefJoinedByNewlines) {
  UpstreamLink l;
  l.host_id = "host-1";
  l.thread_id = "thread-9";
  l.upstream_ref = "/tmp/x.jsonl";
  // printf '%s\n%s\n%s' host-1 thread-9 /tmp/x.jsonl | sha256sum | cut -c1-16
  EXPECT_EQ(monitor::SourceHash(l), "1fe50f3561a8a80f");
  l.thread_id = "thread-8";
  EXPECT_NE(monitor::SourceHash(l), "1fe50f3561a8a80f");
  EXPECT_EQ(monitor::SourceHash(l).size(), 16u);
}

TEST_F(UpstreamLinksTest, ANewLinkWithoutAMarkerStartsAtTheEnd) {
  std::string path = File("a.jsonl");
  AppendLine(path, UserLine("old"));
  UpstreamLink stored;
  ASSERT_TRUE(CreateOrRefreshLink(*engine_, Request(kSession, path), false, &stored).ok());
  EXPECT_EQ(stored.marker, SizeOf(path));
  EXPECT_EQ(stored.missing_count, 0u);
  EXPECT_EQ(stored.last_scanned_at_ms, kStart);
  auto link = LinkOf(kSession);
  ASSERT_TRUE(link.has_value());
  EXPECT_EQ(link->marker, SizeOf(path));
  EXPECT_EQ(link->catalog_id, kCatalog);
  EXPECT_EQ(link->session.session_key, kSession);
}

TEST_F(UpstreamLinksTest, ANewLinkWithAMarkerStartsThere) {
  std::string path = File("a.jsonl");
  AppendLine(path, UserLine("old"));
  Link(kSession, path, /*marker=*/0);
  EXPECT_EQ(MarkerOf(kSession), 0u);
  // A source that does not exist yet is accepted with an explicit marker...
  Link("agent:main:other", File("later.jsonl"), /*marker=*/0);
  // ...and refused without one: it has no end to start from.
  Status st = CreateOrRefreshLink(*engine_, Request("agent:main:x", File("none.jsonl")), false);
  EXPECT_EQ(st.code(), Status::Code::kNotFound);
  EXPECT_FALSE(LinkOf("agent:main:x").has_value());
}

TEST_F(UpstreamLinksTest, TheSameSourceKeepsItsMarkerAChangedSourceResetsIt) {
  std::string a = File("a.jsonl"), b = File("b.jsonl");
  AppendLine(a, UserLine("old"));
  AppendLine(b, UserLine("old in b, a longer line"));
  Link(kSession, a, /*marker=*/3);
  // Same source, even with a marker and another catalog label: the marker stays.
  UpstreamLink again = Request(kSession, a);
  again.catalog_id = "renamed";
  again.marker = 0;
  ASSERT_TRUE(CreateOrRefreshLink(*engine_, again, true).ok());
  EXPECT_EQ(MarkerOf(kSession), 3u);
  EXPECT_EQ(LinkOf(kSession)->catalog_id, "renamed");
  // Another file: the marker resets to the new file's end...
  Link(kSession, b);
  EXPECT_EQ(MarkerOf(kSession), SizeOf(b));
  // ...or to the given marker. Another thread of the same file is another source too.
  Link(kSession, a, /*marker=*/1);
  EXPECT_EQ(MarkerOf(kSession), 1u);
  UpstreamLink thread = Request(kSession, a);
  thread.thread_id = "another-thread";
  ASSERT_TRUE(CreateOrRefreshLink(*engine_, thread, false).ok());
  EXPECT_EQ(MarkerOf(kSession), SizeOf(a));
}

TEST_F(UpstreamLinksTest, ARefreshRestartsTheMissingCount) {
  std::string a = File("a.jsonl");
  AppendLine(a, UserLine("old"));
  Link(kSession, a);
  UpstreamLink l = *LinkOf(kSession);
  l.missing_count = 2;
  ASSERT_TRUE(engine_->PutUpstreamLink(l).ok());
  clock_->Advance(5000);
  Link(kSession, a);
  EXPECT_EQ(LinkOf(kSession)->missing_count, 0u);
  EXPECT_EQ(LinkOf(kSession)->last_scanned_at_ms, kStart + 5000);
}

TEST_F(UpstreamLinksTest, AKeptMarkerPastTheEndMovesToTheEnd) {
  std::string a = File("a.jsonl");
  AppendLine(a, UserLine("a long line that will be truncated away"));
  Link(kSession, a);
  std::filesystem::resize_file(a, 5);
  Link(kSession, a);
  EXPECT_EQ(MarkerOf(kSession), 5u);
}

TEST_F(UpstreamLinksTest, BadRequestsAreRefused) {
  std::string a = File("a.jsonl");
  AppendLine(a, UserLine("old"));
  UpstreamLink l = Request(kSession, a);
  l.upstream_kind = "sqlite";
  Status st = CreateOrRefreshLink(*engine_, l, false);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("upstreamKind must be one of: jsonl (got \"sqlite\")"),
            std::string::npos);
  l = Request(kSession, "relative.jsonl");
  EXPECT_TRUE(CreateOrRefreshLink(*engine_, l, true).IsInvalidArgument());
  l = Request("agent::broken", a);
  EXPECT_TRUE(CreateOrRefreshLink(*engine_, l, true).IsInvalidArgument());
  l = Request(kSession, a);
  l.catalog_id = "";
  EXPECT_TRUE(CreateOrRefreshLink(*engine_, l, true).IsInvalidArgument());
  EXPECT_FALSE(LinkOf(kSession).has_value());
}

TEST_F(UpstreamLinksTest, RemoveSaysWhetherThereWasALink) {
  std::string a = File("a.jsonl");
  AppendLine(a, UserLine("old"));
  Link(kSession, a);
  auto removed = monitor::RemoveUpstreamLink(*engine_, Name(kSession));
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(*removed);
  EXPECT_FALSE(LinkOf(kSession).has_value());
  removed = monitor::RemoveUpstreamLink(*engine_, Name(kSession));
  ASSERT_TRUE(removed.ok());
  EXPECT_FALSE(*removed);
}

}  // namespace
}  // namespace statewatch::testing
