// node_routing: which records a node-scoped component is delivered. Both hosts follow this one
// rule (step_host in the sim, actor_host's router in a cluster), so a koordlet or a node shard
// sees the same records in the same order whichever host runs it. A cluster-scoped component
// gets every record it wants; a node-scoped one for node N gets, in log order:
//   - every record whose routes() name node N (NodeRegistered, NodeMetricReported,
//     NodeBatchResourceUpdated, BeSuppressed, ... of N; PodScheduled, PodBindRejected,
//     PodEvicted, PodFinished naming N);
//   - a record keyed by a pod bound to N at that point of the log (PodUsageSampled,
//     CgroupUpdated, a PodMutated of a running pod, ...);
//   - right before a PodScheduled naming N: the pod's latest PodMutated (its spec after
//     admission, as a kubelet learns a pod's spec when the pod is bound to it), re-delivered as
//     logged (same offset and time); a pod whose log has no PodMutated (admitted outside this
//     log: a koordlet's own log, where the API server's pod is the admitted one) has its latest
//     PodSubmitted re-delivered instead;
//   - records of kind Cluster (ConfigUpdated, ClockTicked);
// never ObjectRefused or WriteFailed (records for people and the audit, which no component reads),
// nor ObjectObserved (schema v4: recorded objects of kinds no component reads yet; a cluster-scoped
// component that someday wants them gets them by wants(), as any record).
// "Bound" follows the log: PodScheduled binds, PodFinished and PodEvicted unbind.
// Header-only on purpose, without messages/codec.hpp: actor_host's CAF translation unit includes
// it, and codec.hpp's messages::header would collide with caf::header there (clang-tidy's
// bugprone-forward-declaration-namespace).
// Thread-safety: none (one owner: the host's routing thread).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "colony_generated.h"
#include "messages/routes.hpp"
#include "messages/string_map.hpp"

namespace colony::entities {

class node_routing {
 public:
  // Routes one record (REQUIRES: verified, in log order; `bytes` is the record env points to).
  // to_node(node, env, bytes) once per delivery to a node (a re-delivered PodMutated first);
  // to_all(env) for Cluster records. Re-delivered PodMutated envelopes stay valid until
  // end_round().
  template <class ToNode, class ToAll>
  void route(const wire::Envelope& env, std::span<const std::uint8_t> bytes, ToNode&& to_node,
             ToAll&& to_all);
  // The records re-delivered in this round may be dropped.
  void end_round() { taken_.clear(); }
  [[nodiscard]] std::size_t bound_pods() const { return bound_.size(); }
  [[nodiscard]] std::size_t waiting_specs() const { return mutated_.size(); }

 private:
  string_map<std::string> bound_;  // pod -> node (lookup only)
  // pod -> latest PodMutated (else latest PodSubmitted), while unbound
  string_map<std::vector<std::uint8_t>> mutated_;
  string_map<bool> has_mutated_;                  // pods in mutated_ whose entry is a PodMutated
  std::vector<std::vector<std::uint8_t>> taken_;  // re-delivered this round
};

template <class ToNode, class ToAll>
void node_routing::route(const wire::Envelope& env, std::span<const std::uint8_t> bytes,
                         ToNode&& to_node, ToAll&& to_all) {
  using P = wire::Payload;
  const auto to_string_view = [](const flatbuffers::String* s) {
    return s == nullptr ? std::string_view{} : std::string_view(s->c_str(), s->size());
  };
  const auto type = env.payload_type();
  if (type == P::ObjectRefused || type == P::WriteFailed || type == P::ObjectObserved) return;
  if (env.entity_kind() == wire::EntityKind::Cluster) {
    to_all(env);
    return;
  }
  const auto rl = messages::routes(env);
  bool to_a_node = false;
  for (std::uint8_t k = 0; k < rl.size; ++k) {
    if (rl.refs[k].kind != wire::EntityKind::Node) continue;
    to_a_node = true;
    if (type == P::PodScheduled) {
      // The pod's spec first, as its new node learns it.
      const auto pod = to_string_view(env.payload_as_PodScheduled()->pod());
      if (auto it = mutated_.find(pod); it != mutated_.end()) {
        taken_.push_back(std::move(it->second));
        mutated_.erase(it);
        if (auto m = has_mutated_.find(pod); m != has_mutated_.end()) has_mutated_.erase(m);
        const auto& rec = taken_.back();
        to_node(rl.refs[k].key, *wire::GetEnvelope(rec.data()),
                std::span<const std::uint8_t>(rec.data(), rec.size()));
      }
    }
    to_node(rl.refs[k].key, env, bytes);
  }
  // Keep "bound" in log order.
  switch (type) {
    case P::PodScheduled: {
      const auto* e = env.payload_as_PodScheduled();
      bound_.insert_or_assign(std::string(to_string_view(e->pod())),
                              std::string(to_string_view(e->node())));
      return;
    }
    case P::PodFinished:
    case P::PodEvicted:
    case P::PodRejected: {
      const auto pod = type == P::PodFinished ? to_string_view(env.payload_as_PodFinished()->pod())
                       : type == P::PodEvicted
                           ? to_string_view(env.payload_as_PodEvicted()->pod())
                           : to_string_view(env.payload_as_PodRejected()->name());
      if (auto it = bound_.find(pod); it != bound_.end()) bound_.erase(it);
      // Never placed, or gone: its spec will not be needed.
      if (auto it = mutated_.find(pod); it != mutated_.end()) mutated_.erase(it);
      if (auto m = has_mutated_.find(pod); m != has_mutated_.end()) has_mutated_.erase(m);
      return;
    }
    default:
      break;
  }
  if (to_a_node || env.entity_kind() != wire::EntityKind::Pod) return;
  const auto pod = to_string_view(env.entity_key());
  const auto b = bound_.find(pod);
  if (b != bound_.end()) {
    to_node(std::string_view(b->second), env, bytes);
    return;
  }
  if (type == P::PodMutated) {
    mutated_.insert_or_assign(std::string(pod),
                              std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
    has_mutated_.insert_or_assign(std::string(pod), true);
  } else if (type == P::PodSubmitted && has_mutated_.find(pod) == has_mutated_.end()) {
    mutated_.insert_or_assign(std::string(pod),
                              std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
  }
}

}  // namespace colony::entities
