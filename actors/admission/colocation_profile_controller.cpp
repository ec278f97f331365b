#include "actors/admission/colocation_profile_controller.hpp"

#include <algorithm>

namespace colony::admission {

result<bool> controller_selects_pod(const cluster_colocation_profile& profile,
                                    const controller_pod& cp) {
  const pod_spec& pod = *cp.pod;
  if (!profile.selector) return false;  // nil selector: match nothing
  auto m = label_selector_matches(*profile.selector, pod.labels);
  if (!m) return tl::unexpected(m.error());
  if (!*m || !pod.node_name.empty()) return false;
  if (profile.namespace_selector && !profile.namespace_selector->empty()) {
    if (cp.namespace_labels == nullptr) return false;  // Namespace not found: no match
    auto ns = label_selector_matches(*profile.namespace_selector, *cp.namespace_labels);
    if (!ns) return tl::unexpected(ns.error());
    if (!*ns) return false;
  }
  return true;
}

result<void> controller_mutate_by_colocation_profile(pod_spec& pod,
                                                     const cluster_colocation_profile& profile) {
  // Same steps as the webhook except schedulerName and priorityClassName
  // (colocationprofile_util.go).
  cluster_colocation_profile subset = profile;
  subset.scheduler_name.clear();
  subset.priority_class_name.clear();
  return do_mutate_by_colocation_profile(pod, subset, priority_class_table{});
}

colocation_profile_controller::colocation_profile_controller(
    colocation_profile_controller_options options)
    : options_(options), tokens_(static_cast<double>(options.max_update_pod_qps_burst)) {}

bool colocation_profile_controller::allow(event_time now) {
  // A rate.Limiter starts full and refills at qps tokens per second up to burst.
  if (refilled_once_ && now > last_refill_) {
    const double elapsed_s = static_cast<double>((now - last_refill_).value) / 1000.0;
    tokens_ = std::min(static_cast<double>(options_.max_update_pod_qps_burst),
                       tokens_ + elapsed_s * options_.max_update_pod_qps);
  }
  if (!refilled_once_ || now > last_refill_) last_refill_ = now;
  refilled_once_ = true;
  if (tokens_ >= 1.0) {
    tokens_ -= 1.0;
    return true;
  }
  return false;
}

void colocation_profile_controller::expire(event_time now) {
  for (auto it = updated_until_.begin(); it != updated_until_.end();) {
    // go-cache: an item expires once now is past its expiration.
    if (it->second < now)
      it = updated_until_.erase(it);
    else
      ++it;
  }
}

result<reconcile_result> colocation_profile_controller::reconcile(
    const cluster_colocation_profile& profile, std::string_view resource_version,
    std::span<const controller_pod> pods, event_time now, std::uint64_t seed) {
  reconcile_result out;
  if (!options_.reconcile_by_default && !profile.should_reconcile()) return out;
  out.reconciled = true;
  out.requeue_after = options_.reconcile_interval;
  expire(now);
  for (const auto& cp : pods) {
    auto selected = controller_selects_pod(profile, cp);
    if (!selected) return tl::unexpected(selected.error());
    if (!*selected || cp.pod->phase != pod_phase::pending) continue;
    const pod_spec& pod = *cp.pod;
    const std::int32_t draw =
        needs_draw(profile.probability) ? probability_draw(seed, pod, profile.name) : -1;
    if (should_skip_profile(profile.probability, draw)) {
      ++out.summary.skipped;
      continue;
    }
    // getPodUpdateKey: profile resourceVersion + "/" + pod uid.
    std::string key(resource_version);
    key += '/';
    key += pod.uid;
    if (updated_until_.count(key) != 0) {
      ++out.summary.cached;
      continue;
    }
    ++out.summary.desired;
    if (!allow(now)) {
      ++out.summary.rate_limited;
      continue;
    }
    pod_spec modified = pod;
    if (auto ok = controller_mutate_by_colocation_profile(modified, profile); !ok)
      continue;  // logged and skipped in Go
    updated_until_.insert_or_assign(std::move(key), now + options_.force_update_pod_duration);
    ++out.summary.succeeded;
    if (!(modified == pod)) {
      ++out.summary.changed;
      out.updated.push_back(std::move(modified));
    }
  }
  return out;
}

}  // namespace colony::admission
