// statewatch(1), generated from the verb table: the same words as `statewatch help`.
#include <ostream>
#include <string>

#include "cli/verb_table.h"
#include "statewatch/version.h"

namespace statewatch::cli {
namespace {

// roff treats a leading '.' or '\'' as a request and '\' as an escape.
std::string Roff(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '\\') {
      out += "\\e";
    } else if (ch == '-') {
      out += "\\-";
    } else {
      out += ch;
    }
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

void ManOption(const OptionHelp& o, std::ostream& out) {
  // .BI alternates bold (the option) and italic (its value).
  out << ".TP\n.BI \"\\-\\-" << Roff(o.name) << (o.value.empty() ? "\"" : " \" \"" + Roff(o.value) + "\"");
  out << "\n" << Roff(o.help);
  if (o.required) out << " Required.";
  if (!o.default_value.empty()) out << " Default: " << Roff(o.default_value) << ".";
  out << "\n";
}

}  // namespace

void PrintManPage(std::ostream& out) {
  out << ".TH STATEWATCH 1 \"\" \"statewatch " << kVersion << "\" \"User Commands\"\n"
      << ".SH NAME\nstatewatch \\- session state awareness for AI\\-agent gateways\n"
      << ".SH SYNOPSIS\n.B statewatch\n[global options] verb [options]\n"
      << ".SH DESCRIPTION\n"
      << "statewatch keeps a durable journal of typed state changes per agent session, holds "
         "watchers' cursors on the sessions they care about, gives each lagging watcher one "
         "coalesced notice, and answers changesSince with the exact delta or a historyGap. "
         "Each verb prints one JSON document on stdout. With \\-\\-server it talks to a "
         "running daemon (statewatch serve) and prints the same JSON.\n"
      << ".SH GLOBAL OPTIONS\n";
  for (const OptionHelp& o : GlobalOptionHelp()) ManOption(o, out);
  out << ".SH VERBS\n";
  for (const Verb& verb : Verbs()) {
    out << ".SS " << Roff(verb.name) << "\n" << Roff(verb.summary) << "\n";
    if (!verb.synopsis.empty()) {
      out << ".PP\n.B statewatch " << Roff(verb.name) << "\n" << Roff(verb.synopsis) << "\n";
    }
    for (const OptionHelp& o : verb.options) ManOption(o, out);
    if (!verb.notes.empty()) out << ".PP\n" << Roff(verb.notes) << "\n";
  }
  out << ".SH EXIT STATUS\n0 success, 1 runtime error, 2 usage error.\n"
      << ".SH ENVIRONMENT\n.TP\n.B STATEWATCH_SERVER\nThe daemon to talk to (as "
         "\\-\\-server).\n.TP\n.B STATEWATCH_TOKEN_FILE\nThe bearer token file (as "
         "\\-\\-token\\-file).\n.TP\n.B STATEWATCH_CA_FILE\nThe CA file for an https:// "
         "server (as \\-\\-ca\\-file).\n"
      << ".SH SEE ALSO\nThe reference (docs/semantics.md) and the HTTP API (docs/http-api.md, "
         "docs/openapi.json) in the statewatch sources.\n";
}

}  // namespace statewatch::cli
