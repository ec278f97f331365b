// descheduler_component: koord-descheduler's descheduling loop (pkg/descheduler/descheduler.go,
// framework/runtime/evictor_proxy.go, controllers/migration/evict.go) as a cluster-scoped
// component over the log, named "koord-descheduler".
//
// It folds nodes, pods, NodeMetrics and PodMigrationJobs (descheduler_view.hpp) and runs a round
// every deschedulingInterval of event time: at the first instant at or after each multiple of the
// interval it asks for a wake-up (next_wakeup_ms), and runs in on_batch_end when records arrive at
// that instant, else in on_wakeup. A round: the Ready nodes matching the global nodeSelector, by
// name (at most one: no round, as Koordinator's "too few nodes"); the per-round eviction limiter
// reset; LowNodeLoad's Balance (actors/descheduler/low_node_load.hpp) with the framework's
// evictor: Filter = MigrationController's (no active job for the pod; ReservationFirst: the pod's
// scheduler is one of schedulerNames; the non-retryable filter; the retryable filters counting
// every Pending job) and Evict = limiter, Filter again, then one MigrationJobCreated.
//
// MigrationJobCreated: keyed PodMigrationJob/<name>, name "<namespace>.<pod>.<event ms>" (unique:
// a pod has at most one active job), mode = defaultJobMode, ttl = defaultJobTTL, reason =
// LowNodeLoad's eviction reason, creator = this component, inputs: trigger (LowNodeLoad), node,
// pool, scope ("node" | "prod"); causation = the offset of the source node's NodeMetricReported
// the round read; event time = the round's. A job it creates counts for its own later filters at
// once (Koordinator's informer would show it a moment later).
// Deterministic: ordered views, the policies' documented tie rules. Single owner.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/descheduler/actor/descheduler_view.hpp"
#include "actors/descheduler/descheduler_config.hpp"
#include "actors/descheduler/eviction_limiter.hpp"
#include "actors/descheduler/low_node_load.hpp"
#include "actors/descheduler/object_limiter.hpp"
#include "actors/entities/component.hpp"
#include "messages/codec.hpp"

namespace colony::descheduler_actor {

inline constexpr std::string_view descheduler_component_name = "koord-descheduler";

struct descheduler_component_options {
  std::string name = std::string(descheduler_component_name);
  descheduler::descheduler_config config;  // parsed (parse_descheduler_config)
};

struct descheduler_stats {
  std::uint64_t rounds = 0, rounds_skipped = 0, jobs_created = 0, limited = 0;
  std::uint64_t object_limited = 0;  // evictions refused by an object limiter
};

class descheduler_component final : public entities::component {
 public:
  explicit descheduler_component(descheduler_component_options opt);

  [[nodiscard]] std::string_view name() const override { return opt_.name; }
  [[nodiscard]] bool wants(wire::Payload type) const override { return view_wants(type); }
  void on_event(const wire::Envelope& env, std::vector<messages::byte_buffer>& out) override;
  void on_batch_end(std::vector<messages::byte_buffer>& out) override;
  [[nodiscard]] std::optional<std::int64_t> next_wakeup_ms() const override { return next_round_; }
  void on_wakeup(std::int64_t now_ms, std::vector<messages::byte_buffer>& out) override;

  [[nodiscard]] const descheduler_stats& stats() const { return stats_; }
  [[nodiscard]] const descheduler_view& view() const { return view_; }

 private:
  void round(std::vector<messages::byte_buffer>& out);
  [[nodiscard]] bool filter(const descheduler::pod_info& p) const;
  bool evict(const descheduler::eviction_request& r, std::vector<messages::byte_buffer>& out);

  descheduler_component_options opt_;
  descheduler_view view_;
  std::optional<descheduler::low_node_load> lnl_;
  descheduler::eviction_limiter limiter_;
  // The migration controller's object limiters, fed the evictions it issued as the log tells
  // them (Evict checks them before a job is created: controller.go).
  descheduler::migration_object_limits limits_{opt_.config.migration};
  messages::event_builder b_;
  std::int64_t now_ = 0;
  std::int64_t next_round_ = 0;
  descheduler_stats stats_;
};

}  // namespace colony::descheduler_actor
