#include "cli/command.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <utility>

#include "base/ascii.h"
#include "statewatch/clock.h"
#include "statewatch/session_key.h"

namespace statewatch::cli {

namespace {

// Whether `dir` is absent or empty: where a writer would start a new database. A directory
// holding anything is left to Engine::Open, which names a damaged database (files but no
// CURRENT) or foreign files precisely.
bool NothingThere(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return true;
  return std::filesystem::is_directory(dir, ec) && std::filesystem::is_empty(dir, ec);
}

// Whether another process holds the database's lock: RocksDB takes a POSIX record lock on
// DIR/LOCK, which F_GETLK reports (for other processes only: in this one, the open itself
// fails). Asked before opening so that RocksDB does not log its own failure first.
bool HeldElsewhere(const std::string& dir) {
  const std::string lock = (std::filesystem::path(dir) / "LOCK").string();
  int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  bool held = ::fcntl(fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

Status HeldByDaemon(const std::string& dir) {
  return Status::Busy("the database in \"" + dir +
                      "\" is held by another process (a running `statewatch serve`: RocksDB's "
                      "lock " + (std::filesystem::path(dir) / "LOCK").string() +
                      " is taken); run this verb through the daemon with --server URL (or "
                      "STATEWATCH_SERVER)");
}

}  // namespace

Result<Engine*> Command::OpenEngine() {
  if (engine_) return engine_.get();
  if (access_ != Access::kReadOnly) {
    if (!global.create && NothingThere(global.data_dir)) {
      return Status::NotFound("no statewatch database in \"" + global.data_dir +
                              "\" (a misspelled --data?); give --create to make a new one there");
    }
    if (HeldElsewhere(global.data_dir)) return HeldByDaemon(global.data_dir);
  }
  EngineOptions options;
  options.durability = global.durability;
  if (global.now_ms) options.clock = std::make_shared<ManualClock>(*global.now_ms);
  options.prune_on_open = access_ == Access::kWrite;
  // Inspecting never changes the directory, and never creates a database in it.
  options.read_only = access_ == Access::kReadOnly;
  options.create_if_missing = access_ != Access::kReadOnly;
  auto engine = Engine::Open(options, global.data_dir);
  if (!engine.ok() && engine.status().code() == Status::Code::kBusy) {
    return HeldByDaemon(global.data_dir);
  }
  if (!engine.ok()) return engine.status();
  engine_ = std::move(engine).value();
  return engine_.get();
}

Result<int64_t> ParseIntOption(std::string_view name, const std::string& value) {
  int64_t n = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, n);
  if (value.empty() || ec != std::errc() || ptr != end) {
    return Status::InvalidArgument("--" + std::string(name) + " must be an integer (got \"" +
                                   value + "\")");
  }
  return n;
}

Result<GlobalOptions> ReadGlobalOptions(const Args& args) {
  GlobalOptions global;
  if (auto data = args.Get("data")) {
    if (data->empty()) return Status::InvalidArgument("--data must name a directory");
    global.data_dir = *data;
  }
  if (auto now = args.Get("now")) {
    auto ms = ParseIntOption("now", *now);
    if (!ms.ok()) return ms.status();
    global.now_ms = *ms;
  }
  const char* env_server = std::getenv("STATEWATCH_SERVER");
  const std::string servers = args.Get("server").value_or(env_server ? env_server : "");
  for (std::size_t at = 0; !servers.empty() && at <= servers.size();) {
    std::size_t comma = std::min(servers.find(',', at), servers.size());
    std::string url = servers.substr(at, comma - at);
    bool http = url.rfind("http://", 0) == 0 && url.size() > 7;
    bool https = url.rfind("https://", 0) == 0 && url.size() > 8;
    if (!http && !https) {
      return Status::InvalidArgument(
          "--server must be http(s)://HOST[:PORT][,http(s)://HOST[:PORT]…] (got \"" + url +
          "\" in \"" + servers + "\")");
    }
    global.servers.push_back(std::move(url));
    at = comma + 1;
  }
  global.server = global.servers.empty() ? "" : global.servers.front();
  const char* env_ca = std::getenv("STATEWATCH_CA_FILE");
  global.ca_file = args.Get("ca-file").value_or(env_ca ? env_ca : "");
  global.client_cert = args.Get("client-cert").value_or("");
  global.client_key = args.Get("client-key").value_or("");
  if (global.client_cert.empty() != global.client_key.empty()) {
    return Status::InvalidArgument("--client-cert and --client-key go together");
  }
  const char* env_token = std::getenv("STATEWATCH_TOKEN_FILE");
  std::string token_file = args.Get("token-file").value_or(env_token ? env_token : "");
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in) {
      return Status::InvalidArgument("--token-file: cannot read \"" + token_file +
                                     "\": " + std::strerror(errno));
    }
    std::getline(in, global.token);
    while (!global.token.empty() && ascii::IsSpace(global.token.back())) {
      global.token.pop_back();
    }
  }
  if (auto create = args.Get("create")) {
    if (*create != "true" && *create != "false") {
      return Status::InvalidArgument("--create takes no value (got \"" + *create + "\")");
    }
    global.create = *create == "true";
  }
  if (auto durability = args.Get("durability")) {
    if (*durability == "sync") {
      global.durability = Durability::kSync;
    } else if (*durability == "buffered") {
      global.durability = Durability::kBuffered;
    } else {
      return Status::InvalidArgument("--durability must be sync or buffered (got \"" + *durability +
                                     "\")");
    }
  }
  return global;
}

int PrintJson(Command& c, const boost::json::value& document) {
  c.out << boost::json::serialize(document) << '\n';
  c.out.flush();
  return kExitOk;
}

int PrintUsageError(std::ostream& err, std::string_view message) {
  err << "statewatch: " << message << "\nRun 'statewatch help' for usage.\n";
  return kExitUsageError;
}

int UsageError(Command& c, std::string_view message) { return PrintUsageError(c.err, message); }

int RuntimeError(Command& c, const Status& status) {
  bool bare = status.IsInvalidArgument() || status.IsNotFound() ||
              status.code() == Status::Code::kBusy;  // the held-database message names itself
  c.err << "statewatch: " << (bare ? status.message() : status.ToString()) << '\n';
  return kExitRuntimeError;
}

Result<SessionName> SessionFromOptions(const Args& args, std::string_view key_option,
                                       std::string_view agent_option) {
  std::string key = args.Get(key_option).value_or("");
  std::string agent = args.Get(agent_option).value_or("");
  return ResolveSession(key, agent);
}

int PrintSessionRemoved(Command& c,
                        const std::function<Status(Engine&, const SessionName&)>& remove) {
  auto session = SessionFromOptions(c.args, "session", "agent");
  if (!session.ok()) return RuntimeError(c, session.status());
  return PrintEngineAnswer(
      c,
      [&](Engine& engine) -> Result<bool> {
        SW_RETURN_IF_ERROR(remove(engine, *session));
        return true;
      },
      [](bool) { return boost::json::object{{"deleted", true}}; });
}

}  // namespace statewatch::cli
