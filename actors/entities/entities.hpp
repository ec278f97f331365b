// The entity states of Colony: node, pod, elastic quota, pod migration job, reservation
// (schema v7), and recorded Kubernetes objects (Object, schema v4) that no component reads yet.
//
// Each is a plain struct; apply(state, envelope) folds one event into it and is a pure
// function of (state, event): no clock, no I/O, no randomness. State is fold(events), so
// replaying a log rebuilds every entity without running any policy. The entity actors
// (entity_actors.hpp) are thin shells around these structs.
//
// routes() says which entities an event touches: its own (the envelope's kind/key) and the
// ones its payload names (a PodScheduled on a node also binds the pod). Routing is by event
// content only, so every replay routes identically.
//
// encode()/decode_*() give each state a canonical byte form (state.fbs, built in a fixed
// field order), used for snapshots and for the state digest.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "colony_generated.h"
#include "messages/resources.hpp"
#include "messages/result.hpp"
#include "messages/routes.hpp"

namespace colony::entities {

enum class pod_phase : std::uint8_t {
  pending = 0,    // submitted, waiting to be scheduled
  scheduled = 1,  // bound to a node by its node actor
  running = 2,
  succeeded = 3,
  failed = 4,
  evicted = 5,
  rejected = 6,  // refused by admission
  deleted = 7,
};
[[nodiscard]] std::string_view to_string(pod_phase p);
[[nodiscard]] bool is_terminal(pod_phase p);

struct pod_on_node {
  std::string pod;
  resource_list requests;
  std::vector<std::pair<std::int32_t, resource_list>> devices;  // minor -> gpu_core/memory
  std::string reservation;  // the Reservation it consumes ("" none)
};

// An Available reservation on a node. The node's allocated includes what it still holds for
// owners (allocatable - allocated, at least 0, per resource) and one pod (Koordinator's reserve
// pod); an owner's bind moves that share into the owner's own request. Released when the
// reservation becomes Succeeded or Failed (scheduler/reservation.hpp, "Accounting rule").
struct node_reservation {
  std::string name;
  resource_list allocatable;
  resource_list allocated;                   // owners' requests on this node
  [[nodiscard]] resource_list held() const;  // what allocated of the node includes for it
};

struct gpu_state {
  std::int32_t minor = 0;
  std::string model;
  std::int64_t core = 100;
  std::int64_t memory_bytes = 0;
  std::int64_t core_used = 0;
  std::int64_t memory_used = 0;
};

struct node_state {
  std::string name;
  resource_list capacity;
  resource_list allocatable;
  resource_list allocated;   // sum of requests of pods bound here
  resource_list colocation;  // batch-*/mid-* allocatable set by the slo-controller
  resource_list usage;       // from the latest NodeMetric
  std::int64_t metric_time_ms = -1;
  std::int64_t be_cpu_milli = -1;  // -1: no suppression in force
  std::int64_t registered_ms = 0;
  std::int64_t rejected_binds = 0;
  bool ready = false;
  bool unschedulable = false;
  bool removed = false;
  std::vector<pod_on_node> pods;               // sorted by pod key
  std::vector<gpu_state> gpus;                 // sorted by minor
  std::vector<node_reservation> reservations;  // Available ones here, sorted by name

