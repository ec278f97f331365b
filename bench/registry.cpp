#include "bench/registry.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace colony::bench {

std::int64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

std::int64_t status_kib(std::string_view field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.starts_with(field) && line.size() > field.size() && line[field.size()] == ':')
      return std::strtoll(line.c_str() + field.size() + 1, nullptr, 10);
  return -1;
}

std::uintmax_t dir_bytes(const std::string& dir) {
  std::uintmax_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  return n;
}

std::vector<entry>& registry() {
  static std::vector<entry> entries;  // function-local: safe across static-init order
  return entries;
}

}  // namespace colony::bench
