#include "actors/koordlet/koordlet_types.hpp"

#include <algorithm>
#include <charconv>

namespace colony::koordlet {

std::string_view to_string(evict_feature f) noexcept {
  switch (f) {
    case evict_feature::be_memory_evict:
      return "BEMemoryEvict";
    case evict_feature::memory_allocatable_evict:
      return "MemoryAllocatableEvict";
    case evict_feature::memory_evict:
      return "MemoryEvict";
    case evict_feature::be_cpu_evict:
      return "BECPUEvict";
    case evict_feature::cpu_allocatable_evict:
      return "CPUAllocatableEvict";
    case evict_feature::cpu_evict:
      return "CPUEvict";
  }
  return "";
}

// GetPodPriorityClassRaw: the label wins and never falls back to spec.priority.
priority_class pod_priority_class_raw(const pod_info& p) noexcept {
  if (p.priority_class_label) return *p.priority_class_label;
  return get_priority_class_by_priority(p.priority);
}

// GetPodQoSClassWithDefault: Guaranteed maps to LSR (QoSClassForGuaranteed), not LS.
qos_class pod_qos_with_default(const pod_info& p) noexcept {
  if (p.qos != qos_class::none) return p.qos;
  return get_pod_qos_class_with_kube_qos(p.kube_qos_class);
}

priority_class pod_priority_class_with_default(const pod_info& p) noexcept {
  auto raw = pod_priority_class_raw(p);
  if (raw != priority_class::none) return raw;
  return get_pod_priority_class_with_qos(pod_qos_with_default(p));
}

// GetPodPriorityValueWithDefault: spec.priority when set and non-zero, else the class default.
std::int32_t pod_priority_value_with_default(const pod_info& p) noexcept {
  if (p.priority && *p.priority != colony::priority_none_value_default) return *p.priority;
  return get_default_priority_by_priority_class(pod_priority_class_with_default(p));
}

std::string format_cpuset(std::vector<std::int32_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ids[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(ids[j]);
    }
    i = j + 1;
  }
  return out;
}

namespace {
bool parse_int(std::string_view s, std::int32_t& v) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && p == s.data() + s.size() && v >= 0;
}
}  // namespace

result<std::vector<std::int32_t>> parse_cpuset(std::string_view s) {
  std::vector<std::int32_t> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    auto comma = s.find(',', pos);
    if (comma == std::string_view::npos) comma = s.size();
    auto tok = s.substr(pos, comma - pos);
    pos = comma + 1;
    bool blank = tok.find_first_not_of(" \n\t") == std::string_view::npos;
    if (blank) {
      if (comma == s.size()) break;
      continue;
    }
    auto dash = tok.find('-');
    std::int32_t a = 0, b = 0;
    if (dash == std::string_view::npos) {
      if (!parse_int(tok, a))
        return fail(errc::invalid_input, "bad cpu id '" + std::string(tok) + "'", "cpuset");
      b = a;
    } else if (!parse_int(tok.substr(0, dash), a) || !parse_int(tok.substr(dash + 1), b) || b < a) {
      return fail(errc::invalid_input, "bad cpu range '" + std::string(tok) + "'", "cpuset");
    }
    for (auto i = a; i <= b; ++i) out.push_back(i);
    if (comma == s.size()) break;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace colony::koordlet
