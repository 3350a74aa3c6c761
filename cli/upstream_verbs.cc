// The upstream link verbs: `statewatch upstream list|add|remove`. Link writes go through
// monitor/upstream_links.h, as the daemon's do, so that a refresh keeps or resets the marker
// by the same rule (same source keeps it; a new link starts at the source's end).
#include <string>

#include "cli/verbs.h"
#include "monitor/upstream_link_json.h"
#include "monitor/upstream_links.h"
#include "statewatch/session_tables.h"

namespace statewatch::cli {
namespace json = boost::json;

int RunUpstreamList(Command& c) {
  return PrintEngineAnswer(
      c, [](Engine& engine) { return SessionTablesView(engine).ListUpstreamLinks(); },
      [](const std::vector<UpstreamLink>& links) {
        json::array list;
        for (const UpstreamLink& link : links) list.emplace_back(monitor::UpstreamLinkToJson(link));
        return json::object{{"links", std::move(list)}};
      });
}

int RunUpstreamAdd(Command& c) {
  auto session = SessionFromOptions(c.args, "session", "agent");
  if (!session.ok()) return RuntimeError(c, session.status());
  UpstreamLink link;
  link.session = *session;
  link.catalog_id = c.args.Get("catalog").value_or("");
  link.host_id = c.args.Get("host").value_or("");
  link.thread_id = c.args.Get("thread").value_or("");
  link.upstream_ref = c.args.Get("path").value_or("");
  link.upstream_kind = c.args.Get("kind").value_or("jsonl");
  bool marker_given = c.args.Has("marker");
  if (marker_given) {
    auto marker = ParseIntOption("marker", *c.args.Get("marker"));
    if (!marker.ok()) return UsageError(c, marker.status().message());
    if (*marker < 0) {
      return UsageError(
          c, "--marker must be a non-negative byte offset (got " + std::to_string(*marker) + ")");
    }
    link.marker = static_cast<uint64_t>(*marker);
  }
  auto engine = c.OpenEngine();
  if (!engine.ok()) return RuntimeError(c, engine.status());
  UpstreamLink stored;
  // The same rule as the daemon's: a source outside the given roots is refused (no root:
  // no link), so a link this command stores is one the daemon's monitor will read.
  Status s = monitor::CreateOrRefreshLink(**engine, c.args.GetAll("upstream-root"), std::move(link),
                                          marker_given, &stored);
  if (!s.ok()) return RuntimeError(c, s);
  return PrintJson(c, json::object{{"link", monitor::UpstreamLinkToJson(stored)}});
}

int RunUpstreamRemove(Command& c) {
  return PrintSessionRemoved(c, [](Engine& engine, const SessionName& session) {
    auto removed = monitor::RemoveUpstreamLink(engine, session);
    if (!removed.ok()) return removed.status();
    if (!*removed) return Status::NotFound("no upstream link for session " + session.session_key);
    return Status::OK();
  });
}

}  // namespace statewatch::cli
