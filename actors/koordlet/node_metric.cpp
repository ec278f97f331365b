#include "actors/koordlet/node_metric.hpp"

#include <algorithm>

namespace colony::koordlet {

std::int64_t effective_report_interval_seconds(const node_metric_collect_policy& p) noexcept {
  if (!p.report_interval_seconds) return default_report_interval_seconds;
  return std::max(*p.report_interval_seconds, min_report_interval_seconds);
}

std::int64_t effective_aggregate_duration_seconds(const node_metric_collect_policy& p) noexcept {
  if (!p.aggregate_duration_seconds) return default_aggregate_duration_seconds;
  return std::max(*p.aggregate_duration_seconds, min_aggregate_duration_seconds);
}

event_time next_report_time(event_time last, const node_metric_collect_policy& p) noexcept {
  return last + duration_ms{effective_report_interval_seconds(p) * 1000};
}

void sample_window::insert(std::vector<usage_sample>& v, usage_sample s) {
  if (v.empty() || v.back().time <= s.time) {
    v.push_back(s);
    return;
  }
  auto it = std::upper_bound(v.begin(), v.end(), s.time,
                             [](event_time t, const usage_sample& x) { return t < x.time; });
  v.insert(it, s);
}

void sample_window::add_pod(std::string_view uid, usage_sample s) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) it = pods_.emplace(std::string(uid), std::vector<usage_sample>{}).first;
  insert(it->second, s);
}

void sample_window::add_host_app(std::string_view name, usage_sample s) {
  auto it = apps_.find(name);
  if (it == apps_.end()) it = apps_.emplace(std::string(name), std::vector<usage_sample>{}).first;
  insert(it->second, s);
}

void sample_window::add_node_and_system(usage_sample node, std::span<const usage_sample> pods,
                                        std::span<const usage_sample> host_apps) {
  double pc = 0, pm = 0, ac = 0, am = 0;
  for (const auto& p : pods) {
    pc += p.cpu_cores;
    pm += p.memory_bytes;
  }
  for (const auto& a : host_apps) {
    ac += a.cpu_cores;
    am += a.memory_bytes;
  }
  add_node(node);
  add_system({node.time, std::max(node.cpu_cores - pc - ac, 0.0),
              std::max(node.memory_bytes - pm - am, 0.0)});
}

void sample_window::trim(event_time before) {
  auto cut = [&](std::vector<usage_sample>& v) {
    auto it = std::lower_bound(v.begin(), v.end(), before,
                               [](const usage_sample& x, event_time t) { return x.time < t; });
    v.erase(v.begin(), it);
  };
  cut(node_);
  cut(system_);
  for (auto* m : {&pods_, &apps_}) {
    for (auto it = m->begin(); it != m->end();) {
      cut(it->second);
      it = it->second.empty() ? m->erase(it) : std::next(it);
    }
  }
}

void sample_window::trim_pods(event_time before) {
  for (auto* m : {&pods_, &apps_}) {
    for (auto it = m->begin(); it != m->end();) {
      auto& v = it->second;
      v.erase(v.begin(),
              std::lower_bound(v.begin(), v.end(), before,
                               [](const usage_sample& x, event_time t) { return x.time < t; }));
      it = v.empty() ? m->erase(it) : std::next(it);
    }
  }
}

std::span<const usage_sample> sample_window::pod(std::string_view uid) const {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return {};
  return it->second;
}

std::span<const usage_sample> sample_window::host_app(std::string_view name) const {
  auto it = apps_.find(name);
  if (it == apps_.end()) return {};
  return it->second;
}

std::size_t sample_window::sample_count() const {
  std::size_t n = node_.size() + system_.size();
  for (const auto& [k, v] : pods_) n += v.size();
  for (const auto& [k, v] : apps_) n += v.size();
  return n;
}

double percentile_of(std::vector<double>& values, float p) {
  std::sort(values.begin(), values.end());
  // float32 multiply, as Go's int(float32(n) * percentile) - 1.
  const float scaled = static_cast<float>(values.size()) * p;
  int idx = static_cast<int>(scaled) - 1;
  if (idx < 0) idx = 0;
  return values[static_cast<std::size_t>(idx)];
}

