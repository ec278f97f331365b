// Whole-file reads of pseudo files (/proc, cgroupfs) and the small parsers every node reader
// shares: decimal counters, "key value" lines (memory.stat, cpu.stat), directory listings.
//
// Every error names the file in `where` and the field in the message, so a koordlet log line
// says which file of which cgroup was malformed. Nothing throws. Thread-safety: free functions
// over their arguments; safe to call concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/result.hpp"

namespace colony::node::internal {

// a + "/" + b, without doubling a trailing slash of a; b may be empty (then a).
[[nodiscard]] std::string join(std::string_view a, std::string_view b);
// s without leading and trailing spaces, tabs and newlines.
[[nodiscard]] std::string_view trim(std::string_view s);

[[nodiscard]] bool is_dir(const std::string& path);
[[nodiscard]] bool is_file(const std::string& path);

// The whole file. Pseudo files report size 0, so this reads until EOF (a read that does not fill
// the 4-KiB buffer is taken as the end: regular and seq_file files return all they have). not_found
// when the file (or a directory above it) does not exist; unavailable for any other I/O error.
[[nodiscard]] result<std::string> read_file(const std::string& path);

// A non-negative decimal integer, surrounding whitespace allowed (cgroup files end in '\n').
// invalid_input "field F: ..." with where = path when the text is empty, signed, not a number or
// beyond int64.
[[nodiscard]] result<std::int64_t> parse_count(std::string_view text, std::string_view field,
                                               const std::string& path);

// The value of `key` in newline-separated "key value" lines; nullopt when no line has that key.
[[nodiscard]] std::optional<std::string_view> find_key(std::string_view content,
                                                       std::string_view key);

// find_key then parse_count; a missing key is invalid_input "field KEY missing".
[[nodiscard]] result<std::int64_t> key_count(std::string_view content, std::string_view key,
                                             const std::string& path);

// Names of the subdirectories of dir, sorted (a stable order for discovery and output).
// not_found when dir does not exist.
[[nodiscard]] result<std::vector<std::string>> list_dirs(const std::string& dir);

}  // namespace colony::node::internal
