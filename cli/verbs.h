// The verbs of `statewatch`: one function each, returning the process exit code (see
// command.h). Options have been checked against the verb's table in cli.cc before a verb
// runs, so a verb only validates option *values*.
//
// Not thread-safe.
#ifndef STATEWATCH_CLI_VERBS_H_
#define STATEWATCH_CLI_VERBS_H_

#include <vector>

#include "cli/command.h"

namespace statewatch::cli {

// journal_verbs.cc
// The events of `record --batch FILE|-` (a JSON array or JSON lines).
Result<std::vector<EventInput>> ReadBatchInputs(Command& c);
int RunRecord(Command& c);         // record one event, or --batch FILE via RecordMany
int RunStatus(Command& c);         // stateVersion [+ stateChanges with --changes-since]
int RunVersions(Command& c);       // batched state versions
int RunDeleteSession(Command& c);  // delete a session
int RunPrune(Command& c);          // pruning on demand
int RunStats(Command& c);          // engine statistics
int RunVerify(Command& c);         // rebuild-and-diff, read-only; exit 1 on differences
int RunRebuild(Command& c);        // replace the projections with rebuilt ones

// watch_verbs.cc
int RunWatch(Command& c);         // explicit registration
int RunUnwatch(Command& c);       // removal of watches
int RunNotices(Command& c);       // pending notices (peek)
int RunDrain(Command& c);         // pending notices, acknowledged
int RunCursor(Command& c);        // one cursor's positions
int RunResetWatcher(Command& c);  // delete every cursor of a watcher
int RunSweep(Command& c);         // the restart sweep on demand

// upstream_verbs.cc (`statewatch upstream list|add|remove`)
int RunUpstreamList(Command& c);    // every upstream link
int RunUpstreamAdd(Command& c);     // create or refresh a link (as POST /v1/upstream-links)
int RunUpstreamRemove(Command& c);  // remove a session's link

// admin_verbs.cc
int RunBackup(Command& c);   // a RocksDB checkpoint of the database into a new directory
int RunReplay(Command& c);  // the projections as of a sequence, into a new directory
int RunRestore(Command& c);  // a backup put in place as an empty or absent --data
int RunExport(Command& c);   // every retained event as JSON lines
int RunOpenApi(Command& c);  // the daemon's OpenAPI document
int RunManPage(Command& c);  // the man page (roff), from the verb table

// config_verbs.cc (`statewatch config check FILE`)
int RunConfigCheck(Command& c);  // validate a serve --config file, print the effective policy

}  // namespace statewatch::cli

#endif  // STATEWATCH_CLI_VERBS_H_
