// The live binding protocol's logic, without CAF (entity_actors.cpp wraps it in actors; this
// split also keeps messages/codec.hpp out of the CAF translation unit). See
// docs/architecture.md "Binding": a PodBindProposed is arbitrated by its pod actor (a pod is
// bound at most once), then by the named node's actor (capacity, with in-flight reservations).
//
// Thread-safety: plain functions over the caller's state; one actor calls them for its own
// state.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/entities/entities.hpp"
#include "actors/entities/entity_actors.hpp"

namespace colony::entities::binding {

using buffer = std::vector<std::uint8_t>;

// Live-mode state of a pod actor: the proposal it forwarded and has no answer for; -1 none.
struct pod_live {
  std::int64_t claim = -1;
};

// Live-mode state of a node actor: binds accepted here whose PodScheduled the fold has not
// taken yet.
struct node_live {
  std::vector<pod_on_node> reserved;
};

// After the pod folded `env` (REQUIRES: env's offset >= the host's arbitrate_from when it is a
// proposal to arbitrate). Returns true when env is a proposal the pod accepts: the claim is
// set and the caller forwards it to the node. A proposal the pod refuses yields its
// PodBindRejected in *out. Answers to the claimed proposal release the claim.
[[nodiscard]] bool pod_after_apply(const pod_state& s, pod_live& x, const wire::Envelope& env,
                                   bool arbitrate, std::vector<buffer>* out);

// After the node folded `env`: a PodScheduled the fold now holds drops its reservation.
void node_after_apply(node_live& x, const wire::Envelope& env);

// The node stage: arbitrates a forwarded proposal against the fold plus reservations, reserves
// on acceptance, and returns the answer (PodScheduled or PodBindRejected, source "node").
[[nodiscard]] buffer node_arbitrate(const node_state& s, node_live& x, const wire::Envelope& env);

// The node a PodBindProposed names.
[[nodiscard]] std::string_view proposed_node(const wire::Envelope& env);

// One delivered batch through a component: on_event for each wanted record, then on_batch_end.
void run_component(component& c, const record_batch& b, std::vector<buffer>& out);

// A component's wake-up (component::next_wakeup_ms), and the wake-up itself if it is due at t
// (on_wakeup, its output appended to out). For the CAF host, where component is incomplete.
[[nodiscard]] std::optional<std::int64_t> component_wakeup(const component& c);
void wake_component(component& c, std::int64_t t, std::vector<buffer>& out);

// The node of a node-scoped component; nullopt for a cluster-scoped one.
[[nodiscard]] std::optional<std::string> component_node(const component& c);

// Deleter of components owned by the host (component is complete only in binding.cpp).
void delete_component(component* c);

}  // namespace colony::entities::binding
