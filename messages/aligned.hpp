// Alignment of records before FlatBuffers reads them.
//
// FlatBuffers reads scalars in place, so a buffer must start at an address aligned for the
// schema's largest scalar (8 bytes: long fields). Bytes handed out by RocksDB (a value after
// its 8-byte checksum, inside a block) or by librdkafka come at any address; reading them in
// place is undefined behaviour that x86 forgives and UBSan reports. realign() copies such
// bytes into a caller-owned scratch buffer (operator new aligns it to at least 16) and returns
// a view that is aligned; aligned bytes are returned as they are, without a copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace colony::messages {

// The same types as codec.hpp's bytes_view and byte_buffer, named here so this header stays
// free of the generated schema (translation units with CAF include it: clang-tidy's
// bugprone-forward-declaration-namespace trips over codec.hpp's `header` next to CAF's).
using aligned_bytes_view = std::span<const std::uint8_t>;
using aligned_byte_buffer = std::vector<std::uint8_t>;

inline constexpr std::size_t record_alignment = 8;

[[nodiscard]] inline bool is_aligned(aligned_bytes_view bytes) noexcept {
  return reinterpret_cast<std::uintptr_t>(bytes.data()) % record_alignment == 0;
}

// REQUIRES: scratch outlives every use of the returned view; scratch is not otherwise
// modified meanwhile.
[[nodiscard]] inline aligned_bytes_view realign(aligned_bytes_view bytes,
                                                aligned_byte_buffer& scratch) {
  if (is_aligned(bytes)) return bytes;
  scratch.assign(bytes.begin(), bytes.end());
  return {scratch.data(), scratch.size()};
}

// Bytes to append after a record of `size` bytes so the next record stored back to back
// starts aligned (record_batch and other packed buffers).
[[nodiscard]] constexpr std::size_t padding_after(std::size_t size) noexcept {
  return (record_alignment - size % record_alignment) % record_alignment;
}

}  // namespace colony::messages
