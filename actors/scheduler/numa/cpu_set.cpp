#include "actors/scheduler/numa/cpu_set.hpp"

#include <algorithm>
#include <charconv>

namespace colony::scheduler::numa {
namespace {

// strconv.Atoi on one bound: digits only (Kubernetes' Parse accepts no sign or space).
bool parse_id(std::string_view s, int& out) {
  if (s.empty()) return false;
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc{} && p == end && out >= 0 && out <= max_cpu_id;
}

}  // namespace

result<cpu_set> cpu_set::parse(std::string_view s) {
  cpu_set out;
  if (s.empty()) return out;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto comma = s.find(',', start);
    if (comma == std::string_view::npos) comma = s.size();
    const auto part = s.substr(start, comma - start);
    const auto dash = part.find('-');
    int lo = 0;
    int hi = 0;
    if (dash == std::string_view::npos) {
      if (!parse_id(part, lo))
        return fail(errc::invalid_input, "invalid cpu id \"" + std::string(part) + "\"",
                    "cpuset \"" + std::string(s) + "\"");
      hi = lo;
    } else {
      // SplitN(r, "-", 2): "1-3-4" leaves "3-4" as the upper bound, which is not a number.
      if (!parse_id(part.substr(0, dash), lo) || !parse_id(part.substr(dash + 1), hi))
        return fail(errc::invalid_input, "invalid cpu range \"" + std::string(part) + "\"",
                    "cpuset \"" + std::string(s) + "\"");
      if (lo > hi)
        return fail(errc::invalid_input,
                    "invalid range \"" + std::string(part) + "\" (" + std::to_string(lo) + " > " +
                        std::to_string(hi) + ")",
                    "cpuset \"" + std::string(s) + "\"");
    }
    for (int id = lo; id <= hi; ++id) out.insert(id);
    start = comma + 1;
  }
  return out;
}

std::string cpu_set::to_string() const {
  std::string out;
  int run_start = -1;
  int prev = -2;
  auto flush = [&] {
    if (run_start < 0) return;
    if (!out.empty()) out += ',';
    out += std::to_string(run_start);
    if (prev != run_start) {
      out += '-';
      out += std::to_string(prev);
    }
  };
  for_each([&](int id) {
    if (id != prev + 1) {
      flush();
      run_start = id;
    }
    prev = id;
  });
  flush();
  return out;
}

cpu_set cpu_set::union_with(const cpu_set& o) const {
  cpu_set r = words_.size() >= o.words_.size() ? *this : o;
  const auto& small = words_.size() >= o.words_.size() ? o.words_ : words_;
  for (std::size_t i = 0; i < small.size(); ++i) r.words_[i] |= small[i];
  return r;
}

cpu_set cpu_set::intersection(const cpu_set& o) const {
  cpu_set r;
  r.words_.resize(std::min(words_.size(), o.words_.size()));
  for (std::size_t i = 0; i < r.words_.size(); ++i) r.words_[i] = words_[i] & o.words_[i];
  return r;
}

cpu_set cpu_set::difference(const cpu_set& o) const {
  cpu_set r = *this;
  const auto n = std::min(words_.size(), o.words_.size());
  for (std::size_t i = 0; i < n; ++i) r.words_[i] &= ~o.words_[i];
  return r;
}

std::vector<int> cpu_set::to_vector() const {
  std::vector<int> v;
  v.reserve(static_cast<std::size_t>(size()));
  for_each([&](int id) { v.push_back(id); });
  return v;
}

bool cpu_set::operator==(const cpu_set& o) const {
  const auto n = std::max(words_.size(), o.words_.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto a = i < words_.size() ? words_[i] : 0;
    const auto b = i < o.words_.size() ? o.words_[i] : 0;
    if (a != b) return false;
  }
  return true;
}

}  // namespace colony::scheduler::numa
