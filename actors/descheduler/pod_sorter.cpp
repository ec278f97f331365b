#include "actors/descheduler/pod_sorter.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

namespace colony::descheduler {

namespace {

int cmp(std::int64_t a, std::int64_t b) { return a == b ? 0 : (a < b ? -1 : 1); }

// koordPriorityClassOrder
int priority_class_order(priority_class c) {
  switch (c) {
    case priority_class::free:
      return 1;
    case priority_class::batch:
      return 2;
    case priority_class::mid:
      return 3;
    case priority_class::prod:
      return 4;
    case priority_class::none:
      break;
  }
  return 5;
}

// koordQoSClassOrder
int qos_order(qos_class q) {
  switch (q) {
    case qos_class::be:
      return 1;
    case qos_class::ls:
      return 2;
    case qos_class::lsr:
      return 3;
    case qos_class::lse:
    case qos_class::system:
      return 4;
    case qos_class::none:
      break;
  }
  return 5;
}

// k8sQoSClassOrder
int kube_qos_order(kube_qos_class q) {
  switch (q) {
    case kube_qos_class::best_effort:
      return 1;
    case kube_qos_class::burstable:
      return 2;
    case kube_qos_class::guaranteed:
      return 3;
    case kube_qos_class::unset:
      break;
  }
  return 0;
}

}  // namespace

std::int32_t int32_annotation(const pod_info& p, std::string_view key) {
  const auto it = p.annotations.find(key);
  if (it == p.annotations.end()) return 0;
  const std::string& s = it->second;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() ||
      v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
    return 0;
  return static_cast<std::int32_t>(v);
}

pod_class_key pod_class_key_of(const pod_info& p) {
  return {priority_class_order(effective_priority_class(p)),
          p.priority.value_or(0),
          kube_qos_order(p.kube_qos),
          qos_order(effective_qos_class(p)),
          int32_annotation(p, annotation_pod_deletion_cost),
          int32_annotation(p, annotation_eviction_cost)};
}

int compare_pods_by_class(const pod_info& a, const pod_info& b) {
  const auto c = pod_class_key_of(a) <=> pod_class_key_of(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

int compare_pods_by_creation(const pod_info& a, const pod_info& b) {
  return cmp(b.creation_ms, a.creation_ms);
}

double pod_usage_score(const resource_amounts& pod_usage, const resource_amounts& excess,
                       const weight_map& w) {
  double score = 0;
  std::int64_t weight_sum = 0;
  for (const auto& [r, u] : pod_usage) {
    const auto wi = w.find(r);
    const std::int64_t weight = wi == w.end() ? 0 : wi->second;
    const std::int64_t x = amount(excess, r);
    double s = 0;
    if (x != 0) {
      const double ratio = static_cast<double>(u) / static_cast<double>(x);
      s = ratio >= 1 ? 1 / ratio + 1 : ratio;
    }
    score += s * static_cast<double>(weight);
    weight_sum += weight;
  }
  return weight_sum == 0 ? 0 : score / static_cast<double>(weight_sum);
}

std::int64_t node_usage_score(const resource_amounts& usage, const resource_amounts& allocatable,
                              const weight_map& w) {
  std::int64_t score = 0, weight_sum = 0;
  for (const auto& [r, u] : usage) {
    const auto wi = w.find(r);
    const std::int64_t weight = wi == w.end() ? 0 : wi->second;
    const std::int64_t c = amount(allocatable, r);
    const std::int64_t s = c == 0 ? 0 : std::min(u, c) * 1000 / c;
    score += s * weight;
    weight_sum += weight;
  }
  return weight_sum == 0 ? 0 : score / weight_sum;
}

void sort_pods_by_usage(std::vector<const pod_info*>& pods, const resource_amounts& excess,
                        const weight_map& weights, const pod_metric_lookup& metric) {
  struct keyed {
    const pod_info* p;
    const resource_amounts* m;
    double score;
    pod_class_key k;
  };
  std::vector<keyed> v;
  v.reserve(pods.size());
  for (const auto* p : pods) {
    const auto* m = metric(*p);
    v.push_back({p, m, m ? pod_usage_score(*m, excess, weights) : 0.0, pod_class_key_of(*p)});
  }
  std::stable_sort(v.begin(), v.end(), [](const keyed& a, const keyed& b) {
    if (a.k != b.k) return a.k < b.k;
    // Reverse(PodUsage): pods with a metric first, then the higher score.
    if ((a.m == nullptr) != (b.m == nullptr)) return a.m != nullptr;
    if (a.m && a.score != b.score) return a.score > b.score;
    return compare_pods_by_creation(*a.p, *b.p) < 0;
  });
  for (std::size_t i = 0; i < v.size(); ++i) pods[i] = v[i].p;
}

}  // namespace colony::descheduler
