// `statewatch replay --until SEQ --out DIR`: the projections as they were right after SEQ,
// rebuilt from the checkpoint and the retained log (Engine::ReplayUntil), written as a new
// database directory for post-mortems (docs/post-mortem.md).
#include <charconv>
#include <filesystem>
#include <system_error>

#include "cli/verbs.h"

namespace statewatch::cli {
namespace fs = std::filesystem;
namespace json = boost::json;

int RunReplay(Command& c) {
  const std::string until_text = *c.args.Get("until");
  uint64_t until = 0;
  const char* end = until_text.data() + until_text.size();
  auto [ptr, ec] = std::from_chars(until_text.data(), end, until);
  if (until_text.empty() || ec != std::errc() || ptr != end) {
    return UsageError(c, "--until must be a non-negative integer (got \"" + until_text + "\")");
  }
  const std::string out = *c.args.Get("out");
  std::error_code fs_ec;
  const std::string dir = fs::absolute(out, fs_ec).lexically_normal().string();
  if (fs_ec)
    return RuntimeError(c, Status::InvalidArgument("--out " + out + ": " + fs_ec.message()));
  if (fs::exists(dir, fs_ec)) {
    return RuntimeError(
        c, Status::InvalidArgument("--out " + dir + " exists: replay writes a new database only"));
  }
  auto engine = c.OpenEngine();
  if (!engine.ok()) return RuntimeError(c, engine.status());
  if (Status s = (*engine)->ReplayUntil(until, dir); !s.ok()) return RuntimeError(c, s);
  // What was written, read back the way any reader opens it.
  EngineOptions options;
  options.read_only = true;
  options.prune_on_open = false;
  auto replayed = Engine::Open(options, dir);
  if (!replayed.ok()) return RuntimeError(c, replayed.status());
  auto stats = (*replayed)->Stats();
  if (!stats.ok()) return RuntimeError(c, stats.status());
  return PrintJson(c, json::object{{"path", dir},
                                   {"until", until},
                                   {"lastSequence", stats->last_sequence},
                                   {"rows", stats->journal_rows},
                                   {"sessions", stats->sessions},
                                   {"cursors", stats->cursors},
                                   {"pendingNotices", stats->pending_notices}});
}

}  // namespace statewatch::cli
