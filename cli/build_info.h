// What this binary was built from, for `statewatch --version`: the version (project(VERSION),
// statewatch/version.h) and the git commit.
//
// The commit lives in a file generated at every build (cmake/git_commit.cmake writes
// build/generated/git_commit.cc, rewritten only when HEAD moved), so that a new commit
// recompiles one small file rather than everything that includes version.h.
//
// Thread-safe: constants.
#ifndef STATEWATCH_CLI_BUILD_INFO_H_
#define STATEWATCH_CLI_BUILD_INFO_H_

namespace statewatch::cli {

// `git rev-parse --short HEAD` of the source tree when it was built; "unknown" outside a git
// checkout (or the -DSTATEWATCH_GIT_COMMIT=... given to CMake instead).
extern const char kGitCommit[];

}  // namespace statewatch::cli

#endif  // STATEWATCH_CLI_BUILD_INFO_H_
