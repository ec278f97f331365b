// cfs_quota_burster: the koordlet component's cfs-quota burst (Koordinator's cpuburst plugin,
// pkg/koordlet/qosmanager/plugins/cpuburst/cpu_burst.go applyCFSQuotaBurst) over the containers
// the node's collectors sample: each round, per container with a quota of a pod Koordinator
// handles (Raw QoS not LSR, LSE or BE; active; not evicted), the pure policy
// (actors/koordlet/cpu_burst.hpp cfs_quota_burst) with the node's share-pool state and the
// container's limiter, and a change of the container's cpu.cfs_quota_us and its pod's when the
// target differs from the quota the sample read.
//
// Inputs per container, from the last NodeUsageSampled (schema v9 ContainerSample): the quota as
// read (Koordinator reads it from the cgroup each round), the throttling over the interval
// (nr_throttled / nr_periods: Koordinator's container throttled metric, "throttled in the last
// sample" when above 0) and the CPU usage (the limiter's input).
//
// The base (the container's CPU limit x 100 us, what kubelet wrote) comes from:
//   - the pod's spec where the log has it (cluster mode, colony sim/run): the schema carries the
//     pod's limit, not its containers', so it is used where the pod has one container with a
//     quota (the sandbox has none);
//   - otherwise the container's quota in the first sample that listed it (a lone node). Every
//     sample and every write of Colony's is in the node's log and the component replays it from
//     the start, so that first sample predates any quota Colony set: it is kubelet's. A log
//     started after another koordlet changed the quota would take the changed value as the base.
//     A base unseen for 10 minutes (the container gone) is forgotten.
// Limiters are kept per container id and dropped when unused for 2 x cfsQuotaBurstPeriodSeconds
// (Koordinator's Recycle). Their random initial fill comes from the container id and the event
// time, so a replay decides the same.
// Single-threaded; deterministic (ordered maps, event time only). No CAF, no store.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/koordlet/cpu_burst.hpp"
#include "actors/koordlet/koordlet_types.hpp"
#include "messages/codec.hpp"

namespace colony::koordlet_actor {

// One container of a pod as the last sample listed it.
struct cfs_container_sample {
  std::string id;
  std::string name;                    // where the sample names it, else empty
  std::int64_t cfs_quota_us = -1;      // -1: none; after a round's change, the quota it decided
  std::int64_t sampled_quota_us = -1;  // as the sample read it (a round's change leaves it)
  std::int64_t nr_periods = -1;        // over the interval; -1: not read
  std::int64_t nr_throttled = -1;
  double cpu_cores = 0;
};

struct cfs_pod_sample {
  std::string uid;
  std::int64_t cfs_quota_us = -1;
  std::vector<cfs_container_sample> containers;  // as sampled (by id)
};

// A term of a decision's inputs.
struct cfs_term {
  std::string name;
  std::int64_t value = 0;
  std::string unit, text;
};

// One container's quota change and its pod's, files in write order (pod first when growing,
// container first when shrinking).
struct cfs_quota_change {
  std::string pod_key;
  std::string container_id;
  std::vector<std::pair<std::string, std::string>> settings;
  std::vector<cfs_term> inputs;
};

class cfs_quota_burster {
 public:
  // A base unseen this long (its container gone) is forgotten.
  static constexpr std::int64_t forget_base_after_ms = 10 * 60 * 1000;

  // Takes one sample's pods with containers (replacing the last sample's); a container's first
  // quota is kept as its lone-node base. `live`: every pod key of the sample (with or without
  // containers); a container left off its base is forgotten with its pod.
  void observe(event_time now, std::map<std::string, cfs_pod_sample, std::less<>> pods,
               const std::set<std::string_view>& live);

  // One round. pods: the component's pods (ascending key); spec_known(i) says whether pods[i]'s
  // spec comes from the log (its limit is the base). The quotas the sample read are taken as the
  // current ones; what this round decides is also remembered as current until the next sample.
  [[nodiscard]] std::vector<cfs_quota_change> round(const koordlet::cpu_burst_strategy& strategy,
                                                    koordlet::node_burst_state state,
                                                    std::span<const koordlet::pod_info> pods,
                                                    const std::vector<bool>& spec_known,
                                                    event_time now);

  [[nodiscard]] const std::map<std::string, cfs_pod_sample, std::less<>>& sampled() const {
    return sampled_;
  }
  // Whether a container's quota differs from its base, as last sampled or as last decided (a
  // scale-up not yet reset, or a reset not yet seen in a sample): the collector must keep
  // reading containers' quotas and throttling even under a policy without cfs-quota burst, whose
  // round resets them. A replay's rounds decide without writing, so only a sample clears it.
  [[nodiscard]] bool any_off_base() const { return !off_base_.empty(); }

  // One of this burster's own decisions read back from the log (a CgroupUpdated it made): the
  // lone-node base it decided from is kept unless one is known. A log whose older samples were
  // trimmed keeps the decisions, so the first sampled quota is not lost with them.
  void observe_decision(const wire::CgroupUpdated& e, event_time now);

  // The lone-node base of a container ("<pod key>/<container id>"), if seen.
  [[nodiscard]] std::optional<std::int64_t> first_quota(std::string_view pod_key,
                                                        std::string_view container_id) const;

 private:
  struct seen_quota {
    std::int64_t quota_us = 0;
    std::int64_t last_seen_ms = 0;
  };
  std::map<std::string, cfs_pod_sample, std::less<>> sampled_;
  std::map<std::string, seen_quota, std::less<>> first_quota_;  // by "<pod key>/<container id>"
  std::map<std::string, koordlet::burst_limiter, std::less<>> limiters_;  // by container id
  std::map<std::string, std::string, std::less<>> off_base_;              // container id -> pod key
};

// A NodeUsageSampled pod's containers and quotas as cfs_pod_sample.
[[nodiscard]] cfs_pod_sample cfs_sample_of(const wire::PodSample& s);

}  // namespace colony::koordlet_actor