  // The allocatable a scheduler sees: Kubernetes allocatable with batch/mid from colocation.
  [[nodiscard]] resource_list effective_allocatable() const;
};

struct pod_state {
  std::string name;
  std::string node;
  std::string quota;
  std::string last_reason;
  resource_list requests;
  std::int64_t submitted_ms = 0;
  std::int64_t scheduled_ms = -1;
  std::int64_t started_ms = -1;
  std::int64_t finished_ms = -1;
  std::int64_t usage_cpu_milli = 0;
  std::int64_t usage_memory_bytes = 0;
  std::int32_t priority = 0;
  std::int32_t attempts = 0;
  std::int32_t bind_rejections = 0;
  pod_phase phase = pod_phase::pending;
  wire::QoSClass qos = wire::QoSClass::None;
  wire::PriorityClass priority_class = wire::PriorityClass::None;
  wire::EvictionReason eviction_reason = wire::EvictionReason::Unknown;
};

struct quota_state {
  std::string name;
  std::string parent;
  std::string tree_id;
  resource_list min, max, shared_weight, runtime, used, request;
  bool is_parent = false;
  bool allow_lent_resource = true;
  bool deleted = false;
};

struct job_state {
  std::string name;
  std::string pod;
  std::string mode;
  std::string phase;
  std::string reason;
  std::int64_t created_ms = 0;
  std::int64_t updated_ms = 0;
};

// A Reservation (schema v7): its spec as last observed (ReservationUpserted) and its phase as
// the scheduler decided it (ReservationPhaseChanged). Key: the reservation's name.
struct reservation_state {
  std::string name;
  std::string uid;
  resource_list requests;
  std::string node;    // status.nodeName once Available
  std::string phase;   // "Pending" until scheduled; Available, Succeeded, Failed
  std::string reason;  // of the latest phase change
  std::string owner;   // Succeeded: the owner pod that used it up
  std::int64_t created_ms = 0;
  std::int64_t updated_ms = 0;
  std::int64_t ttl_ms = 0;
  std::int64_t expires_ms = -1;
  bool allocate_once = true;
  bool deleted = false;
};

// A Kubernetes object recorded by a bridge (ObjectObserved): its latest observation, so that
// the digest and snapshots cover it and a later consumer starts from a snapshot like any other.
// The key is the envelope's ("Reservation/r1", "PodGroup/ml/train-1").
struct object_state {
  std::string api_version;
  std::string kind;
  std::string ns;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by key, as recorded
  std::string spec_json;        // compact JSON; "" when absent or deleted
  std::string status_json;      // compact JSON; "" when absent or deleted
  std::int64_t updated_ms = 0;  // event time of the latest ObjectObserved
  bool deleted = false;
};

// The node actor's arbitration of a PodBindProposed (optimistic, log-arbitrated binding): a
// proposal is accepted only if the node is ready, schedulable, not removed, the pod is not
// already bound here, every requested resource fits what is still free of the effective
// allocatable (Kubernetes allocatable + batch/mid from the slo-controller), and every GPU
// share fits its device. Two schedulers proposing against stale views can therefore never
// over-commit a node: the second proposal is rejected with the reason.
struct bind_decision {
  bool accepted = false;
  std::string reason;  // empty when accepted; else e.g. "Insufficient cpu: 500 free, 800 asked"
};
[[nodiscard]] bind_decision arbitrate(
    const node_state& node, std::string_view pod, const resource_list& requests,
    std::span<const std::pair<std::int32_t, resource_list>> devices);
// The same with in-flight reservations: binds the node actor accepted whose PodScheduled has
// not yet come back through the log (so `node`, the fold, does not include them). They count
// as allocated, and a pod reserved here counts as already bound. A pod that consumes the
// Available reservation `reservation` (schema v7) may also use what it still holds here (a
// name the node does not hold gives nothing).
[[nodiscard]] bind_decision arbitrate(
    const node_state& node, std::span<const pod_on_node> reserved, std::string_view pod,
    const resource_list& requests, std::span<const std::pair<std::int32_t, resource_list>> devices,
    std::string_view reservation = {});

// Fold one event into a state. An event that does not concern the state leaves it unchanged.
// REQUIRES: env passed messages::decode().
void apply(node_state& s, const wire::Envelope& env);
void apply(pod_state& s, const wire::Envelope& env);
void apply(quota_state& s, const wire::Envelope& env);
void apply(job_state& s, const wire::Envelope& env);
void apply(object_state& s, const wire::Envelope& env);
void apply(reservation_state& s, const wire::Envelope& env);

// routes() and its types live beside the schema (messages/routes.hpp): the Kafka store needs
// them too.
using messages::entity_ref;
using messages::route_list;
using messages::routes;

// Canonical bytes of a state, and back. decode_* verify the bytes.
[[nodiscard]] std::string encode(const node_state& s);
[[nodiscard]] std::string encode(const pod_state& s);
[[nodiscard]] std::string encode(const quota_state& s);
[[nodiscard]] std::string encode(const job_state& s);
[[nodiscard]] std::string encode(const object_state& s);
[[nodiscard]] std::string encode(const reservation_state& s);
[[nodiscard]] result<node_state> decode_node(std::string_view bytes);
[[nodiscard]] result<pod_state> decode_pod(std::string_view bytes);
[[nodiscard]] result<quota_state> decode_quota(std::string_view bytes);
[[nodiscard]] result<job_state> decode_job(std::string_view bytes);
[[nodiscard]] result<object_state> decode_object(std::string_view bytes);
[[nodiscard]] result<reservation_state> decode_reservation(std::string_view bytes);

// Stable 64-bit digest over entity states: XXH3 over (kind, key length, key, state length,
// state) of every entity, in (kind, key) byte order. Feed entities in that order.
class digest_builder {
 public:
  digest_builder();
  ~digest_builder();
  digest_builder(const digest_builder&) = delete;
  digest_builder& operator=(const digest_builder&) = delete;
  void add(wire::EntityKind kind, std::string_view key, std::string_view state);
  [[nodiscard]] std::uint64_t finish();

 private:
  void* xxh_;  // XXH3_state_t*, opaque to keep xxhash.h out of this header
};

}  // namespace colony::entities
