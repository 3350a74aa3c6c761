// The verb table of `statewatch`: every verb with its options — value, default and meaning —
// how it opens the database, what it runs locally and how it maps onto the daemon's HTTP
// API for `--server`. `statewatch help [verb]`, `<verb> --help` and the man page are
// printed from it, and Args::Check validates against it, so help and behaviour cannot
// drift apart.
//
// Thread-safe: the table is built once, on first use, and never changes.
#ifndef STATEWATCH_CLI_VERB_TABLE_H_
#define STATEWATCH_CLI_VERB_TABLE_H_

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "cli/args.h"
#include "cli/command.h"

namespace statewatch::cli {

// One option as `help` shows it.
struct OptionHelp {
  std::string name;           // without "--"
  std::string value;          // placeholder ("KEY", "MS"); "" for a flag
  std::string default_value;  // shown as "(default: ...)"; "" = none / required
  std::string help;           // the meaning, one sentence or two
  bool required = false;
  bool repeatable = false;
};

// How a verb runs against a daemon (cli/remote.h); nullptr when it has no meaning there.
using RemoteFn = int (*)(Command& command);

struct Verb {
  std::string name;      // "record", "upstream add"
  std::string summary;   // one line
  std::string synopsis;  // the usage line after the verb name
  Access access;
  std::vector<OptionHelp> options;
  int (*run)(Command& command);
  RemoteFn remote;
  std::string notes;  // printed after the options by `help <verb>`
};

const std::vector<Verb>& Verbs();

// --data, --now, --durability, --server, --token-file.
const std::vector<OptionHelp>& GlobalOptionHelp();

// The verb named `name`, or nullptr.
const Verb* FindVerb(std::string_view name);

// The option specs Args::Check needs: the verb's plus the global ones.
std::vector<OptionSpec> OptionSpecs(const Verb& verb);

// `statewatch help`: the synopsis, every verb with its summary, the global options.
void PrintUsage(std::ostream& out);
// `statewatch help <verb>` / `<verb> --help`: synopsis, summary, each option with its
// default and meaning, then the global options.
void PrintVerbHelp(const Verb& verb, std::ostream& out);
// `statewatch upstream`: the sub-verbs of a verb group ("upstream"); false when `group` is
// not one.
bool PrintGroupHelp(std::string_view group, std::ostream& out);
// The man page (roff, section 1), generated from the same table (`statewatch man`).
void PrintManPage(std::ostream& out);

}  // namespace statewatch::cli

#endif  // STATEWATCH_CLI_VERB_TABLE_H_
