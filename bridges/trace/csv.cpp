// detail::slurp: whole-file read for the trace readers.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "bridges/trace/detail/csv.hpp"

namespace colony::trace::detail {

result<std::string> slurp(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return fail(errno == ENOENT ? errc::not_found : errc::unavailable,
                std::string("cannot open: ") + std::strerror(errno), path);
  std::string data;
  char buf[1 << 16];
  for (;;) {
    std::size_t n = std::fread(buf, 1, sizeof buf, f);
    data.append(buf, n);
    if (n < sizeof buf) break;
  }
  bool err = std::ferror(f) != 0;
  std::fclose(f);
  if (err) return fail(errc::unavailable, "read error", path);
  return data;
}

}  // namespace colony::trace::detail
