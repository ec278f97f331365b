#include "actors/koordlet/cpu_burst.hpp"

#include <algorithm>

namespace colony::koordlet {

cpu_burst_config merge_burst_config(const cpu_burst_config& node,
                                    const std::optional<cpu_burst_config>& pod) {
  if (!pod) return node;
  cpu_burst_config c = node;
  if (pod->policy) c.policy = pod->policy;
  if (pod->cpu_burst_percent) c.cpu_burst_percent = pod->cpu_burst_percent;
  if (pod->cfs_quota_burst_percent) c.cfs_quota_burst_percent = pod->cfs_quota_burst_percent;
  if (pod->cfs_quota_burst_period_seconds)
    c.cfs_quota_burst_period_seconds = pod->cfs_quota_burst_period_seconds;
  return c;
}

bool cpu_burst_enabled(const cpu_burst_config& c) noexcept {
  auto p = c.policy.value_or(cpu_burst_policy::none);
  return p == cpu_burst_policy::auto_burst || p == cpu_burst_policy::cpu_burst_only;
}

bool cfs_quota_burst_enabled(const cpu_burst_config& c) noexcept {
  auto p = c.policy.value_or(cpu_burst_policy::none);
  return p == cpu_burst_policy::auto_burst || p == cpu_burst_policy::cfs_quota_burst_only;
}

bool pod_cpu_burstable(const pod_info& p) noexcept {
  return p.qos != qos_class::lsr && p.qos != qos_class::lse && p.qos != qos_class::be;
}

std::int64_t calc_static_cpu_burst_val(std::int64_t limit_milli,
                                       const cpu_burst_config& c) noexcept {
  if (!cpu_burst_enabled(c) || limit_milli <= 0 || !c.cpu_burst_percent) return 0;
  const double cores = (double(limit_milli) / 1000) * (double(*c.cpu_burst_percent) / 100);
  return static_cast<std::int64_t>(cores * double(cfs_base_period_us));
}

cpu_burst_values apply_cpu_burst(const pod_info& pod, const cpu_burst_config& c) {
  cpu_burst_values v;
  v.containers.reserve(pod.containers.size());
  for (const auto& ct : pod.containers) {
    auto b = calc_static_cpu_burst_val(ct.limits.cpu_milli, c);
    v.containers.push_back(b);
    v.pod += b;
  }
  return v;
}

std::string_view to_string(node_burst_state s) noexcept {
  switch (s) {
    case node_burst_state::overload:
      return "nodeBurstOverload";
    case node_burst_state::cooling:
      return "nodeBurstCooling";
    case node_burst_state::idle:
      return "nodeBurstIdle";
    case node_burst_state::unknown:
      break;
  }
  return "nodeBurstUnknown";
}

node_burst_state get_node_state_for_burst(std::int64_t threshold_percent,
                                          std::optional<double> node_cpu_avg,
                                          std::int32_t processors, std::span<const pod_info> pods,
                                          std::span<const std::optional<double>> pod_avg) {
  if (!node_cpu_avg || processors <= 0) return node_burst_state::unknown;
  double total = processors;
  double usage = *node_cpu_avg;  // system usage stays in the share pool (conservative)
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const auto q = pods[i].qos;
    if (q == qos_class::lse || q == qos_class::lsr)
      total -= double(pods[i].requests.cpu_milli) / 1000;
    if (i >= pod_avg.size() || !pod_avg[i]) continue;
    if (q == qos_class::lse || q == qos_class::lsr || q == qos_class::be) usage -= *pod_avg[i];
  }
  const double threshold = double(threshold_percent) / 100;
  const double cooling = threshold * share_pool_cooling_threshold_ratio;
  const double ratio = total > 0 ? usage / total : 1.0;
  if (ratio >= threshold) return node_burst_state::overload;
  if (cooling <= ratio && ratio < threshold) return node_burst_state::cooling;
  return node_burst_state::idle;
}

burst_limiter make_burst_limiter(std::int64_t period, std::int64_t percent, event_time now,
                                 std::uint64_t random_bits) noexcept {
  burst_limiter l;
  const std::int64_t capacity = period * (percent - 100);
  const double r = double(random_bits >> 11) * 0x1.0p-53 / 2;  // [0, 0.5)
  l.bucket_capacity = capacity;
  l.current_token = static_cast<std::int64_t>(double(capacity) * r);
  l.last_update_time = now;
  l.expire_duration = duration_ms{2 * period * 1000};
  return l;
}

limiter_step burst_limiter_allow(const burst_limiter& l, event_time now,
                                 std::int64_t usage) noexcept {
  limiter_step s{l, false, 0};
  const std::int64_t past = (now.value - l.last_update_time.value) / 1000;  // int64(Seconds())
  if (usage >= limiter_consume_tokens_percent)
    s.next.current_token -= (usage - 100) * past;
  else if (usage < limiter_saving_tokens_percent)
    s.next.current_token += (100 - usage) * past;
  s.next.current_token =
      std::max(std::min(s.next.current_token, s.next.bucket_capacity), -s.next.bucket_capacity);
  s.next.last_update_time = now;
  s.tokens = s.next.current_token;
  s.allowed = s.tokens > 0;
  return s;
}

