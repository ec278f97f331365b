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
  auto p = [&](std::string_view f) {
    return path.empty() ? std::string(f) : path + "." + std::string(f);
  };
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
    if (r == resource_name::cpu || r == resource_name::batch_cpu)
      return load_aware_default_milli_cpu;
    if (r == resource_name::memory || r == resource_name::batch_memory)
      return load_aware_default_memory;
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
    out[r] = estimated_used_by_resource(pod.requests, pod.limits, translate_resource_name(pc, r),
                                        factor);
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
  for (std::size_t k = 0; k < names_.size(); ++k) idx_.emplace_back(k, names_[k]);

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
  for (std::size_t k = 0; k < names_.size(); ++k) {
    auto n = std::string(to_string(names_[k]));
    usage_reason_[k] = "node(s) " + n + " usage exceed threshold";
    agg_reason_[k] = "node(s) " + n + " aggregated usage exceed threshold";
  }
}

load_aware_scheduling::vec load_aware_scheduling::to_vec(const resource_map& m) const {
  vec v{};
  for (auto [k, r] : idx_)
    if (auto it = m.find(r); it != m.end()) v[k] = it->second;
  return v;
}

load_aware_scheduling::vec load_aware_scheduling::to_vec(const resource_list& l) const {
  vec v{};
  for (auto [k, r] : idx_) v[k] = get(l, r);
  return v;
}

