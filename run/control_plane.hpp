// control_plane: the components `colony run` hosts, defined once, so that `colony sim --from-log`
// re-simulates a cluster's log with exactly what decided it (docs/sim.md "Re-simulating a
// cluster's log").
//
// In the order a host adds them (its merge order): the ClusterColocationProfile webhook
// (admission), one koord-scheduler, the ElasticQuota controller and koord-manager's
// ElasticQuotaProfile controller (with elastic_quota), a
// cluster-wide slo-controller (with slo_controller), and koord-descheduler with its migration
// controller (with descheduler). Every one starts without configuration and
// is configured by the cluster's objects as they reach the log: ConfigUpdated observations (the
// slo-controller ConfigMap, ClusterColocationProfiles, PriorityClasses) and QuotaUpserted. The
// scheduler runs Koordinator's shipped profile unless `scheduler` names another. Seeds are the
// components' defaults, so a re-simulation draws what the cluster drew.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "actors/descheduler/descheduler_config.hpp"
#include "actors/entities/component.hpp"
#include "actors/scheduler/scheduler_config.hpp"
#include "messages/codec.hpp"
#include "messages/result.hpp"

namespace colony::run {

struct control_plane_options {
  // The ElasticQuota plugin in the scheduler and the quota controller. Default: true
  // (`colony run` without --no-elastic-quota).
  bool elastic_quota = true;
  // The slo-controller (noderesource: batch and mid allocatable). Default: true.
  bool slo_controller = true;
  // Its cpunormalization and resourceamplification plugins. Default: false.
  bool cpu_normalization = false;
  // koord-scheduler's feature gates (--feature-gates). Default: all off.
  scheduler::scheduler_feature_gates scheduler_gates;
  // koord-descheduler (its LowNodeLoad loop) and the PodMigrationJob controller, configured by a
  // DeschedulerConfiguration. Default: none (Koordinator installs the descheduler apart).
  std::optional<descheduler::descheduler_config> descheduler;
  // The KubeSchedulerConfiguration (profile 0 runs). Default: Koordinator's shipped one.
  std::optional<scheduler::scheduler_config> scheduler;
  // Threads the scheduler may fan its Filter and Score out on (the decision does not depend on
  // them). Default: none (its own thread).
  std::function<void(std::size_t n, const std::function<void(std::size_t)>& fn)> parallelizer;
  // Times the scheduler's extension points and plugins for /metrics
  // (scheduler::framework_recorder). Default: none.
  std::shared_ptr<scheduler::framework_recorder> scheduler_recorder;
};

// The components, in the order to add them. Fails only on a scheduler config the framework
// refuses.
[[nodiscard]] result<std::vector<std::unique_ptr<entities::component>>> control_plane(
    const control_plane_options& o);

// The ClockTicked observation colony run appends at time t_ms once a component's wake-up is due
// (entity Cluster/clock, source "colony-run"): the one record of its own in the log.
[[nodiscard]] messages::byte_buffer clock_tick_record(std::int64_t t_ms);

}  // namespace colony::run