burst_limiter burst_limiter_update_if_changed(const burst_limiter& l, std::int64_t period,
                                              std::int64_t percent, event_time now,
                                              std::uint64_t random_bits) noexcept {
  if (l.bucket_capacity != period * (percent - 100))
    return make_burst_limiter(period, percent, now, random_bits);
  return l;
}

bool burst_limiter_expired(const burst_limiter& l, event_time now) noexcept {
  return now.value - l.last_update_time.value > l.expire_duration.value;
}

std::string_view to_string(cfs_operation o) noexcept {
  switch (o) {
    case cfs_operation::scale_up:
      return "cfsScaleUp";
    case cfs_operation::scale_down:
      return "cfsScaleDown";
    case cfs_operation::remain:
      return "cfsRemain";
    case cfs_operation::reset:
      break;
  }
  return "cfsReset";
}

cfs_operation change_operation_by_node(node_burst_state s, cfs_operation op) noexcept {
  if (s == node_burst_state::overload &&
      (op == cfs_operation::scale_up || op == cfs_operation::remain))
    return cfs_operation::scale_down;
  if ((s == node_burst_state::cooling || s == node_burst_state::unknown) &&
      op == cfs_operation::scale_up)
    return cfs_operation::remain;
  return op;
}

cfs_quota_burst_result cfs_quota_burst(const cpu_burst_config& c, node_burst_state state,
                                       const container_burst_input& in, event_time now,
                                       std::uint64_t random_bits) {
  cfs_quota_burst_result r;
  r.next_limiter = in.limiter;
  if (!in.running) return r;
  r.base_cfs = in.cpu_limit_milli > 0 ? in.cpu_limit_milli * cfs_base_period_us / 1000 : -1;
  if (r.base_cfs <= 0) return r;
  r.skipped = false;
  r.ceil_cfs = r.base_cfs;
  if (c.cfs_quota_burst_percent && *c.cfs_quota_burst_percent > 100)
    r.ceil_cfs =
        static_cast<std::int64_t>(double(r.base_cfs) * double(*c.cfs_quota_burst_percent) / 100);

  // cfsBurstAllowedByLimiter (runs before the policy check; it advances the limiter).
  bool allowed = true;
  if (c.cfs_quota_burst_period_seconds && *c.cfs_quota_burst_period_seconds >= 0) {
    if (!c.cfs_quota_burst_percent || *c.cfs_quota_burst_percent < 100) {
      allowed = false;
    } else {
      const auto period = *c.cfs_quota_burst_period_seconds;
      const auto pct = *c.cfs_quota_burst_percent;
      const double limit = double(in.cpu_limit_milli) / 1000;
      const double usage = in.cpu_usage_cores.value_or(limit);
      burst_limiter l =
          in.limiter ? burst_limiter_update_if_changed(*in.limiter, period, pct, now, random_bits)
                     : make_burst_limiter(period, pct, now, random_bits);
      auto step = burst_limiter_allow(l, now, static_cast<std::int64_t>(usage / limit * 100));
      allowed = step.allowed;
      r.next_limiter = step.next;
    }
  }
  // genOperationByContainer.
  if (!cfs_quota_burst_enabled(c))
    r.origin = cfs_operation::reset;
  else if (!allowed)
    r.origin = cfs_operation::scale_down;
  else if (in.throttled_ratio && *in.throttled_ratio > 0)
    r.origin = cfs_operation::scale_up;
  else
    r.origin = cfs_operation::remain;
  r.final_op = change_operation_by_node(state, r.origin);

  std::int64_t target = in.current_cfs_quota_us;
  if (r.final_op == cfs_operation::scale_up)
    target = static_cast<std::int64_t>(double(in.current_cfs_quota_us) * cfs_increase_step);
  else if (r.final_op == cfs_operation::scale_down)
    target = static_cast<std::int64_t>(double(in.current_cfs_quota_us) * cfs_decrease_step);
  else if (r.final_op == cfs_operation::reset)
    target = r.base_cfs;
  target = std::max(r.base_cfs, std::min(target, r.ceil_cfs));
  r.target_cfs = target;
  r.delta = target - in.current_cfs_quota_us;
  return r;
}

pod_quota_update pod_cfs_quota_update(std::int64_t current_pod, std::int64_t delta) noexcept {
  pod_quota_update u;
  u.pod_first = delta > 0;
  if (current_pod <= 0 || delta == 0) return u;  // pod unlimited (-1): nothing to adjust
  u.write_pod = true;
  u.pod_quota_us = current_pod + delta;
  return u;
}

}  // namespace colony::koordlet