bool load_aware_scheduling::empty(const vec& v) const {
  for (auto [k, r] : idx_)
    if (v[k] != 0) return false;
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
  for (auto [k, r] : idx_) {
    std::int64_t factor = scaling_factors_[k];
    bool has = args_.estimated_scaling_factors.contains(r);
    if (custom) {
      if (auto it = pod.custom_scaling_factors.find(r); it != pod.custom_scaling_factors.end()) {
        factor = it->second;
        has = true;
      }
    }
    if (!has) continue;  // only scaling-factor keys are estimated
    v[k] = estimated_used_by_resource(pod.requests, pod.limits, translate_resource_name(pc, r),
                                      factor);
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
    auto it =
        std::lower_bound(reported.begin(), reported.end(), key,
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
      for (auto [k, r] : idx_) s.prod_usage[k] += u[k];

    const vec e = estimate_vec(pod);
    if (empty(e)) continue;  // nil estimate: nothing to add

    // Timestamp: PodScheduled lastTransitionTime, else when the cache saw the pod.
    const std::int64_t t = pod.scheduled_time  ? pod.scheduled_time->value
                           : pod.assigned_time ? pod.assigned_time->value
                                               : 0;
    // shouldEstimatePodDeadline.
    std::int64_t after_scheduled = -1, after_initialized = -1;
    if (args_.allow_customize_estimation) {
      if (pod.custom_seconds_after_pod_scheduled)
        after_scheduled = *pod.custom_seconds_after_pod_scheduled;
      if (pod.custom_seconds_after_initialized)
        after_initialized = *pod.custom_seconds_after_initialized;
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
    bool should =
        !pm || !has_update || t > update - interval_ms || (deadline && *deadline > update);
    auto add_delta = [&](vec& acc, const vec* usage) {
      for (auto [k, r] : idx_) {
        const auto i = k;
        std::int64_t v = e[i] - (usage ? (*usage)[i] : 0);
        if (v > 0) acc[i] += v;
      }
    };
    if (should) add_delta(s.node_delta, pm ? &u : nullptr);
    for (auto [k, r] : idx_) s.node_estimated[k] += e[k];

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
    for (auto [k, r] : idx_) out[k] += v[k];
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

const load_aware_scheduling::incoming& load_aware_scheduling::incoming_of(cycle_state& st,
                                                                          const pod_info& pod) {
  // Estimated once per cycle (PreFilter); REQUIRES: the pod object outlives the cycle.
  auto& d = st.slot<incoming>(slot());
  if (d.cycle != st.cycle || d.pod != &pod) {
    d.cycle = st.cycle;
    d.pod = &pod;
    d.estimate = estimate_vec(pod);
    d.prod = pod.priority_class_with_default() == priority_class::prod;
  }
  return d;
}

void load_aware_scheduling::fill_entry(const node_info& node, cache_entry& e,
                                       std::int64_t* data) const {
  const std::size_t n = names_.size();
  e.has_metric = node.metric.has_value();
  e.has_node_metric = e.has_metric && node.metric->has_node_metric;
  e.has_update = e.has_metric && node.metric->update_time.has_value();
  e.update_ms = e.has_update ? node.metric->update_time->value : 0;
  filter_profile scratch;
  const filter_profile& prof = profile_for(node, scratch);
  if (&prof == &scratch)
    e.profile = std::make_unique<filter_profile>(scratch);
  else
    e.profile.reset();
  const filter_profile& p = e.profile ? *e.profile : base_profile_;
  e.filter_prod_enabled = !empty(p.prod);
  e.filter_is_agg = p.has_agg;
  e.filter_disabled = empty(p.has_agg ? p.agg : p.usage);
  auto store = [&](std::size_t slot, const vec& v) {
    for (std::size_t k = 0; k < n; ++k) data[slot * n + k] = v[k];
  };
  store(3, to_vec(node.raw_allocatable.empty() ? node.allocatable : estimate_node(node)));
  if (!e.has_metric) return;
  const node_summary s = summarize(node);
  store(0, estimated_existing(node, s, false, p.has_agg ? p.agg_type : std::nullopt,
                              p.has_agg ? p.agg_duration : duration_ms{0}));
  std::optional<aggregation_type> score_type;
  duration_ms score_duration{0};
  if (args_.aggregated && args_.aggregated->score_aggregation_type) {
    score_type = args_.aggregated->score_aggregation_type;
    score_duration = args_.aggregated->score_aggregated_duration;
  }
  store(1, estimated_existing(node, s, false, score_type, score_duration));
  store(2, estimated_existing(node, s, true, std::nullopt, duration_ms{0}));
}

load_aware_scheduling::entry_view load_aware_scheduling::entry_for(const node_info& node) {
  // The node's position in the cycle's span addresses the cache; an entry is reused while the
  // node object and its generation are unchanged (node_info REQUIRES a generation bump on any
  // change of pods, metric, allocatable or annotations).
  const std::size_t stride = 4 * names_.size();
  if (nodes_base_ && &node >= nodes_base_ && &node < nodes_base_ + nodes_count_) {
    const auto idx = static_cast<std::size_t>(&node - nodes_base_);
    auto& e = cache_[idx];
    std::int64_t* data = flat_.data() + idx * stride;
    if (!e.valid || e.node != &node || e.generation != node.generation) {
      fill_entry(node, e, data);
      e.node = &node;
      e.generation = node.generation;
      e.valid = true;
    }
    return {&e, data};
  }
  fill_entry(node, scratch_, scratch_data_.data());
  return {&scratch_, scratch_data_.data()};
}

bool load_aware_scheduling::expired_at(const cache_entry& e, event_time now) const {
  if (!e.has_update) return true;
  return args_.node_metric_expiration_seconds > 0 &&
         now.value - e.update_ms >= args_.node_metric_expiration_seconds * 1000;
}

const load_aware_scheduling::filter_profile& load_aware_scheduling::profile_for(
    const node_info& node, filter_profile& scratch) const {
  // helper.go generateUsageThresholdsFilterProfile: each non-empty part of the node annotation
  // replaces the args part; an aggregated part without thresholds and type is ignored.
  if (!node.custom_thresholds) return base_profile_;
  const auto& c = *node.custom_thresholds;
  const bool agg_ok = c.aggregated_usage && !c.aggregated_usage->usage_thresholds.empty() &&
                      c.aggregated_usage->usage_aggregation_type;
  if (c.usage_thresholds.empty() && c.prod_usage_thresholds.empty() && !agg_ok)
    return base_profile_;
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
  st.slot<incoming>(slot()).cycle = ~0ull;  // a new pod: estimate afresh
  (void)incoming_of(st, pod);
  nodes_base_ = nodes.data();
  nodes_count_ = nodes.size();
  if (cache_.size() != nodes.size()) {
    cache_.clear();
    cache_.resize(nodes.size());
    flat_.assign(nodes.size() * 4 * names_.size(), 0);
  }
  return {};
}

status load_aware_scheduling::filter(cycle_state& st, const pod_info& pod, const node_info& node,
                                     event_time now) {
  if (pod.daemonset_owned) return {};
  const incoming& in = incoming_of(st, pod);
  const auto [e, data] = entry_for(node);
  const filter_profile& prof = e->profile ? *e->profile : base_profile_;
  const bool prod_pod = e->filter_prod_enabled && in.prod;
  const vec* thresholds = prof.has_agg ? &prof.agg : &prof.usage;
  bool is_agg = e->filter_is_agg;
  if (prod_pod) {
    thresholds = &prof.prod;
    is_agg = false;
  } else if (e->filter_disabled) {
    return {};  // filter disabled
  }
  if (!e->has_metric) return {};  // no NodeMetric: load-aware is only an optimisation
  if (args_.filter_expired_node_metrics && expired_at(*e, now)) {
    if (!args_.enable_schedule_when_node_metrics_expired)
      return status::unschedulable(err_reason_node_metric_expired);
    return {};
  }
  if (!e->has_node_metric) return {};
  const std::size_t n = names_.size();
  const std::int64_t* existing = data + (prod_pod ? 2 * n : 0);
  const std::int64_t* alloc = data + 3 * n;
  for (std::size_t k = 0; k < n; ++k) {
    const std::int64_t th = (*thresholds)[k];
    if (th == 0) continue;
    const std::int64_t total = alloc[k];
    if (total == 0) continue;
    const std::int64_t used = existing[k] + in.estimate[k];
    // math.Round(x) > th  <=>  x >= th + 0.5 for x >= 0 (x computed as Go does).
    const double pct = static_cast<double>(used) / static_cast<double>(total) * 100.0;
    if (pct < static_cast<double>(th) + 0.5) continue;
    return status::unschedulable(is_agg ? agg_reason_[k] : usage_reason_[k]);
  }
  return {};
}

std::int64_t load_aware_scheduling::score_sum(const std::int64_t* existing,
                                              const std::int64_t* estimate,
                                              const std::int64_t* alloc) const {
  // loadAwareSchedulingScorer: weighted least-used plus the dominant (minimum) score over
  // every vector resource, weight 0 included; used = existing + estimate (resource order).
  const std::int64_t dw = args_.dominant_resource_weight;
  std::int64_t node_score = 0, dominant = 0, weight_sum = 0;
  if (dw != 0) {
    dominant = max_node_score;
    weight_sum = dw;
  }
  const std::size_t n = names_.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t w = score_weights_[i];
    const std::int64_t used = existing[i] + estimate[i];
    std::int64_t s = 0;
    if (alloc[i] != 0 && used <= alloc[i]) s = (alloc[i] - used) * max_node_score / alloc[i];
    node_score += s * w;
    weight_sum += w;
    if (dominant > s) dominant = s;
  }
  node_score += dominant * dw;
  if (weight_sum <= 0) return 0;
  return node_score / weight_sum;
}

std::int64_t load_aware_scheduling::score_entry(const incoming& in, const node_info& node,
                                                event_time now) {
  const auto [e, data] = entry_for(node);
  if (!e->has_metric) return 0;
  if (expired_at(*e, now)) return 0;
  if (!e->has_node_metric) return 0;
  const bool prod_pod = args_.score_according_prod_usage && in.prod;
  const std::size_t n = names_.size();
  return score_sum(data + (prod_pod ? 2 * n : n), in.estimate.data(), data + 3 * n);
}

std::int64_t load_aware_scheduling::score(cycle_state& st, const pod_info& pod,
                                          const node_info& node, event_time now) {
  if (score_disabled_) return 0;
  return score_entry(incoming_of(st, pod), node, now);
}

void load_aware_scheduling::score_nodes(cycle_state& st, const pod_info& pod,
                                        std::span<const node_info> nodes,
                                        std::span<const std::uint32_t> indices,
                                        std::span<std::int64_t> out, event_time now) {
  if (score_disabled_) {
    std::fill(out.begin(), out.end(), 0);
    return;
  }
  const incoming& in = incoming_of(st, pod);
  for (std::size_t j = 0; j < indices.size(); ++j) out[j] = score_entry(in, nodes[indices[j]], now);
}

}  // namespace colony::scheduler
