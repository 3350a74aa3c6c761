#include "monitor/jsonl_provider.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstring>

namespace statewatch::monitor {

namespace {

namespace json = boost::json;

std::string Errno(int err) { return std::strerror(err); }

bool HasNonSpace(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') return true;
  }
  return false;
}

bool IsTrue(const json::object& obj, std::string_view key) {
  const json::value* v = obj.if_contains(key);
  return v && v->is_bool() && v->get_bool();
}

// Rule 4: the typed text of message.content, or nullopt when there is none.
std::optional<std::string> TypedText(const json::object& line) {
  const json::value* message = line.if_contains("message");
  if (!message || !message->is_object()) return std::nullopt;
  const json::object& m = message->get_object();
  if (const json::value* role = m.if_contains("role")) {
    if (!role->is_string() || role->get_string() != "user") return std::nullopt;
  }
  const json::value* content = m.if_contains("content");
  if (!content) return std::nullopt;
  if (content->is_string()) {
    std::string_view s = content->get_string();
    if (!HasNonSpace(s)) return std::nullopt;
    return std::string(s);
  }
  if (!content->is_array()) return std::nullopt;
  std::string text;
  bool found = false;
  for (const json::value& block : content->get_array()) {
    const json::object* b = block.if_object();
    if (!b) continue;
    const json::value* type = b->if_contains("type");
    const json::value* t = b->if_contains("text");
    if (!type || !type->is_string() || type->get_string() != "text") continue;
    if (!t || !t->is_string() || !HasNonSpace(t->get_string())) continue;
    if (found) text.push_back('\n');
    text.append(t->get_string().data(), t->get_string().size());
    found = true;
  }
  if (!found) return std::nullopt;
  return text;
}

std::optional<int64_t> LineTime(const json::object& line) {
  const json::value* ts = line.if_contains("timestamp");
  if (!ts) return std::nullopt;
  if (ts->is_string()) return ParseIso8601Ms(ts->get_string());
  if (ts->is_int64()) return ts->get_int64();
  if (ts->is_uint64() && ts->get_uint64() <= uint64_t{INT64_MAX}) {
    return static_cast<int64_t>(ts->get_uint64());
  }
  return std::nullopt;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// Reads exactly `n` digits at `pos`.
bool Digits(std::string_view s, std::size_t& pos, int n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (int i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  pos += n;
  return true;
}

bool Expect(std::string_view s, std::size_t& pos, char c) {
  if (pos >= s.size() || s[pos] != c) return false;
  ++pos;
  return true;
}

// Fast path of the classification: rule 2 needs the string "user", which JSON spells either
// literally (with its quotes) or with a \u escape somewhere in the line.
bool MayBeUserLine(std::string_view line) {
  return line.find("\"user\"") != std::string_view::npos ||
         line.find("\\u") != std::string_view::npos;
}

}  // namespace

std::optional<int64_t> ParseIso8601Ms(std::string_view s) {
  std::size_t p = 0;
  int year, month, day, hour, minute, second;
  if (!Digits(s, p, 4, year) || !Expect(s, p, '-') || !Digits(s, p, 2, month) ||
      !Expect(s, p, '-') || !Digits(s, p, 2, day)) {
    return std::nullopt;
  }
  if (p >= s.size() || (s[p] != 'T' && s[p] != 't' && s[p] != ' ')) return std::nullopt;
  ++p;
  if (!Digits(s, p, 2, hour) || !Expect(s, p, ':') || !Digits(s, p, 2, minute) ||
      !Expect(s, p, ':') || !Digits(s, p, 2, second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  int64_t millis = 0;
  if (p < s.size() && (s[p] == '.' || s[p] == ',')) {
    ++p;
    int digits = 0;
    for (; p < s.size() && s[p] >= '0' && s[p] <= '9'; ++p, ++digits) {
      if (digits < 3) millis = millis * 10 + (s[p] - '0');
    }
    if (digits == 0) return std::nullopt;
    for (int i = digits; i < 3; ++i) millis *= 10;
  }
  int64_t offset_min = 0;
  if (p < s.size() && (s[p] == 'Z' || s[p] == 'z')) {
    ++p;
  } else if (p < s.size() && (s[p] == '+' || s[p] == '-')) {
    int sign = s[p] == '-' ? -1 : 1, oh, om;
    ++p;
    if (!Digits(s, p, 2, oh)) return std::nullopt;
    if (p < s.size() && s[p] == ':') ++p;
    if (!Digits(s, p, 2, om) || oh > 23 || om > 59) return std::nullopt;
    offset_min = sign * (oh * 60 + om);
  } else {
    return std::nullopt;  // a time without a zone is ambiguous
  }
  if (p != s.size()) return std::nullopt;
  int64_t days = DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_min * 60;
  return secs * 1000 + millis;
}

JsonlLine ClassifyJsonlLine(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // Small lines parse without touching the heap.
  unsigned char buffer[8192];
  json::monotonic_resource mr(buffer, sizeof buffer);
  boost::system::error_code ec;
  json::value v = json::parse(line, ec, &mr);
  if (ec || !v.is_object()) return JsonlLine{JsonlLineClass::kMalformed, {}};
  const json::object& obj = v.get_object();
  const json::value* type = obj.if_contains("type");
  if (!type || !type->is_string() || type->get_string() != "user") return JsonlLine{};
  for (const char* flag :
       {"isMeta", "isSynthetic", "isCompactSummary", "isVisibleInTranscriptOnly", "isSidechain"}) {
    if (IsTrue(obj, flag)) return JsonlLine{};
  }
  std::optional<std::string> text = TypedText(obj);
  if (!text) return JsonlLine{};
  return JsonlLine{JsonlLineClass::kHumanTurn, HumanTurn{std::move(*text), LineTime(obj)}};
}

Status JsonlProvider::ValidateRef(const std::string& ref) const {
  if (ref.empty()) return Status::InvalidArgument("upstreamRef.path must not be empty");
  if (ref.find('\0') != std::string::npos) {
    return Status::InvalidArgument("upstreamRef.path must not contain a NUL byte");
  }
  if (ref.front() != '/') {
    return Status::InvalidArgument("upstreamRef.path must be an absolute path (got \"" + ref +
                                   "\")");
  }
  return Status::OK();
}

SourceCheck JsonlProvider::CheckSource(const UpstreamLink& link) const {
  SourceCheck out;
  struct stat st;
  if (::stat(link.upstream_ref.c_str(), &st) != 0) {
    int err = errno;
    out.state = err == ENOENT || err == ENOTDIR ? SourceCheck::State::kMissing
                                                : SourceCheck::State::kFailed;
    out.message = "cannot stat " + link.upstream_ref + ": " + Errno(err);
    return out;
  }
  if (!S_ISREG(st.st_mode)) {
    out.state = SourceCheck::State::kFailed;
    out.message = link.upstream_ref + " is not a regular file";
    return out;
  }
  out.state = SourceCheck::State::kExists;
  out.end_marker = static_cast<uint64_t>(st.st_size);
  return out;
}

namespace {

// Closes a descriptor on every path out of Scan.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads up to `want` bytes at `offset`; fewer only at end of file.
Result<std::string> ReadWindow(int fd, uint64_t offset, uint64_t want) {
  std::string buf(want, '\0');
  uint64_t got = 0;
  while (got < want) {
    ssize_t n = ::pread(fd, buf.data() + got, want - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError("read failed: " + Errno(errno));
    if (n == 0) break;
    got += static_cast<uint64_t>(n);
  }
  buf.resize(got);
  return buf;
}

}  // namespace

ScanResult JsonlProvider::Scan(const UpstreamLink& link, uint64_t max_bytes) const {
  ScanResult out;
  out.new_marker = link.marker;
  const std::string& path = link.upstream_ref;
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) {
    out.error = Status::IOError("cannot open " + path + ": " + Errno(errno));
    return out;
  }
  struct stat st;
  if (::fstat(f.fd, &st) != 0) {
    out.error = Status::IOError("cannot stat " + path + ": " + Errno(errno));
    return out;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < link.marker) {
    out.error =
        Status::FailedPrecondition(path + " is shorter (" + std::to_string(size) +
                                   " bytes) than the marker " + std::to_string(link.marker));
    return out;
  }
  if (size == link.marker || max_bytes == 0) {
    out.more_pending = size > link.marker;
    return out;
  }
  const uint64_t want = std::min(max_bytes, size - link.marker);
  Result<std::string> window = ReadWindow(f.fd, link.marker, want);
  if (!window.ok()) {
    out.error = Status::IOError(path + ": " + window.status().message());
    return out;
  }
  std::string_view data = *window;
  std::size_t pos = 0;
  for (std::size_t nl; (nl = data.find('\n', pos)) != std::string_view::npos; pos = nl + 1) {
    std::string_view line = data.substr(pos, nl - pos);
    ++out.units;
    if (!MayBeUserLine(line)) continue;  // not human; see the header
    JsonlLine c = ClassifyJsonlLine(line);
    if (c.cls == JsonlLineClass::kHumanTurn) out.turns.push_back(std::move(c.turn));
    if (c.cls == JsonlLineClass::kMalformed) ++out.malformed;
  }
  out.bytes_scanned = pos;
  out.new_marker = link.marker + pos;
  out.more_pending = out.new_marker < size;
  // A full window without one newline: the line at the marker is longer than the cap.
  if (pos == 0 && data.size() == max_bytes) {
    out.blocked = true;
    out.blocked_message = "line at byte " + std::to_string(link.marker) + " of " + path +
                          " is longer than the scan cap of " + std::to_string(max_bytes) + " bytes";
  }
  return out;
}

}  // namespace statewatch::monitor
