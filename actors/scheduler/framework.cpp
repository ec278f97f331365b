// framework.hpp: the scheduling cycle (kube-scheduler schedule_one.go semantics, sequential
// and deterministic).
#include "actors/scheduler/framework.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <string>

#include "messages/names.hpp"

namespace colony::scheduler {

namespace {

struct resource_row {
  resource_name name;
  std::string_view text;
  std::int64_t resource_list::*field;
};

// gpu maps onto resource_list::gpu ("nvidia.com/gpu | koordinator.sh/gpu, x100").
constexpr std::array<resource_row, resource_name_count> resource_rows{{
    {resource_name::cpu, names::cpu, &resource_list::cpu_milli},
    {resource_name::gpu, names::koord_gpu, &resource_list::gpu},
    {resource_name::gpu_core, names::gpu_core, &resource_list::gpu_core},
    {resource_name::gpu_memory, names::gpu_memory, &resource_list::gpu_memory_bytes},
    {resource_name::gpu_memory_ratio, names::gpu_memory_ratio, &resource_list::gpu_memory_ratio},
    {resource_name::batch_cpu, names::batch_cpu, &resource_list::batch_cpu_milli},
    {resource_name::batch_memory, names::batch_memory, &resource_list::batch_memory_bytes},
    {resource_name::mid_cpu, names::mid_cpu, &resource_list::mid_cpu_milli},
    {resource_name::mid_memory, names::mid_memory, &resource_list::mid_memory_bytes},
    {resource_name::memory, names::memory, &resource_list::memory_bytes},
    {resource_name::pods, names::pods, &resource_list::pods},
}};

}  // namespace

std::string_view to_string(resource_name r) noexcept {
  return resource_rows[static_cast<std::size_t>(r)].text;
}

std::optional<resource_name> parse_resource_name(std::string_view s) noexcept {
  for (const auto& row : resource_rows)
    if (row.text == s) return row.name;
  return std::nullopt;
}

std::optional<resource_name> translate_resource_name(priority_class pc, resource_name r) noexcept {
  switch (pc) {
    case priority_class::prod:
    case priority_class::none:
      return r;
    case priority_class::batch:
      if (r == resource_name::cpu) return resource_name::batch_cpu;
      if (r == resource_name::memory) return resource_name::batch_memory;
      return std::nullopt;
    case priority_class::mid:
      if (r == resource_name::cpu) return resource_name::mid_cpu;
      if (r == resource_name::memory) return resource_name::mid_memory;
      return std::nullopt;
    case priority_class::free:
      return std::nullopt;
  }
  return std::nullopt;
}

std::string_view to_string(aggregation_type t) noexcept {
  switch (t) {
    case aggregation_type::avg:
      return "avg";
    case aggregation_type::p50:
      return "p50";
    case aggregation_type::p90:
      return "p90";
    case aggregation_type::p95:
      return "p95";
    case aggregation_type::p99:
      return "p99";
  }
  return "";
}

std::optional<aggregation_type> parse_aggregation_type(std::string_view s) noexcept {
  if (s == "avg") return aggregation_type::avg;
  if (s == "p50") return aggregation_type::p50;
  if (s == "p90") return aggregation_type::p90;
  if (s == "p95") return aggregation_type::p95;
  if (s == "p99") return aggregation_type::p99;
  return std::nullopt;
}

std::string_view to_string(status_code c) noexcept {
  switch (c) {
    case status_code::success:
      return "Success";
    case status_code::error:
      return "Error";
    case status_code::unschedulable:
      return "Unschedulable";
    case status_code::unschedulable_and_unresolvable:
      return "UnschedulableAndUnresolvable";
    case status_code::wait:
      return "Wait";
    case status_code::skip:
      return "Skip";
  }
  return "";
}

std::string_view to_string(outcome o) noexcept {
  switch (o) {
    case outcome::scheduled:
      return "scheduled";
    case outcome::waiting:
      return "waiting";
    case outcome::unschedulable:
      return "unschedulable";
    case outcome::error:
      return "error";
  }
  return "";
}

std::string_view extension_point_label(std::uint32_t ep) noexcept {
  switch (ep) {
    case ep_pre_filter:
      return "PreFilter";
    case ep_filter:
      return "Filter";
    case ep_score:
      return "Score";
    case ep_score_normalize:
      return "ScoreExtensionNormalize";
    case ep_reserve:
      return "Reserve";
    case ep_permit:
      return "Permit";
    case ep_post_filter:
      return "PostFilter";
    case ep_pre_enqueue:
      return "PreEnqueue";
    default:
      return "";
  }
}

std::string_view pod_info::namespace_name() const noexcept {
  auto pos = std::string_view(key).find('/');
  return pos == std::string_view::npos ? std::string_view{} : std::string_view(key).substr(0, pos);
}

kube_qos pod_info::effective_kube_qos() const noexcept {
  if (kube_qos_class) return *kube_qos_class;
  // v1qos.GetPodQOS over pod-level sums of cpu and memory (the only QoS compute resources).
  const bool no_requests = requests.cpu_milli == 0 && requests.memory_bytes == 0;
  const bool no_limits = limits.cpu_milli == 0 && limits.memory_bytes == 0;
  if (no_requests && no_limits) return kube_qos::best_effort;
  if (limits.cpu_milli > 0 && limits.memory_bytes > 0 && requests.cpu_milli == limits.cpu_milli &&
      requests.memory_bytes == limits.memory_bytes)
    return kube_qos::guaranteed;
  return kube_qos::burstable;
}

priority_class pod_info::priority_class_with_default() const noexcept {
  return scheduler::priority_class_with_default(priority_class_label, priority, qos_label,
                                                effective_kube_qos());
}

resource_list non_zero_requests(const pod_info& pod) noexcept {
  resource_list r;
  r.cpu_milli = pod.requests.cpu_milli == 0 ? default_milli_cpu_request : pod.requests.cpu_milli;
  r.memory_bytes =
      pod.requests.memory_bytes == 0 ? default_memory_request : pod.requests.memory_bytes;
  return r;
}

void default_normalize_score(std::int64_t max_priority, bool reverse,
                             std::span<std::int64_t> scores) noexcept {
  std::int64_t max_count = 0;
  for (auto s : scores) max_count = std::max(max_count, s);
  if (max_count == 0) {
    if (reverse)
      for (auto& s : scores) s = max_priority;
    return;
  }
  for (auto& s : scores) {
    s = max_priority * s / max_count;
    if (reverse) s = max_priority - s;
  }
}

std::size_t num_feasible_nodes_to_find(std::int32_t percentage,
                                       std::size_t num_all_nodes) noexcept {
  constexpr std::size_t min_feasible_nodes_to_find = 100;
  constexpr std::int64_t min_feasible_nodes_percentage_to_find = 5;
  if (num_all_nodes < min_feasible_nodes_to_find) return num_all_nodes;
  std::int64_t pct = percentage;
  if (pct <= 0) {
    pct = 50 - static_cast<std::int64_t>(num_all_nodes) / 125;
    if (pct < min_feasible_nodes_percentage_to_find) pct = min_feasible_nodes_percentage_to_find;
  }
  if (pct >= 100) return num_all_nodes;
  auto n = static_cast<std::size_t>(static_cast<std::int64_t>(num_all_nodes) * pct / 100);
  return n < min_feasible_nodes_to_find ? min_feasible_nodes_to_find : n;
}

std::uint64_t fnv1a64(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::uint64_t mix64(std::uint64_t x) noexcept {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t tie_break_key(std::uint64_t seed, std::string_view pod_key,
                            std::string_view node_name) noexcept {
  return mix64(seed ^ mix64(fnv1a64(pod_key)) ^ (fnv1a64(node_name) * 0x9e3779b97f4a7c15ull));
}

std::string_view to_string(tie_break t) noexcept {
  switch (t) {
    case tie_break::seeded:
      return "seeded";
    case tie_break::node_name:
      return "nodeName";
  }
  return "";
}

result<tie_break> parse_tie_break(std::string_view s) {
  if (s == "seeded") return tie_break::seeded;
  if (s == "nodeName") return tie_break::node_name;
  return fail(errc::invalid_input, "expected one of seeded, nodeName, got '" + std::string(s) + "'",
              "tieBreak");
}

result<scheduler_feature_gates> parse_scheduler_feature_gates(std::string_view s) {
  scheduler_feature_gates g;
  while (!s.empty()) {
    const auto comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    const std::string name(item.substr(0, eq));
    const std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (value != "true" && value != "false")
      return fail(errc::invalid_input,
                  "gate " + name + ": expected =true or =false, got '" + std::string(item) + "'",
                  "feature-gates");
    if (name == "ElasticQuotaIgnorePodOverhead")
      g.elastic_quota_ignore_pod_overhead = value == "true";
    else
      return fail(errc::invalid_input,
                  "unknown scheduler feature gate '" + name +
                      "' (Colony's scheduler reads ElasticQuotaIgnorePodOverhead)",
                  "feature-gates");
  }
  return g;
}

void framework::add(std::shared_ptr<plugin> p, std::int64_t score_weight,
                    std::optional<std::uint32_t> enabled) {
  p->set_slot(plugins_.size());
  plugin_entry e;
  e.enabled = enabled.value_or(p->points()) & p->points();
  e.weight = score_weight;
  e.impl = std::move(p);
  plugins_.push_back(std::move(e));
}

plugin* framework::find(std::string_view name) const noexcept {
  for (const auto& e : plugins_)
    if (e.impl->name() == name) return e.impl.get();
  return nullptr;
}

queueing_hint framework::filter_hint(const pod_info& pod, const cluster_event& ev) const {
  if (ev.type == cluster_event_type::wildcard || ev.node == nullptr) return queueing_hint::queue;
  for (const auto& e : plugins_)
    if ((e.enabled & ep_filter) && e.impl->filter_hint(pod, ev) == queueing_hint::skip)
      return queueing_hint::skip;
  return queueing_hint::queue;
}

status framework::run_pre_enqueue(const pod_info& pod, event_time now) {
  for (auto& e : plugins_) {
    if (!(e.enabled & ep_pre_enqueue)) continue;
    auto s = e.impl->pre_enqueue(pod, now);
    if (!s.ok()) return s;
  }
  return {};
}

void framework::run_unreserve(cycle_state& st, const pod_info& pod, const node_info& node,
                              event_time now) {
  for (auto it = plugins_.rbegin(); it != plugins_.rend(); ++it)
    if (it->enabled & ep_reserve) it->impl->unreserve(st, pod, node, now);
}

namespace {

// kube's FitError message: "0/N nodes are available: 3 Insufficient cpu, 2 ...".
std::string fit_error_message(std::size_t n, const std::vector<failure_reason>& fails) {
  std::vector<std::string> parts;
  parts.reserve(fails.size());
  for (const auto& f : fails) parts.push_back(std::to_string(f.nodes) + " " + f.reason);
  std::sort(parts.begin(), parts.end());  // sortReasonsHistogram sorts the strings
  std::string msg = "0/" + std::to_string(n) + " nodes are available";
  for (std::size_t i = 0; i < parts.size(); ++i) msg += (i == 0 ? ": " : ", ") + parts[i];
  msg += ".";
  return msg;
}

}  // namespace

bool framework::parallel_ok(const std::vector<std::size_t>& score_plugins) const noexcept {
  for (const std::size_t p : filter_plugins_)
    if (!plugins_[p].impl->parallel_safe()) return false;
  for (const std::size_t p : score_plugins)
    if (!plugins_[p].impl->parallel_safe()) return false;
  return true;
}

decision framework::run_cycle(cycle_state& st, const pod_info& pod,
                              std::span<const node_info> nodes, event_time now) {
  decision d;
  d.pod_key = pod.key;
  d.time = now;
  d.total_nodes = nodes.size();
  ++st.cycle;
  st.gpu_allocations.clear();
  st.device_allocations.clear();
  st.rejected_pods.clear();
  st.reservation_relief.clear();
  st.reservation.clear();
  st.cpuset = {};
  st.numa_resources.clear();

  // Metrics only (framework_recorder): nothing below reads these times.
  framework_recorder* const rec = opts_.recorder.get();
  const bool sampled = rec != nullptr && rec->sample_cycle();
  const auto clock = [rec] { return rec != nullptr ? rec->now_ns() : 0; };
  const auto timed_plugin = [&](const plugin_entry& e, std::uint32_t ep, status_code code,
                                std::int64_t t0) {
    if (sampled)
      rec->plugin(static_cast<std::size_t>(&e - plugins_.data()), e.impl->name(), ep, code,
                  rec->now_ns() - t0);
  };
  const auto timed_point = [&](std::uint32_t ep, status_code code, std::int64_t t0) {
    if (rec != nullptr) rec->extension_point(ep, code, rec->now_ns() - t0);
  };

  auto run_post_filter = [&] {
    const std::int64_t t_point = clock();
    for (auto& e : plugins_) {
      if (!(e.enabled & ep_post_filter)) continue;
      const std::int64_t t0 = sampled ? clock() : 0;
      auto r = e.impl->post_filter(st, pod, now);
      timed_plugin(e, ep_post_filter, r.st.code, t0);
      for (auto& p : r.rejected_pods) d.rejected_pods.push_back(std::move(p));
      if (r.st.ok() && r.nominated_node) {
        d.nominated_node = std::move(r.nominated_node);
        d.victims = std::move(r.victims);
        break;  // kube stops at the first PostFilter that succeeds
      }
    }
    timed_point(ep_post_filter,
                d.nominated_node ? status_code::success : status_code::unschedulable, t_point);
  };

  if (nodes.empty()) {
    d.result = outcome::unschedulable;
    d.message = "no nodes available to schedule pods";
    return d;
  }

  // --- PreFilter -------------------------------------------------------------------------
  std::uint64_t skip_filter = 0;  // bit i = plugin i's Filter is skipped (PreFilter said Skip)
  const std::int64_t t_pre_filter = clock();
  for (std::size_t i = 0; i < plugins_.size(); ++i) {
    auto& e = plugins_[i];
    if (!(e.enabled & ep_pre_filter)) continue;
    const std::int64_t t0 = sampled ? clock() : 0;
    auto s = e.impl->pre_filter(st, pod, nodes, now);
    timed_plugin(e, ep_pre_filter, s.code, t0);
    if (s.code == status_code::skip) {
      if (i < 64) skip_filter |= (1ull << i);
      continue;
    }
    if (!s.ok()) {
      timed_point(ep_pre_filter, s.code, t_pre_filter);
      d.result = s.code == status_code::error ? outcome::error : outcome::unschedulable;
      d.message = std::string(e.impl->name()) + ": " + s.message();
      d.failures.push_back({std::string(e.impl->name()), s.message(), nodes.size()});
      d.failed_at = ep_pre_filter;
      if (d.result == outcome::unschedulable) run_post_filter();
      return d;
    }
  }

  timed_point(ep_pre_filter, status_code::success, t_pre_filter);

  // --- Filter (percentageOfNodesToScore, rotating start) ---------------------------------
  // One plugin's Filter on one node, timed in sampled cycles (may run on parallelizer threads).
  const auto run_filter = [&](std::size_t p, std::size_t idx) {
    auto& e = plugins_[p];
    if (!sampled) return e.impl->filter(st, pod, nodes[idx], now);
    const std::int64_t t0 = rec->now_ns();
    auto s = e.impl->filter(st, pod, nodes[idx], now);
    rec->plugin(p, e.impl->name(), ep_filter, s.code, rec->now_ns() - t0);
    return s;
  };
  // One plugin's score_nodes over a chunk, timed likewise.
  const auto run_score = [&](std::size_t p, std::span<const std::uint32_t> idx,
                             std::span<std::int64_t> out) {
    auto& e = plugins_[p];
    const std::int64_t t0 = sampled ? rec->now_ns() : 0;
    e.impl->score_nodes(st, pod, nodes, idx, out, now);
    timed_plugin(e, ep_score, status_code::success, t0);
  };
  std::int64_t score_ns = 0;  // the cycle's time in Score, summed over its pieces
  const std::size_t n = nodes.size();
  const std::size_t to_find = num_feasible_nodes_to_find(opts_.percentage_of_nodes_to_score, n);
  const std::size_t start = next_start_ % n;
  feasible_.clear();
  fail_scratch_.clear();
  std::deque<std::string> owned_reasons;  // only filled by filters that return a detail
  filter_plugins_.clear();
  for (std::size_t p = 0; p < plugins_.size(); ++p)
    if ((plugins_[p].enabled & ep_filter) && !(p < 64 && (skip_filter >> p) & 1u))
      filter_plugins_.push_back(p);
  // Score plugins, and raw scores laid out [score plugin][feasible node] with a stride of
  // to_find (the most nodes that can be feasible).
  std::vector<std::size_t>& score_plugins = score_plugins_;
  score_plugins.clear();
  for (std::size_t p = 0; p < plugins_.size(); ++p)
    if (plugins_[p].enabled & ep_score) score_plugins.push_back(p);
  const std::size_t k = score_plugins.size();
  const std::size_t stride = to_find;
  if (raw_.size() < k * stride) raw_.resize(k * stride);
  // Raw scores of the nodes found feasible since `from`, while their node_info is still in
  // cache. A raw score depends only on the pod, the node and PreFilter state (the plugin
  // contract), so scoring in chunks during filtering gives the scores of a separate pass.
  std::size_t scored = 0;
  auto score_pending = [&] {
    const std::size_t m = feasible_.size() - scored;
    if (m == 0) return;
    const std::span<const std::uint32_t> idx(feasible_.data() + scored, m);
    const std::int64_t t0 = clock();
    for (std::size_t s = 0; s < k; ++s)
      run_score(score_plugins[s], idx,
                std::span<std::int64_t>(raw_.data() + s * stride + scored, m));
    score_ns += clock() - t0;
    scored = feasible_.size();
  };
  constexpr std::size_t score_chunk = 32;
  std::size_t processed = 0;
  const std::size_t chunk = std::max<std::size_t>(1, opts_.parallel_chunk);
  const bool par = opts_.parallelizer && n >= 2 * chunk && parallel_ok(score_plugins);
  // The nodes that hold reservations the pod may use (the Reservation plugin's PreFilter) are
  // filtered first, before the rotation: an owner always sees its reservations, however few
  // nodes percentageOfNodesToScore lets the cycle evaluate (Colony's rule, docs/reservation.md;
  // kube-scheduler narrows the same way for a PreFilterResult). The rotation then skips them,
  // so a pod that matches no reservation is filtered exactly as before.
  reserved_first_.clear();
  for (const auto& [node, relief] : st.reservation_relief)
    if (node >= nodes.data() && node < nodes.data() + n)
      reserved_first_.push_back(static_cast<std::uint32_t>(node - nodes.data()));
  std::sort(reserved_first_.begin(), reserved_first_.end());
  const auto reserved_first = [&](std::size_t idx) {
    return !reserved_first_.empty() &&
           std::binary_search(reserved_first_.begin(), reserved_first_.end(),
                              static_cast<std::uint32_t>(idx));
  };
  // Every Filter plugin on one node, in order, stopping at the first failure
  // (RunFilterPlugins); a failure's reason is kept; an Error is written into `d`.
  enum class verdict : std::uint8_t { fits, fails, error };
  const auto judge = [&](std::size_t idx) {
    for (const std::size_t p : filter_plugins_) {
      auto s = run_filter(p, idx);
      if (s.ok()) continue;
      if (s.code == status_code::error) {
        d.result = outcome::error;
        d.message = std::string(plugins_[p].impl->name()) + ": " + s.message();
        return verdict::error;
      }
      std::string_view reason = s.reason;
      if (reason.empty()) {
        owned_reasons.push_back(s.message());
        reason = owned_reasons.back();
      }
      fail_scratch_.emplace_back(p, reason);
      return verdict::fails;
    }
    return verdict::fits;
  };
  bool enough = false;
  std::size_t judged_first = 0, skipped = 0;
  for (const std::uint32_t idx : reserved_first_) {
    ++judged_first;
    const verdict v = judge(idx);
    if (v == verdict::error) return d;
    if (v == verdict::fits) {
      feasible_.push_back(idx);
      if (feasible_.size() >= to_find) {
        enough = true;
        break;
      }
    }
  }
  if (enough) {
    // Every feasible node found among the reserved ones: the rotation does not move.
  } else if (!par) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t idx = (start + i) % n;
      ++processed;
      if (reserved_first(idx)) {
        ++skipped;
        continue;
      }
      const verdict v = judge(idx);
      if (v == verdict::error) return d;
      if (v == verdict::fits) {
        feasible_.push_back(static_cast<std::uint32_t>(idx));
        if (feasible_.size() >= to_find) break;
        if (feasible_.size() - scored >= score_chunk) score_pending();
      }
    }
  } else {
    // Parallel Filter with kube's sequential result: nodes are filtered in windows, each window
    // fanned out in chunks, and the verdicts are then taken in rotation order until to_find
    // nodes fit, exactly as the loop above takes them. Nodes filtered past that point are
    // wasted work, never part of the decision (and Filter writes nothing a later cycle sees
    // beyond per-node caches keyed by the node's generation).
    constexpr std::size_t fits_all = static_cast<std::size_t>(-1);
    bool done = false;
    while (!done && processed < n) {
      const std::size_t need = to_find - feasible_.size();
      // First window: as many nodes as feasible ones are needed; later ones scale the need by
      // the feasible rate seen so far.
      std::size_t w = need;
      if (processed > 0) w = feasible_.empty() ? n : need * processed / feasible_.size() + chunk;
      w = std::min(std::max(w, chunk), n - processed);
      if (window_.size() < w) window_.resize(w);
      const std::size_t base = processed;
      opts_.parallelizer((w + chunk - 1) / chunk, [&](std::size_t t) {
        const std::size_t hi = std::min(w, (t + 1) * chunk);
        for (std::size_t i = t * chunk; i < hi; ++i) {
          auto& v = window_[i];
          v.plugin = fits_all;  // v.st is read only for a node that failed
          const std::size_t idx = (start + base + i) % n;
          for (const std::size_t p : filter_plugins_) {
            auto s = run_filter(p, idx);
            if (s.ok()) continue;
            v.plugin = p;
            v.st.code = s.code;
            v.st.reason = s.reason;
            // Most failures carry a static reason only: keep the slot's string, skip the move.
            if (s.detail.empty())
              v.st.detail.clear();
            else
              v.st.detail = std::move(s.detail);
            break;
          }
        }
      });
      for (std::size_t i = 0; i < w; ++i) {
        const std::size_t idx = (start + base + i) % n;
        ++processed;
        if (reserved_first(idx)) {  // judged before the rotation
          ++skipped;
          continue;
        }
        auto& v = window_[i];
        if (v.plugin == fits_all) {
          feasible_.push_back(static_cast<std::uint32_t>(idx));
          if (feasible_.size() >= to_find) {
            done = true;
            break;
          }
          continue;
        }
        if (v.st.code == status_code::error) {
          d.result = outcome::error;
          d.message = std::string(plugins_[v.plugin].impl->name()) + ": " + v.st.message();
          return d;
        }
        std::string_view reason = v.st.reason;
        if (reason.empty()) {
          owned_reasons.push_back(v.st.message());
          reason = owned_reasons.back();
        }
        fail_scratch_.emplace_back(v.plugin, reason);
      }
    }
  }
  next_start_ = (start + processed) % n;
  d.evaluated_nodes = processed - skipped + judged_first;
  d.feasible_nodes = feasible_.size();

  if (feasible_.empty()) {
    std::sort(fail_scratch_.begin(), fail_scratch_.end());
    for (std::size_t i = 0; i < fail_scratch_.size();) {
      std::size_t j = i;
      while (j < fail_scratch_.size() && fail_scratch_[j] == fail_scratch_[i]) ++j;
      d.failures.push_back({std::string(plugins_[fail_scratch_[i].first].impl->name()),
                            std::string(fail_scratch_[i].second), j - i});
      i = j;
    }
    std::stable_sort(
        d.failures.begin(), d.failures.end(),
        [](const failure_reason& a, const failure_reason& b) { return a.nodes > b.nodes; });
    d.result = outcome::unschedulable;
    d.failed_at = ep_filter;
    d.message = fit_error_message(n, d.failures);
    run_post_filter();
    return d;
  }

  // --- Score -------------------------------------------------------------------------------
  if (par) {
    // Every feasible node at once, in chunks: raw scores depend only on the pod, the node and
    // PreFilter state (the plugin contract), so the chunking does not change them.
    const std::size_t fcount = feasible_.size();
    const std::int64_t t0 = clock();
    opts_.parallelizer((fcount + chunk - 1) / chunk, [&](std::size_t t) {
      const std::size_t lo = t * chunk;
      const std::size_t m = std::min(fcount, lo + chunk) - lo;
      const std::span<const std::uint32_t> idx(feasible_.data() + lo, m);
      for (std::size_t s = 0; s < k; ++s)
        run_score(score_plugins[s], idx, std::span<std::int64_t>(raw_.data() + s * stride + lo, m));
    });
    score_ns += clock() - t0;
    scored = fcount;
  }
  score_pending();
  // Score's figure is NormalizeScore's time plus score_ns: timed_point measures from
  // t_normalize - score_ns.
  const std::int64_t t_normalize = clock();
  const std::size_t f = feasible_.size();
  if (norm_.size() < k * stride) norm_.resize(k * stride);
  total_.assign(f, 0);
  for (std::size_t s = 0; s < k; ++s) {
    auto& e = plugins_[score_plugins[s]];
    std::copy_n(raw_.data() + s * stride, f, norm_.data() + s * stride);
    std::span<std::int64_t> row(norm_.data() + s * stride, f);
    const std::int64_t t0 = sampled ? clock() : 0;
    e.impl->normalize_score(st, pod, row);
    timed_plugin(e, ep_score_normalize, status_code::success, t0);
    for (std::size_t j = 0; j < f; ++j) {
      if (row[j] < 0 || row[j] > max_node_score) {
        timed_point(ep_score, status_code::error, t_normalize - score_ns);
        d.result = outcome::error;
        d.message = "plugin \"" + std::string(e.impl->name()) + "\" returns an invalid score " +
                    std::to_string(row[j]) +
                    ", it should in the range of [0, 100] after normalizing";
        return d;
      }
      total_[j] += row[j] * e.weight;
    }
  }

  timed_point(ep_score, status_code::success, t_normalize - score_ns);

  // --- Select: best total, then the tie-break (lowest tie_break_key, or smallest node name),
  // then lowest node index -------------------------------------------------------------------
  struct ranked {
    std::int64_t total;
    std::uint64_t key;
    std::size_t j;
  };
  // Under tie_break::node_name the key is the name's first 8 bytes, big-endian and zero-padded:
  // a smaller key is a smaller name, and equal keys fall back to the whole names.
  const bool by_name = opts_.ties == tie_break::node_name;
  auto name_key = [](std::string_view s) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i)
      v = (v << 8) | (i < s.size() ? static_cast<unsigned char>(s[i]) : 0u);
    return v;
  };
  auto better = [&](const ranked& a, const ranked& b) {
    if (a.total != b.total) return a.total > b.total;
    if (a.key != b.key) return a.key < b.key;
    if (by_name) {
      const std::string_view na = nodes[feasible_[a.j]].name, nb = nodes[feasible_[b.j]].name;
      if (na != nb) return na < nb;
      return feasible_[a.j] < feasible_[b.j];
    }
    return a.j < b.j;
  };
  const std::size_t keep = opts_.top_n + 1;
  std::vector<ranked> best;
  best.reserve(keep + 1);
  for (std::size_t j = 0; j < f; ++j) {
    if (best.size() == keep && total_[j] < best.back().total) continue;  // no hash needed
    const std::string_view name = nodes[feasible_[j]].name;
    ranked r{total_[j], by_name ? name_key(name) : tie_break_key(opts_.seed, pod.key, name), j};
    if (best.size() == keep && !better(r, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), r, better), r);
    if (best.size() > keep) best.pop_back();
  }

  auto scores_of = [&](std::size_t j) {
    std::vector<plugin_score> out;
    out.reserve(k);
    for (std::size_t s = 0; s < k; ++s) {
      auto& e = plugins_[score_plugins[s]];
      std::int64_t nv = norm_[s * stride + j];
      out.push_back({e.impl->name(), raw_[s * stride + j], nv, nv * e.weight});
    }
    return out;
  };
  const auto& chosen = best.front();
  const node_info& node = nodes[feasible_[chosen.j]];
  d.node = node.name;
  d.node_index = feasible_[chosen.j];
  d.total_score = chosen.total;
  d.scores = scores_of(chosen.j);
  for (std::size_t a = 1; a < best.size(); ++a) {
    const auto& r = best[a];
    d.alternatives.push_back(
        {nodes[feasible_[r.j]].name, feasible_[r.j], r.total, by_name ? 0 : r.key, scores_of(r.j)});
  }

  // --- Reserve -------------------------------------------------------------------------------
  const std::int64_t t_reserve = clock();
  for (std::size_t p = 0; p < plugins_.size(); ++p) {
    auto& e = plugins_[p];
    if (!(e.enabled & ep_reserve)) continue;
    const std::int64_t t0 = sampled ? clock() : 0;
    auto s = e.impl->reserve(st, pod, node, now);
    timed_plugin(e, ep_reserve, s.code, t0);
    if (!s.ok()) {
      timed_point(ep_reserve, s.code, t_reserve);
      run_unreserve(st, pod, node, now);
      for (auto& x : st.rejected_pods) d.rejected_pods.push_back(std::move(x));
      st.rejected_pods.clear();
      d.result = s.code == status_code::error ? outcome::error : outcome::unschedulable;
      d.message = std::string(e.impl->name()) + ": " + s.message();
      d.failed_at = ep_reserve;
      return d;
    }
  }

  timed_point(ep_reserve, status_code::success, t_reserve);

  // --- Permit --------------------------------------------------------------------------------
  bool waiting = false;
  std::int64_t wait_ms = std::numeric_limits<std::int64_t>::max();
  const std::int64_t t_permit = clock();
  for (auto& e : plugins_) {
    if (!(e.enabled & ep_permit)) continue;
    const std::int64_t t0 = sampled ? clock() : 0;
    auto r = e.impl->permit(st, pod, node, now);
    timed_plugin(e, ep_permit, r.st.code, t0);
    for (auto& x : r.allowed_pods) d.allowed_pods.push_back(std::move(x));
    for (auto& x : r.rejected_pods) d.rejected_pods.push_back(std::move(x));
    if (r.st.code == status_code::wait) {
      waiting = true;
      wait_ms = std::min(wait_ms, r.wait.value);
    } else if (!r.st.ok()) {
      timed_point(ep_permit, r.st.code, t_permit);
      run_unreserve(st, pod, node, now);
      for (auto& x : st.rejected_pods) d.rejected_pods.push_back(std::move(x));
      st.rejected_pods.clear();
      d.result = outcome::unschedulable;
      d.message = std::string(e.impl->name()) + ": " + r.st.message();
      d.failed_at = ep_permit;
      return d;
    }
  }
  timed_point(ep_permit, waiting ? status_code::wait : status_code::success, t_permit);
  d.result = waiting ? outcome::waiting : outcome::scheduled;
  if (waiting) d.wait = duration_ms{wait_ms};
  d.gpu_allocations = st.gpu_allocations;
  d.device_allocations = st.device_allocations;
  d.reservation = st.reservation;
  d.cpuset = st.cpuset;
  d.numa_resources = st.numa_resources;
  return d;
}

