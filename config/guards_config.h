// The `guards` section of the configuration file (config/config_file.h): the loop and cost
// guards of sessions_send and sessions_spawn (tools/loop_guards.h, docs/guards.md).
//
//   "guards": {
//     "enabled": true,                            // false: every guard off
//     "send": {"perMinute": 30, "burst": 10},     // per caller -> target; burst 0: off
//     "repeat": {"maxIdentical": 3,               // the same message, caller -> target, at
//                "windowMs": 600000},             //   most this often in the window; 0: off
//     "spawn": {"perMinute": 12, "burst": 20},    // per spawning agent; burst 0: off
//     "openRuns": {"maxPerSession": 32},          // open runs one session started; 0: off
//     "maxTrackedKeys": 10000                     // buckets and windows kept (LRU)
//   }
//
// Ranges: perMinute 1..600000, burst 0..100000, maxIdentical 0..1000, windowMs
// 1..604800000, maxPerSession 0..100000, maxTrackedKeys 1..10000000. Applied at start and on
// every reload (SIGHUP); buckets keep their tokens across a reload.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_CONFIG_GUARDS_CONFIG_H_
#define STATEWATCH_CONFIG_GUARDS_CONFIG_H_

#include <boost/json.hpp>

#include "statewatch/status.h"
#include "tools/loop_guards.h"

namespace statewatch::tools {

// Applies the section's value onto `*out`. InvalidArgument naming the key path and the value
// (`guards.send.burst must be an integer from 0 to 100000 (got -1)`, `unknown key
// guards.send.rate (known: perMinute, burst)`); `*out` may then be partly changed.
Status ApplyGuardsSection(const boost::json::value& v, GuardOptions* out);
// The section as `config check` prints it.
boost::json::object GuardsSectionToJson(const GuardOptions& o);

}  // namespace statewatch::tools

#endif  // STATEWATCH_CONFIG_GUARDS_CONFIG_H_