namespace {

// Samples of s with time in [start, end], both ends included (the TSDB querier's range).
std::span<const usage_sample> range(std::span<const usage_sample> s, event_time start,
                                    event_time end) {
  auto lo = std::lower_bound(s.begin(), s.end(), start,
                             [](const usage_sample& x, event_time t) { return x.time < t; });
  auto hi = std::upper_bound(s.begin(), s.end(), end,
                             [](event_time t, const usage_sample& x) { return t < x.time; });
  if (lo >= hi) return {};
  return s.subspan(static_cast<std::size_t>(lo - s.begin()), static_cast<std::size_t>(hi - lo));
}

std::optional<resource_usage> average(std::span<const usage_sample> s) {
  if (s.empty()) return std::nullopt;
  double c = 0, m = 0;
  for (const auto& x : s) {
    c += x.cpu_cores;
    m += x.memory_bytes;
  }
  const double n = static_cast<double>(s.size());
  return resource_usage{static_cast<std::int64_t>(c / n * 1000), static_cast<std::int64_t>(m / n)};
}

// collectNodeAggregateMetric / collectSystemAggregateMetric for one duration.
aggregated_usage aggregate(std::span<const usage_sample> series, std::int64_t duration_s,
                           event_time now, std::vector<double>& cpu, std::vector<double>& mem) {
  aggregated_usage a;
  a.duration_seconds = duration_s;
  auto s = range(series, now + duration_ms{-duration_s * 1000}, now);
  if (s.empty()) return a;
  // metricsInColdStart: the samples must span at least half of the duration.
  const double span_s = static_cast<double>(s.back().time.value - s.front().time.value) / 1000;
  if (span_s < static_cast<double>(duration_s) * validate_time_range_ratio) return a;
  a.avg = average(s);
  cpu.clear();
  mem.clear();
  for (const auto& x : s) {
    cpu.push_back(x.cpu_cores);
    mem.push_back(x.memory_bytes);
  }
  // percentile_of sorts in place; later calls see sorted input and give the same answer.
  auto at = [&](float p) {
    return resource_usage{static_cast<std::int64_t>(percentile_of(cpu, p) * 1000),
                          static_cast<std::int64_t>(percentile_of(mem, p))};
  };
  a.p50 = at(0.5f);
  a.p90 = at(0.9f);
  a.p95 = at(0.95f);
  a.p99 = at(0.99f);
  return a;
}

}  // namespace

node_metric_status build_node_metric_status(const sample_window& w, std::span<const pod_info> pods,
                                            std::span<const host_app_info> host_apps,
                                            const node_metric_collect_policy& policy,
                                            event_time now) {
  node_metric_status st;
  st.update_time = now;
  const event_time start = now + duration_ms{-effective_aggregate_duration_seconds(policy) * 1000};
  auto& nm = st.node_metric;
  nm.node_usage = average(range(w.node(), start, now));
  nm.system_usage = average(range(w.system(), start, now));
  std::vector<double> cpu, mem;
  for (auto d : policy.aggregate_durations_seconds) {
    nm.aggregated_node_usages.push_back(aggregate(w.node(), d, now, cpu, mem));
    nm.aggregated_system_usages.push_back(aggregate(w.system(), d, now, cpu, mem));
  }

  st.pods_metric.reserve(pods.size());
  for (const auto& p : pods) {
    auto u = average(range(w.pod(p.uid), start, now));
    if (!u) continue;  // collectPodMetric failed: pod left out this round
    st.pods_metric.push_back(
        {p.ns, p.name, *u, pod_priority_class_with_default(p), pod_qos_with_default(p)});
  }
  std::sort(st.pods_metric.begin(), st.pods_metric.end(),
            [](const pod_metric_info& a, const pod_metric_info& b) {
              if (a.ns != b.ns) return a.ns < b.ns;
              return a.name < b.name;
            });
  for (const auto& h : host_apps) {
    auto u = average(range(w.host_app(h.name), start, now));
    if (!u) continue;
    st.host_app_metric.push_back({h.name, *u, h.priority, h.qos});
  }
  std::sort(
      st.host_app_metric.begin(), st.host_app_metric.end(),
      [](const host_app_metric_info& a, const host_app_metric_info& b) { return a.name < b.name; });
  return st;
}

}  // namespace colony::koordlet
