#include "storage/db_directory.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace statewatch::storage {

namespace fs = std::filesystem;

namespace {

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Files RocksDB writes into a database directory.
bool IsDatabaseFile(const std::string& name) {
  auto ends = [&](std::string_view suffix) {
    return name.size() > suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return name == "CURRENT" || name == "IDENTITY" || name == "LOCK" || name.rfind("LOG", 0) == 0 ||
         name.rfind("MANIFEST-", 0) == 0 || name.rfind("OPTIONS-", 0) == 0 || ends(".sst") ||
         ends(".log") || ends(".blob");
}

uint64_t WalNumber(const std::string& name) {
  return std::stoull(name.substr(0, name.size() - 4));
}

std::string Listing(const std::vector<std::string>& names) {
  std::ostringstream out;
  for (std::size_t i = 0; i < names.size() && i < 5; ++i) out << (i ? ", " : "") << names[i];
  if (names.size() > 5) out << ", ... (" << names.size() << " files)";
  return out.str();
}

// CURRENT holds "MANIFEST-<number>\n". Returns the manifest's name or the reason it is bad.
Result<std::string> ReadCurrent(const fs::path& dir) {
  std::ifstream in(dir / "CURRENT", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return Status::Corruption("CURRENT is unreadable");
  if (text.empty() || text.back() != '\n' || text.rfind("MANIFEST-", 0) != 0 ||
      !IsDigits(std::string_view(text).substr(9, text.size() - 10))) {
    return Status::Corruption("CURRENT does not name a MANIFEST (it holds " +
                              std::to_string(text.size()) + " bytes)");
  }
  text.pop_back();
  return text;
}

}  // namespace

Result<DirectoryInspection> InspectDirectory(const std::string& path) {
  DirectoryInspection out;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) return out;  // kMissing
  if (ec) return Status::IOError("cannot access " + path + ": " + ec.message());
  if (st.type() != fs::file_type::directory) {
    return Status::InvalidArgument(path + " is not a directory");
  }
  std::vector<std::string> names, db_files;
  bool has_current = false;
  for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
    std::string name = e.path().filename().string();
    if (name == "lost+found") continue;
    names.push_back(name);
    if (name == "CURRENT") has_current = true;
    if (IsDatabaseFile(name)) db_files.push_back(name);
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0 &&
        IsDigits(std::string_view(name).substr(0, name.size() - 4))) {
      out.wal_files.push_back(name);
    }
  }
  if (ec) return Status::IOError("cannot list " + path + ": " + ec.message());
  std::sort(names.begin(), names.end());
  std::sort(db_files.begin(), db_files.end());
  if (names.empty()) {
    out.state = DirectoryState::kEmpty;
    return out;
  }
  const std::string refuse = "; refusing to open it (nothing in it was changed or deleted)";
  if (!has_current) {
    if (db_files.empty()) {
      return Status::FailedPrecondition(path + " holds no statewatch database but is not empty (" +
                                        Listing(names) + ")");
    }
    return Status::Corruption("database at " + path + " has no CURRENT file (it holds " +
                              Listing(db_files) + ")" + refuse);
  }
  auto manifest = ReadCurrent(path);
  if (!manifest.ok()) {
    return Status::Corruption("database at " + path + ": " + manifest.status().message() + refuse);
  }
  if (!fs::is_regular_file(fs::path(path) / *manifest, ec)) {
    return Status::Corruption("database at " + path + ": CURRENT names " + *manifest +
                              ", which is missing" + refuse);
  }
  std::sort(out.wal_files.begin(), out.wal_files.end(),
            [](const std::string& a, const std::string& b) { return WalNumber(a) < WalNumber(b); });
  for (std::string& w : out.wal_files) w = (fs::path(path) / w).string();
  out.state = DirectoryState::kDatabase;
  return out;
}

}  // namespace statewatch::storage
