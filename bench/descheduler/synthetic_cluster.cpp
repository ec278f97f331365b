#include "bench/descheduler/synthetic_cluster.hpp"

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "actors/descheduler/migration_filter.hpp"
#include "messages/names.hpp"

namespace colony::bench::descheduler {

namespace {

using colony::descheduler::node_metric_info;
using colony::descheduler::pod_info;
using colony::descheduler::pod_metric_info;

constexpr std::int64_t gib = 1024LL * 1024 * 1024;
constexpr std::int64_t node_cpu = 32'000;
constexpr std::int64_t node_memory = 128 * gib;
constexpr std::size_t namespaces = 50;
constexpr std::size_t replicas = 20;

double uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

enum class load { hot, prod_hot, warm, cold };

struct load_shape {
  double cpu_lo, cpu_hi, mem_lo, mem_hi, prod_share;
};

load_shape shape_of(load l) {
  switch (l) {
    case load::hot:
      return {0.80, 0.95, 0.50, 0.85, 0.5};
    case load::prod_hot:
      return {0.60, 0.72, 0.45, 0.60, 0.9};
    case load::warm:
      return {0.50, 0.70, 0.40, 0.60, 0.3};
    case load::cold:
      break;
  }
  return {0.10, 0.40, 0.20, 0.50, 0.5};
}

// Koordinator's priority bands (apis/extension/priority.go): prod 9000-9999, mid 7000-7999,
// batch 5000-5999, free 3000-3999.
void set_class(pod_info& p, priority_class c, std::int32_t base) {
  p.priority_class_label = c;
  p.has_priority_class_label = true;
  p.labels[std::string(names::label_priority_class)] = std::string(to_string(c));
  p.priority = base;
}

}  // namespace

std::optional<colony::descheduler::workload_info> synthetic_cluster::workload(
    const pod_info& p) const {
  if (p.owner.empty()) return std::nullopt;
  const auto it = workloads.find(p.ns + "/" + p.owner.kind + "/" + p.owner.name);
  if (it == workloads.end()) return std::nullopt;
  return it->second;
}

const colony::descheduler::workload_state* synthetic_cluster::workload_state(
    const pod_info& p) const {
  if (p.owner.empty()) return nullptr;
  const auto it = workload_states.find(colony::descheduler::workload_ref_of(p));
  return it == workload_states.end() ? nullptr : &it->second;
}

colony::descheduler::migration_view synthetic_cluster::view(
    const std::vector<colony::descheduler::job_info>* jobs,
    const colony::descheduler::job_index* index) const {
  colony::descheduler::migration_view v{&pods, jobs,
                                        [this](const pod_info& p) { return workload(p); }, index};
  v.workload_state_of = [this](const pod_info& p) { return workload_state(p); };
  v.pod_index = &pod_index;
  return v;
}

synthetic_cluster make_cluster(std::size_t nodes, std::size_t pods, std::uint64_t seed,
                               std::int64_t now_ms) {
  std::mt19937_64 rng(seed);
  synthetic_cluster c;
  c.nodes.reserve(nodes);
  std::vector<load> loads;
  for (std::size_t n = 0; n < nodes; ++n) {
    colony::descheduler::node_info node;
    node.name = fmt::format("node-{:05}", n);
    node.labels["kubernetes.io/hostname"] = node.name;
    node.allocatable = {{std::string(names::cpu), node_cpu},
                        {std::string(names::memory), node_memory},
                        {std::string(names::pods), 110}};
    c.nodes.push_back(std::move(node));
    const auto r = rng() % 100;
    const load l = r < 10 ? load::hot : r < 15 ? load::prod_hot : r < 40 ? load::warm : load::cold;
    loads.push_back(l);
    ++(l == load::hot        ? c.hot
       : l == load::prod_hot ? c.prod_hot
       : l == load::warm     ? c.warm
                             : c.cold);
  }

  // One DaemonSet pod per node, then workloads of `replicas` pods placed at random.
  auto add_pod = [&](pod_info p) {
    const std::string wk = p.ns + "/" + p.owner.kind + "/" + p.owner.name;
    if (!p.owner.empty()) {
      auto& w = c.workloads[wk];
      w.pods.push_back(p.key());
      w.replicas = static_cast<std::int64_t>(w.pods.size());
    }
    c.pods.emplace(p.key(), std::move(p));
  };
  for (std::size_t n = 0; n < nodes && n < pods; ++n) {
    pod_info p;
    p.ns = "kube-system";
    p.name = "node-exporter-" + c.nodes[n].name;
    p.uid = p.ns + "-" + p.name;
    p.node = c.nodes[n].name;
    p.scheduler_name = "koord-scheduler";
    p.owner = {"DaemonSet", "node-exporter"};
    p.kube_qos = kube_qos_class::burstable;
    set_class(p, priority_class::prod, 9500);
    p.requests = {{std::string(names::cpu), 100}, {std::string(names::memory), 256LL << 20}};
    p.creation_ms = 0;
    add_pod(std::move(p));
  }
  const std::size_t rest = pods > nodes ? pods - nodes : 0;
  for (std::size_t i = 0; i < rest; ++i) {
    const std::size_t w = i / replicas;
    pod_info p;
    p.ns = fmt::format("ns-{:02}", w % namespaces);
    const auto kind = w % 10;  // 1 in 10 workloads is a Job, 1 in 50 pods is bare
    if (i % 50 == 49) {
      p.name = fmt::format("bare-{:06}", i);
    } else if (kind == 9) {
      p.owner = {"Job", fmt::format("job-{:05}", w)};
      p.name = fmt::format("job-{:05}-{:02}", w, i % replicas);
    } else {
      p.owner = {"ReplicaSet", fmt::format("rs-{:05}", w)};
      p.name = fmt::format("rs-{:05}-{:02}", w, i % replicas);
    }
    p.uid = p.ns + "-" + p.name;
    p.node = c.nodes[rng() % nodes].name;
    p.scheduler_name = "koord-scheduler";
    switch (w % 10) {
      case 0:
      case 1:
      case 2:
      case 3:
      case 4:
        p.kube_qos = kube_qos_class::burstable;
        set_class(p, priority_class::prod, 9000 + static_cast<std::int32_t>(w % 1000));
        break;
      case 5:
        p.kube_qos = kube_qos_class::burstable;
        set_class(p, priority_class::mid, 7000 + static_cast<std::int32_t>(w % 1000));
        break;
      case 6:
      case 7:
      case 9:
        p.kube_qos = kube_qos_class::best_effort;
        set_class(p, priority_class::batch, 5000 + static_cast<std::int32_t>(w % 1000));
        break;
      default:
        p.kube_qos = kube_qos_class::best_effort;
        set_class(p, priority_class::free, 3000 + static_cast<std::int32_t>(w % 1000));
        break;
    }
    if (i % 7 == 0)
      p.annotations["controller.kubernetes.io/pod-deletion-cost"] = std::to_string(i % 13);
    p.requests = {{std::string(names::cpu), 600 + static_cast<std::int64_t>(rng() % 600)},
                  {std::string(names::memory), (2 + static_cast<std::int64_t>(rng() % 3)) * gib}};
    p.creation_ms = now_ms - 3'600'000 + static_cast<std::int64_t>(rng() % 3'000'000);
    add_pod(std::move(p));
  }

  // Pods per node in key order (the view's order); then the NodeMetrics.
  std::map<std::string_view, std::size_t> index;
  for (std::size_t n = 0; n < nodes; ++n) index.emplace(c.nodes[n].name, n);
  c.on_node.assign(nodes, {});
  for (const auto& [key, p] : c.pods) c.on_node[index.at(p.node)].push_back(&p);
  for (std::size_t n = 0; n < nodes; ++n) {
    const auto s = shape_of(loads[n]);
    const auto& on = c.on_node[n];
    node_metric_info m;
    m.update_time_ms = now_ms - 10'000;
    const auto sys_cpu = static_cast<std::int64_t>(0.03 * node_cpu);
    const auto sys_mem = static_cast<std::int64_t>(0.04 * static_cast<double>(node_memory));
    m.system_usage = {{std::string(names::cpu), sys_cpu}, {std::string(names::memory), sys_mem}};
    const double cpu_budget =
        uniform(rng, s.cpu_lo, s.cpu_hi) * node_cpu - static_cast<double>(sys_cpu);
    const double mem_budget = uniform(rng, s.mem_lo, s.mem_hi) * static_cast<double>(node_memory) -
                              static_cast<double>(sys_mem);
    // Weights per pod; prod pods share prod_share of the budget, the others the rest.
    std::vector<double> wc(on.size()), wm(on.size());
    double prod_c = 0, other_c = 0, prod_m = 0, other_m = 0;
    for (std::size_t k = 0; k < on.size(); ++k) {
      wc[k] = uniform(rng, 0.5, 1.5);
      wm[k] = uniform(rng, 0.5, 1.5);
      const bool prod = effective_priority_class(*on[k]) == priority_class::prod;
      (prod ? prod_c : other_c) += wc[k];
      (prod ? prod_m : other_m) += wm[k];
    }
    for (std::size_t k = 0; k < on.size(); ++k) {
      const bool prod = effective_priority_class(*on[k]) == priority_class::prod;
      // A node whose pods are all of one side gives that side the whole budget.
      const double share_c =
          prod ? (other_c == 0 ? 1 : s.prod_share) : (prod_c == 0 ? 1 : 1 - s.prod_share);
      const double share_m = share_c;
      pod_metric_info pm;
      pm.ns = on[k]->ns;
      pm.name = on[k]->name;
      pm.usage = {
          {std::string(names::cpu),
           static_cast<std::int64_t>(cpu_budget * share_c * wc[k] / (prod ? prod_c : other_c))},
          {std::string(names::memory),
           static_cast<std::int64_t>(mem_budget * share_m * wm[k] / (prod ? prod_m : other_m))}};
      m.pods.push_back(std::move(pm));
    }
    c.metrics.emplace(c.nodes[n].name, std::move(m));
  }
  for (const auto& [key, p] : c.pods) c.pod_index.emplace(key, &p);
  const auto v = c.view(nullptr, nullptr);
  for (const auto& [key, w] : c.workloads)
    c.workload_states.emplace(key, colony::descheduler::workload_state_of(w, v));
  return c;
}

}  // namespace colony::bench::descheduler
