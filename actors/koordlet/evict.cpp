#include "actors/koordlet/evict.hpp"

#include <algorithm>

namespace colony::koordlet {

namespace {

// Positive part of a - b per field (subReleaseListNoNegative); zero list = covered.
resource_list remainder(const resource_list& want, const resource_list& got) {
  resource_list r = want;
  r.zip(got, [](std::int64_t& a, std::int64_t b) { a = a > b ? a - b : 0; });
  r.zip(want, [](std::int64_t& a, std::int64_t w) {
    if (w <= 0) a = 0;
  });
  return r;
}

bool covered(const resource_list& want, const resource_list& got) {
  bool ok = true;
  resource_list w = want;
  w.zip(got, [&](std::int64_t& a, std::int64_t b) { ok = ok && (a <= 0 || b >= a); });
  return ok;
}

bool any_positive(const resource_list& r) {
  bool any = false;
  r.for_each([&](std::int64_t v) { any = any || v > 0; });
  return any;
}

resource_list max_of(resource_list a, const resource_list& b) {
  a.zip(b, [](std::int64_t& x, std::int64_t y) { x = std::max(x, y); });
  return a;
}

std::int64_t sum_positive(const pod_info& pod, std::int64_t resource_list::*field) {
  if (pod.containers.empty()) return std::max<std::int64_t>(pod.requests.*field, 0);
  std::int64_t s = 0;
  for (const auto& c : pod.containers) s += std::max<std::int64_t>(c.requests.*field, 0);
  return s;
}

}  // namespace

std::int64_t request_by_class(const pod_info& pod, bool cpu, resource_list* as_list) {
  std::int64_t resource_list::*field = nullptr;
  std::int64_t v = 0;
  switch (pod_priority_class_with_default(pod)) {
    case priority_class::mid:
      field = cpu ? &resource_list::mid_cpu_milli : &resource_list::mid_memory_bytes;
      v = sum_positive(pod, field);
      break;
    case priority_class::batch:
      field = cpu ? &resource_list::batch_cpu_milli : &resource_list::batch_memory_bytes;
      v = sum_positive(pod, field);
      break;
    default:
      field = cpu ? &resource_list::cpu_milli : &resource_list::memory_bytes;
      v = pod.requests.*field;
      break;
  }
  if (as_list) as_list->*field = v;
  return v;
}

resource_list measure_pod(const evict_task& task, const pod_info& pod) {
  resource_list r;
  switch (task.measure) {
    case measure_kind::memory_used:
      r.memory_bytes = static_cast<std::int64_t>(pod.memory_used_bytes.value_or(0));
      break;
    case measure_kind::memory_used_x1000:
      r.memory_bytes = static_cast<std::int64_t>(pod.memory_used_bytes.value_or(0) * 1000);
      break;
    case measure_kind::cpu_used:
      r.cpu_milli = static_cast<std::int64_t>(pod.cpu_used_cores.value_or(0) * 1000);
      break;
    case measure_kind::batch_cpu_request:
      r.batch_cpu_milli = sum_positive(pod, &resource_list::batch_cpu_milli);
      break;
    case measure_kind::memory_request:
    case measure_kind::cpu_request: {
      auto cls = static_cast<unsigned>(pod_priority_class_with_default(pod));
      if ((task.released_classes & (1u << cls)) == 0) break;  // class not released: nothing
      (void)request_by_class(pod, task.measure == measure_kind::cpu_request, &r);
      break;
    }
  }
  return r;
}

std::string evict_round::reason(evict_feature f) {
  std::string s(evict_reason_prefix);
  s += to_string(f);
  return s;
}

evict_round execute_evict_tasks(std::span<const evict_task> tasks, std::span<const pod_info> pods) {
  evict_round out;
  // Which tasks' measures take part in the aggregate (Go: only once their target has a positive
  // amount among the tasks seen so far).
  std::vector<std::uint8_t> in_aggregate(tasks.size(), 0);
  bool target_seen[2] = {false, false};
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    auto t = static_cast<std::size_t>(tasks[i].target);
    if (any_positive(tasks[i].to_release)) target_seen[t] = true;
    in_aggregate[i] = target_seen[t] ? 1 : 0;
  }
  auto aggregate = [&](const pod_info& pod, resource_list& used, resource_list& request) {
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (!in_aggregate[i]) continue;
      auto m = measure_pod(tasks[i], pod);
      if (tasks[i].target == release_target::pod_used)
        used = max_of(used, m);
      else
        request = max_of(request, m);
    }
  };
  auto released_of = [&](release_target t) -> resource_list& {
    return t == release_target::pod_used ? out.released_used : out.released_request;
  };

  std::vector<std::uint8_t> evicted(pods.size(), 0);
  std::size_t most = 0;
  for (const auto& task : tasks) most += task.victims.size();
  out.victims.reserve(std::min(most, pods.size()));
  out.tasks.reserve(tasks.size());
  for (const auto& task : tasks) {
    evict_task_report rep{task.feature, task.target, task.to_release, {}, false};
    if (covered(task.to_release, released_of(task.target))) {
      rep.skipped = true;
      out.tasks.push_back(rep);
      continue;
    }
    for (const auto& c : task.victims) {
      if (c.pod >= pods.size() || evicted[c.pod]) continue;
      const auto& pod = pods[c.pod];
      evicted[c.pod] = 1;
      evict_victim v{c.pod, pod.ns, pod.name, pod.uid, task.feature, pod.evicted, {}, {}, c};
      aggregate(pod, v.released_used, v.released_request);
      out.released_used += v.released_used;
      out.released_request += v.released_request;
      if (!pod.evicted) out.newly_evicted = true;
      out.victims.push_back(std::move(v));
      if (covered(task.to_release, released_of(task.target))) break;
    }
    out.tasks.push_back(rep);
  }
  for (auto& rep : out.tasks)
    rep.failed_to_release = remainder(rep.to_release, released_of(rep.target));
  return out;
}

void sort_by_priority(std::vector<evict_candidate>& c, std::span<const pod_info> pods,
                      bool by_request) {
  std::sort(c.begin(), c.end(), [&](const evict_candidate& a, const evict_candidate& b) {
    if (a.eviction_priority != b.eviction_priority)
      return a.eviction_priority < b.eviction_priority;
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.label_priority != b.label_priority) return a.label_priority < b.label_priority;
    if (by_request) {
      if (a.request != b.request) return a.request > b.request;
    } else if (a.used != b.used) {
      return a.used > b.used;
    }
    const auto& pa = pods[a.pod];
    const auto& pb = pods[b.pod];
    if (pa.ns != pb.ns) return pa.ns < pb.ns;
    if (pa.name != pb.name) return pa.name < pb.name;
    return a.pod < b.pod;
  });
}

}  // namespace colony::koordlet
