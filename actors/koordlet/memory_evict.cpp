#include "actors/koordlet/memory_evict.hpp"

#include <algorithm>

namespace colony::koordlet {

std::optional<std::int64_t> memory_release_by_used_threshold(std::int64_t capacity,
                                                             std::optional<double> node_used,
                                                             std::int64_t threshold,
                                                             std::optional<std::int64_t> lower) {
  if (!node_used || capacity <= 0) return std::nullopt;
  const std::int64_t usage = static_cast<std::int64_t>(*node_used) * 100 / capacity;
  if (usage < threshold) return std::nullopt;
  const std::int64_t low = lower ? *lower : threshold - memory_release_buffer_percent;
  return capacity * (usage - low) / 100;
}

allocatable_release memory_release_by_allocatable_threshold(const node_info& node,
                                                            std::span<const pod_info> pods,
                                                            std::int32_t priority_threshold,
                                                            std::int64_t threshold,
                                                            std::int64_t lower) {
  allocatable_release out;
  if (threshold < 0) return out;
  resource_list requested;
  bool seen_mem = false, seen_batch = false, seen_mid = false;
  for (const auto& p : pods) {
    if (pod_priority_value_with_default(p) > priority_threshold) continue;
    resource_list r;
    (void)request_by_class(p, false, &r);
    switch (pod_priority_class_with_default(p)) {
      case priority_class::batch:
        seen_batch = true;
        break;
      case priority_class::mid:
        seen_mid = true;
        break;
      default:
        seen_mem = true;
        break;
    }
    requested += r;
  }
  auto one = [&](bool seen, std::int64_t rq, std::int64_t alloc, std::int64_t resource_list::*field,
                 priority_class cls) {
    if (!seen) return;
    std::int64_t rel = 0;
    if (alloc == 0) {  // missing or zero allocatable: release the whole sum
      rel = rq;
    } else {
      double ratio = double(rq) / double(alloc);
      if (ratio > double(threshold) / 100)
        rel = static_cast<std::int64_t>((ratio - double(lower) / 100) * double(alloc));
      else
        return;
    }
    out.release.*field = rel;
    if (cls != priority_class::none)
      out.classes |= static_cast<std::uint8_t>(1u << static_cast<unsigned>(cls));
  };
  one(seen_mem, requested.memory_bytes, node.allocatable.memory_bytes, &resource_list::memory_bytes,
      priority_class::none);  // `memory` is not in ReverseResourceNameMap
  one(seen_batch, requested.batch_memory_bytes, node.allocatable.batch_memory_bytes,
      &resource_list::batch_memory_bytes, priority_class::batch);
  one(seen_mid, requested.mid_memory_bytes, node.allocatable.mid_memory_bytes,
      &resource_list::mid_memory_bytes, priority_class::mid);
  return out;
}

namespace {

// Insertion sort: stable and well defined for any comparator, including Go's non-transitive ones
// (a pod without spec.priority). Candidate lists are short (pods of one node).
template <class Less>
void insertion_sort(std::vector<evict_candidate>& v, Less less) {
  for (std::size_t i = 1; i < v.size(); ++i) {
    auto x = v[i];
    std::size_t j = i;
    while (j > 0 && less(x, v[j - 1])) {
      v[j] = v[j - 1];
      --j;
    }
    v[j] = x;
  }
}

}  // namespace

std::vector<evict_candidate> sorted_be_memory_candidates(std::span<const pod_info> pods) {
  std::vector<evict_candidate> c;
  bool all_have_priority = true;
  for (std::uint32_t i = 0; i < pods.size(); ++i) {
    const auto& p = pods[i];
    if (p.qos != qos_class::be || !eviction_policy_allows(p, evict_feature::be_memory_evict))
      continue;
    evict_candidate e;
    e.pod = i;
    e.priority = p.priority.value_or(0);
    e.label_priority = p.priority_label.value_or(e.priority);
    e.eviction_priority = p.eviction_priority;
    e.used = static_cast<std::int64_t>(p.memory_used_bytes.value_or(0));
    e.request = request_by_class(p, false);
    all_have_priority = all_have_priority && p.priority.has_value();
    c.push_back(e);
  }
  // getSortedBEPodInfos' comparator; equal non-zero usage falls back to namespace/name (Colony).
  auto less = [&](const evict_candidate& a, const evict_candidate& b) {
    const auto& pa = pods[a.pod];
    const auto& pb = pods[b.pod];
    if (pa.priority && pb.priority && *pa.priority != *pb.priority)
      return *pa.priority < *pb.priority;
    if (a.used != 0 && b.used != 0) {
      if (a.used != b.used) return a.used > b.used;
      if (pa.ns != pb.ns) return pa.ns < pb.ns;
      return pa.name < pb.name;
    }
    if (a.used == 0 && b.used == 0) {
      if (pa.name != pb.name) return pa.name > pb.name;
      return pa.ns > pb.ns;
    }
    return b.used == 0;
  };
  if (all_have_priority)
    std::sort(c.begin(), c.end(), less);  // a strict weak order when every pod has a priority
  else
    insertion_sort(c, less);
  return c;
}

std::vector<evict_candidate> sorted_memory_candidates(std::span<const pod_info> pods,
                                                      evict_feature feature,
                                                      std::int32_t priority_threshold,
                                                      bool by_request, bool usage_x1000) {
  std::vector<evict_candidate> c;
  for (std::uint32_t i = 0; i < pods.size(); ++i) {
    const auto& p = pods[i];
    if (!pod_is_active(p) || !eviction_policy_allows(p, feature)) continue;
    const auto prio = pod_priority_value_with_default(p);
    if (prio > priority_threshold || !p.eviction_enabled || !p.memory_used_bytes) continue;
    evict_candidate e;
    e.pod = i;
    e.priority = prio;
    e.label_priority = p.priority_label.value_or(prio);
    e.eviction_priority = p.eviction_priority;
    e.used =
        static_cast<std::int64_t>(usage_x1000 ? *p.memory_used_bytes * 1000 : *p.memory_used_bytes);
    e.request = request_by_class(p, false);
    c.push_back(e);
  }
  sort_by_priority(c, pods, by_request);
  return c;
}

std::optional<std::string_view> check_memory_evict_config(const resource_threshold_strategy& cfg,
                                                          evict_feature feature) {
  if (feature == evict_feature::memory_allocatable_evict) {
    if (!cfg.memory_allocatable_evict_threshold_percent)
      return "MemoryAllocatableEvictThresholdPercent not config";
    if (*cfg.memory_allocatable_evict_threshold_percent < 0)
      return "threshold percent should greater than 0";
    if (!cfg.memory_allocatable_evict_lower_percent)
      return "MemoryAllocatableEvictLowerPercent not config";
    if (*cfg.memory_allocatable_evict_lower_percent >=
        *cfg.memory_allocatable_evict_threshold_percent)
      return "lower percent should less than threshold percent";
    if (!cfg.allocatable_evict_priority_threshold)
      return "AllocatableEvictPriorityThreshold not config";
    if (*cfg.allocatable_evict_priority_threshold > 7999)
      return "priorityThresholdPercent should less than 7999, koord-prod pods should not be killed";
    return std::nullopt;
  }
  if (!cfg.memory_evict_threshold_percent) return "threshold percent is nil";
  const auto t = *cfg.memory_evict_threshold_percent;
  if (t < 0) return "threshold percent should equal or greater than 0";
  const auto low = cfg.memory_evict_lower_percent.value_or(t - memory_release_buffer_percent);
  if (low >= t) return "lower percent should less than threshold percent";
  if (feature == evict_feature::memory_evict && !cfg.evict_enabled_priority_threshold)
    return "EvictEnabledPriorityThreshold not config";
  return std::nullopt;
}

memory_evict_decision memory_evict(const memory_evict_input& in,
                                   const resource_threshold_strategy& cfg,
                                   const koordlet_feature_gates& gates,
                                   const qos_manager_timing& timing, const evictor_state& state,
                                   event_time now, const memory_evict_options& opt) {
  memory_evict_decision d;
  d.next_state = state;
  if (!(gates.be_memory_evict || gates.memory_evict || gates.memory_allocatable_evict)) {
    d.skip_reason = "no memory evict feature gate on";
    return d;
  }
  if (now < state.last_evict_time + timing.memory_evict_cool_time) {
    d.skip_reason = "cooling down";
    return d;
  }
  if (in.node == nullptr) {
    d.skip_reason = "no node";
    return d;
  }
  const std::int64_t capacity = in.node->capacity.memory_bytes;
  if (capacity <= 0) {
    d.skip_reason = "node memory capacity not valid";
    return d;
  }
  d.ran = true;
  const evict_feature order[] = {evict_feature::be_memory_evict,
                                 evict_feature::memory_allocatable_evict,
                                 evict_feature::memory_evict};
  for (auto f : order) {
    bool gate = f == evict_feature::be_memory_evict            ? gates.be_memory_evict
                : f == evict_feature::memory_allocatable_evict ? gates.memory_allocatable_evict
                                                               : gates.memory_evict;
    if (!gate || !cfg.enable) continue;
    if (auto err = check_memory_evict_config(cfg, f)) {
      d.config_errors.emplace_back(f, *err);
      continue;
    }
    evict_task t;
    t.feature = f;
    if (f == evict_feature::memory_allocatable_evict) {
      auto rel = memory_release_by_allocatable_threshold(
          *in.node, in.pods, *cfg.allocatable_evict_priority_threshold,
          *cfg.memory_allocatable_evict_threshold_percent,
          *cfg.memory_allocatable_evict_lower_percent);
      bool any = false;
      rel.release.for_each([&](std::int64_t v) { any = any || v != 0; });
      if (!any && rel.classes == 0) continue;
      t.target = release_target::pod_request;
      t.to_release = rel.release;
      t.measure = measure_kind::memory_request;
      t.released_classes = rel.classes;
      t.victims = sorted_memory_candidates(in.pods, f, *cfg.allocatable_evict_priority_threshold,
                                           true, opt.usage_x1000_compat);
    } else {
      auto rel = memory_release_by_used_threshold(capacity, in.node_memory_used_bytes,
                                                  *cfg.memory_evict_threshold_percent,
                                                  cfg.memory_evict_lower_percent);
      if (!rel) continue;
      t.target = release_target::pod_used;
      t.to_release.memory_bytes = *rel;
      if (f == evict_feature::be_memory_evict) {
        t.measure = measure_kind::memory_used;
        t.victims = sorted_be_memory_candidates(in.pods);
      } else {
        t.measure =
            opt.usage_x1000_compat ? measure_kind::memory_used_x1000 : measure_kind::memory_used;
        t.victims = sorted_memory_candidates(in.pods, f, *cfg.evict_enabled_priority_threshold,
                                             false, opt.usage_x1000_compat);
      }
    }
    d.tasks.push_back(std::move(t));
  }
  if (d.tasks.empty()) return d;
  d.round = execute_evict_tasks(d.tasks, in.pods);
  if (d.round.newly_evicted) d.next_state.last_evict_time = now;
  return d;
}

}  // namespace colony::koordlet
