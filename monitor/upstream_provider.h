// UpstreamProvider: how the upstream monitor reads one kind of external catalog source
// (docs/semantics.md, "Upstream monitor (adopted sessions)"). The monitor owns the cadence,
// the timeouts, self-echo, the outcomes and every write; a provider only answers two
// questions about one link's source:
//
//   CheckSource(link)     does the source exist, and where does it end now?
//   Scan(link, max_bytes) which human turns lie between link.marker and at most max_bytes
//                         further, and where does the marker go next?
//
// A provider never writes anything and keeps no per-link state: the marker lives in the
// link. Adding a catalog = implementing this interface and registering it under its
// upstream kind in a ProviderRegistry.
//
// Thread contract: every method may be called from any thread, concurrently, and a call
// abandoned by the monitor after its timeout may still be running when the next one starts.
// Implementations must be thread-safe and must not touch the engine.
#ifndef STATEWATCH_MONITOR_UPSTREAM_PROVIDER_H_
#define STATEWATCH_MONITOR_UPSTREAM_PROVIDER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "statewatch/status.h"
#include "statewatch/session_records.h"
#include "statewatch/types.h"

namespace statewatch::monitor {

// The answer of CheckSource.
struct SourceCheck {
  enum class State {
    kExists,   // the source is there and readable
    kMissing,  // the source is gone (for a file: ENOENT / ENOTDIR)
    kFailed,   // it could not be checked (permissions, not a regular file, I/O error)
  };
  State state = State::kMissing;
  // The source's current end as a marker (for JSONL: the file size). Valid for kExists.
  // A new link without an explicit marker starts here, so old history is not news; when it
  // equals the link's marker the monitor skips Scan (nothing new), so it must be exact.
  uint64_t end_marker = 0;
  std::string message;  // why, when not kExists

  bool exists() const { return state == State::kExists; }
};

// One human turn found by a scan.
struct HumanTurn {
  std::string text;                       // the typed text, for the self-echo comparison
  std::optional<int64_t> occurred_at_ms;  // the upstream timestamp, when the line has one
};

// The answer of Scan.
struct ScanResult {
  // Non-OK: the scan failed and nothing below is meaningful; the marker stays. The monitor
  // counts it as a failed check of the source.
  Status error;
  std::vector<HumanTurn> turns;  // in source order
  // Where the next scan starts: past the last complete, classified unit. Never past bytes
  // that were not classified (a partial last line, bytes beyond max_bytes).
  uint64_t new_marker = 0;
  // The unit at link.marker is larger than max_bytes: the marker cannot move until the cap
  // is raised. It is reported, never skipped.
  bool blocked = false;
  std::string blocked_message;
  bool more_pending = false;   // unscanned bytes remain beyond new_marker (next tick)
  uint64_t bytes_scanned = 0;  // bytes classified (new_marker - link.marker)
  uint64_t units = 0;          // complete units classified (JSONL: lines)
  uint64_t malformed = 0;      // parsed units that were not JSON objects (not human)

  std::size_t human_turns() const { return turns.size(); }
};

class UpstreamProvider {
 public:
  virtual ~UpstreamProvider() = default;

  // Validates a source reference before a link is stored (for JSONL: an absolute path).
  // InvalidArgument says what is wrong and with what value.
  virtual Status ValidateRef(const std::string& upstream_ref) const = 0;

  // Checks the source of `link` (existence and current end). Never throws.
  virtual SourceCheck CheckSource(const UpstreamLink& link) const = 0;

  // Classifies the source from link.marker, reading at most `max_bytes`. Never throws.
  virtual ScanResult Scan(const UpstreamLink& link, uint64_t max_bytes) const = 0;
};

// Providers by upstream kind (UpstreamLink::upstream_kind).
using ProviderRegistry = std::map<std::string, std::shared_ptr<const UpstreamProvider>>;

// The built-in providers: {"jsonl": JsonlProvider}.
ProviderRegistry BuiltinProviders();

}  // namespace statewatch::monitor

#endif  // STATEWATCH_MONITOR_UPSTREAM_PROVIDER_H_
