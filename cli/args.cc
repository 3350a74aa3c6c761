#include "cli/args.h"

#include <algorithm>

namespace statewatch::cli {
namespace {

bool IsHelpFlag(const std::string& token) { return token == "-h" || token == "--help"; }

// Accepts only `--name`: a single dash or a bare `--` is a mistake worth naming, not a
// positional word.
bool LooksLikeOption(const std::string& token) { return token.size() > 1 && token[0] == '-'; }

// Verbs that take sub-words (`statewatch upstream list`): the verb becomes "upstream list".
// `help` takes the verb it explains: "help upstream add".
bool IsVerbGroup(const std::string& verb) {
  return verb == "upstream" || verb == "config" || verb == "cluster" || verb == "help" ||
         verb == "help upstream" || verb == "help config" || verb == "help cluster";
}

// Verbs that take one operand after their name (`statewatch config check FILE`).
bool TakesOperand(const std::string& verb) { return verb == "config check"; }

}  // namespace

Result<Args> Args::Parse(const std::vector<std::string>& argv,
                         const std::function<bool(std::string_view)>& known) {
  Args args;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& token = argv[i];
    if (IsHelpFlag(token)) {
      args.help_ = true;
    } else if (token == "--version") {
      args.version_ = true;
    } else if (!LooksLikeOption(token)) {
      if (IsVerbGroup(args.verb_)) {
        args.verb_ += " " + token;
        continue;
      }
      if (TakesOperand(args.verb_) && args.operand_.empty()) {
        args.operand_ = token;
        continue;
      }
      if (!args.verb_.empty()) {
        return Status::InvalidArgument("unexpected argument '" + token + "' after verb '" +
                                       args.verb_ + "'");
      }
      args.verb_ = token;
    } else if (token.size() <= 2 || token[1] != '-') {
      return Status::InvalidArgument("unknown option '" + token + "' (options are --name)");
    } else if (std::string_view name = std::string_view(token).substr(2, token.find('=') - 2);
               known && !known(name)) {
      return Status::InvalidArgument("unknown option --" + std::string(name) +
                                     (args.verb_.empty() ? "" : " for '" + args.verb_ + "'"));
    } else if (std::size_t eq = token.find('='); eq != std::string::npos) {
      args.options_.emplace_back(token.substr(2, eq - 2), token.substr(eq + 1));
    } else if (i + 1 < argv.size()) {
      args.options_.emplace_back(token.substr(2), argv[++i]);
    } else {
      return Status::InvalidArgument("option " + token + " needs a value");
    }
  }
  return args;
}

Status Args::Check(const std::vector<OptionSpec>& specs) const {
  for (const auto& option : options_) {
    const std::string& name = option.first;  // not a structured binding: clang 14 cannot
                                             // capture one in the lambda below
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const OptionSpec& s) { return s.name == name; });
    if (spec == specs.end()) {
      return Status::InvalidArgument("unknown option --" + name + " for '" + verb_ + "'");
    }
    if (!spec->repeatable && GetAll(name).size() > 1) {
      return Status::InvalidArgument("option --" + name + " given more than once");
    }
  }
  for (const OptionSpec& spec : specs) {
    if (spec.required && !Has(spec.name)) {
      return Status::InvalidArgument("'" + verb_ + "' needs --" + spec.name);
    }
  }
  return Status::OK();
}

bool Args::Has(std::string_view name) const {
  return std::any_of(options_.begin(), options_.end(),
                     [&](const auto& option) { return option.first == name; });
}

std::optional<std::string> Args::Get(std::string_view name) const {
  for (const auto& [option, value] : options_) {
    if (option == name) return value;
  }
  return std::nullopt;
}

std::vector<std::string> Args::GetAll(std::string_view name) const {
  std::vector<std::string> values;
  for (const auto& [option, value] : options_) {
    if (option == name) values.push_back(value);
  }
  return values;
}

}  // namespace statewatch::cli
