// sessions_list across a cluster's partitions (docs/cluster-internals.md,
// "Reads across partitions"). A node's router asks every partition for one window of its
// sessions_list — the rows after a sort key, at most `take` of them, under the caller's
// visibility as the caller's home partition resolved it — merges the windows in the single node's
// order and cuts the page, then fits it to the same byte budget. These are the pieces both sides
// share, so that the order, the filters and the budget are the single node's by construction.
//
// Thread-safe: reads the engine; pure functions otherwise.
#ifndef STATEWATCH_TOOLS_SESSIONS_LIST_WINDOW_H_
#define STATEWATCH_TOOLS_SESSIONS_LIST_WINDOW_H_

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "statewatch/engine.h"
#include "statewatch/status.h"
#include "statewatch/types.h"
#include "tools/session_tools.h"

namespace statewatch::tools {

// A row's place in sessions_list's order: newest activity first, then key, then agent.
struct ListSortKey {
  int64_t updated_at = 0;
  std::string key;
  std::string agent_id;
};

// True when a row with key `a` comes before one with key `b`.
bool ListsBefore(const ListSortKey& a, const ListSortKey& b);
// The sort key of a row as sessions_list renders it ("updatedAt", "key", "agentId").
ListSortKey ListSortKeyOf(const boost::json::object& row);

struct ListWindow {
  std::optional<ListSortKey> after;  // only rows after this one; nullopt: from the first
  int64_t take = 0;                  // at most this many rows
};

// One partition's window of sessions_list: `params` are validated as sessions_list does
// (offset and limit too, though the window replaces them). Answers
//   {"rows": [row...] (enriched as asked, in order), "kept": <rows after `after` that pass
//    the filters>, "childLinks": [[parentAgent, parentKey, childKey]...] (every visible
//    session with a parent, in the engine's order), "limitApplied", "visibility"?}
// without the byte budget (the merged page gets it).
Result<boost::json::object> SessionsListWindow(const Engine& engine,
                                               const SessionToolsOptions& options,
                                               const SessionName& caller,
                                               const boost::json::object& params,
                                               const ListWindow& window);

// sessions_list's byte budget on a finished answer whose page starts at `offset`:
// enrichment goes first, then rows from the end (tools/session_tools.h).
Status FitListBudget(boost::json::object* out, int64_t offset);

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_SESSIONS_LIST_WINDOW_H_
