// quota_component: the ElasticQuota quota controller as a component
// (actors/entities/component.hpp), named "koord-scheduler/elastic-quota".
//
// Koordinator: the ElasticQuota plugin's GroupQuotaManager inside koord-scheduler
// (pkg/scheduler/plugins/elasticquota: quota_handler.go, pod_handler.go, node_handler.go,
// and the quota status update loop in plugin.go / controller.go that writes the runtime,
// request, used and non-preemptible-used annotations back onto ElasticQuota objects);
// koord-manager's quota-profile controller owns tree roots, not status.
//
// What it does: keeps a quota_tree from QuotaUpserted/QuotaDeleted, node allocatable
// (cluster total) and pods (PodSubmitted/PodMutated book the request under the pod's quota,
// PodScheduled makes it used, PodFinished/PodEvicted/PodRejected release it) through a
// quota_book; at the end of every batch that changed any of it, refresh() (the deterministic
// fixed point, actors/quota/README.md) and one QuotaRuntimeUpdated per quota whose runtime,
// used, request or non-preemptible used changed since the last emission (refresh()'s change
// list: every quota on the first), in quota-name order.
//
// Envelope of each emission: kind ElasticQuota, key = quota name, time = the latest event time
// seen, causation = the offset of the batch's last event that changed the book (one batch's
// changes are computed together, so no single event is "the" cause of a runtime: the last one
// is the point from which the status holds).
//
// Determinism: the tree's fixed point is order-independent; pods and nodes are iterated by
// name. Same events in the same order -> same bytes. Thread-safety: none (one owner).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "actors/entities/component.hpp"
#include "actors/quota/actor/quota_events.hpp"
#include "actors/quota/quota_tree.hpp"

namespace colony::quota {

struct quota_component_options {
  // Default: "koord-scheduler/elastic-quota".
  std::string name = "koord-scheduler/elastic-quota";
  // Default: ElasticQuotaArgs defaults (quota_tree.hpp).
  elastic_quota_args args;
};

class quota_component final : public entities::component {
 public:
  explicit quota_component(quota_component_options opts = {});

  [[nodiscard]] std::string_view name() const override { return opts_.name; }
  [[nodiscard]] bool wants(wire::Payload type) const override;
  void on_event(const wire::Envelope& env, std::vector<messages::byte_buffer>& out) override;
  void on_batch_end(std::vector<messages::byte_buffer>& out) override;

  // Inspection (tests, explain): the tree as of the last emission.
  [[nodiscard]] const quota_tree& tree() const { return *book_.tree(); }
  [[nodiscard]] const quota_book& book() const { return book_; }

 private:
  quota_component_options opts_;
  quota_book book_;
  event_time now_{0};
  std::int64_t cause_ = -1;  // offset of the batch's last event that changed the book
  bool dirty_ = false;
  messages::event_builder b_;
};

}  // namespace colony::quota
