#include "actors/koordlet/cpu_evict.hpp"

#include <algorithm>

namespace colony::koordlet {

std::int64_t cpu_evict_window_seconds(const resource_threshold_strategy& cfg,
                                      const qos_manager_timing& timing) {
  std::int64_t w = timing.collect_res_used_interval.value / 1000;
  if (cfg.cpu_evict_time_window_seconds && *cfg.cpu_evict_time_window_seconds > w)
    w = *cfg.cpu_evict_time_window_seconds;
  return w;
}

be_cpu_window summarize_be_cpu(std::span<const be_cpu_sample> samples, event_time now,
                               std::int64_t window_seconds, duration_ms collect_interval) {
  be_cpu_window w;
  const event_time start = now + duration_ms{-window_seconds * 1000};
  const event_time last_start = now + duration_ms{-2 * collect_interval.value};
  double su = 0, sr = 0, sl = 0;
  const be_cpu_sample* last = nullptr;
  for (const auto& s : samples) {
    if (s.time > now) break;
    if (s.time >= start) {
      su += s.usage_milli;
      sr += s.request_milli;
      sl += s.real_limit_milli;
      ++w.count;
    }
    if (s.time >= last_start) last = &s;
  }
  if (w.count > 0) {
    w.avg_usage = su / double(w.count);
    w.avg_request = sr / double(w.count);
    w.avg_real_limit = sl / double(w.count);
  }
  if (last) {
    w.last_usage = last->usage_milli;
    w.last_request = last->request_milli;
    w.last_real_limit = last->real_limit_milli;
  }
  return w;
}

double be_milli_allocatable(const node_info& node) {
  if (!node.has_batch_cpu_allocatable || node.allocatable.batch_cpu_milli < 0) return -1;
  if (node.allocatable.batch_cpu_milli == 0) return default_min_allocatable_batch_milli_cpu;
  return double(node.allocatable.batch_cpu_milli);
}

bool is_be_cpu_usage_high_enough(double usage, double limit,
                                 std::optional<std::int64_t> threshold) {
  if (limit <= 0) return false;
  if (limit < 1000) return true;  // less than one core: always "high enough"
  const double ratio = usage / limit;
  return !(ratio < double(threshold.value_or(be_cpu_usage_threshold_percent)) / 100);
}

std::int64_t calculate_resource_milli_to_release_by_satisfaction(
    double request, double limit, const resource_threshold_strategy& cfg) {
  if (request <= 0) return 0;
  const double rate = limit / request;
  if (rate > double(cfg.cpu_evict_be_satisfaction_lower_percent.value_or(0)) / 100) return 0;
  const double gap = double(cfg.cpu_evict_be_satisfaction_upper_percent.value_or(0)) / 100 - rate;
  if (gap <= 0) return 0;
  return static_cast<std::int64_t>(request * gap);
}

be_satisfaction_release calculate_milli_release_by_be_satisfaction(
    const be_cpu_window& w, const resource_threshold_strategy& cfg, const node_info& node,
    std::int64_t window_seconds, std::int64_t interval_seconds) {
  be_satisfaction_release out;
  const bool by_alloc = cfg.cpu_evict_policy == cpu_evict_policy_type::evict_by_allocatable;
  const double alloc = be_milli_allocatable(node);
  const double avg_limit = by_alloc ? alloc : w.avg_real_limit;
  const double last_limit = by_alloc ? alloc : w.last_real_limit;
  auto& e = out.explain;
  e.push_back({"windowSeconds", double(window_seconds), "s",
               "max(collect interval, cpuEvictTimeWindowSeconds)"});
  e.push_back({"metricsCount", double(w.count), "count", "BE samples in the window"});
  e.push_back(
      {"avgBECPUMilliUsage", w.avg_usage, "milli", "besteffort cgroup usage, window average"});
  e.push_back({"avgBECPUMilliRequest", w.avg_request, "milli",
               "sum of BE batch-cpu requests, window average"});
  e.push_back({"avgBECPUMilliLimit", avg_limit, "milli",
               by_alloc ? "node allocatable batch-cpu (evictByAllocatable)"
                        : "BE real limit, window average"});
  e.push_back({"currentBECPUMilliUsage", w.last_usage, "milli", "last BE usage"});
  e.push_back({"currentBECPUMilliRequest", w.last_request, "milli", "last BE request"});
  e.push_back({"currentBECPUMilliLimit", last_limit, "milli", "last BE limit"});
  e.push_back({"cpuEvictBESatisfactionLowerPercent",
               double(cfg.cpu_evict_be_satisfaction_lower_percent.value_or(-1)), "percent",
               "evict when limit/request <= this"});
  e.push_back({"cpuEvictBESatisfactionUpperPercent",
               double(cfg.cpu_evict_be_satisfaction_upper_percent.value_or(-1)), "percent",
               "release until limit/request reaches this"});
  e.push_back(
      {"cpuEvictBEUsageThresholdPercent",
       double(cfg.cpu_evict_be_usage_threshold_percent.value_or(be_cpu_usage_threshold_percent)),
       "percent", "BE usage/limit must reach this"});

  auto finish = [&](std::int64_t m) {
    out.milli = m;
    e.push_back({"milliRelease", double(m), "milli",
                 "batch-cpu to release = request x (upper - limit/request)"});
    return out;
  };
  if (w.count * interval_seconds < window_seconds / 3) return finish(0);  // isAvgQueryResultValid
  if (!is_be_cpu_usage_high_enough(w.avg_usage, avg_limit,
                                   cfg.cpu_evict_be_usage_threshold_percent))
    return finish(0);
  std::int64_t rel =
      calculate_resource_milli_to_release_by_satisfaction(w.avg_request, avg_limit, cfg);
  if (rel <= 0) return finish(0);
  if (!is_be_cpu_usage_high_enough(w.last_usage, last_limit,
                                   cfg.cpu_evict_be_usage_threshold_percent))
    return finish(0);
  if (w.last_request == w.avg_request && last_limit == avg_limit) return finish(rel);
  const std::int64_t cur =
      calculate_resource_milli_to_release_by_satisfaction(w.last_request, last_limit, cfg);
  if (cur <= 0) return finish(0);
  return finish(std::min(rel, cur));
}

std::optional<std::int64_t> cpu_release_by_used_threshold(std::int64_t capacity_milli,
                                                          std::optional<double> node_used_cores,
                                                          std::int64_t threshold,
                                                          std::optional<std::int64_t> lower) {
  if (!node_used_cores || capacity_milli <= 0) return std::nullopt;
  const std::int64_t usage =
      static_cast<std::int64_t>(*node_used_cores * 1000) * 100 / capacity_milli;
  if (usage < threshold) return std::nullopt;
  const std::int64_t low = lower ? *lower : threshold - cpu_release_buffer_percent;
  return capacity_milli * (usage - low) / 100;
}

cpu_allocatable_release cpu_release_by_allocatable_threshold(const node_info& node,
                                                             std::span<const pod_info> pods,
                                                             std::int32_t priority_threshold,
                                                             std::int64_t threshold,
                                                             std::int64_t lower) {
  cpu_allocatable_release out;
  if (threshold < 0) return out;
  resource_list requested;
  bool seen_cpu = false, seen_batch = false, seen_mid = false;
  for (const auto& p : pods) {
    if (pod_priority_value_with_default(p) > priority_threshold) continue;
    resource_list r;
    (void)request_by_class(p, true, &r);
    switch (pod_priority_class_with_default(p)) {
      case priority_class::batch:
        seen_batch = true;
        break;
      case priority_class::mid:
        seen_mid = true;
        break;
      default:
        seen_cpu = true;
        break;
    }
    requested += r;
  }
  auto one = [&](bool seen, std::int64_t rq, std::int64_t alloc, std::int64_t resource_list::*field,
                 priority_class cls) {
    if (!seen) return;
    if (alloc == 0) {
      out.release.*field = rq;
    } else if (double(rq) / double(alloc) > double(threshold) / 100) {
      out.release.*field =
          static_cast<std::int64_t>(double(rq) - double(lower) / 100 * double(alloc));
    } else {
      return;
    }
    if (cls != priority_class::none)
      out.classes |= static_cast<std::uint8_t>(1u << static_cast<unsigned>(cls));
  };
  one(seen_cpu, requested.cpu_milli, node.allocatable.cpu_milli, &resource_list::cpu_milli,
      priority_class::none);
  one(seen_batch, requested.batch_cpu_milli, node.allocatable.batch_cpu_milli,
      &resource_list::batch_cpu_milli, priority_class::batch);
  one(seen_mid, requested.mid_cpu_milli, node.allocatable.mid_cpu_milli,
      &resource_list::mid_cpu_milli, priority_class::mid);
  return out;
}

namespace {

std::int64_t batch_cpu_request(const pod_info& p) {
  if (p.containers.empty()) return std::max<std::int64_t>(p.requests.batch_cpu_milli, 0);
  std::int64_t s = 0;
  for (const auto& c : p.containers) s += std::max<std::int64_t>(c.requests.batch_cpu_milli, 0);
  return s;
}

}  // namespace

std::vector<evict_candidate> sorted_be_cpu_candidates(std::span<const pod_info> pods) {
  std::vector<evict_candidate> c;
  bool all_have_priority = true;
  for (std::uint32_t i = 0; i < pods.size(); ++i) {
    const auto& p = pods[i];
    if (p.qos != qos_class::be || !eviction_policy_allows(p, evict_feature::be_cpu_evict)) continue;
    evict_candidate e;
    e.pod = i;
    e.priority = p.priority.value_or(0);
    e.label_priority = p.priority_label.value_or(e.priority);
    e.eviction_priority = p.eviction_priority;
    e.used = static_cast<std::int64_t>(p.cpu_used_cores.value_or(0) * 1000);
    e.request = batch_cpu_request(p);
    if (e.request > 0) e.usage_ratio = double(e.used) / double(e.request);
    all_have_priority = all_have_priority && p.priority.has_value();
    c.push_back(e);
  }
  auto less = [&](const evict_candidate& a, const evict_candidate& b) {
    const auto& pa = pods[a.pod];
    const auto& pb = pods[b.pod];
    if (!pa.priority || !pb.priority || *pa.priority == *pb.priority) {
      if (a.usage_ratio != b.usage_ratio) return a.usage_ratio > b.usage_ratio;
      if (pa.ns != pb.ns) return pa.ns < pb.ns;
      return pa.name < pb.name;
    }
    return *pa.priority < *pb.priority;
  };
  if (all_have_priority) {
    std::sort(c.begin(), c.end(), less);
  } else {  // Go's comparator is not transitive with missing priorities: stable insertion sort
    for (std::size_t i = 1; i < c.size(); ++i) {
      auto x = c[i];
      std::size_t j = i;
      while (j > 0 && less(x, c[j - 1])) {
        c[j] = c[j - 1];
        --j;
      }
      c[j] = x;
    }
  }
  return c;
}

std::vector<evict_candidate> sorted_cpu_candidates(std::span<const pod_info> pods,
                                                   evict_feature feature,
                                                   std::int32_t priority_threshold,
                                                   bool by_request) {
  std::vector<evict_candidate> c;
  for (std::uint32_t i = 0; i < pods.size(); ++i) {
    const auto& p = pods[i];
    if (!pod_is_active(p) || !eviction_policy_allows(p, feature)) continue;
    const auto prio = pod_priority_value_with_default(p);
    if (prio > priority_threshold || !p.eviction_enabled || !p.cpu_used_cores) continue;
    evict_candidate e;
    e.pod = i;
    e.priority = prio;
    e.label_priority = p.priority_label.value_or(prio);
    e.eviction_priority = p.eviction_priority;
    e.used = static_cast<std::int64_t>(*p.cpu_used_cores * 1000);
    e.request = request_by_class(p, true);
    c.push_back(e);
  }
  sort_by_priority(c, pods, by_request);
  return c;
}

std::optional<std::string_view> check_cpu_evict_config(const resource_threshold_strategy& cfg,
                                                       evict_feature f) {
  switch (f) {
    case evict_feature::be_cpu_evict: {  // isSatisfactionConfigValid
      const auto& lo = cfg.cpu_evict_be_satisfaction_lower_percent;
      const auto& up = cfg.cpu_evict_be_satisfaction_upper_percent;
      if (!lo || !up)
        return "CPUEvictBESatisfactionLowerPercent or CPUEvictBESatisfactionUpperPercent not "
               "config";
      if (*lo > be_cpu_satisfaction_low_percent_max || *lo <= 0)
        return "CPUEvictBESatisfactionLowerPercent is not valid, must (0,60]";
      if (*up >= be_cpu_satisfaction_upper_percent_max || *up <= 0)
        return "CPUEvictBESatisfactionUpperPercent is not valid, must (0,100)";
      if (*up < *lo)
        return "CPUEvictBESatisfactionUpperPercent < CPUEvictBESatisfactionLowerPercent";
      return std::nullopt;
    }
    case evict_feature::cpu_evict: {  // isUsedThresholdConfigValid
      if (!cfg.cpu_evict_threshold_percent) return "CPUEvictThresholdPercent not config";
      const auto t = *cfg.cpu_evict_threshold_percent;
      if (t < 0) return "threshold percent should greater than 0";
      if (cfg.cpu_evict_lower_percent.value_or(t - cpu_release_buffer_percent) >= t)
        return "lower percent should less than threshold percent";
      if (!cfg.evict_enabled_priority_threshold) return "EvictEnabledPriorityThreshold not config";
      return std::nullopt;
    }
    case evict_feature::cpu_allocatable_evict: {  // isAllocatableThresholdConfigValid
      if (!cfg.cpu_allocatable_evict_threshold_percent)
        return "CPUAllocatableEvictThresholdPercent not config";
      if (*cfg.cpu_allocatable_evict_threshold_percent < 0)
        return "threshold percent should greater than 0";
      if (!cfg.cpu_allocatable_evict_lower_percent)
        return "CPUAllocatableEvictLowerPercent not config";
      if (*cfg.cpu_allocatable_evict_lower_percent >= *cfg.cpu_allocatable_evict_threshold_percent)
        return "lower percent should less than threshold percent";
      if (!cfg.allocatable_evict_priority_threshold)
        return "AllocatableEvictPriorityThreshold not config";
      if (*cfg.allocatable_evict_priority_threshold > 7999)
        return "priority threshold should be at most 7999";
      return std::nullopt;
    }
    default:
      return "unknown feature";
  }
}

cpu_evict_decision cpu_evict(const cpu_evict_input& in, const resource_threshold_strategy& cfg,
                             const koordlet_feature_gates& gates, const qos_manager_timing& timing,
                             const evictor_state& state, event_time now) {
  cpu_evict_decision d;
  d.next_state = state;
  if (!(gates.be_cpu_evict || gates.cpu_evict || gates.cpu_allocatable_evict)) {
    d.skip_reason = "no cpu evict feature gate on";
    return d;
  }
  if (now.value - state.last_evict_time.value < timing.cpu_evict_cool_time.value) {
    d.skip_reason = "cooling down";
    return d;
  }
  if (in.node == nullptr) {
    d.skip_reason = "no node";
    return d;
  }
  const std::int64_t capacity = in.node->capacity.cpu_milli;
  if (capacity <= 0) {
    d.skip_reason = "node cpu capacity not valid";
    return d;
  }
  d.ran = true;
  const std::int64_t window = cpu_evict_window_seconds(cfg, timing);
  const std::int64_t interval_s = timing.collect_res_used_interval.value / 1000;
  const evict_feature order[] = {evict_feature::be_cpu_evict, evict_feature::cpu_allocatable_evict,
                                 evict_feature::cpu_evict};
  for (auto f : order) {
    bool gate = f == evict_feature::be_cpu_evict            ? gates.be_cpu_evict
                : f == evict_feature::cpu_allocatable_evict ? gates.cpu_allocatable_evict
                                                            : gates.cpu_evict;
    if (!gate || !cfg.enable) continue;
    if (auto err = check_cpu_evict_config(cfg, f)) {
      d.config_errors.emplace_back(f, *err);
      continue;
    }
    evict_task t;
    t.feature = f;
    if (f == evict_feature::be_cpu_evict) {
      auto rel =
          calculate_milli_release_by_be_satisfaction(in.be, cfg, *in.node, window, interval_s);
      d.be_satisfaction_explain = std::move(rel.explain);
      if (rel.milli <= 0) continue;
      t.target = release_target::pod_request;
      t.to_release.batch_cpu_milli = rel.milli;
      t.measure = measure_kind::batch_cpu_request;
      t.victims = sorted_be_cpu_candidates(in.pods);
    } else if (f == evict_feature::cpu_allocatable_evict) {
      auto rel = cpu_release_by_allocatable_threshold(
          *in.node, in.pods, *cfg.allocatable_evict_priority_threshold,
          *cfg.cpu_allocatable_evict_threshold_percent, *cfg.cpu_allocatable_evict_lower_percent);
      bool any = false;
      rel.release.for_each([&](std::int64_t v) { any = any || v != 0; });
      if (!any && rel.classes == 0) continue;
      t.target = release_target::pod_request;
      t.to_release = rel.release;
      t.measure = measure_kind::cpu_request;
      t.released_classes = rel.classes;
      t.victims =
          sorted_cpu_candidates(in.pods, f, *cfg.allocatable_evict_priority_threshold, true);
    } else {
      auto rel = cpu_release_by_used_threshold(capacity, in.node_cpu_avg_cores,
                                               *cfg.cpu_evict_threshold_percent,
                                               cfg.cpu_evict_lower_percent);
      if (!rel) continue;
      t.target = release_target::pod_used;
      t.to_release.cpu_milli = *rel;
      t.measure = measure_kind::cpu_used;
      t.victims = sorted_cpu_candidates(in.pods, f, *cfg.evict_enabled_priority_threshold, false);
    }
    d.tasks.push_back(std::move(t));
  }
  if (d.tasks.empty()) return d;
  d.round = execute_evict_tasks(d.tasks, in.pods);
  if (d.round.newly_evicted) d.next_state.last_evict_time = now;
  return d;
}

}  // namespace colony::koordlet
