#include "monitor/upstream_provider.h"

#include "monitor/jsonl_provider.h"

namespace statewatch::monitor {

ProviderRegistry BuiltinProviders() {
  ProviderRegistry r;
  r["jsonl"] = std::make_shared<JsonlProvider>();
  return r;
}

}  // namespace statewatch::monitor
