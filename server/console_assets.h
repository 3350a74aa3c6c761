// The operator console's static files (console/), compiled into the binary: the build turns
// console/'s TypeScript into JavaScript with tsc and writes every file into a generated
// source (cmake/ConsoleAssets.cmake), so the daemon serves the console with no file on disk
// and no network. A build without node and npm gets one placeholder page instead, saying so.
//
// Thread-safe: constants.
#ifndef STATEWATCH_SERVER_CONSOLE_ASSETS_H_
#define STATEWATCH_SERVER_CONSOLE_ASSETS_H_

#include <string_view>
#include <vector>

namespace statewatch::server {

struct ConsoleAsset {
  std::string_view name;          // "index.html", "app.js", ... (no directory)
  std::string_view content_type;  // "text/html; charset=utf-8", ...
  std::string_view bytes;
};

// Every file of the console, index.html among them.
const std::vector<ConsoleAsset>& ConsoleAssets();

// False when the binary was built without node and npm (the placeholder page).
bool ConsoleAssetsBuilt();

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_CONSOLE_ASSETS_H_
