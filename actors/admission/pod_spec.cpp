#include "actors/admission/pod_spec.hpp"

#include <algorithm>

namespace colony::admission {

namespace {

void max_into(resource_list& acc, const resource_list& other) {
  acc.zip(other, [](std::int64_t& a, std::int64_t b) { a = std::max(a, b); });
}

resource_list sum_with_init_max(const pod_spec& pod, resource_list container_spec::*field) {
  resource_list total;
  for (const auto& c : pod.containers) total += c.*field;
  // Init containers run one at a time before the others: the pod needs the largest of them.
  for (const auto& c : pod.init_containers) max_into(total, c.*field);
  return total;
}

}  // namespace

resource_list get_pod_request(const pod_spec& pod) {
  resource_list r = sum_with_init_max(pod, &container_spec::requests);
  if (pod.overhead) r += *pod.overhead;
  return r;
}

resource_list get_pod_limits(const pod_spec& pod) {
  resource_list l = sum_with_init_max(pod, &container_spec::limits);
  if (pod.overhead) {
    // Overhead only raises limits that exist (resource.PodLimits).
    l.zip(*pod.overhead, [](std::int64_t& a, std::int64_t b) {
      if (a != 0) a += b;
    });
  }
  return l;
}

const std::string* find_value(const string_map& m, std::string_view key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

}  // namespace colony::admission
