// The verb table's rows and the help, usage and man-page printers.
#include "cli/verb_table.h"

#include <algorithm>
#include <ostream>

#include "cli/cluster_control.h"
#include "cli/cluster_serve.h"
#include "cli/follow.h"
#include "cli/mcp_bridge.h"
#include "cli/remote.h"
#include "cli/serve_command.h"
#include "cli/verbs.h"
#include "statewatch/version.h"

namespace statewatch::cli {
namespace {

OptionHelp Session(const char* help = "The session key (agent:<id>:<rest>, or a bare key).") {
  return {"session", "KEY", "", help, /*required=*/true};
}
OptionHelp Agent() {
  return {"agent", "ID", "main", "The agent of a bare session key (agent-scoped keys bring their own)."};
}
OptionHelp Watcher() {
  return {"watcher", "KEY", "", "The watcher's agent-scoped session key.", true};
}
OptionHelp Target() {
  return {"target", "KEY", "", "The watched session's key.", true};
}
OptionHelp TargetAgent() {
  return {"target-agent", "ID", "main", "The agent of a bare target key."};
}

std::vector<OptionHelp> RecordOptions() {
  return {
      {"session", "KEY", "", "The session the event belongs to (required unless --batch)."},
      Agent(),
      {"kind", "KIND", "",
       "The event kind: human_direct_message, upstream_missing, goal_changed, child_spawned, "
       "run_completed, run_failed, compacted, adopted, created, guard_refused (required unless "
       "--batch)."},
      {"actor-type", "TYPE", "", "human, agent or system (required unless --batch)."},
      {"actor-id", "ID", "", "Who acted; an agent's session key is never notified of its own events."},
      {"run-id", "ID", "", "The run the event belongs to."},
      {"session-id", "ID", "", "The session's incarnation id."},
      {"summary", "TEXT", "", "One line of metadata, never message content (folded, capped at 512 bytes)."},
      {"payload", "JSON", "", "A JSON object stored with the event."},
      {"dedupe", "KEY", "", "Idempotency key: a second record with it returns the first event."},
      {"occurred-at", "MS", "now", "When it happened, ms since the epoch (clamped into the last 24 h)."},
      {"watcher", "KEY", "", "A producer-passed watcher (repeatable).", false, true},
      {"batch", "FILE", "",
       "Record a JSON array or JSON lines of events from FILE (- = stdin) in one atomic batch "
       "instead; prints the array of stored events."},
  };
}

std::vector<Verb> BuildVerbs() {
  std::vector<Verb> v;
  v.push_back({"record", "Records one event (or a batch) in the journal; prints the stored event.",
               "--session KEY --kind KIND --actor-type TYPE [options] | --batch FILE",
               Access::kWrite, RecordOptions(), RunRecord, RemoteRecord,
               "An existing event comes back with \"deduplicated\": true."});
  v.push_back({"status", "A session's state version; with --changes-since, the events after it.",
               "--session KEY [--agent ID] [--changes-since N] [--limit N]", Access::kReadOnly,
               {Session(), Agent(),
                {"changes-since", "N", "",
                 "Also list the events with a sequence above N, and whether history was pruned "
                 "past N (historyGap)."},
                {"limit", "N", "200", "At most N events (clamped to 1..200)."}},
               RunStatus, RemoteStatus, ""});
  v.push_back({"versions", "The state versions of several sessions, in one lookup.",
               "--session KEY [--session KEY]... [--agent ID]", Access::kReadOnly,
               {{"session", "KEY", "", "A session key (repeatable).", true, true}, Agent()},
               RunVersions, RemoteVersions, ""});
  v.push_back({"delete-session",
               "Deletes a session: its events, head and every cursor naming it.",
               "--session KEY [--agent ID]", Access::kWrite, {Session(), Agent()},
               RunDeleteSession, RemoteDeleteSession, ""});
  v.push_back({"watch",
               "Registers a watcher on a target (--target); without --target, follows the "
               "daemon's wakes.",
               "--watcher KEY --target KEY... [--target-agent ID] | --server URL [--watcher KEY] "
               "[--drain] [--count N]",
               Access::kWrite,
               {{"watcher", "KEY", "",
                 "The watcher's agent-scoped session key (required to register, and with "
                 "--drain; following without it prints every watcher's wakes)."},
                {"target", "KEY", "",
                 "The watched session's key: registers the watch at its current head "
                 "(repeatable: every watch in one atomic step, or none).",
                 false, true},
                TargetAgent(),
                {"drain", "", "",
                 "Following: after each wake (and on every connection), drain the watcher's "
                 "notices and print each as a JSON line."},
                {"count", "N", "",
                 "Following: exit 0 after N wakes (else until SIGINT/SIGTERM)."}},
               RunWatchOrFollow, RemoteWatchOrFollow,
               "Registering prints {\"watched\": false} for a refused registration (same "
               "session, bare or malformed key); with several --target, {\"watched\": true, "
               "\"watches\", \"created\"}, or exit 1 naming a refused one (watches[i]) with "
               "nothing registered. Following (no --target, needs --server) prints "
               "each wake of GET /v1/wakes as one JSON line, {\"watcher\", \"reason\", "
               "\"at\"}, and with --drain each drained notice, {\"targetSessionKey\", "
               "\"contextKey\", \"text\"}. It reconnects after the daemon restarts (back-off "
               "100 ms doubling to 5 s, round the --server URLs); wakes fired while it was away "
               "are not replayed, so --drain drains once on every connection. The first "
               "connection must succeed (exit 1). An https:// --server is followed over wss, "
               "verified as every remote verb's requests are (--ca-file, --client-cert)."});
  v.push_back({"unwatch",
               "Removes watches: each --target's cursor of the watcher, with its pending notice.",
               "--watcher KEY --target KEY... [--target-agent ID]", Access::kWrite,
               {Watcher(),
                {"target", "KEY", "",
                 "A watched session's key (repeatable: every removal in one atomic step, or "
                 "none).",
                 true, true},
                TargetAgent()},
               RunUnwatch, RemoteUnwatch,
               "Prints {\"watches\", \"removed\"}: the distinct pairs named and the cursors "
               "removed (a pair without one is left alone). A pair a registration would refuse "
               "(same session, bare or malformed key) is exit 1 naming it, and nothing is "
               "removed."});
  v.push_back({"tail", "Follows the events recorded in sessions of a running daemon.",
               "--server URL --session KEY [--session KEY]... [--agent ID] [--changes-since N] "
               "[--interval-ms MS] [--count N]",
               Access::kReadOnly,
               {{"session", "KEY", "", "A session to follow (repeatable).", true, true},
                Agent(),
                {"changes-since", "N", "the session's current version",
                 "Start after sequence N (0: the whole retained history)."},
                {"interval-ms", "MS", "1000", "How often each session is polled (10..3600000)."},
                {"count", "N", "", "Exit 0 after N events (else until SIGINT/SIGTERM)."}},
               RunTail, RemoteTail,
               "Prints each event as one JSON line: {\"sessionKey\", \"agentId\", "
               "\"sequence\", \"kind\", ...} (the change events of session_status). The "
               "daemon has no event feed: tail polls GET /v1/sessions/{key}/state?changesSince= "
               "per session, and reports a history gap on stderr. Reconnects as watch does."});
  v.push_back({"notices", "The watcher's pending notices, without acknowledging them.",
               "--watcher KEY", Access::kReadOnly, {Watcher()}, RunNotices, RemoteNotices, ""});
  v.push_back({"drain", "The watcher's pending notices, acknowledged.", "--watcher KEY",
               Access::kWrite, {Watcher()}, RunDrain, RemoteDrain, ""});
  v.push_back({"cursor", "One cursor's positions: lastSeen, notified, material, updatedAt.",
               "--watcher KEY --target KEY [--target-agent ID]", Access::kReadOnly,
               {Watcher(), Target(), TargetAgent()}, RunCursor, RemoteCursor, ""});
  v.push_back({"reset-watcher", "Deletes every cursor the watcher holds.", "--watcher KEY",
               Access::kWrite, {Watcher()}, RunResetWatcher, RemoteResetWatcher, ""});
  v.push_back({"sweep", "Runs the restart sweep now: pending notices reopen from the cursors.",
               "", Access::kWrite, {}, RunSweep, RemoteSweep, ""});
  v.push_back({"prune", "Runs retention now (age, row cap, idle cursors).", "",
               Access::kWriteNoPrune, {}, RunPrune, RemotePrune, ""});
  v.push_back({"stats", "Counts and bytes on disk.", "", Access::kReadOnly, {}, RunStats,
               RemoteStats, ""});
  v.push_back({"verify",
               "Rebuilds every projection from the snapshot and the log and diffs it with the "
               "live one; exit 1 on a difference.",
               "", Access::kReadOnly, {}, RunVerify, RemoteVerify, ""});
  v.push_back({"rebuild", "Replaces the projections with rebuilt ones.", "", Access::kWrite, {},
               RunRebuild, RemoteRebuild, ""});
  v.push_back({"backup",
               "Writes a consistent copy of the database (a RocksDB checkpoint) to a new "
               "directory.",
               // Writable open without pruning: RocksDB checkpoints need a writable DB (they
               // pin and flush files), and a backup must not change what it copies.
               "--to DIR", Access::kWriteNoPrune,
               {{"to", "DIR", "",
                 "The backup directory; it must not exist. With --server it is a path on the "
                 "daemon's machine.",
                 true}},
               RunBackup, RemoteBackup,
               "Works while the daemon runs: use --server (POST /v1/backup)."});
  v.push_back({"replay",
               "Writes the database as it was right after a sequence into a new directory "
               "(post-mortems).",
               "--until SEQ --out DIR", Access::kReadOnly,
               {{"until", "SEQ", "", "The last sequence to replay (inclusive).", true},
                {"out", "DIR", "", "The new database's directory; it must not exist.", true}},
               RunReplay, nullptr,
               "Rebuilds the projections (heads, cursors, pending notices) from the checkpoint "
               "and the retained log up to and including SEQ, as verify does, and copies the "
               "journal rows up to SEQ still retained; the registry, transcripts and other "
               "tables are copied as they are now. The data directory is opened read-only, so "
               "replay works while the daemon runs (it sees the database as of its open). "
               "Errors: the directory exists, SEQ is beyond the last sequence, or SEQ is before "
               "the last checkpoint (the message names the earliest sequence it can replay). "
               "`statewatch --data DIR status|notices|stats ...` then reads the result; "
               "GET /v1/sessions/{key}/status?asOf=SEQ answers the same from a running daemon."});
  v.push_back({"restore",
               "Puts a backup in place as the data directory named by --data, which must be "
               "empty or absent.",
               "--from DIR --data DIR", Access::kReadOnly,
               {{"from", "DIR", "", "A directory written by `statewatch backup`.", true}},
               RunRestore, nullptr,
               "Stop the daemon first; restore never overwrites a database."});
  v.push_back({"export", "Prints every retained journal event as JSON lines (one event a line).",
               "", Access::kReadOnly, {}, RunExport, RemoteExport,
               "Events are grouped by session, ascending within one."});
  v.push_back({"upstream list", "Every upstream link.", "", Access::kReadOnly, {},
               RunUpstreamList, RemoteUpstreamList, ""});
  v.push_back({"upstream add", "Creates or refreshes a session's upstream link (a JSONL source).",
               "--session KEY --catalog ID --host ID --thread ID --path FILE "
               "--upstream-root DIR... [options]",
               Access::kWrite,
               {Session(), Agent(),
                {"catalog", "ID", "", "The catalog the session was adopted from.", true},
                {"host", "ID", "", "The host id of the source.", true},
                {"thread", "ID", "", "The thread id of the source.", true},
                {"path", "FILE", "", "The JSONL transcript to monitor.", true},
                {"upstream-root", "DIR", "",
                 "A directory the source must resolve under (realpath, repeatable); with none, "
                 "no link is accepted. With --server the daemon's own roots apply.",
                 false, true},
                {"kind", "KIND", "jsonl", "The provider kind."},
                {"marker", "BYTES", "the file's current end", "The byte offset to scan from."}},
               RunUpstreamAdd, RemoteUpstreamAdd, ""});
  v.push_back({"upstream remove", "Removes a session's upstream link.",
               "--session KEY [--agent ID]", Access::kWrite, {Session(), Agent()},
               RunUpstreamRemove, RemoteUpstreamRemove, ""});
  v.push_back({"config check", "Validates a serve --config file and prints the effective policy.",
               "FILE", Access::kReadOnly, {}, RunConfigCheck, nullptr,
               "Prints {\"ok\", \"file\", \"effective\"}: the configuration with every default, "
               "and the tool policy resolved per agent and spawn depth. A refusal names the key's "
               "path (exit 1). Touches no database."});
  v.push_back({"openapi", "Prints the daemon's OpenAPI 3.1 document.", "", Access::kReadOnly,
               {}, RunOpenApi, nullptr, ""});
  v.push_back({"mcp",
               "Bridges MCP's stdio transport to a running daemon's /mcp endpoint, for agent "
               "runtimes that spawn MCP servers as processes.",
               "--server URL [--session-key KEY] [--agent-id ID]", Access::kReadOnly,
               {{"session-key", "KEY", "",
                 "The MCP session's caller: the session its tool calls and subscriptions act "
                 "as (sent as X-Session-Key)."},
                {"agent-id", "ID", "", "The caller's agent when --session-key is a bare key."}},
               RunMcp, RemoteMcp,
               "Reads newline-delimited JSON-RPC on stdin, POSTs each message to URL/mcp and "
               "writes each answer as one line on stdout; follows GET URL/mcp and writes its "
               "notifications too. Logs go to stderr. The end of stdin deletes the MCP session "
               "and exits 0. See docs/mcp.md."});
  v.push_back({"serve", "Runs the daemon (HTTP + WebSocket) on the data directory.",
               "[options]", Access::kWrite, ServeOptionHelp(), RunServeCommand, nullptr,
               "Prints {\"listening\", \"port\"} once it listens; SIGINT or SIGTERM stops it "
               "gracefully (in-flight requests finish, the database closes cleanly)."});
  v.push_back({"cluster follow",
               "The standby: folds a partition's JetStream stream into the data directory.",
               "--cluster nats://HOST:PORT[,...] [--partition p] [--partitions P] [--once]",
               Access::kWrite, ClusterFollowOptionHelp(), RunClusterFollow, nullptr,
               "Prints {\"partition\", \"position\", \"fenceEpoch\"} whenever it moves; "
               "follows until SIGINT/SIGTERM (--once: stops at the tail). `statewatch verify` "
               "checks the directory while it runs; `serve --cluster ... --role owner` on it "
               "takes the partition over."});
  v.push_back({"cluster status",
               "The control plane's view: nodes, leases, each partition's owner, standby, epoch "
               "and lag.",
               "--etcd http://HOST:PORT[,...] [--cluster-name NAME]", Access::kReadOnly,
               ClusterStatusOptionHelp(), RunClusterStatus, nullptr,
               "Prints {\"cluster\", \"revision\", \"controller\", \"nodes\", \"partitions\", "
               "\"moves\", \"drains\"} read from etcd; a partition is \"ready\" once its owner "
               "and standby serve under its current epoch."});
  v.push_back({"cluster move", "A planned move of a partition to another node.",
               "--etcd URLS --partition p --to NODE [--timeout-ms MS]", Access::kReadOnly,
               ClusterMoveOptionHelp(), RunClusterMove, nullptr,
               "The controller makes NODE the standby, waits until it follows within 1,000 "
               "positions of the owner, then names it owner (it fences the log; writes stall "
               "for about one commit). Prints {\"partition\", \"owner\", \"standby\", "
               "\"epoch\"} once it serves. The move stays as a pin: the balancer leaves the "
               "partition on NODE until NODE leaves or is drained."});
  v.push_back({"cluster drain", "Moves every partition and standby off a node (rolling restart).",
               "--etcd URLS --node NODE [--timeout-ms MS]", Access::kReadOnly,
               ClusterDrainOptionHelp(), RunClusterDrain, nullptr,
               "Lasts until the node restarts (a drain is bound to its current lease). Prints "
               "{\"node\", \"partitions\": 0} once it holds nothing."});
  v.push_back({"takeover",
               "Makes a running standby daemon the owner of its partition (no restart).",
               "[--partition p] [--url http://HOST:PORT]", Access::kReadOnly,
               TakeoverOptionHelp(), RunTakeover, RunTakeover,
               "Calls POST /v1/cluster/takeover on the standby: it folds to the stream's tail, "
               "appends Fence{epoch}, runs the restart sweep and serves writes on the same "
               "address. Prints {\"partition\", \"role\", \"epoch\", \"position\"}."});
  v.push_back({"man", "Prints this tool's man page (roff).", "", Access::kReadOnly, {},
               RunManPage, nullptr, ""});
  return v;
}

void PrintOption(const OptionHelp& o, std::ostream& out) {
  std::string head = "  --" + o.name + (o.value.empty() ? "" : " " + o.value);
  // A long head gets its meaning on the next line, so the meanings stay in one column.
  out << head << (head.size() < 26 ? std::string(26 - head.size(), ' ') : "\n" + std::string(26, ' '))
      << o.help;
  if (o.required) out << " Required.";
  if (!o.default_value.empty()) out << " (default: " << o.default_value << ")";
  out << "\n";
}

}  // namespace

const std::vector<Verb>& Verbs() {
  static const auto* verbs = new std::vector<Verb>(BuildVerbs());
  return *verbs;
}

const std::vector<OptionHelp>& GlobalOptionHelp() {
  static const auto* options = new std::vector<OptionHelp>{
      {"data", "DIR", "./data", "The data directory (a RocksDB database)."},
      {"now", "MS", "the system clock", "The clock for this one command (tests, replays)."},
      {"durability", "MODE", "sync",
       "sync: fsync before a write is acknowledged; buffered: survive a process crash only."},
      {"create", "", "",
       "A writing verb makes a new database when --data holds none (without it, it refuses: "
       "a misspelled --data never starts an empty database). serve always may."},
      {"server", "URL[,URL...]", "$STATEWATCH_SERVER, else the local database",
       "Talk to a running daemon (http://HOST:PORT or https://) instead of opening --data; prints the "
       "same JSON. Several URLs (a cluster's nodes): a request that did not land goes to the "
       "next."},
      {"token-file", "FILE", "$STATEWATCH_TOKEN_FILE",
       "A file holding the daemon's bearer token (with --server)."},
      {"ca-file", "FILE", "$STATEWATCH_CA_FILE, else the system store",
       "The PEM CA that an https:// --server's certificate must be signed by."},
      {"client-cert", "FILE", "",
       "A PEM client certificate for an https:// --server that asks for one (mutual TLS)."},
      {"client-key", "FILE", "", "The PEM private key of --client-cert."},
  };
  return *options;
}

const Verb* FindVerb(std::string_view name) {
  const auto& verbs = Verbs();
  auto it = std::find_if(verbs.begin(), verbs.end(), [&](const Verb& v) { return v.name == name; });
  return it == verbs.end() ? nullptr : &*it;
}

std::vector<OptionSpec> OptionSpecs(const Verb& verb) {
  std::vector<OptionSpec> specs;
  for (const OptionHelp& o : verb.options) specs.push_back({o.name, o.required, o.repeatable});
  for (const OptionHelp& o : GlobalOptionHelp()) specs.push_back({o.name, false, false});
  return specs;
}

void PrintUsage(std::ostream& out) {
  out << "statewatch " << kVersion << " — session state awareness for AI-agent gateways\n\n"
      << "usage: statewatch [global options] <verb> [options]\n"
      << "       statewatch help [verb]      statewatch <verb> --help      statewatch --version\n\n"
      << "verbs:\n";
  for (const Verb& verb : Verbs()) {
    std::string head = "  " + verb.name;
    out << head << std::string(head.size() < 20 ? 20 - head.size() : 1, ' ') << verb.summary
        << "\n";
  }
  out << "\nglobal options:\n";
  for (const OptionHelp& o : GlobalOptionHelp()) PrintOption(o, out);
  out << "\nJSON on stdout. Exit 0 ok, 1 runtime error, 2 usage error.\n";
}

void PrintVerbHelp(const Verb& verb, std::ostream& out) {
  out << "usage: statewatch " << verb.name << (verb.synopsis.empty() ? "" : " " + verb.synopsis)
      << "\n\n"
      << verb.summary << "\n";
  if (!verb.options.empty()) {
    out << "\noptions:\n";
    for (const OptionHelp& o : verb.options) PrintOption(o, out);
  }
  if (!verb.notes.empty()) out << "\n" << verb.notes << "\n";
  if (verb.remote == nullptr) out << "\nRuns on the local database only (no --server).\n";
  out << "\nglobal options:\n";
  for (const OptionHelp& o : GlobalOptionHelp()) PrintOption(o, out);
}

bool PrintGroupHelp(std::string_view group, std::ostream& out) {
  std::string prefix = std::string(group) + " ";
  bool any = false;
  for (const Verb& verb : Verbs()) {
    if (verb.name.rfind(prefix, 0) != 0) continue;
    if (!any) out << "usage: statewatch " << group << " <sub-verb> [options]\n\nsub-verbs:\n";
    any = true;
    std::string head = "  " + verb.name.substr(prefix.size());
    out << head << std::string(head.size() < 12 ? 12 - head.size() : 1, ' ') << verb.summary
        << "\n";
  }
  if (any) out << "\n'statewatch help " << group << " <sub-verb>' shows its options.\n";
  return any;
}

}  // namespace statewatch::cli
