// Args: the command line of `statewatch <verb> [--option value]...`, parsed into a verb and
// its options, then checked against the verb's declared options.
//
// Grammar: every option takes exactly one value, written `--name value` or `--name=value`;
// the value is taken verbatim, so `--changes-since -1` passes "-1" on to be refused by the
// verb rather than read as an option. The first bare word is the verb; options may stand
// before or after it. `-h` / `--help` and `--version` take no value. Verb groups take their
// sub-verb as the next word (`upstream list`), and `help` the verb it explains
// (`help upstream add`).
//
// Errors are usage errors (the CLI exits 2 on them): InvalidArgument with the message.
//
// Not thread-safe.
#ifndef STATEWATCH_CLI_ARGS_H_
#define STATEWATCH_CLI_ARGS_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "statewatch/status.h"

namespace statewatch::cli {

// One option a verb accepts.
struct OptionSpec {
  std::string name;         // without the leading "--"
  bool required = false;    // missing -> usage error
  bool repeatable = false;  // given more than once -> usage error unless set
};

class Args {
 public:
  // Parses argv[1..argc). Fails on a stray second bare word or an option without a value.
  // With `known`, an option name it rejects fails at once as "unknown option --NAME",
  // before it could take the next word (a verb) as its value.
  static Result<Args> Parse(const std::vector<std::string>& argv,
                            const std::function<bool(std::string_view)>& known = nullptr);

  const std::string& verb() const { return verb_; }
  // The one bare word after a verb that takes an operand (`config check FILE`); "" if none.
  const std::string& operand() const { return operand_; }
  bool help() const { return help_; }
  bool version() const { return version_; }

  // Usage errors for options not in `specs`, repeats of non-repeatable ones and missing
  // required ones. Names the option.
  Status Check(const std::vector<OptionSpec>& specs) const;

  bool Has(std::string_view name) const;
  // The value of a (non-repeatable) option; nullopt when absent.
  std::optional<std::string> Get(std::string_view name) const;
  // Every value of a repeatable option, in command-line order.
  std::vector<std::string> GetAll(std::string_view name) const;

 private:
  std::string verb_;
  std::string operand_;
  bool help_ = false;
  bool version_ = false;
  std::vector<std::pair<std::string, std::string>> options_;  // (name, value) in order
};

}  // namespace statewatch::cli

#endif  // STATEWATCH_CLI_ARGS_H_
