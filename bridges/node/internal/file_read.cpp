#include "bridges/node/internal/file_read.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace colony::node::internal {

std::string join(std::string_view a, std::string_view b) {
  std::string s(a);
  if (b.empty()) return s;
  if (!s.empty() && s.back() != '/') s += '/';
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  s += b;
  return s;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

namespace {

tl::unexpected<error> io_error(int err, const std::string& path, const char* what) {
  const errc code = (err == ENOENT || err == ENOTDIR) ? errc::not_found : errc::unavailable;
  return fail(code, std::string(what) + ": " + std::strerror(err), path);
}

}  // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

result<std::string> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(errno, path, "cannot open");
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return io_error(err, path, "cannot read");
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    // A read that did not fill the buffer reached the end: regular files return what is left,
    // and /proc and cgroupfs files (seq_file) fill the buffer with as many records as fit. The
    // read that would return 0 is one syscall of four per file; a collection reads ~1,500.
    if (static_cast<std::size_t>(n) < sizeof(buf)) break;
  }
  ::close(fd);
  return out;
}

result<std::int64_t> parse_count(std::string_view text, std::string_view field,
                                 const std::string& path) {
  const std::string_view t = trim(text);
  std::int64_t v = 0;
  const auto* end = t.data() + t.size();
  auto [p, ec] = std::from_chars(t.data(), end, v);
  if (t.empty() || ec != std::errc{} || p != end || v < 0) {
    std::string shown(t.substr(0, 40));
    return fail(errc::invalid_input,
                "field " + std::string(field) + ": not a non-negative integer: '" + shown + "'",
                path);
  }
  return v;
}

std::optional<std::string_view> find_key(std::string_view content, std::string_view key) {
  while (!content.empty()) {
    const auto nl = content.find('\n');
    std::string_view line = content.substr(0, nl);
    content = nl == std::string_view::npos ? std::string_view{} : content.substr(nl + 1);
    if (line.size() > key.size() && line.substr(0, key.size()) == key &&
        (line[key.size()] == ' ' || line[key.size()] == '\t')) {
      return line.substr(key.size() + 1);
    }
  }
  return std::nullopt;
}

result<std::int64_t> key_count(std::string_view content, std::string_view key,
                               const std::string& path) {
  auto v = find_key(content, key);
  if (!v) return fail(errc::invalid_input, "field " + std::string(key) + " missing", path);
  return parse_count(*v, key, path);
}

result<std::vector<std::string>> list_dirs(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return io_error(errno, dir, "cannot list");
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    bool dir_entry = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) dir_entry = is_dir(join(dir, n));
    if (dir_entry) names.emplace_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace colony::node::internal
