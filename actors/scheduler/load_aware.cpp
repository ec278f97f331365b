// load_aware.hpp
#include "actors/scheduler/load_aware.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

namespace colony::scheduler {

// --- args -----------------------------------------------------------------------------------

load_aware_args load_aware_args::unset() {
  load_aware_args a;
  a.resource_weights.clear();
  a.usage_thresholds.clear();
  a.estimated_scaling_factors.clear();
  return a;
}

void load_aware_args::apply_defaults() {
  if (resource_weights.empty() && dominant_resource_weight == 0)
    resource_weights = {{resource_name::cpu, 1}, {resource_name::memory, 1}};
  if (usage_thresholds.empty())
    usage_thresholds = {{resource_name::cpu, 65}, {resource_name::memory, 95}};
  // Missing keys are filled from the defaults (an explicit map keeps its values).
  estimated_scaling_factors.try_emplace(resource_name::cpu, 85);
  estimated_scaling_factors.try_emplace(resource_name::memory, 70);
}

load_aware_args load_aware_args::shipped_profile() {
  load_aware_args a;
  a.filter_expired_node_metrics = false;
  a.node_metric_expiration_seconds = 300;
  a.resource_weights = {{resource_name::cpu, 1}, {resource_name::memory, 1}};
  a.usage_thresholds = {{resource_name::cpu, 0}, {resource_name::memory, 0}};
  a.estimated_scaling_factors = {{resource_name::cpu, 85}, {resource_name::memory, 70}};
  return a;
}

result<void> validate(const load_aware_args& a, const std::string& path) {
  auto p = [&](std::string_view f) { return path.empty() ? std::string(f) : path + "." + std::string(f); };
  if (a.node_metric_expiration_seconds <= 0)
    return fail(errc::invalid_input, "nodeMetricExpirationSeconds should be a positive value",
                p("nodeMetricExpirationSeconds"));
  for (const auto& [r, w] : a.resource_weights) {
    if (w <= 0)
      return fail(errc::invalid_input,
                  "resource Weight of " + std::string(to_string(r)) +
                      " should be a positive value, got " + std::to_string(w),
                  p("resourceWeights") + "[" + std::string(to_string(r)) + "]");
    if (w > 100)
      return fail(errc::invalid_input,
                  "resource Weight of " + std::string(to_string(r)) +
                      " should be less than 100, got " + std::to_string(w),
                  p("resourceWeights") + "[" + std::string(to_string(r)) + "]");
  }
  if (a.dominant_resource_weight < 0)
    return fail(errc::invalid_input, "dominantResourceWeight should not be a negative value",
                p("dominantResourceWeight"));
  if (a.dominant_resource_weight > 100)
    return fail(errc::invalid_input, "dominantResourceWeight should be less than 100",
                p("dominantResourceWeight"));
  auto thresholds = [&](const resource_map& m, std::string_view field) -> result<void> {
    for (const auto& [r, v] : m) {
      if (v < 0 || v > 100)
        return fail(errc::invalid_input,
                    "resource Threshold of " + std::string(to_string(r)) +
                        " should be in [0, 100], got " + std::to_string(v),
                    p(field) + "[" + std::string(to_string(r)) + "]");
    }
    return {};
  };
  if (auto r = thresholds(a.usage_thresholds, "usageThresholds"); !r) return r;
  if (auto r = thresholds(a.prod_usage_thresholds, "prodUsageThresholds"); !r) return r;
  for (const auto& [r, v] : a.estimated_scaling_factors) {
    if (v <= 0 || v > 100)
      return fail(errc::invalid_input,
                  "scaling factor of " + std::string(to_string(r)) +
                      " should be in (0, 100], got " + std::to_string(v),
                  p("estimatedScalingFactors") + "[" + std::string(to_string(r)) + "]");
  }
  for (const auto& [r, w] : a.resource_weights) {
    (void)w;
    if (!a.estimated_scaling_factors.contains(r))
      return fail(errc::invalid_input,
                  "every resource of resourceWeights needs a scaling factor, missing " +
                      std::string(to_string(r)),
                  p("estimatedScalingFactors"));
  }
  if (a.aggregated) {
    if (auto r = thresholds(a.aggregated->usage_thresholds, "aggregated.usageThresholds"); !r)
      return r;
    if (a.aggregated->usage_aggregated_duration.value < 0)
      return fail(errc::invalid_input, "duration should not be negative",
                  p("aggregated.usageAggregatedDuration"));
    if (a.aggregated->score_aggregated_duration.value < 0)
      return fail(errc::invalid_input, "duration should not be negative",
                  p("aggregated.scoreAggregatedDuration"));
  }
  return {};
}

// --- estimator -------------------------------------------------------------------------------

namespace {

std::int64_t estimated_used_by_resource(const resource_list& requests, const resource_list& limits,
                                        std::optional<resource_name> r, std::int64_t factor) {
  const std::int64_t limit = r ? get(limits, *r) : 0;
  const std::int64_t request = r ? get(requests, *r) : 0;
  const std::int64_t q = limit > request ? limit : request;
  if (q == 0) {
    if (r == resource_name::cpu || r == resource_name::batch_cpu) return load_aware_default_milli_cpu;
    if (r == resource_name::memory || r == resource_name::batch_memory) return load_aware_default_memory;
    return 0;
  }
  auto est = static_cast<std::int64_t>(
      std::llround(static_cast<double>(q) * static_cast<double>(factor) / 100.0));
  if (limit > 0 && est > limit) est = limit;
  return est;
}

}  // namespace

resource_map estimate_pod(const pod_info& pod, const resource_map& factors, bool allow_customize) {
  resource_map f = factors;
  if (allow_customize && !pod.custom_scaling_factors.empty()) {
    f = pod.custom_scaling_factors;
    for (const auto& [k, v] : factors) f.try_emplace(k, v);
  }
  const auto pc = pod.priority_class_with_default();
  resource_map out;
  for (const auto& [r, factor] : f)
    out[r] = estimated_used_by_resource(pod.requests, pod.limits, translate_resource_name(pc, r), factor);
  return out;
}

resource_list estimate_node(const node_info& node) {
  resource_list a = node.allocatable;
  for (const auto& [r, v] : node.raw_allocatable) at(a, r) = v;
  return a;
}

// --- plugin ------------------------------------------------------------------------------------

load_aware_scheduling::load_aware_scheduling(load_aware_args args) : args_(std::move(args)) {
  // NewResourceVectorizerFromArgs: cpu, memory and every name the args mention, sorted.
  std::set<resource_name> names{resource_name::cpu, resource_name::memory};
  for (const auto& [r, v] : args_.usage_thresholds) names.insert(r);
  for (const auto& [r, v] : args_.prod_usage_thresholds) names.insert(r);
  if (args_.aggregated)
    for (const auto& [r, v] : args_.aggregated->usage_thresholds) names.insert(r);
  for (const auto& [r, v] : args_.resource_weights) names.insert(r);
  for (const auto& [r, v] : args_.estimated_scaling_factors) names.insert(r);
  for (auto r : args_.supported_resources) names.insert(r);
  names_.assign(names.begin(), names.end());

  scaling_factors_ = to_vec(args_.estimated_scaling_factors);
  score_weights_ = to_vec(args_.resource_weights);
  score_disabled_ = args_.dominant_resource_weight == 0 && empty(score_weights_);

  base_profile_.usage = to_vec(args_.usage_thresholds);
  base_profile_.prod = to_vec(args_.prod_usage_thresholds);
  if (const auto& agg = args_.aggregated;
      agg && !agg->usage_thresholds.empty() && agg->usage_aggregation_type) {
    base_profile_.has_agg = true;
    base_profile_.agg = to_vec(agg->usage_thresholds);
    base_profile_.agg_type = agg->usage_aggregation_type;
    base_profile_.agg_duration = agg->usage_aggregated_duration;
  }
  for (std::size_t i = 0; i < resource_name_count; ++i) {
    auto n = std::string(to_string(static_cast<resource_name>(i)));
    usage_reason_[i] = "node(s) " + n + " usage exceed threshold";
    agg_reason_[i] = "node(s) " + n + " aggregated usage exceed threshold";
  }
}

load_aware_scheduling::vec load_aware_scheduling::to_vec(const resource_map& m) const {
  vec v{};
  for (auto r : names_)
    if (auto it = m.find(r); it != m.end()) v[static_cast<std::size_t>(r)] = it->second;
  return v;
}

load_aware_scheduling::vec load_aware_scheduling::to_vec(const resource_list& l) const {
  vec v{};
  for (auto r : names_) v[static_cast<std::size_t>(r)] = get(l, r);
  return v;
}

bool load_aware_scheduling::empty(const vec& v) const {
  for (auto r : names_)
    if (v[static_cast<std::size_t>(r)] != 0) return false;
  return true;
}

bool load_aware_scheduling::expired(const node_metric& m, event_time now) const {
  // helper.go isNodeMetricExpired: no updateTime, or now - updateTime >= expiration.
  if (!m.update_time) return true;
  return args_.node_metric_expiration_seconds > 0 &&
         now.value - m.update_time->value >= args_.node_metric_expiration_seconds * 1000;
}

load_aware_scheduling::vec load_aware_scheduling::estimate_vec(const pod_info& pod) const {
  vec v{};
  const auto pc = pod.priority_class_with_default();
  const bool custom = args_.allow_customize_estimation && !pod.custom_scaling_factors.empty();
  for (auto r : names_) {
    std::int64_t factor = scaling_factors_[static_cast<std::size_t>(r)];
    bool has = args_.estimated_scaling_factors.contains(r);
    if (custom) {
      if (auto it = pod.custom_scaling_factors.find(r); it != pod.custom_scaling_factors.end()) {
        factor = it->second;
        has = true;
      }
    }
    if (!has) continue;  // only scaling-factor keys are estimated
    v[static_cast<std::size_t>(r)] =
        estimated_used_by_resource(pod.requests, pod.limits, translate_resource_name(pc, r), factor);
  }
  return v;
}

load_aware_scheduling::node_summary load_aware_scheduling::summarize(const node_info& node) const {
  node_summary s;
  if (!node.metric) return s;
  const node_metric& m = *node.metric;
  if (m.has_node_metric && args_.prod_usage_include_sys) s.prod_usage = to_vec(m.system_usage);

  // podUsages: reported pods with non-empty usage, looked up by key.
  std::vector<const pod_metric*> reported;
  reported.reserve(m.pods.size());
  for (const auto& pm : m.pods)
    if (!pm.usage.is_zero()) reported.push_back(&pm);
  std::sort(reported.begin(), reported.end(),
            [](const pod_metric* a, const pod_metric* b) { return a->key < b->key; });
  auto lookup = [&](const std::string& key) -> const pod_metric* {
    auto it = std::lower_bound(reported.begin(), reported.end(), key,
                               [](const pod_metric* a, const std::string& k) { return a->key < k; });
    return it != reported.end() && (*it)->key == key ? *it : nullptr;
  };

  const bool has_update = m.update_time.has_value();
  const std::int64_t update = has_update ? m.update_time->value : 0;
  const std::int64_t interval_ms = m.report_interval_seconds * 1000;

  for (const auto& pod : node.pods) {
    if (pod.terminated || pod.reserve_pod) continue;  // not tracked by podAssignCache
    const pod_metric* pm = lookup(pod.key);
    vec u{};
    if (pm) u = to_vec(pm->usage);
    const bool prod = pod.priority_class_with_default() == priority_class::prod;
    // Only use prod usage when both the pod and the metric say prod.
    const bool active_prod = prod && pm && pm->priority == priority_class::prod;
    if (active_prod)
      for (auto r : names_) s.prod_usage[static_cast<std::size_t>(r)] += u[static_cast<std::size_t>(r)];

    const vec e = estimate_vec(pod);
    if (empty(e)) continue;  // nil estimate: nothing to add

    // Timestamp: PodScheduled lastTransitionTime, else when the cache saw the pod.
    const std::int64_t t = pod.scheduled_time   ? pod.scheduled_time->value
                           : pod.assigned_time ? pod.assigned_time->value
                                               : 0;
    // shouldEstimatePodDeadline.
    std::int64_t after_scheduled = -1, after_initialized = -1;
    if (args_.allow_customize_estimation) {
      if (pod.custom_seconds_after_pod_scheduled) after_scheduled = *pod.custom_seconds_after_pod_scheduled;
      if (pod.custom_seconds_after_initialized) after_initialized = *pod.custom_seconds_after_initialized;
    }
    if (args_.estimated_seconds_after_pod_scheduled && after_scheduled < 0)
      after_scheduled = *args_.estimated_seconds_after_pod_scheduled;
    if (args_.estimated_seconds_after_initialized && after_initialized < 0)
      after_initialized = *args_.estimated_seconds_after_initialized;
    std::optional<std::int64_t> deadline;
    if (after_initialized > 0 && pod.initialized_time)
      deadline = pod.initialized_time->value + after_initialized * 1000;
    else if (after_scheduled > 0 && (pod.scheduled_time || pod.assigned_time))
      deadline = t + after_scheduled * 1000;

    // should: usage not collected, or pod newer than (updateTime - reportInterval), or still in
    // its configured estimation window. Without an updateTime every pod counts as new.
    bool should = !pm || !has_update || t > update - interval_ms || (deadline && *deadline > update);
    auto add_delta = [&](vec& acc, const vec* usage) {
      for (auto r : names_) {
        const auto i = static_cast<std::size_t>(r);
        std::int64_t v = e[i] - (usage ? (*usage)[i] : 0);
        if (v > 0) acc[i] += v;
      }
    };
    if (should) add_delta(s.node_delta, pm ? &u : nullptr);
    for (auto r : names_) s.node_estimated[static_cast<std::size_t>(r)] += e[static_cast<std::size_t>(r)];

    if (!prod) continue;
    const vec* pu = pm ? &u : nullptr;
    if (!active_prod && pm) {
      pu = nullptr;
      should = true;
    }
    if (should) add_delta(s.prod_delta, pu);
  }
  return s;
}

load_aware_scheduling::vec load_aware_scheduling::estimated_existing(
    const node_info& node, const node_summary& s, bool prod_pod,
    std::optional<aggregation_type> agg_type, duration_ms agg_duration) const {
  vec out{};
  const node_metric& m = *node.metric;
  auto add = [&](const vec& v) {
    for (auto r : names_) out[static_cast<std::size_t>(r)] += v[static_cast<std::size_t>(r)];
  };
  if (prod_pod) {
    add(s.prod_usage);
    add(s.prod_delta);
    return out;
  }
  const resource_list* base = &m.node_usage;
  if (agg_type) {
    // getTargetAggregatedUsage: exact (type, duration); duration 0 = longest non-empty
    // duration of the type, else nodeUsage. A missing exact pair is "no base".
    base = nullptr;
    const aggregated_usage* best = nullptr;
    for (const auto& a : m.aggregated) {
      if (a.type != *agg_type || a.usage.is_zero()) continue;
      if (agg_duration.value == 0) {
        if (!best || a.duration > best->duration) best = &a;
      } else if (a.duration == agg_duration) {
        best = &a;
      }
    }
    if (best)
      base = &best->usage;
    else if (agg_duration.value == 0)
      base = &m.node_usage;
  }
  if (base) {
    add(to_vec(*base));
    add(s.node_delta);
  } else {
    add(s.node_estimated);  // nothing reported for the pair: full estimates of all pods
  }
  return out;
}

const load_aware_scheduling::vec& load_aware_scheduling::incoming_estimate(cycle_state& st,
                                                                           const pod_info& pod) {
  auto& d = st.slot<incoming>(slot());
  if (d.cycle != st.cycle || d.key != pod.key) {
    d.cycle = st.cycle;
    d.key = pod.key;
    d.estimate = estimate_vec(pod);
  }
  return d.estimate;
}

const load_aware_scheduling::node_summary& load_aware_scheduling::summary_for(
    const node_info& node, node_summary& scratch) {
  // The node's position in the cycle's span addresses the cache; entries are checked against
  // name and generation (node_info REQUIRES generation bumps on change).
  if (nodes_base_ && &node >= nodes_base_ && &node < nodes_base_ + nodes_count_) {
    auto& e = cache_[static_cast<std::size_t>(&node - nodes_base_)];
    const std::optional<event_time> upd = node.metric ? node.metric->update_time : std::nullopt;
    if (!e.valid || e.generation != node.generation || e.pods != node.pods.size() ||
        e.update_time != upd || e.name != node.name) {
      e.summary = summarize(node);
      e.name = node.name;
      e.generation = node.generation;
      e.pods = node.pods.size();
      e.update_time = upd;
      e.valid = true;
    }
    return e.summary;
  }
  scratch = summarize(node);
  return scratch;
}

const load_aware_scheduling::filter_profile& load_aware_scheduling::profile_for(
    const node_info& node, filter_profile& scratch) const {
  // helper.go generateUsageThresholdsFilterProfile: each non-empty part of the node annotation
  // replaces the args part; an aggregated part without thresholds and type is ignored.
  if (!node.custom_thresholds) return base_profile_;
  const auto& c = *node.custom_thresholds;
  const bool agg_ok = c.aggregated_usage && !c.aggregated_usage->usage_thresholds.empty() &&
                      c.aggregated_usage->usage_aggregation_type;
  if (c.usage_thresholds.empty() && c.prod_usage_thresholds.empty() && !agg_ok) return base_profile_;
  scratch = base_profile_;
  if (!c.usage_thresholds.empty()) scratch.usage = to_vec(c.usage_thresholds);
  if (!c.prod_usage_thresholds.empty()) scratch.prod = to_vec(c.prod_usage_thresholds);
  if (agg_ok) {
    scratch.has_agg = true;
    scratch.agg = to_vec(c.aggregated_usage->usage_thresholds);
    scratch.agg_type = c.aggregated_usage->usage_aggregation_type;
    scratch.agg_duration = c.aggregated_usage->usage_aggregated_duration;
  }
  return scratch;
}

status load_aware_scheduling::pre_filter(cycle_state& st, const pod_info& pod,
                                         std::span<const node_info> nodes, event_time) {
  (void)incoming_estimate(st, pod);
  nodes_base_ = nodes.data();
  nodes_count_ = nodes.size();
  if (cache_.size() != nodes.size()) cache_.resize(nodes.size());
  return {};
}

status load_aware_scheduling::filter(cycle_state& st, const pod_info& pod, const node_info& node,
                                     event_time now) {
  if (pod.daemonset_owned) return {};
  filter_profile scratch;
  const filter_profile& prof = profile_for(node, scratch);
  const bool prod_pod = !empty(prof.prod) && pod.priority_class_with_default() == priority_class::prod;
  const vec* thresholds = nullptr;
  bool is_agg = false;
  if (prod_pod) {
    thresholds = &prof.prod;
  } else if (prof.has_agg) {
    thresholds = &prof.agg;
    is_agg = true;
  } else {
    thresholds = &prof.usage;
  }
  if (empty(*thresholds)) return {};  // filter disabled
  if (!node.metric) return {};        // no NodeMetric: load-aware is only an optimisation
  const node_metric& m = *node.metric;
  if (args_.filter_expired_node_metrics && expired(m, now)) {
    if (!args_.enable_schedule_when_node_metrics_expired)
      return status::unschedulable(err_reason_node_metric_expired);
    return {};
  }
  if (!m.has_node_metric) return {};

  node_summary scratch_summary;
  const node_summary& s = summary_for(node, scratch_summary);
  vec est = estimated_existing(node, s, prod_pod, is_agg ? prof.agg_type : std::nullopt,
                               is_agg ? prof.agg_duration : duration_ms{0});
  const vec& in = incoming_estimate(st, pod);
  const resource_list alloc = node.raw_allocatable.empty() ? node.allocatable : estimate_node(node);
  for (auto r : names_) {
    const auto i = static_cast<std::size_t>(r);
    const std::int64_t th = (*thresholds)[i];
    if (th == 0) continue;
    const std::int64_t total = get(alloc, r);
    if (total == 0) continue;
    const std::int64_t used = est[i] + in[i];
    const auto pct = std::llround(static_cast<double>(used) / static_cast<double>(total) * 100.0);
    if (pct <= th) continue;
    return status::unschedulable(is_agg ? agg_reason_[i] : usage_reason_[i]);
  }
  return {};
}

std::int64_t load_aware_scheduling::score_vec(const vec& used, const vec& alloc) const {
  // loadAwareSchedulingScorer: weighted least-used plus the dominant (minimum) score over
  // every vector resource, weight 0 included.
  const std::int64_t dw = args_.dominant_resource_weight;
  std::int64_t node_score = 0, dominant = 0, weight_sum = 0;
  if (dw != 0) {
    dominant = max_node_score;
    weight_sum = dw;
  }
  for (auto r : names_) {
    const auto i = static_cast<std::size_t>(r);
    const std::int64_t w = score_weights_[i];
    std::int64_t s = 0;
    if (alloc[i] != 0 && used[i] <= alloc[i]) s = (alloc[i] - used[i]) * max_node_score / alloc[i];
    node_score += s * w;
    weight_sum += w;
    if (dominant > s) dominant = s;
  }
  node_score += dominant * dw;
  if (weight_sum <= 0) return 0;
  return node_score / weight_sum;
}

std::int64_t load_aware_scheduling::score(cycle_state& st, const pod_info& pod,
                                          const node_info& node, event_time now) {
  if (score_disabled_) return 0;
  if (!node.metric) return 0;
  const node_metric& m = *node.metric;
  if (expired(m, now)) return 0;
  if (!m.has_node_metric) return 0;
  const bool prod_pod =
      args_.score_according_prod_usage && pod.priority_class_with_default() == priority_class::prod;
  std::optional<aggregation_type> agg_type;
  duration_ms agg_duration{0};
  if (!prod_pod && args_.aggregated && args_.aggregated->score_aggregation_type) {
    agg_type = args_.aggregated->score_aggregation_type;
    agg_duration = args_.aggregated->score_aggregated_duration;
  }
  node_summary scratch;
  const node_summary& s = summary_for(node, scratch);
  vec used = estimated_existing(node, s, prod_pod, agg_type, agg_duration);
  const vec& in = incoming_estimate(st, pod);
  for (auto r : names_) used[static_cast<std::size_t>(r)] += in[static_cast<std::size_t>(r)];
  const resource_list alloc = node.raw_allocatable.empty() ? node.allocatable : estimate_node(node);
  return score_vec(used, to_vec(alloc));
}

}  // namespace colony::scheduler
