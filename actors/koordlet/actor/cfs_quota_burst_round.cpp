#include "actors/koordlet/actor/cfs_quota_burst_round.hpp"

#include <algorithm>

#include "messages/terms.hpp"

namespace colony::koordlet_actor {

namespace {

namespace kl = koordlet;
using messages::to_string_view;

// Where a decision's base came from (the end of its containerBaseCFS term's text).
constexpr std::string_view base_from_spec = "pod spec";
constexpr std::string_view base_from_first_sample = "first sampled quota";

// splitmix64 over FNV-1a of the id and the time: the limiter's initial fill, reproducible.
std::uint64_t random_bits(std::string_view id, event_time now) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const char c : id) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  std::uint64_t z = h ^ static_cast<std::uint64_t>(now.value);
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string key_of(const kl::pod_info& p) { return p.ns.empty() ? p.name : p.ns + "/" + p.name; }

}  // namespace

cfs_pod_sample cfs_sample_of(const wire::PodSample& s) {
  cfs_pod_sample p;
  p.uid = std::string(to_string_view(s.uid()));
  p.cfs_quota_us = s.cfs_quota_us();
  if (s.containers() == nullptr) return p;
  p.containers.reserve(s.containers()->size());
  for (const auto* c : *s.containers()) {
    cfs_container_sample x;
    x.id = std::string(to_string_view(c->id()));
    x.name = std::string(to_string_view(c->name()));
    x.cfs_quota_us = c->cfs_quota_us();
    x.sampled_quota_us = x.cfs_quota_us;
    x.nr_periods = c->nr_periods();
    x.nr_throttled = c->nr_throttled();
    const auto u = messages::to_resource_list(c->usage());
    x.cpu_cores = static_cast<double>(u.cpu_milli) / 1000.0;
    p.containers.push_back(std::move(x));
  }
  return p;
}

void cfs_quota_burster::observe(event_time now,
                                std::map<std::string, cfs_pod_sample, std::less<>> pods,
                                const std::set<std::string_view>& live) {
  sampled_ = std::move(pods);
  std::erase_if(off_base_, [&](const auto& e) { return live.count(e.second) == 0; });
  for (const auto& [key, p] : sampled_)
    for (const auto& c : p.containers) {
      if (c.cfs_quota_us <= 0) continue;
      auto [it, fresh] = first_quota_.try_emplace(key + "/" + c.id, seen_quota{c.cfs_quota_us, 0});
      it->second.last_seen_ms = now.value;
    }
  std::erase_if(first_quota_, [&](const auto& e) {
    return now.value - e.second.last_seen_ms > forget_base_after_ms;
  });
}

void cfs_quota_burster::observe_decision(const wire::CgroupUpdated& e, event_time now) {
  if (e.inputs() == nullptr) return;
  std::string_view id;
  std::int64_t base_us = 0;
  for (const auto* t : *e.inputs()) {
    if (messages::term_named(*t, "containerID")) id = to_string_view(t->text());
    if (messages::term_named(*t, "containerBaseCFS") &&
        to_string_view(t->text()).ends_with(base_from_first_sample))
      base_us = t->value();
  }
  if (id.empty() || base_us <= 0) return;
  std::string k(to_string_view(e.target()));
  k += '/';
  k += id;
  auto [it, fresh] = first_quota_.try_emplace(std::move(k), seen_quota{base_us, now.value});
  if (!fresh) it->second.last_seen_ms = std::max(it->second.last_seen_ms, now.value);
}

std::optional<std::int64_t> cfs_quota_burster::first_quota(std::string_view pod_key,
                                                           std::string_view container_id) const {
  const auto it = first_quota_.find(std::string(pod_key) + "/" + std::string(container_id));
  if (it == first_quota_.end()) return std::nullopt;
  return it->second.quota_us;
}

