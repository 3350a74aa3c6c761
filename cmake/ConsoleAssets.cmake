# The operator console (console/, docs/console.md) compiled into the daemon: a generated
# source holding every file of it (server/console_assets.h), named by
# STATEWATCH_CONSOLE_ASSETS_CC for statewatch_server's sources (server/CMakeLists.txt).
#
# With node and npm on the PATH (scripts/install-deps.sh installs them), the build runs
# scripts/build-console.sh (npm ci when needed, then tsc) whenever a console source changes.
# Without them the C++ build still succeeds: configuring warns once, and /console serves a
# page saying the console was not built and how to build it (console/placeholder/).
find_program(STATEWATCH_NODE node)
find_program(STATEWATCH_NPM npm)

set(console_src ${PROJECT_SOURCE_DIR}/console)
set(console_out ${CMAKE_CURRENT_BINARY_DIR}/console)
set(console_cc ${CMAKE_CURRENT_BINARY_DIR}/console_assets.cc)
set(console_embed ${PROJECT_SOURCE_DIR}/cmake/EmbedConsole.cmake)

if(STATEWATCH_NODE AND STATEWATCH_NPM)
  file(GLOB console_inputs CONFIGURE_DEPENDS ${console_src}/src/*.ts ${console_src}/static/*)
  add_custom_command(OUTPUT ${console_cc}
    COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/build-console.sh ${console_out}
    COMMAND ${CMAKE_COMMAND} -DASSET_DIR=${console_out} -DOUTPUT=${console_cc} -DBUILT=ON
            -P ${console_embed}
    DEPENDS ${console_inputs} ${console_src}/package.json ${console_src}/package-lock.json
            ${PROJECT_SOURCE_DIR}/clients/typescript/src/generated/schemas.ts
            ${console_src}/tsconfig.json ${PROJECT_SOURCE_DIR}/scripts/build-console.sh
            ${console_embed}
    COMMENT "Building the operator console (npm ci when needed, tsc) and embedding it"
    VERBATIM)
else()
  message(WARNING "node or npm was not found: the daemon's /console will only say that the "
                  "console was not built. Run scripts/install-deps.sh, then configure again.")
  file(GLOB console_inputs CONFIGURE_DEPENDS ${console_src}/placeholder/*)
  add_custom_command(OUTPUT ${console_cc}
    COMMAND ${CMAKE_COMMAND} -DASSET_DIR=${console_src}/placeholder -DOUTPUT=${console_cc}
            -DBUILT=OFF -P ${console_embed}
    DEPENDS ${console_inputs} ${console_embed}
    COMMENT "Embedding the operator console's placeholder page (no node/npm)"
    VERBATIM)
endif()

set(STATEWATCH_CONSOLE_ASSETS_CC ${console_cc})
