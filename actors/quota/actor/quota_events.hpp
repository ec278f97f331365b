// Reading ElasticQuota, node and pod events into a quota_tree, shared by the quota component
// (actors/quota/actor/quota_component.hpp) and the scheduler component's ElasticQuota plugin
// (actors/scheduler/actor/scheduler_component.hpp), so both books of the same events agree.
//
// What it defines: spec_of (QuotaUpserted -> quota_spec), find_key / non_preemptible_of (pod
// labels), and quota_book, the event-fed side of Koordinator's GroupQuotaManager
// (pkg/scheduler/plugins/elasticquota/quota_handler.go OnQuotaAdd/Update/Delete, pod_handler.go
// OnPodAdd/Update/Delete, node_handler.go for the cluster total).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <vector>

#include "actors/quota/quota_tree.hpp"
#include "colony_generated.h"
#include "messages/codec.hpp"

namespace colony::quota {

using key_value_list = flatbuffers::Vector<flatbuffers::Offset<wire::KeyValue>>;

// The value of a label (or annotation) in a KeyValue list; nullopt when absent.
[[nodiscard]] std::optional<std::string_view> find_key(const key_value_list* kvs,
                                                       std::string_view key);

// A QuotaUpserted as the quota tree reads it (decode_quota over its labels and annotations).
// The event's typed fields (parent, tree_id, is_parent, allow_lent_resource, shared_weight)
// fill in what the labels/annotations do not say; allow_lent_resource is false when either
// says false. min_keys/max_keys of 0 with non-zero values mean "keys from the non-zero
// values" (a producer that did not fill the key masks); otherwise they are the key sets.
[[nodiscard]] quota_spec spec_of(const wire::QuotaUpserted& e);

// The inverse of spec_of: a QuotaUpserted payload for a spec (an ElasticQuota loaded from YAML),
// built on b.fbb(). Labels and annotations are written as the object has them; key masks say
// which min/max keys the object lists (0 when the spec takes its keys from the values).
// spec_of(quota_upserted(spec)) books the same quota as spec.
[[nodiscard]] flatbuffers::Offset<wire::QuotaUpserted> quota_upserted(messages::event_builder& b,
                                                                      const quota_spec& spec);

// The quota controller's status decision for one quota (runtime masked to its keys), built on
// b.fbb(); the quota component and the sim publish the same record.
[[nodiscard]] flatbuffers::Offset<wire::QuotaRuntimeUpdated> quota_runtime_updated(
    messages::event_builder& b, const quota_status& st);

// A KeyValue list (labels, annotations) as a map; later duplicates win.
[[nodiscard]] string_map to_map(const key_value_list* kvs);

// Label quota.scheduling.koordinator.sh/preemptible == "false".
[[nodiscard]] bool non_preemptible_of(const key_value_list* labels);

// Feeds a quota_tree from events:
//   QuotaUpserted / QuotaDeleted        -> upsert_quota / delete_quota;
//   NodeRegistered / NodeRemoved / NodeBatchResourceUpdated -> cluster total = sum of node
//                                          allocatable (incl. batch-*/mid-*), set at flush();
//   PodSubmitted / PodMutated           -> the pod booked pending under its quota (label
//                                          quota.scheduling.koordinator.sh/name, else the
//                                          namespace rules of get_quota_name), request =
//                                          pod-level requests without the pod count;
//   PodScheduled                        -> assigned on its node (used);
//   PodFinished / PodEvicted / PodRejected -> removed (released).
// Whether a pod is assigned is read back from the tree when it is re-booked, so an owner that
// assigns pods itself (the scheduler plugin's Reserve) keeps its marks.
// Quota association is recomputed at flush() after quota changes (a quota created after its
// pods, or deleted under them, re-associates them: Koordinator's handlers reach the same state
// once the pods are updated). Thread-safety: none (one owner).
class quota_book {
 public:
  // REQUIRES: tree != nullptr.
  explicit quota_book(std::shared_ptr<quota_tree> tree);

  [[nodiscard]] static bool wants(wire::Payload type);
  // Applies one event; true when it changed what the tree books (quotas, pods, nodes).
  bool apply(const wire::Envelope& env);
  // Pushes the cluster total and re-associates pods after quota changes. Call before reading
  // the tree (the end of a batch).
  void flush();

  [[nodiscard]] const std::shared_ptr<quota_tree>& tree() const noexcept { return tree_; }
  // Errors the tree refused (a quota named like the root, ...), most recent last; kept for
  // inspection, the events are skipped.
  [[nodiscard]] const std::vector<std::string>& refused() const noexcept { return refused_; }

 private:
  struct pod_entry {
    std::string namespace_name;
    std::string quota_label;  // quota.scheduling.koordinator.sh/name, "" when absent
    quota_pod pod;            // as last booked
  };
  void book(pod_entry& p);

  std::shared_ptr<quota_tree> tree_;
  std::map<std::string, resource_list, std::less<>> nodes_;
  std::map<std::string, pod_entry, std::less<>> pods_;
  std::vector<std::string> refused_;
  bool nodes_dirty_ = false;
  bool quotas_dirty_ = false;
};

}  // namespace colony::quota