std::vector<cfs_quota_change> cfs_quota_burster::round(const kl::cpu_burst_strategy& strategy,
                                                       kl::node_burst_state state,
                                                       std::span<const kl::pod_info> pods,
                                                       const std::vector<bool>& spec_known,
                                                       event_time now) {
  std::vector<cfs_quota_change> out;
  // No pod annotation koordinator.sh/cpuBurst is read: the node's config for every pod.
  const auto cfg = kl::merge_burst_config(strategy.config, std::nullopt);
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const auto& p = pods[i];
    if (!kl::pod_cpu_burstable(p) || !kl::pod_is_active(p) || p.evicted) continue;
    const std::string key = key_of(p);
    const auto sit = sampled_.find(key);
    if (sit == sampled_.end()) continue;
    auto& sp = sit->second;
    const auto with_quota = std::count_if(sp.containers.begin(), sp.containers.end(),
                                          [](const auto& c) { return c.cfs_quota_us > 0; });
    // The spec's limit is the container's where it can be told which container it is.
    const bool from_spec =
        i < spec_known.size() && spec_known[i] && with_quota == 1 && p.limits.cpu_milli > 0;
    for (auto& c : sp.containers) {
      if (c.cfs_quota_us <= 0) continue;  // unlimited (-1), or not read
      std::int64_t limit_milli = 0;
      std::string_view base_from;
      if (from_spec) {
        limit_milli = p.limits.cpu_milli;
        base_from = base_from_spec;
      } else if (const auto q = first_quota(key, c.id)) {
        limit_milli = *q * 1000 / kl::cfs_base_period_us;
        base_from = base_from_first_sample;
      }
      if (limit_milli <= 0) continue;
      kl::container_burst_input in;
      in.cpu_limit_milli = limit_milli;
      in.current_cfs_quota_us = c.cfs_quota_us;
      in.cpu_usage_cores = c.cpu_cores;
      if (c.nr_periods > 0)
        in.throttled_ratio = static_cast<double>(std::max<std::int64_t>(c.nr_throttled, 0)) /
                             static_cast<double>(c.nr_periods);
      else if (c.nr_periods == 0)
        in.throttled_ratio = 0.0;
      if (const auto l = limiters_.find(c.id); l != limiters_.end()) in.limiter = l->second;
      const auto r = kl::cfs_quota_burst(cfg, state, in, now, random_bits(c.id, now));
      if (r.next_limiter) limiters_.insert_or_assign(c.id, *r.next_limiter);
      if (!r.skipped) {
        if (c.sampled_quota_us != r.base_cfs ||
            (r.delta != 0 ? r.target_cfs : c.cfs_quota_us) != r.base_cfs)
          off_base_.insert_or_assign(c.id, key);
        else
          off_base_.erase(c.id);
      }
      if (r.skipped || r.delta == 0) continue;

      const auto pu = kl::pod_cfs_quota_update(sp.cfs_quota_us, r.delta);
      cfs_quota_change ch;
      ch.pod_key = key;
      ch.container_id = c.id;
      const std::string cfile = c.id + "/cpu.cfs_quota_us";
      const std::string cval = std::to_string(r.target_cfs);
      // applyContainerCFSQuota: growing writes the pod first, shrinking the container first (a
      // v1 child's quota may not exceed its parent's).
      if (pu.write_pod && pu.pod_first)
        ch.settings.emplace_back("cpu.cfs_quota_us", std::to_string(pu.pod_quota_us));
      ch.settings.emplace_back(cfile, cval);
      if (pu.write_pod && !pu.pod_first)
        ch.settings.emplace_back("cpu.cfs_quota_us", std::to_string(pu.pod_quota_us));
      auto& t = ch.inputs;
      t.push_back({"operation", 0, "", std::string(kl::to_string(r.final_op))});
      t.push_back({"originOperation", 0, "", std::string(kl::to_string(r.origin))});
      t.push_back({"nodeState", 0, "", std::string(kl::to_string(state))});
      t.push_back({"containerID", 0, "", c.id});
      t.push_back({"containerBaseCFS", r.base_cfs, "us",
                   "cpu limit x 100 us, from the " + std::string(base_from)});
      t.push_back({"containerCeilCFS", r.ceil_cfs, "us", "base x cfsQuotaBurstPercent / 100"});
      t.push_back({"containerCurCFS", c.cfs_quota_us, "us", "cpu.cfs_quota_us as sampled"});
      t.push_back({"containerTargetCFS", r.target_cfs, "us", ""});
      t.push_back({"podCurCFS", sp.cfs_quota_us, "us", "the pod's cpu.cfs_quota_us as sampled"});
      if (pu.write_pod) t.push_back({"podTargetCFS", pu.pod_quota_us, "us", ""});
      t.push_back({"nrPeriods", c.nr_periods, "count", "cpu.stat over the interval"});
      t.push_back({"nrThrottled", c.nr_throttled, "count", "cpu.stat over the interval"});
      t.push_back({"containerCPUUsed", static_cast<std::int64_t>(c.cpu_cores * 1000), "milli", ""});
      t.push_back(
          {"cfsQuotaBurstPercent", cfg.cfs_quota_burst_percent.value_or(300), "percent", ""});
      t.push_back(
          {"cfsQuotaBurstPeriodSeconds", cfg.cfs_quota_burst_period_seconds.value_or(-1), "s", ""});
      if (!sp.uid.empty() && sp.uid != key) t.push_back({"podUID", 0, "", sp.uid});
      // Current until the next sample says otherwise (a second round before it starts here).
      c.cfs_quota_us = r.target_cfs;
      if (pu.write_pod) sp.cfs_quota_us = pu.pod_quota_us;
      out.push_back(std::move(ch));
    }
  }
  // Recycle: limiters unused for 2 x cfsQuotaBurstPeriodSeconds.
  std::erase_if(limiters_, [&](const auto& e) { return kl::burst_limiter_expired(e.second, now); });
  return out;
}

}  // namespace colony::koordlet_actor
