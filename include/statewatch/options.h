// EngineOptions: every knob of an engine, with its default and its trade-off.
#ifndef STATEWATCH_OPTIONS_H_
#define STATEWATCH_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "statewatch/clock.h"
#include "statewatch/status.h"

namespace statewatch {

namespace log {
class LogBackend;
}
namespace storage {
class Store;
}

// When Record() (and every other write) returns.
enum class Durability {
  // fsync the write-ahead log before acknowledging (the default). An acknowledged write
  // survives a process crash and an OS crash or power loss. Costs one fdatasync per commit
  // group (~200 us here), shared by every caller in the group.
  kSync,
  // Write the WAL to the OS without fsync. An acknowledged write survives a process crash
  // (kill -9) but the last writes may be lost if the machine itself crashes. Like
  // SQLite's synchronous=NORMAL in WAL mode.
  kBuffered,
};

// One signal kind. The kind table is data: deployments may add their own kinds.
struct KindSpec {
  std::string name;
  bool notifies = false;      // opens notices for the session's watchers
  bool seeds_cursor = false;  // seeds the producer-passed watchers' cursors (child_spawned)
};

// The kinds of docs/semantics.md, "Kinds".
std::vector<KindSpec> DefaultKinds();

struct EngineOptions {
  // ---- behaviour -------------------------------------------------------------------------

  // See Durability. Default kSync.
  Durability durability = Durability::kSync;

  // Create the database when the directory is missing or empty. Default true. A directory
  // holding anything else is never used to create one: database files without a readable
  // CURRENT/MANIFEST are Corruption, other files FailedPrecondition; nothing is changed.
  bool create_if_missing = true;

  // Open without writing anything to the directory: no file is created, deleted or
  // appended, no lock is taken (so it works while another process, e.g. `statewatch serve`,
  // has the database open, and shows the state as of the open), no pruning at open, no
  // maintenance. Every write fails with FailedPrecondition; Verify() works. A missing
  // database is NotFound("no database at <path>"). Default false.
  bool read_only = false;

  // History kept by occurredAt. Default 30 days. Also the idle expiry of cursors.
  int64_t retention_ms = 30LL * 24 * 3600 * 1000;

  // Journal rows kept across all sessions; the newest survive. Default 50,000. Enforced on
  // every commit group, in the same atomic batch as the appends that overflow it.
  uint64_t max_rows = 50000;

  // The age pass of pruning runs at open, on demand, and after writes at most this often.
  // Default 1 hour.
  int64_t prune_interval_ms = 3600LL * 1000;

  // Wakes for one watcher within this window merge into one at the window's end.
  // Default 20 s.
  int64_t wake_window_ms = 20000;

  // Summaries are folded to one line and capped to this many bytes (UTF-8 boundary).
  std::size_t summary_max_bytes = 512;

  // The clock. Null means the system clock.
  std::shared_ptr<Clock> clock;

  // The kind table. Default DefaultKinds().
  std::vector<KindSpec> kinds = DefaultKinds();

  // Run pruning when the engine opens. Default true. One-shot inspection tools may turn it
  // off so that opening a database never changes it.
  bool prune_on_open = true;

  // Cluster mode: replaces the engine's local log by one that makes each commit group
  // durable elsewhere first and then applies it through `local` (cluster::OwnerLog in
  // cluster/replicated_log.h makes one for a partition's JetStream stream). Called once per
  // writable open, with the open database; an error fails the open. Empty (the default):
  // the local log alone, a single node.
  std::function<Result<std::unique_ptr<log::LogBackend>>(storage::Store& store,
                                                         std::unique_ptr<log::LogBackend> local)>
      wrap_log;

  // Cluster mode: this engine numbers partition `partition` of `partitions` (P). It hands
  // out the sequences n * P + partition for n = 1, 2, 3, ... (log/partition.h), so that the
  // partitions of a cluster never hand out the same sequence; a session's sequences still
  // strictly increase, but they are not dense when P > 1. Both are persisted in the meta
  // record: opening a database with another partition or count is InvalidArgument and
  // changes nothing — except a read-only open, which hands out no sequence and reads the
  // database under the numbering it states. REQUIRES (else InvalidArgument at open):
  // partitions >= 1 and partition < partitions. Default partition 0 of 1: a single node,
  // dense sequences.
  // With P > 1 the engine holds only the sessions whose agent hashes to its partition
  // (XXH64(agentId) mod P): a write, a watch or acknowledgement, and a read of one session
  // (state version, changes, cursor, watchers) naming another partition's session fails with
  // Misdirected, naming the partition that holds it, and changes nothing. Drain, notices and
  // whole-engine reads answer for this partition's cursors and rows.
  uint32_t partition = 0;
  uint32_t partitions = 1;

  // ---- performance -----------------------------------------------------------------------

  // Most commands one commit group may carry. Larger groups amortise the fsync further but
  // make the first caller of a group wait longer. Default 1024.
  std::size_t max_group_commands = 1024;

  // The projection snapshot that `verify` replays from is refreshed when the log has grown
  // by max(this, 2 x the number of heads + cursors) records since the last one; the log
  // before it is then dropped. Larger means fewer snapshot copies but a longer log.
  uint64_t checkpoint_min_records = 100000;

  // RocksDB block cache. Default 64 MiB.
  std::size_t block_cache_bytes = 64u << 20;

  // RocksDB write buffer per column family. Default 16 MiB.
  std::size_t write_buffer_bytes = 16u << 20;

  // Decoded journal rows of recently read changesSince pages (and their rendered JSON, for
  // the daemon), per session. A page whose rows are all cached skips RocksDB and decoding;
  // the HTTP answer copies each row's JSON instead of building it. Rows are ~0.5-1 KB each
  // with their rendering, so the default holds ~8,000-16,000 of them. 0 disables the cache
  // (every page reads RocksDB: less memory, slower repeated reads). Default 8 MiB.
  std::size_t row_cache_bytes = 8u << 20;
};

}  // namespace statewatch

#endif  // STATEWATCH_OPTIONS_H_
