// The `statewatch` executable: the command line of cli/cli.h.
#include <iostream>

#include "cli/cli.h"

int main(int argc, char** argv) {
  return statewatch::cli::RunCli(argc, argv, std::cout, std::cerr);
}
