#include "engine/group_write.h"

#include <cstdio>
#include <cstdlib>
#include <typeinfo>

#include "statewatch/engine.h"

namespace statewatch::engine {

SideTableHost& SideTableHostOf(const Engine& engine, const char* table) {
  SideTableHost* host = engine.side_table_host();
  if (host == nullptr) {
    // Misuse is a programming error: a clear stop (as a failed assert would, in every build
    // type) instead of undefined behaviour through a wrong object.
    std::fprintf(stderr, "statewatch: %s needs an Engine made by Engine::Open; got another Engine "
                 "subclass (%s)\n", table, typeid(engine).name());
    std::abort();
  }
  return *host;
}

Result<std::optional<std::string>> GroupWrite::Get(storage::Family family,
                                                   std::string_view key) const {
  auto it = overlay_.values.find({family, std::string(key)});
  if (it != overlay_.values.end()) return it->second;
  for (const auto& [f, range] : overlay_.deleted_ranges) {
    if (f == family && key >= range.first && key < range.second) {
      return std::optional<std::string>();
    }
  }
  return store_.Get(family, key);
}

void GroupWrite::Put(storage::Family family, std::string_view key, std::string_view value) {
  batch_.Put(family, key, value);
  overlay_.values[{family, std::string(key)}] = std::string(value);
}

void GroupWrite::Delete(storage::Family family, std::string_view key) {
  batch_.Delete(family, key);
  overlay_.values[{family, std::string(key)}] = std::nullopt;
}

void GroupWrite::DeleteRange(storage::Family family, std::string_view begin, std::string_view end) {
  batch_.DeleteRange(family, begin, end);
  // Earlier writes of the range are gone too; a later Put shadows the range again.
  auto first = overlay_.values.lower_bound({family, std::string(begin)});
  auto last = overlay_.values.lower_bound({family, std::string(end)});
  overlay_.values.erase(first, last);
  overlay_.deleted_ranges.push_back({family, {std::string(begin), std::string(end)}});
}

void RegisterSideTables(SideTableHost& host) {
  RegisterRegistryDeleteStep(host);
  RegisterToolTableDeleteSteps(host);
}

}  // namespace statewatch::engine
