// string_map<V>: an unordered_map keyed by std::string that a std::string_view finds without
// building a std::string (heterogeneous lookup, C++20). For lookups only: its iteration order is
// unspecified, so nothing that is output may iterate one (docs/architecture.md "Determinism").
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace colony {

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

template <class V>
using string_map = std::unordered_map<std::string, V, string_hash, std::equal_to<>>;

}  // namespace colony