const resource_list* cycle_state::relief_for(const node_info& node) const noexcept {
  if (reservation_relief.empty()) return nullptr;
  auto it = std::lower_bound(
      reservation_relief.begin(), reservation_relief.end(), &node,
      [](const auto& e, const node_info* n) { return std::less<const node_info*>{}(e.first, n); });
  return it != reservation_relief.end() && it->first == &node ? &it->second : nullptr;
}

void assume_pod(node_info& node, const pod_info& pod, const decision& d, event_time now) {
  node.requested += pod.requests;
  node.requested.pods += 1;
  auto nz = non_zero_requests(pod);
  node.non_zero_requested.cpu_milli += nz.cpu_milli;
  node.non_zero_requested.memory_bytes += nz.memory_bytes;
  pod_info copy = pod;
  copy.node_name = node.name;
  copy.assigned_time = now;
  copy.gpu_allocations = d.gpu_allocations;
  copy.device_allocations = d.device_allocations;
  device::add_allocations(node.device_usage, d.device_allocations);
  copy.cpuset = d.cpuset;
  copy.holds_numa_resources = !d.numa_resources.empty();
  if (!d.numa_resources.empty()) node.numa.add_numa(pod.key, d.numa_resources);
  if (!d.cpuset.empty())
    node.numa.allocation.add_cpus(pod.key, d.cpuset,
                                  pod.cpu_resource_spec.preferred_cpu_exclusive_policy);
  for (const auto& a : d.gpu_allocations) {
    for (auto& g : node.gpus) {
      if (g.minor != a.minor) continue;
      g.core_used += a.core;
      g.memory_used_bytes += a.memory_bytes;
      g.memory_ratio_used += a.memory_ratio;
    }
  }
  node.pods.push_back(std::move(copy));
  ++node.generation;
}

bool forget_pod(node_info& node, std::string_view pod_key) {
  auto it = std::find_if(node.pods.begin(), node.pods.end(),
                         [&](const pod_info& p) { return p.key == pod_key; });
  if (it == node.pods.end()) return false;
  node.requested -= it->requests;
  node.requested.pods -= 1;
  auto nz = non_zero_requests(*it);
  node.non_zero_requested.cpu_milli -= nz.cpu_milli;
  node.non_zero_requested.memory_bytes -= nz.memory_bytes;
  for (const auto& a : it->gpu_allocations) {
    for (auto& g : node.gpus) {
      if (g.minor != a.minor) continue;
      g.core_used -= a.core;
      g.memory_used_bytes -= a.memory_bytes;
      g.memory_ratio_used -= a.memory_ratio;
    }
  }
  device::remove_allocations(node.device_usage, it->device_allocations);
  if (!it->cpuset.empty()) node.numa.allocation.release(it->key);
  if (it->holds_numa_resources) node.numa.release_numa(it->key);
  node.pods.erase(it);
  ++node.generation;
  return true;
}

}  // namespace colony::scheduler
