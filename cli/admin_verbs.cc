// The day-2 verbs: backup, restore, export; and the documents printed from tables: the
// OpenAPI document and the man page.
#include <filesystem>
#include <system_error>

#include "cli/verb_table.h"
#include "cli/verbs.h"
#include "codecs/json_codec.h"
#include "server/openapi.h"

namespace statewatch::cli {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

// An absent directory, or an empty one, may become the restored database.
Status CheckRestoreTarget(const std::string& data) {
  std::error_code ec;
  if (!fs::exists(data, ec)) return Status::OK();
  if (!fs::is_directory(data, ec)) {
    return Status::InvalidArgument("restore target " + data + " exists and is not a directory");
  }
  if (!fs::is_empty(data, ec)) {
    return Status::InvalidArgument("restore target " + data +
                                   " is not empty: restore never overwrites a database "
                                   "(move it away or name a new --data)");
  }
  return Status::OK();
}

// Copies the backup next to the target, opens it once (refusing anything that is not a
// statewatch database), then renames it into place, so that a failed restore leaves no
// half-copied database under --data.
Status Restore(const std::string& from, const std::string& data) {
  std::error_code ec;
  if (!fs::exists(fs::path(from) / "CURRENT", ec)) {
    return Status::InvalidArgument("--from " + from +
                                   " is not a backup (no RocksDB CURRENT file in it)");
  }
  SW_RETURN_IF_ERROR(CheckRestoreTarget(data));
  fs::path target = fs::absolute(data, ec).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  fs::path staging = target.string() + ".restoring";
  fs::remove_all(staging, ec);
  fs::create_directories(target.parent_path(), ec);
  fs::copy(from, staging, fs::copy_options::recursive, ec);
  if (ec) return Status::IOError("copying " + from + " to " + staging.string() + ": " + ec.message());
  {
    EngineOptions options;
    options.prune_on_open = false;
    auto engine = Engine::Open(options, staging.string());
    if (!engine.ok()) {
      fs::remove_all(staging, ec);
      return Status::InvalidArgument("--from " + from + " does not open as a statewatch database: " +
                                     engine.status().ToString());
    }
  }
  fs::remove(target, ec);  // an empty directory, if any
  fs::rename(staging, target, ec);
  if (ec) return Status::IOError("moving the restored copy to " + target.string() + ": " + ec.message());
  return Status::OK();
}

}  // namespace

int RunBackup(Command& c) {
  std::string to = *c.args.Get("to");
  std::error_code ec;
  std::string dir = fs::absolute(to, ec).lexically_normal().string();
  if (ec) return RuntimeError(c, Status::InvalidArgument("--to " + to + ": " + ec.message()));
  auto engine = c.OpenEngine();
  if (!engine.ok()) return RuntimeError(c, engine.status());
  if (Status s = (*engine)->Backup(dir); !s.ok()) return RuntimeError(c, s);
  return PrintJson(c, json::object{{"path", dir}});
}

int RunRestore(Command& c) {
  std::string from = *c.args.Get("from");
  if (!c.args.Has("data")) {
    return UsageError(c, "'restore' needs --data naming the directory to restore into");
  }
  if (Status s = Restore(from, c.global.data_dir); !s.ok()) return RuntimeError(c, s);
  std::error_code ec;
  return PrintJson(c, json::object{{"restored", fs::absolute(c.global.data_dir, ec).lexically_normal().string()},
                                   {"from", from}});
}

int RunExport(Command& c) {
  auto engine = c.OpenEngine();
  if (!engine.ok()) return RuntimeError(c, engine.status());
  Status s = (*engine)->ForEachEvent([&](const Event& e) {
    c.out << json::serialize(tools::EventToJson(e)) << '\n';
    return c.out ? Status::OK() : Status::IOError("writing the export to stdout failed");
  });
  c.out.flush();
  if (!s.ok()) return RuntimeError(c, s);
  return kExitOk;
}

int RunOpenApi(Command& c) {
  c.out << server::OpenApiDocument();
  c.out.flush();
  return kExitOk;
}

int RunManPage(Command& c) {
  PrintManPage(c.out);
  return kExitOk;
}

}  // namespace statewatch::cli
