// The session keys the end-to-end server tests use again and again: the main agent's main
// session, a sub-agent in its tree (a leaf), and another agent's main session. Each test runs
// its own daemon, so tests share these names freely; a test that needs a key of another shape
// (a group, a DM, a grandchild) declares it next to its fixture.
#ifndef STATEWATCH_TESTS_SERVER_TEST_KEYS_H_
#define STATEWATCH_TESTS_SERVER_TEST_KEYS_H_

#include <string>

namespace statewatch::testing {

inline const std::string kMain = "agent:main:main";
inline const std::string kChild = "agent:main:subagent:c1";
inline const std::string kOps = "agent:ops:main";

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_SERVER_TEST_KEYS_H_
