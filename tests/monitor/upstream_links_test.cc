// Link creation and refresh (the daemon's POST /v1/upstream-links), the source hash and the
// dedupe keys.
#include "monitor/upstream_links.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "monitor_fixture.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"

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
  ASSERT_OK(CreateOrRefreshLink(*engine_, Roots(), Request(kSession, path), false, &stored));
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
  Status st =
      CreateOrRefreshLink(*engine_, Roots(), Request("agent:main:x", File("none.jsonl")), false);
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
  ASSERT_OK(CreateOrRefreshLink(*engine_, Roots(), again, true));
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
  ASSERT_OK(CreateOrRefreshLink(*engine_, Roots(), thread, false));
  EXPECT_EQ(MarkerOf(kSession), SizeOf(a));
}

TEST_F(UpstreamLinksTest, ARefreshRestartsTheMissingCount) {
  std::string a = File("a.jsonl");
  AppendLine(a, UserLine("old"));
  Link(kSession, a);
  UpstreamLink l = *LinkOf(kSession);
  l.missing_count = 2;
  ASSERT_OK(SessionTables(*engine_).PutUpstreamLink(l));
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
  Status st = CreateOrRefreshLink(*engine_, Roots(), l, false);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("upstreamKind must be one of: jsonl (got \"sqlite\")"),
            std::string::npos);
  l = Request(kSession, "relative.jsonl");
  EXPECT_TRUE(CreateOrRefreshLink(*engine_, Roots(), l, true).IsInvalidArgument());
  l = Request("agent::broken", a);
  EXPECT_TRUE(CreateOrRefreshLink(*engine_, Roots(), l, true).IsInvalidArgument());
  l = Request(kSession, a);
  l.catalog_id = "";
  EXPECT_TRUE(CreateOrRefreshLink(*engine_, Roots(), l, true).IsInvalidArgument());
  EXPECT_FALSE(LinkOf(kSession).has_value());
}

TEST_F(UpstreamLinksTest, RemoveSaysWhetherThereWasALink) {
  std::string a = File("a.jsonl");
  AppendLine(a, UserLine("old"));
  Link(kSession, a);
  auto removed = monitor::RemoveUpstreamLink(*engine_, Name(kSession));
  ASSERT_OK(removed);
  EXPECT_TRUE(*removed);
  EXPECT_FALSE(LinkOf(kSession).has_value());
  removed = monitor::RemoveUpstreamLink(*engine_, Name(kSession));
  ASSERT_OK(removed);
  EXPECT_FALSE(*removed);
}

// Regression: an upstream link could name any file (/etc/shadow was accepted and would have
// been read as the daemon's user). Sources must resolve under an --upstream-root.
TEST_F(UpstreamLinksTest, ASourceOutsideTheRootsIsRefusedAndNothingIsStored) {
  Status st = CreateOrRefreshLink(*engine_, Roots(), Request(kSession, "/etc/shadow"), true);
  EXPECT_EQ(st.code(), Status::Code::kPermissionDenied) << st.ToString();
  EXPECT_NE(st.message().find("upstream source /etc/shadow is outside the upstream roots (" +
                              Roots()[0] + ")"),
            std::string::npos)
      << st.message();
  EXPECT_FALSE(LinkOf(kSession).has_value());
  // "..": resolved before the check.
  std::string dotdot = File("../../../../../../etc/passwd");
  st = CreateOrRefreshLink(*engine_, Roots(), Request(kSession, dotdot), true);
  EXPECT_EQ(st.code(), Status::Code::kPermissionDenied) << st.ToString();
  EXPECT_NE(st.message().find("(resolves to /etc/passwd)"), std::string::npos) << st.message();
  EXPECT_FALSE(LinkOf(kSession).has_value());
}

TEST_F(UpstreamLinksTest, WithNoRootNoLinkIsAccepted) {
  std::string a = File("a.jsonl");
  AppendLine(a, UserLine("old"));
  Status st = CreateOrRefreshLink(*engine_, {}, Request(kSession, a), false);
  EXPECT_EQ(st.code(), Status::Code::kPermissionDenied);
  EXPECT_NE(st.message().find("no upstream root is configured (--upstream-root DIR)"),
            std::string::npos)
      << st.message();
  EXPECT_FALSE(LinkOf(kSession).has_value());
}

TEST_F(UpstreamLinksTest, ASymlinkInsideARootCannotLeadOutOfIt) {
  std::string outside = dir_ + "/secret.jsonl";
  AppendLine(outside, UserLine("not for the daemon"));
  std::string escape = File("escape.jsonl");
  ASSERT_EQ(symlink(outside.c_str(), escape.c_str()), 0);
  Status st = CreateOrRefreshLink(*engine_, Roots(), Request(kSession, escape), false);
  EXPECT_EQ(st.code(), Status::Code::kPermissionDenied) << st.ToString();
  EXPECT_NE(st.message().find("(resolves to " + outside + ")"), std::string::npos) << st.message();
  // A dangling symlink would be followed once its target appears: refused too.
  std::string dangling = File("dangling.jsonl");
  ASSERT_EQ(symlink((dir_ + "/later.jsonl").c_str(), dangling.c_str()), 0);
  st = CreateOrRefreshLink(*engine_, Roots(), Request(kSession, dangling), true);
  EXPECT_EQ(st.code(), Status::Code::kPermissionDenied) << st.ToString();
  EXPECT_FALSE(LinkOf(kSession).has_value());
}

TEST_F(UpstreamLinksTest, ALinkStoresTheResolvedPathInsideARoot) {
  std::string real = File("real.jsonl");
  AppendLine(real, UserLine("old"));
  std::string alias = File("alias.jsonl");
  ASSERT_EQ(symlink(real.c_str(), alias.c_str()), 0);
  UpstreamLink stored;
  ASSERT_OK(CreateOrRefreshLink(*engine_, Roots(), Request(kSession, alias), false, &stored));
  std::string canonical = std::filesystem::canonical(real).string();
  EXPECT_EQ(stored.upstream_ref, canonical);
  EXPECT_EQ(LinkOf(kSession)->upstream_ref, canonical);
  // A root given through a symlink, and a file that does not exist yet (explicit marker).
  std::string root_alias = dir_ + "/root-alias";
  ASSERT_EQ(symlink((dir_ + "/files").c_str(), root_alias.c_str()), 0);
  ASSERT_OK(CreateOrRefreshLink(*engine_, {root_alias},
                                Request("agent:main:later", File("later.jsonl")), true, &stored));
  EXPECT_EQ(stored.upstream_ref,
            std::filesystem::canonical(dir_ + "/files").string() + "/later.jsonl");
  // A directory that does not exist: NotFound.
  Status st =
      CreateOrRefreshLink(*engine_, Roots(), Request("agent:main:x", File("no/dir.jsonl")), true);
  EXPECT_EQ(st.code(), Status::Code::kNotFound) << st.ToString();
}

}  // namespace
}  // namespace statewatch::testing
