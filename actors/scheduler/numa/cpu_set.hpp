// cpu_set: a set of logical CPU ids as a bitset, with the Linux CPU list format ("0-3,8,10-11")
// that cpuset.cpus, Koordinator's resource-status annotation and kubelet's reservedCPUs use.
//
// Koordinator: pkg/util/cpuset/cpuset.go (a copy of Kubernetes' pkg/kubelet/cm/cpuset).
// Iteration is always in ascending id order, so every result built from a cpu_set is
// deterministic.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "messages/result.hpp"

namespace colony::scheduler::numa {

// The largest id parse() accepts: Linux's NR_CPUS tops out at 8192; the cap keeps a typo such
// as "0-4000000000" from allocating gigabytes.
inline constexpr int max_cpu_id = 65535;

class cpu_set {
 public:
  cpu_set() = default;
  cpu_set(std::initializer_list<int> ids) {
    for (int id : ids) insert(id);
  }

  // cpuset.Parse: comma-separated ids and inclusive "a-b" ranges, in any order; "" is empty.
  // Errors name the offending element (a non-number, "1-3-4", a range with a > b, a negative id,
  // an id above max_cpu_id).
  [[nodiscard]] static result<cpu_set> parse(std::string_view s);
  // CPUSet.String: ascending, consecutive ids folded into "a-b"; "" when empty.
  [[nodiscard]] std::string to_string() const;

  // REQUIRES: id >= 0.
  void insert(int id) {
    const auto w = static_cast<std::size_t>(id) / 64;
    if (w >= words_.size()) words_.resize(w + 1, 0);
    words_[w] |= std::uint64_t{1} << (id % 64);
  }
  void erase(int id) {
    const auto w = static_cast<std::size_t>(id) / 64;
    if (id >= 0 && w < words_.size()) words_[w] &= ~(std::uint64_t{1} << (id % 64));
  }
  [[nodiscard]] bool contains(int id) const {
    const auto w = static_cast<std::size_t>(id) / 64;
    return id >= 0 && w < words_.size() && ((words_[w] >> (id % 64)) & 1U) != 0;
  }
  [[nodiscard]] int size() const {
    int n = 0;
    for (auto w : words_) n += std::popcount(w);
    return n;
  }
  [[nodiscard]] bool empty() const {
    for (auto w : words_)
      if (w != 0) return false;
    return true;
  }

  [[nodiscard]] cpu_set union_with(const cpu_set& o) const;
  [[nodiscard]] cpu_set intersection(const cpu_set& o) const;
  [[nodiscard]] cpu_set difference(const cpu_set& o) const;
  [[nodiscard]] std::vector<int> to_vector() const;

  // Calls f(id) for every member in ascending order.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t w = 0; w < words_.size(); ++w) {
      auto bits = words_[w];
      while (bits != 0) {
        const int b = std::countr_zero(bits);
        f(static_cast<int>(w * 64) + b);
        bits &= bits - 1;
      }
    }
  }

  // Equal when the members are equal (trailing zero words do not count).
  [[nodiscard]] bool operator==(const cpu_set& o) const;

 private:
  std::vector<std::uint64_t> words_;
};

}  // namespace colony::scheduler::numa
