// The `statewatch` executable: the command line of cli/cli.h.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "cli/cli.h"

int main(int argc, char** argv) {
  // stdout carries the verbs' JSON, so every log line (RocksDB's info log goes through
  // spdlog) goes to stderr; spdlog's stock default logger writes to stdout.
  spdlog::set_default_logger(spdlog::stderr_color_mt("statewatch-cli"));
  return statewatch::cli::RunCli(argc, argv, std::cout, std::cerr);
}
