// Discoverability: --version, `help [verb]`, `<verb> --help` with every option's default and
// meaning, verb groups answering with their sub-verbs, the man page, and runtime errors that
// start with "statewatch:" like usage errors.
#include <gtest/gtest.h>

#include <sstream>

#include "cli/cli.h"
#include "cli/verb_table.h"
#include "cli_fixture.h"
#include "statewatch/version.h"

namespace statewatch::cli {
namespace {

CliOutput Cli(const std::vector<std::string>& args) { return RunInProcess(args); }

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(HelpTest, VersionPrintsTheVersion) {
  CliOutput r = Cli({"--version"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(std::string("statewatch ") + kVersion + " (commit ", 0), 0u) << r.out;
}

TEST(HelpTest, HelpListsEveryVerbAndTheGlobalOptions) {
  CliOutput r = Cli({"help"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const Verb& verb : Verbs()) EXPECT_TRUE(Has(r.out, "  " + verb.name)) << verb.name;
  for (const char* option : {"--data DIR", "--server URL", "--token-file FILE"}) {
    EXPECT_TRUE(Has(r.out, option)) << option;
  }
  EXPECT_EQ(Cli({"--help"}).out, r.out);
}

TEST(HelpTest, EveryVerbExplainsEachOptionWithItsDefault) {
  for (const Verb& verb : Verbs()) {
    std::vector<std::string> args = {"help"};
    for (std::size_t start = 0, space; start <= verb.name.size(); start = space + 1) {
      space = verb.name.find(' ', start);
      if (space == std::string::npos) space = verb.name.size();
      args.push_back(verb.name.substr(start, space - start));
    }
    CliOutput help = Cli(args);
    ASSERT_EQ(help.code, 0) << verb.name << ": " << help.err;
    EXPECT_TRUE(Has(help.out, "usage: statewatch " + verb.name)) << help.out;
    for (const OptionHelp& o : verb.options) {
      EXPECT_TRUE(Has(help.out, "--" + o.name)) << verb.name << " --" << o.name;
      EXPECT_FALSE(o.help.empty()) << verb.name << " --" << o.name << " has no meaning";
      if (!o.default_value.empty()) {
        EXPECT_TRUE(Has(help.out, "(default: " + o.default_value + ")")) << verb.name << " --" << o.name;
      }
    }
    // `<verb> --help` prints the same page.
    std::vector<std::string> dashed(args.begin() + 1, args.end());
    dashed.push_back("--help");
    EXPECT_EQ(Cli(dashed).out, help.out) << verb.name;
  }
}

TEST(HelpTest, ServeHelpShowsTheWakeWindowDefault) {
  CliOutput r = Cli({"serve", "--help"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "--wake-window-ms MS")) << r.out;
  EXPECT_TRUE(Has(r.out, "(default: 20000)")) << r.out;
}

TEST(HelpTest, AGroupAloneAnswersWithItsSubVerbs) {
  CliOutput r = Cli({"upstream"});
  EXPECT_EQ(r.code, 2);
  for (const char* sub : {"list", "add", "remove"}) EXPECT_TRUE(Has(r.err, "  " + std::string(sub))) << r.err;
  CliOutput help = Cli({"help", "upstream"});
  EXPECT_EQ(help.code, 0);
  EXPECT_TRUE(Has(help.out, "sub-verbs:")) << help.out;
  EXPECT_EQ(Cli({"help", "frobnicate"}).code, 2);
}

TEST(HelpTest, ManPageComesFromTheSameTable) {
  CliOutput r = Cli({"man"});
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind(".TH STATEWATCH 1", 0), 0u);
  for (const Verb& verb : Verbs()) {
    std::string roff;  // '-' is written \- in roff
    for (char c : verb.name) roff += c == '-' ? std::string("\\-") : std::string(1, c);
    EXPECT_TRUE(Has(r.out, ".SS " + roff)) << roff;
  }
}

TEST(HelpTest, RuntimeErrorsStartWithStatewatch) {
  CliOutput r = Cli({"--now", "1", "--data", ::testing::TempDir() + "/help_test_data", "status",
                     "--session", "agent::x"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("statewatch: ", 0), 0u) << r.err;
}

}  // namespace
}  // namespace statewatch::cli
